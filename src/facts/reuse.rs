//! Which accesses of one thread reuse sectors another access of the same
//! thread already brought in (issue 8 audit classes C1, C1b, C3, C6, M1).
//!
//! The walk follows the statements in order, inheriting what an enclosing
//! statement already accessed into its branches and loop bodies (a
//! dominating access), and forgets an access when a variable its index
//! reads is assigned, when its array's pointer is passed to a call, at a
//! barrier, or, for an index that reads memory (`a[idx[i]]`), at any store.
//! Accesses are keyed by array, the index without its constant
//! offset (`p + 1` → `p`, following a local's single definition
//! `o19 = base + 18` → `base`) and element size.
//!
//! - A read of an element (and field) the same thread already read or wrote
//!   is a **re-read**: an L1 hit, or removed by the compiler (CSE,
//!   store-to-load forwarding). Its sectors are the first access's.
//! - Accesses with the same key at several constant offsets or fields form a
//!   **group**: [`crate::facts::coalescing`] costs a group once, over the
//!   bytes its members use together (fields written by consecutive
//!   `+=` statements, three bools per thread stored one by one), or, when the
//!   lanes' ranges overlap (a stencil `a[p - 1]`, `a[p]`, `a[p + 1]` with unit
//!   stride), treats the neighbours as covered by the centre's sectors.
//!
//! Reads and writes are grouped separately (loads and stores are separate
//! traffic); only reads are ever re-reads.

use crate::ir::{BinOp, ExprId, ExprKind, Function, StmtId, StmtKind};
use std::collections::{BTreeSet, HashMap};

/// One member of a group: an access at constant element offset `k` from the
/// group's base, using `len` bytes from byte `lo` of its element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Index into `Function::accesses`.
    pub access: usize,
    /// Constant element offset from the group's base index.
    pub k: i64,
    /// Field offset in the element (bytes).
    pub lo: i64,
    /// Bytes accessed.
    pub len: i64,
}

/// Accesses of one thread to one array at one base index (several
/// constant offsets or fields), in walk order; reads and writes apart.
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// Element size (bytes).
    pub elem: i64,
    /// The members, first the one met first.
    pub members: Vec<Member>,
}

/// The result of the walk.
#[derive(Clone, Debug, Default)]
pub struct Reuse {
    /// For each access (by position): an earlier access of the same thread
    /// to the same element and bytes, with nothing in between that changes
    /// the address or the data (a re-read; reads only).
    pub reread_of: Vec<Option<usize>>,
    /// Groups with at least two distinct (offset, field) members.
    pub groups: Vec<Group>,
}

type Key = (String, String, i64, bool);

#[derive(Clone, Default)]
struct Live {
    /// Group (arena index) and the members that dominate this point.
    map: HashMap<Key, (usize, Vec<Member>)>,
}

struct Walk<'a> {
    f: &'a Function,
    by_stmt: HashMap<u32, Vec<usize>>,
    /// Per access: (key, k, vars its address depends on).
    info: Vec<Option<(Key, i64, BTreeSet<u32>)>>,
    /// Per access: whether its index reads memory (`a[idx[i]]`).
    index_reads_memory: Vec<bool>,
    arena: Vec<Group>,
    reread_of: Vec<Option<usize>>,
}

