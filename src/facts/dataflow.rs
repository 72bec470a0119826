//! Reaching definitions over the structured IR, as relations: which
//! definitions each variable read can see, and under which branch
//! conditions definitions and reads happen. This makes the uniformity
//! program flow-sensitive: a variable reused for different purposes (`i` as
//! a thread index, later as a uniform loop counter) is not smeared.

use crate::ir::{ExprId, ExprKind, Function, MemSpace, StmtId, StmtKind, VarId};
use std::collections::{BTreeMap, BTreeSet};

/// Reaching-definition relations of one function.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DataFlow {
    /// (def, var): definition `def` assigns variable `var`.
    pub def_var: Vec<(u32, u32)>,
    /// (def, expr): the value assigned is that of `expr`.
    pub def_value: Vec<(u32, u32)>,
    /// (use expr, def): the read may see the definition.
    pub reaches: Vec<(u32, u32)>,
    /// (def, cond): the definition happens only where `cond` allowed it.
    pub def_under: Vec<(u32, u32)>,
    /// (use expr, cond): the read happens only where `cond` allowed it.
    pub use_under: Vec<(u32, u32)>,
    /// (use expr, def): a subset of `reaches` — the definition reaches the
    /// read only around a loop's back edge (from an earlier iteration).
    pub back_reaches: Vec<(u32, u32)>,
}

/// The definitions that may hold for each variable at a program point, and
/// which of them arrived only through a loop's back edge (seeded at the
/// loop head and not yet re-executed on this path).
#[derive(Clone, Default)]
struct State {
    defs: BTreeMap<u32, BTreeSet<u32>>,
    back: BTreeSet<u32>,
}

struct LoopFrame {
    defs: Vec<u32>,
    uses: Vec<u32>,
    exit_guards: Vec<u32>,
}

struct Walker<'f> {
    /// Reference parameters each callee writes (bit per parameter).
    ref_writes: &'f dyn Fn(&str) -> u64,
    f: &'f Function,
    out: DataFlow,
    state: State,
    conds: Vec<u32>,
    loops: Vec<LoopFrame>,
}

/// Definition ids: an assignment or `++`/`--` is identified by its
/// expression id, a declaration by `exprs.len() + stmt id`.
fn decl_def(f: &Function, s: StmtId) -> u32 {
    f.exprs.len() as u32 + s.0
}

/// The definition id of parameter `v`'s value on entry (after every
/// expression and statement id).
pub fn param_def(f: &Function, v: VarId) -> u32 {
    (f.exprs.len() + f.stmts.len()) as u32 + v.0
}

/// Compute the reaching-definition relations of `f`.
pub fn compute(f: &Function) -> DataFlow {
    compute_with(f, &|_| 0)
}

/// [`compute`], with what each callee writes through reference parameters
/// (bit `i`: parameter `i`; issue 8, class 3): a variable passed there is
/// redefined by the call, its value the call's (opaque) result.
pub fn compute_with(f: &Function, ref_writes: &dyn Fn(&str) -> u64) -> DataFlow {
    let mut w = Walker {
        ref_writes,
        f,
        out: DataFlow::default(),
        state: State::default(),
        conds: Vec::new(),
        loops: Vec::new(),
    };
    // Parameters hold their argument's value on entry.
    for (i, var) in f.vars.iter().enumerate() {
        let v = VarId(i as u32);
        if var.param_position.is_some() && w.tracked(v) {
            w.define(param_def(f, v), v, None, true);
        }
    }
    if let Some(b) = f.body {
        w.stmt(b);
    }
    for v in [
        &mut w.out.def_var,
        &mut w.out.def_value,
        &mut w.out.reaches,
        &mut w.out.def_under,
        &mut w.out.use_under,
        &mut w.out.back_reaches,
    ] {
        v.sort_unstable();
        v.dedup();
    }
    w.out
}

fn union(a: &State, b: &State) -> State {
    let mut out = a.clone();
    for (k, v) in &b.defs {
        out.defs.entry(*k).or_default().extend(v.iter().copied());
    }
    out.back.extend(b.back.iter().copied());
    out
}