/// Run the walk over `f`'s body.
pub fn compute(f: &Function) -> Reuse {
    let defs = single_defs(f);
    let mut by_stmt: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut info = Vec::with_capacity(f.accesses.len());
    for (i, a) in f.accesses.iter().enumerate() {
        by_stmt.entry(a.stmt.0).or_default().push(i);
        let Some(elem) = a.elem_bytes else {
            info.push(None);
            continue;
        };
        let mut vars = BTreeSet::new();
        if let Some(v) = a.var {
            vars.insert(v.0);
        }
        let mut base = String::new();
        let mut k = 0;
        let n = a.indices.len();
        for (j, e) in a.indices.iter().enumerate() {
            collect_vars(f, *e, &mut vars);
            if j + 1 == n {
                let (b, c) = split_const(f, *e, &defs, &mut vars, 0);
                base.push('[');
                base.push_str(&b);
                base.push(']');
                k = c;
            } else {
                base.push('[');
                base.push_str(&f.expr_text(*e));
                base.push(']');
            }
        }
        info.push(Some((
            (a.array.clone(), base, elem as i64, a.is_write),
            k,
            vars,
        )));
    }
    let index_reads_memory = f
        .accesses
        .iter()
        .map(|a| {
            let mut stack = a.indices.clone();
            while let Some(e) = stack.pop() {
                if matches!(
                    f.expr(e).kind,
                    ExprKind::Index { .. }
                        | ExprKind::Unary(crate::ir::UnOp::Deref, _)
                        | ExprKind::Member { arrow: true, .. }
                        | ExprKind::Call { .. }
                ) {
                    return true;
                }
                stack.extend(f.child_exprs(e));
            }
            false
        })
        .collect();
    let mut w = Walk {
        f,
        by_stmt,
        info,
        index_reads_memory,
        arena: Vec::new(),
        reread_of: vec![None; f.accesses.len()],
    };
    if let Some(b) = f.body {
        let mut live = Live::default();
        w.stmt(b, &mut live);
    }
    let groups = w
        .arena
        .into_iter()
        .filter(|g| {
            let distinct: BTreeSet<(i64, i64, i64)> =
                g.members.iter().map(|m| (m.k, m.lo, m.len)).collect();
            distinct.len() >= 2
        })
        .collect();
    Reuse {
        reread_of: w.reread_of,
        groups,
    }
}

impl Walk<'_> {
    fn access(&mut self, i: usize, live: &mut Live) {
        let Some((key, k, _)) = self.info[i].clone() else {
            return;
        };
        let a = &self.f.accesses[i];
        let m = Member {
            access: i,
            k,
            lo: a.field_offset.unwrap_or(0) as i64,
            len: a.access_bytes.or(a.elem_bytes).unwrap_or(0) as i64,
        };
        if !a.is_write {
            // A re-read: the same thread read or wrote these bytes before.
            let mut wkey = key.clone();
            wkey.3 = true;
            let same = |ms: &[Member]| {
                ms.iter()
                    .find(|x| x.k == m.k && x.lo == m.lo && x.len == m.len)
                    .map(|x| x.access)
            };
            let prior = live
                .map
                .get(&key)
                .and_then(|(_, ms)| same(ms))
                .or_else(|| live.map.get(&wkey).and_then(|(_, ms)| same(ms)));
            if let Some(p) = prior {
                self.reread_of[i] = Some(p);
                return;
            }
        }
        let elem = key.2;
        let arena = &mut self.arena;
        let entry = live.map.entry(key).or_insert_with(|| {
            arena.push(Group {
                elem,
                members: Vec::new(),
            });
            (arena.len() - 1, Vec::new())
        });
        self.arena[entry.0].members.push(m);
        entry.1.push(m);
    }

    fn own_accesses(&mut self, s: StmtId, live: &mut Live) {
        if let Some(v) = self.by_stmt.get(&s.0).cloned() {
            for i in v {
                self.access(i, live);
            }
        }
    }

    /// Forget what `s` (all of it, nested statements included) changes.
    fn kill(&self, s: StmtId, live: &mut Live) {
        let mut vars = BTreeSet::new();
        let mut arrays: BTreeSet<String> = BTreeSet::new();
        let mut barrier = false;
        // A store to memory: indices that read memory may change.
        let mut mem_write = false;
        let mut stack = vec![s];
        let f = self.f;
        while let Some(s) = stack.pop() {
            if matches!(f.stmt(s).kind, StmtKind::Barrier(_)) {
                barrier = true;
            }
            let mut es = stmt_exprs(f, s);
            while let Some(e) = es.pop() {
                match &f.expr(e).kind {
                    ExprKind::Assign { lhs, .. } => match f.expr(*lhs).kind {
                        ExprKind::Var(v) => {
                            vars.insert(v.0);
                        }
                        _ => mem_write = true,
                    },
                    ExprKind::IncDec { target, .. } => match f.expr(*target).kind {
                        ExprKind::Var(v) => {
                            vars.insert(v.0);
                        }
                        _ => mem_write = true,
                    },
                    ExprKind::Call { callee, args, .. } => {
                        let c = callee.to_ascii_lowercase();
                        if c.starts_with("atomic") {
                            mem_write = true;
                        }
                        if (c.contains("sync") && !warp_collective(&c)) || c.contains("fence") {
                            barrier = true;
                        }
                        for a in &f.accesses {
                            if let Some(v) = a.var
                                && args.iter().any(|x| passes_pointer(f, *x, v))
                            {
                                arrays.insert(a.array.clone());
                            }
                        }
                    }
                    _ => {}
                }
                es.extend(f.child_exprs(e));
            }
            if let StmtKind::Decl { var, .. } = f.stmt(s).kind {
                vars.insert(var.0);
            }
            stack.extend(f.child_stmts(s));
        }
        if barrier {
            live.map.clear();
            return;
        }
        if vars.is_empty() && arrays.is_empty() && !mem_write {
            return;
        }
        let info = &self.info;
        let reads_memory = &self.index_reads_memory;
        live.map.retain(|key, (_, ms)| {
            !arrays.contains(&key.0)
                && (!mem_write || !ms.iter().any(|m| reads_memory[m.access]))
                && !ms.iter().any(|m| {
                    info[m.access]
                        .as_ref()
                        .is_some_and(|(_, _, vs)| vs.iter().any(|v| vars.contains(v)))
                })
        });
    }

    fn stmt(&mut self, s: StmtId, live: &mut Live) {
        let f = self.f;
        match &f.stmt(s).kind {
            StmtKind::Block(children) => {
                for c in children.clone() {
                    self.stmt(c, live);
                }
            }
            StmtKind::Decl { .. } | StmtKind::Expr(_) | StmtKind::Return(_) => {
                self.own_accesses(s, live);
                self.kill(s, live);
            }
            StmtKind::If { then, els, .. } | StmtKind::PreprocAlt { then, els, .. } => {
                let (then, els) = (*then, *els);
                self.own_accesses(s, live);
                let mut t = live.clone();
                self.stmt(then, &mut t);
                if let Some(e) = els {
                    let mut x = live.clone();
                    self.stmt(e, &mut x);
                    // (audit C3) What both branches accessed at the same
                    // element and bytes (`if (c) a[p] = u; else a[p] = v;`)
                    // was accessed on every path: a later read is a re-read.
                    join_branches(live, &t, &x);
                }
                self.kill(s, live);
            }
            StmtKind::For { .. }
            | StmtKind::While { .. }
            | StmtKind::DoWhile { .. }
            | StmtKind::Switch { .. } => {
                // What any iteration changes is changed before the body runs
                // again.
                self.kill(s, live);
                let mut inner = live.clone();
                if let StmtKind::For { init: Some(i), .. } = f.stmt(s).kind {
                    self.stmt(i, &mut inner);
                }
                self.own_accesses(s, &mut inner);
                let body = match f.stmt(s).kind {
                    StmtKind::For { body, .. }
                    | StmtKind::While { body, .. }
                    | StmtKind::DoWhile { body, .. }
                    | StmtKind::Switch { body, .. } => body,
                    _ => unreachable!("matched above"),
                };
                self.stmt(body, &mut inner);
            }
            StmtKind::Barrier(_) => live.map.clear(),
            _ => {
                self.own_accesses(s, live);
                self.kill(s, live);
            }
        }
    }
}

/// After an `if` with an `else`: the members both branches added under one
/// key (same constant offset, field and width) dominate the point after
/// the `if`. They are added to `live` (under the `then` branch's group,
/// the `then` member standing for both); what `live` already held is kept.
/// The caller then kills what the branches changed.
fn join_branches(live: &mut Live, then: &Live, els: &Live) {
    for (key, (g, tms)) in &then.map {
        let Some((_, ems)) = els.map.get(key) else {
            continue;
        };
        let both: Vec<Member> = tms
            .iter()
            .filter(|m| {
                ems.iter()
                    .any(|x| x.k == m.k && x.lo == m.lo && x.len == m.len)
            })
            .copied()
            .collect();
        if both.is_empty() {
            continue;
        }
        match live.map.get_mut(key) {
            Some((_, ms)) => {
                for m in both {
                    if !ms
                        .iter()
                        .any(|x| x.k == m.k && x.lo == m.lo && x.len == m.len)
                    {
                        ms.push(m);
                    }
                }
            }
            None => {
                live.map.insert(key.clone(), (*g, both));
            }
        }
    }
}