impl Walker<'_> {
    /// Variables tracked as values: locals and parameters, except `__shared__`
    /// scalars (one memory cell per block) and pointers' pointees.
    fn tracked(&self, v: VarId) -> bool {
        let var = self.f.var(v);
        var.space != Some(MemSpace::Shared) || var.ty.is_indexable()
    }

    /// The variable an assignment target writes, and whether the write
    /// replaces the whole value (strong) or one element (weak).
    fn target(&self, lhs: ExprId) -> Option<(VarId, bool)> {
        match &self.f.expr(lhs).kind {
            ExprKind::Var(v) if self.tracked(*v) => Some((*v, true)),
            ExprKind::Member {
                base, arrow: false, ..
            } => self.target(*base).map(|(v, _)| (v, false)),
            ExprKind::Index { base, .. } => match &self.f.expr(*base).kind {
                ExprKind::Var(v) if self.f.var(*v).space == Some(MemSpace::Local) => {
                    Some((*v, false))
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn define(&mut self, d: u32, v: VarId, value: Option<ExprId>, strong: bool) {
        self.out.def_var.push((d, v.0));
        if let Some(e) = value {
            self.out.def_value.push((d, e.0));
        }
        for c in &self.conds {
            self.out.def_under.push((d, *c));
        }
        for l in &mut self.loops {
            l.defs.push(d);
        }
        let slot = self.state.defs.entry(v.0).or_default();
        if strong {
            slot.clear();
        }
        slot.insert(d);
        self.state.back.remove(&d);
    }

    fn read(&mut self, e: ExprId, v: VarId) {
        if let Some(defs) = self.state.defs.get(&v.0) {
            for d in defs {
                self.out.reaches.push((e.0, *d));
                if self.state.back.contains(d) {
                    self.out.back_reaches.push((e.0, *d));
                }
            }
        }
        for c in &self.conds {
            self.out.use_under.push((e.0, *c));
        }
        for l in &mut self.loops {
            l.uses.push(e.0);
        }
    }

    /// Evaluate an expression: record reads, then apply its assignments.
    fn eval(&mut self, e: ExprId) {
        match self.f.expr(e).kind.clone() {
            ExprKind::Var(v) => self.read(e, v),
            ExprKind::Assign { op, lhs, rhs } => {
                self.eval(rhs);
                match self.target(lhs) {
                    Some((v, strong)) => {
                        if op.is_some() || !strong {
                            // Reads the old value (or keeps other elements).
                            self.eval(lhs);
                        } else {
                            self.eval_subexprs(lhs);
                        }
                        self.define(e.0, v, Some(e), strong && op.is_none());
                    }
                    None => self.eval(lhs),
                }
            }
            ExprKind::IncDec { target, .. } => {
                self.eval(target);
                if let Some((v, strong)) = self.target(target) {
                    self.define(e.0, v, Some(e), strong);
                }
            }
            ExprKind::Call { callee, args, .. } => {
                self.eval_subexprs(e);
                let mask = (self.ref_writes)(&callee);
                for (i, a) in args.iter().enumerate().take(64) {
                    if mask & (1 << i) != 0
                        && let Some((v, strong)) = self.target(*a)
                    {
                        self.define(e.0, v, Some(e), strong);
                    }
                }
            }
            _ => self.eval_subexprs(e),
        }
    }

    fn eval_subexprs(&mut self, e: ExprId) {
        for c in self.f.child_exprs(e) {
            self.eval(c);
        }
    }

    fn stmt(&mut self, s: StmtId) {
        match self.f.stmt(s).kind.clone() {
            StmtKind::Block(items) => {
                for i in items {
                    self.stmt(i);
                }
            }
            StmtKind::Decl { var, init } => {
                if let Some(e) = init {
                    self.eval(e);
                }
                if self.tracked(var) {
                    self.define(decl_def(self.f, s), var, init, true);
                }
            }
            StmtKind::Expr(e) | StmtKind::Case(Some(e)) => self.eval(e),
            StmtKind::Return(Some(e)) => self.eval(e),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {
                let guards = self.conds.clone();
                if let Some(l) = self.loops.last_mut() {
                    l.exit_guards.extend(guards);
                }
            }
            StmtKind::If { cond, then, els } => {
                self.eval(cond);
                self.conds.push(cond.0);
                let before = self.state.clone();
                self.stmt(then);
                let after_then = std::mem::replace(&mut self.state, before);
                if let Some(e) = els {
                    self.stmt(e);
                }
                self.state = union(&after_then, &self.state);
                self.conds.pop();
            }
            StmtKind::PreprocAlt { then, els, .. } => {
                let before = self.state.clone();
                self.stmt(then);
                let after_then = std::mem::replace(&mut self.state, before);
                if let Some(e) = els {
                    self.stmt(e);
                }
                self.state = union(&after_then, &self.state);
            }
            StmtKind::Switch { cond, body } => {
                self.eval(cond);
                self.conds.push(cond.0);
                let before = self.state.clone();
                self.stmt(body);
                self.state = union(&before, &self.state);
                self.conds.pop();
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                if let Some(i) = init {
                    self.stmt(i);
                }
                self.looped(cond, step, body, false);
            }
            StmtKind::While { cond, body } => self.looped(Some(cond), None, body, false),
            StmtKind::DoWhile { body, cond } => self.looped(Some(cond), None, body, true),
            _ => {}
        }
    }

    /// Definitions made syntactically anywhere inside statement `s` or
    /// expression `e` (for the loop back edge).
    fn defs_in_stmt(&self, s: StmtId, out: &mut Vec<(u32, u32)>) {
        match &self.f.stmt(s).kind {
            StmtKind::Decl { var, init } => {
                if let Some(e) = init {
                    self.defs_in_expr(*e, out);
                }
                if self.tracked(*var) {
                    out.push((var.0, decl_def(self.f, s)));
                }
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) | StmtKind::Case(Some(e)) => {
                self.defs_in_expr(*e, out)
            }
            StmtKind::If { cond, .. }
            | StmtKind::Switch { cond, .. }
            | StmtKind::While { cond, .. }
            | StmtKind::DoWhile { cond, .. } => self.defs_in_expr(*cond, out),
            StmtKind::For { cond, step, .. } => {
                for e in cond.iter().chain(step.iter()) {
                    self.defs_in_expr(*e, out);
                }
            }
            _ => {}
        }
        for c in self.f.child_stmts(s) {
            self.defs_in_stmt(c, out);
        }
    }

    fn defs_in_expr(&self, e: ExprId, out: &mut Vec<(u32, u32)>) {
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            match &self.f.expr(x).kind {
                ExprKind::Assign { lhs, .. } | ExprKind::IncDec { target: lhs, .. } => {
                    if let Some((v, _)) = self.target(*lhs) {
                        out.push((v.0, x.0));
                    }
                }
                ExprKind::Call { callee, args, .. } => {
                    let mask = (self.ref_writes)(callee);
                    for (i, a) in args.iter().enumerate().take(64) {
                        if mask & (1 << i) != 0
                            && let Some((v, _)) = self.target(*a)
                        {
                            out.push((v.0, x.0));
                        }
                    }
                }
                _ => {}
            }
            stack.extend(self.f.child_exprs(x));
        }
    }

    /// A loop. Every definition inside the loop can reach its head through
    /// the back edge, so the state at the head is the entry state plus all
    /// of them; one walk of the body then sees every reaching definition
    /// (no iteration, so nested loops stay linear).
    fn looped(
        &mut self,
        cond: Option<ExprId>,
        step: Option<ExprId>,
        body: StmtId,
        body_first: bool,
    ) {
        self.loops.push(LoopFrame {
            defs: Vec::new(),
            uses: Vec::new(),
            exit_guards: Vec::new(),
        });
        let mut back = Vec::new();
        self.defs_in_stmt(body, &mut back);
        for e in cond.iter().chain(step.iter()) {
            self.defs_in_expr(*e, &mut back);
        }
        let back_before = self.state.back.clone();
        let seeded: BTreeSet<u32> = back.iter().map(|&(_, d)| d).collect();
        for (v, d) in back {
            self.state.defs.entry(v).or_default().insert(d);
            self.state.back.insert(d);
        }
        let entry = self.state.clone();
        // The condition is evaluated only by threads still in the loop, so
        // its reads count as under it (values defined by the loop's own
        // iterations agree among those threads).
        if let Some(c) = cond {
            self.conds.push(c.0);
        }
        if !body_first && let Some(c) = cond {
            self.eval(c);
        }
        self.stmt(body);
        if let Some(st) = step {
            self.eval(st);
        }
        if body_first && let Some(c) = cond {
            self.eval(c);
        }
        if cond.is_some() {
            self.conds.pop();
        }
        // Zero iterations are possible (except for do-while).
        self.state = if body_first {
            self.state.clone()
        } else {
            union(&entry, &self.state)
        };
        // After the loop, this loop's definitions reach forwards (through
        // its exit); they stay back-edge values only for enclosing loops
        // that had them pending on entry.
        self.state.back = self
            .state
            .back
            .iter()
            .copied()
            .filter(|d| !seeded.contains(d) || back_before.contains(d))
            .collect();
        let frame = self.loops.pop().unwrap_or(LoopFrame {
            defs: Vec::new(),
            uses: Vec::new(),
            exit_guards: Vec::new(),
        });
        // A thread-dependent exit makes the iteration count (and so every
        // value the loop defines) thread-dependent after the loop; inside
        // the loop, the threads still iterating agree.
        for g in &frame.exit_guards {
            for d in &frame.defs {
                self.out.def_under.push((*d, *g));
            }
            for u in &frame.uses {
                self.out.use_under.push((*u, *g));
            }
        }
        if let Some(outer) = self.loops.last_mut() {
            outer.defs.extend(frame.defs);
            outer.uses.extend(frame.uses);
        }
    }
}