/// A statement's own expressions (not those of nested statements).
fn stmt_exprs(f: &Function, s: StmtId) -> Vec<ExprId> {
    match &f.stmt(s).kind {
        StmtKind::Decl { init, .. } => init.iter().copied().collect(),
        StmtKind::Expr(e) => vec![*e],
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => vec![*cond],
        StmtKind::DoWhile { cond, .. } | StmtKind::Switch { cond, .. } => vec![*cond],
        StmtKind::For { cond, step, .. } => cond.iter().chain(step.iter()).copied().collect(),
        StmtKind::Return(e) => e.iter().copied().collect(),
        StmtKind::Case(e) => e.iter().copied().collect(),
        _ => Vec::new(),
    }
}

/// (session 7) Warp votes, shuffles and matches (`__any_sync`,
/// `__shfl_down_sync`, …) exchange registers, not memory: no barrier or
/// fence for the accesses around them. `__syncwarp` is one.
fn warp_collective(callee: &str) -> bool {
    let c = callee.trim_start_matches('_');
    [
        "any_sync",
        "all_sync",
        "ballot_sync",
        "uni_sync",
        "shfl",
        "match_",
        "reduce_",
    ]
    .iter()
    .any(|p| c.starts_with(p))
}

/// Whether `e` passes the pointer `v` itself (not a value read through it).
pub(crate) fn passes_pointer(f: &Function, e: ExprId, v: crate::ir::VarId) -> bool {
    use crate::ir::UnOp;
    match &f.expr(e).kind {
        ExprKind::Var(x) => *x == v,
        ExprKind::Index { .. } | ExprKind::Member { .. } | ExprKind::Unary(UnOp::Deref, _) => false,
        _ => f
            .child_exprs(e)
            .into_iter()
            .any(|c| passes_pointer(f, c, v)),
    }
}

fn collect_vars(f: &Function, e: ExprId, out: &mut BTreeSet<u32>) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if let ExprKind::Var(v) = f.expr(e).kind {
            out.insert(v.0);
        }
        stack.extend(f.child_exprs(e));
    }
}

/// Locals with exactly one definition (declaration initialiser or plain
/// assignment, no `++`, no compound assignment): their defining expression.
pub(crate) fn single_defs(f: &Function) -> HashMap<u32, ExprId> {
    let mut count: HashMap<u32, (u32, Option<ExprId>)> = HashMap::new();
    for st in &f.stmts {
        if let StmtKind::Decl { var, init } = &st.kind {
            let e = count.entry(var.0).or_insert((0, None));
            if let Some(i) = init {
                e.0 += 1;
                e.1 = Some(*i);
            }
        }
    }
    for x in &f.exprs {
        match &x.kind {
            ExprKind::Assign { op, lhs, rhs } => {
                if let ExprKind::Var(v) = f.expr(*lhs).kind {
                    let e = count.entry(v.0).or_insert((0, None));
                    e.0 += if op.is_none() { 1 } else { 2 };
                    e.1 = Some(*rhs);
                }
            }
            ExprKind::IncDec { target, .. } => {
                if let ExprKind::Var(v) = f.expr(*target).kind {
                    count.entry(v.0).or_insert((0, None)).0 += 2;
                }
            }
            // A local whose address is taken may change behind our back.
            ExprKind::Unary(crate::ir::UnOp::AddrOf, x) => {
                if let ExprKind::Var(v) = f.expr(*x).kind {
                    count.entry(v.0).or_insert((0, None)).0 += 2;
                }
            }
            _ => {}
        }
    }
    count
        .into_iter()
        .filter(|(v, (n, _))| {
            *n == 1
                && f.vars
                    .get(*v as usize)
                    .is_some_and(|x| x.param_position.is_none() && !x.by_ref)
        })
        .filter_map(|(v, (_, e))| e.map(|e| (v, e)))
        .collect()
}

/// The index `e` as (text of its non-constant part, constant offset):
/// `p + 1` → (`p`, 1), `4 * i - 2` → (`4 * i`, -2), `3` → (``, 3); a local
/// with a single definition is followed (`o = base + 18; a[o]` → (`base`,
/// 18)), adding the variables it reads to `vars`.
fn split_const(
    f: &Function,
    e: ExprId,
    defs: &HashMap<u32, ExprId>,
    vars: &mut BTreeSet<u32>,
    depth: u32,
) -> (String, i64) {
    match &f.expr(e).kind {
        ExprKind::Int(v) => (String::new(), *v),
        ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), l, r) => {
            if let ExprKind::Int(v) = f.expr(*r).kind {
                let (b, k) = split_const(f, *l, defs, vars, depth);
                let v = if *op == BinOp::Add { v } else { -v };
                return (b, k.saturating_add(v));
            }
            if *op == BinOp::Add
                && let ExprKind::Int(v) = f.expr(*l).kind
            {
                let (b, k) = split_const(f, *r, defs, vars, depth);
                return (b, k.saturating_add(v));
            }
            // (session 7) A constant nested in the right operand: `*(p + a
            // + x * 3 + 1)` lowers its index as `a + (x * 3 + 1)`.
            // Both `… + x * 3 + 0` and `… + x * 3 + 1` key on `… + x * 3`.
            if *op == BinOp::Add {
                let (rb, rk) = split_const(f, *r, defs, vars, depth);
                if rk != 0 || rb != f.expr_text(*r) {
                    let (lb, lk) = split_const(f, *l, defs, vars, depth);
                    return (format!("{lb} + {rb}"), lk.saturating_add(rk));
                }
            }
            (f.expr_text(e), 0)
        }
        ExprKind::Cast(_, x) => split_const(f, *x, defs, vars, depth),
        ExprKind::Var(v) if depth < 4 => match defs.get(&v.0) {
            Some(d) => {
                collect_vars(f, *d, vars);
                split_const(f, *d, defs, vars, depth + 1)
            }
            None => (f.expr_text(e), 0),
        },
        _ => (f.expr_text(e), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::compute;

    fn rereads(src: &str) -> Vec<(u32, Option<u32>)> {
        let f = crate::frontend::lower_last(src);
        let r = compute(&f);
        f.accesses
            .iter()
            .zip(&r.reread_of)
            .filter(|(a, _)| a.array == "a" && !a.is_write)
            .map(|(a, p)| (a.span.line, p.map(|p| f.accesses[p].span.line)))
            .collect()
    }

    #[test]
    fn rereads_stop_where_the_address_or_its_index_data_may_change() {
        // Same element twice: the second read is a re-read of the first.
        let r = rereads(
            "__global__ void k(float *a, float *o, int *idx) {\n\
               int i = threadIdx.x;\n\
               float x = a[i];\n\
               float y = a[i];\n\
               i = i + 1;\n\
               float z = a[i];\n\
               float u = a[idx[i]];\n\
               idx[0] = 3;\n\
               float v = a[idx[i]];\n\
               o[i] = x + y + z + u + v;\n\
             }\n",
        );
        let lines: Vec<Option<u32>> = r.iter().map(|x| x.1).collect();
        // a[i] twice (re-read), after `i = i + 1` a new element, then
        // a[idx[i]] before and after a store to memory: not a re-read.
        assert_eq!(r.len(), 5, "{r:?}");
        assert_eq!(lines[0], None, "{r:?}");
        assert_eq!(lines[1], Some(r[0].0), "{r:?}");
        assert_eq!(lines[2], None, "{r:?}");
        assert_eq!(lines[3], None, "{r:?}");
        assert_eq!(lines[4], None, "{r:?}");
    }

    #[test]
    fn a_store_on_both_sides_of_an_if_makes_the_next_read_a_reread() {
        // (audit C3) The same element stored in both branches, then read
        // by the same thread: a re-read of the store. A store on one side
        // only is not.
        let r = rereads(
            "__global__ void k(float *a, float *y, int p, float t) {\n\
               for (int i = 0; i < 91; i++) {\n\
                 if (y[p + i] == 0.0f) {\n\
                   a[p + i] = t;\n\
                 } else {\n\
                   a[p + i] = y[p + i];\n\
                 }\n\
                 float s = a[p + i];\n\
                 if (s > t) a[p + i + 1] = s;\n\
                 float u = a[p + i + 1];\n\
                 y[p + i] = s + u;\n\
               }\n\
             }\n",
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].1.is_some(), "{r:?}");
        assert_eq!(r[1].1, None, "{r:?}");
    }
}
