//! Loop and trip-count facts: a crepe program over the reaching-definition
//! relations that finds each loop's induction variables (a variable updated
//! exactly once per iteration by a loop-invariant step: `i += k`, `i++`,
//! `s *= 2`, `s >>= 1`, `s /= 2`), its initial value (the one definition
//! reaching the loop head from outside), and the loop's guard in terms of
//! one of them (`i < n` with `n` invariant in the loop).
//!
//! Each loop is then classified:
//! - `Counted`: uniform init, bound and step — a trip count in the
//!   parameters (linear for `+`/`-`, logarithmic for `*`/`/`/shifts);
//! - `ThreadBound`: the bound depends on the thread (`k < threadIdx.x`):
//!   the worst lane decides;
//! - `ThreadInit`: the induction variable starts at a thread index with a
//!   uniform step (block- and grid-stride loops, `for (i = tid; i < n; i +=
//!   blockDim.x * gridDim.x)`), also bounded by the worst lane;
//! - `MemoryBound`: the bound (or the start) is loaded from memory: no
//!   bound, with the reason;
//! - `Unknown`: anything else, with the reason.
//!
//! When init, bound and step are constants under the launch's block
//! dimensions and template values, the values the guard variable takes in
//! the body are enumerated (at most [`super::affine::MAX_VALUES`]); reads
//! of the variable inside the loop then carry that value set into the
//! stride program, so `sdata[2 * s * tid]` with `s = 1, 2, 4, …` is a
//! stride with known values, not an unknown.

use super::barriers::LaunchDims;
use super::relations::Relations;
use super::uniformity::Uniformity;
use crate::ir::{BinOp, Builtin, Dim, ExprId, ExprKind, Function, StmtId, StmtKind, UnOp, VarId};
use std::collections::{BTreeMap, BTreeSet};

/// How an induction variable changes each iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepOp {
    /// `v += k`, `v++`
    Add,
    /// `v -= k`, `v--`
    Sub,
    /// `v *= k`
    Mul,
    /// `v /= k`
    Div,
    /// `v <<= k`
    Shl,
    /// `v >>= k`
    Shr,
}

impl StepOp {
    fn code(self) -> u8 {
        self as u8
    }
    fn from_code(c: u8) -> StepOp {
        match c {
            0 => StepOp::Add,
            1 => StepOp::Sub,
            2 => StepOp::Mul,
            3 => StepOp::Div,
            4 => StepOp::Shl,
            _ => StepOp::Shr,
        }
    }
    /// Whether the trip count grows logarithmically.
    pub fn geometric(self) -> bool {
        !matches!(self, StepOp::Add | StepOp::Sub)
    }
    /// Apply the step to a concrete value.
    pub fn apply(self, v: i64, k: i64) -> Option<i64> {
        match self {
            StepOp::Add => v.checked_add(k),
            StepOp::Sub => v.checked_sub(k),
            StepOp::Mul => v.checked_mul(k),
            StepOp::Div => v.checked_div(k),
            StepOp::Shl => u32::try_from(k).ok().and_then(|s| v.checked_shl(s)),
            StepOp::Shr => u32::try_from(k).ok().and_then(|s| v.checked_shr(s)),
        }
    }
}

/// An induction variable of a loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InductionVar {
    /// The variable.
    pub var: VarId,
    /// Its update.
    pub op: StepOp,
    /// The step operand (`None` for `++`/`--`, a step of 1).
    pub step: Option<ExprId>,
    /// The value it enters the loop with (`None`: a parameter's entry value
    /// or a declaration without initialiser).
    pub init: Option<ExprId>,
    /// Whether init and step are the same for every thread.
    pub uniform: bool,
}

/// A loop's guard, normalised to `var OP bound`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    /// The induction variable compared.
    pub var: VarId,
    /// `<`, `<=`, `>`, `>=` or `!=`.
    pub op: BinOp,
    /// The loop-invariant bound.
    pub bound: ExprId,
}

/// What bounds a loop's trip count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopKind {
    /// Uniform init, bound and step.
    Counted,
    /// The bound depends on the thread; the worst lane decides.
    ThreadBound,
    /// The variable starts at a thread-dependent value with a uniform step
    /// (block- or grid-stride loop); the worst lane decides.
    ThreadInit,
    /// The bound or start is loaded from memory.
    MemoryBound,
    /// No induction variable with an invariant bound.
    Unknown,
}

impl LoopKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopKind::Counted => "counted",
            LoopKind::ThreadBound => "thread_bound",
            LoopKind::ThreadInit => "thread_init",
            LoopKind::MemoryBound => "memory_bound",
            LoopKind::Unknown => "unknown",
        }
    }
}

/// One loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoopInfo {
    /// The loop statement.
    pub stmt: StmtId,
    /// Its condition.
    pub cond: Option<ExprId>,
    /// Induction variables.
    pub vars: Vec<InductionVar>,
    /// The guard in terms of an induction variable.
    pub guard: Option<Guard>,
    /// Classification.
    pub kind: LoopKind,
    /// Why the trip count is not a function of the parameters, if it is not.
    pub reason: Option<String>,
    /// The values the guard variable takes in the body, when init, bound
    /// and step are constants (at most [`super::affine::MAX_VALUES`]).
    pub values: Option<Vec<i64>>,
    /// Whether the loop is a grid-stride loop (step involving `gridDim`).
    pub grid_stride: bool,
}

/// The loops of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LoopFacts {
    /// Every `for`/`while`/`do` loop, in statement order.
    pub loops: Vec<LoopInfo>,
    /// (read expression, values): reads of an induction variable inside its
    /// loop whose possible values are known.
    pub value_reads: Vec<(u32, Vec<i64>)>,
}

impl LoopFacts {
    /// The facts of the loop at statement `s`.
    pub fn get(&self, s: StmtId) -> Option<&LoopInfo> {
        self.loops.iter().find(|l| l.stmt == s)
    }
}

/// The Datalog program (crepe generates undocumented items).
#[allow(missing_docs)]
mod program {
    use crepe::crepe;

    crepe! {
        @input
        pub struct LoopStmt(pub u32);
        @input
        pub struct DefIn(pub u32, pub u32);
        @input
        pub struct DefVar(pub u32, pub u32);
        @input
        pub struct DefValue(pub u32, pub u32);
        // (def, var, op, step expr or u32::MAX for 1)
        @input
        pub struct StepUpdate(pub u32, pub u32, pub u8, pub u32);
        @input
        pub struct EveryIter(pub u32, pub u32);
        @input
        pub struct ReadOf(pub u32, pub u32);
        @input
        pub struct Child(pub u32, pub u32);
        @input
        pub struct Load(pub u32);
        @input
        pub struct CondRead(pub u32, pub u32);
        // (loop, op, lhs, rhs): the loop condition is `lhs op rhs` (both orientations).
        @input
        pub struct CondCmp(pub u32, pub u8, pub u32, pub u32);
        @input
        pub struct Reaches(pub u32, pub u32);
        @input
        pub struct ThreadDep(pub u32);
        @input
        pub struct FromMemory(pub u32);
        @input
        pub struct One(pub u32);

        @output
        pub struct Induction(pub u32, pub u32, pub u8, pub u32);
        @output
        pub struct GuardOf(pub u32, pub u32, pub u8, pub u32);
        @output
        pub struct Init(pub u32, pub u32, pub u32);
        @output
        pub struct NoInitValue(pub u32, pub u32);
        @output
        pub struct ThreadBound(pub u32);
        @output
        pub struct ThreadInit(pub u32);
        @output
        pub struct MemoryBound(pub u32);

        struct Modified(u32, u32);
        struct SteppingDef(u32, u32);
        struct Stepping(u32, u32, u32);
        struct Irregular(u32, u32);
        struct MultiStep(u32, u32);
        struct Variant(u32, u32);
        struct Invariant(u32, u32);
        struct InitDef(u32, u32, u32);
        struct MultiInit(u32, u32);
        struct Expr(u32);

        Modified(l, v) <- DefIn(d, l), DefVar(d, v);
        Stepping(l, v, d) <- DefIn(d, l), DefVar(d, v), StepUpdate(d, v, _, _), EveryIter(d, l);
        SteppingDef(d, l) <- Stepping(l, _, d);
        Irregular(l, v) <- DefIn(d, l), DefVar(d, v), !SteppingDef(d, l);
        MultiStep(l, v) <- Stepping(l, v, a), Stepping(l, v, b), (a != b);

        // Loop invariance: reads of variables the loop modifies, and loads,
        // vary; a composite varies with any child.
        Expr(e) <- Child(e, _);
        Expr(e) <- Child(_, e);
        Expr(e) <- One(e);
        Variant(e, l) <- ReadOf(e, v), Modified(l, v);
        Variant(e, l) <- Load(e), LoopStmt(l);
        Variant(p, l) <- Child(p, c), Variant(c, l);
        Invariant(e, l) <- Expr(e), LoopStmt(l), !Variant(e, l);

        Induction(l, v, op, k) <- Stepping(l, v, d), StepUpdate(d, v, op, k),
            !Irregular(l, v), !MultiStep(l, v), Invariant(k, l);

        // The definitions of an induction variable entering the loop.
        InitDef(l, v, d) <- CondRead(l, u), ReadOf(u, v), Reaches(u, d), !DefIn(d, l),
            Induction(l, v, _, _);
        MultiInit(l, v) <- InitDef(l, v, a), InitDef(l, v, b), (a != b);
        Init(l, v, e) <- InitDef(l, v, d), DefValue(d, e), !MultiInit(l, v);
        NoInitValue(l, v) <- InitDef(l, v, d), !DefValue(d, _);
        NoInitValue(l, v) <- MultiInit(l, v);

        GuardOf(l, v, op, b) <- CondCmp(l, op, a, b), ReadOf(a, v), Induction(l, v, _, _),
            Invariant(b, l);

        ThreadBound(l) <- GuardOf(l, _, _, b), ThreadDep(b);
        ThreadInit(l) <- GuardOf(l, v, _, _), Init(l, v, e), ThreadDep(e);
        MemoryBound(l) <- GuardOf(l, _, _, b), FromMemory(b);
        MemoryBound(l) <- GuardOf(l, v, _, _), Init(l, v, e), FromMemory(e);
        MemoryBound(l) <- CondRead(l, u), FromMemory(u);
    }
}

const OP_LT: u8 = 0;
const OP_LE: u8 = 1;
const OP_GT: u8 = 2;
const OP_GE: u8 = 3;
const OP_NE: u8 = 4;

fn cmp_code(op: BinOp) -> Option<u8> {
    Some(match op {
        BinOp::Lt => OP_LT,
        BinOp::Le => OP_LE,
        BinOp::Gt => OP_GT,
        BinOp::Ge => OP_GE,
        BinOp::Ne => OP_NE,
        _ => return None,
    })
}

fn flip(code: u8) -> u8 {
    match code {
        OP_LT => OP_GT,
        OP_LE => OP_GE,
        OP_GT => OP_LT,
        OP_GE => OP_LE,
        c => c,
    }
}

fn cmp_op(code: u8) -> BinOp {
    match code {
        OP_LT => BinOp::Lt,
        OP_LE => BinOp::Le,
        OP_GT => BinOp::Gt,
        OP_GE => BinOp::Ge,
        _ => BinOp::Ne,
    }
}

/// `e` without casts and unary plus.
pub fn strip(f: &Function, mut e: ExprId) -> ExprId {
    loop {
        match &f.expr(e).kind {
            ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => e = *a,
            _ => return e,
        }
    }
}

/// The update a definition performs on its variable, if it is a step:
/// `(var, op, step operand)` (`None` operand: a step of 1).
fn step_update(f: &Function, d: ExprId) -> Option<(VarId, StepOp, Option<ExprId>)> {
    let var_of = |e: ExprId| match &f.expr(strip(f, e)).kind {
        ExprKind::Var(v) => Some(*v),
        _ => None,
    };
    match &f.expr(d).kind {
        ExprKind::IncDec {
            target, increment, ..
        } => Some((
            var_of(*target)?,
            if *increment { StepOp::Add } else { StepOp::Sub },
            None,
        )),
        ExprKind::Assign {
            op: Some(op),
            lhs,
            rhs,
        } => Some((var_of(*lhs)?, step_op(*op)?, Some(*rhs))),
        ExprKind::Assign { op: None, lhs, rhs } => {
            let v = var_of(*lhs)?;
            let ExprKind::Binary(op, a, b) = &f.expr(strip(f, *rhs)).kind else {
                return None;
            };
            let op = step_op(*op)?;
            if var_of(*a) == Some(v) {
                Some((v, op, Some(*b)))
            } else if var_of(*b) == Some(v) && matches!(op, StepOp::Add | StepOp::Mul) {
                Some((v, op, Some(*a)))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn step_op(op: BinOp) -> Option<StepOp> {
    Some(match op {
        BinOp::Add => StepOp::Add,
        BinOp::Sub => StepOp::Sub,
        BinOp::Mul => StepOp::Mul,
        BinOp::Div => StepOp::Div,
        BinOp::Shl => StepOp::Shl,
        BinOp::Shr => StepOp::Shr,
        _ => return None,
    })
}

/// A loop's parts.
struct LoopParts {
    stmt: StmtId,
    cond: Option<ExprId>,
    step: Option<ExprId>,
    body: StmtId,
}

fn loop_parts(f: &Function, s: StmtId) -> Option<LoopParts> {
    match &f.stmt(s).kind {
        StmtKind::For {
            cond, step, body, ..
        } => Some(LoopParts {
            stmt: s,
            cond: *cond,
            step: *step,
            body: *body,
        }),
        StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => Some(LoopParts {
            stmt: s,
            cond: Some(*cond),
            step: None,
            body: *body,
        }),
        _ => None,
    }
}

/// Every expression inside `e` (itself included).
fn exprs_in(f: &Function, e: ExprId, out: &mut Vec<ExprId>) {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        out.push(x);
        stack.extend(f.child_exprs(x));
    }
}

/// Expressions and declaration definitions syntactically inside statement `s`.
fn stmt_contents(f: &Function, s: StmtId, exprs: &mut Vec<ExprId>, decls: &mut Vec<StmtId>) {
    let mut stack = vec![s];
    while let Some(x) = stack.pop() {
        match &f.stmt(x).kind {
            StmtKind::Decl { init, .. } => {
                decls.push(x);
                if let Some(e) = init {
                    exprs_in(f, *e, exprs);
                }
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) | StmtKind::Case(Some(e)) => {
                exprs_in(f, *e, exprs)
            }
            StmtKind::If { cond, .. }
            | StmtKind::Switch { cond, .. }
            | StmtKind::While { cond, .. }
            | StmtKind::DoWhile { cond, .. } => exprs_in(f, *cond, exprs),
            StmtKind::For { cond, step, .. } => {
                for e in cond.iter().chain(step.iter()) {
                    exprs_in(f, *e, exprs);
                }
            }
            _ => {}
        }
        stack.extend(f.child_stmts(x));
    }
}

/// Whether statement `s` contains a `continue` that applies to the loop
/// around it (not one of a nested loop).
fn has_continue(f: &Function, s: StmtId) -> bool {
    match &f.stmt(s).kind {
        StmtKind::Continue => true,
        StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. } => false,
        _ => f.child_stmts(s).into_iter().any(|c| has_continue(f, c)),
    }
}

/// Expression ids of the definitions made once per iteration: those in the
/// `for` step, and those at the top level of the body before the first
/// statement that may `continue`.
fn every_iteration_defs(f: &Function, p: &LoopParts) -> Vec<ExprId> {
    let mut out = Vec::new();
    if let Some(st) = p.step {
        exprs_in(f, st, &mut out);
    }
    let items = match &f.stmt(p.body).kind {
        StmtKind::Block(v) => v.clone(),
        _ => vec![p.body],
    };
    for s in items {
        if has_continue(f, s) {
            break;
        }
        match &f.stmt(s).kind {
            StmtKind::Expr(e) => exprs_in(f, *e, &mut out),
            StmtKind::Decl { init: Some(e), .. } => exprs_in(f, *e, &mut out),
            _ => {}
        }
    }
    out
}

/// Constant value of an expression under the launch (block dimensions,
/// template values), through casts and variables with one constant
/// definition.
pub fn launch_const(f: &Function, e: ExprId, launch: &LaunchDims) -> Option<i64> {
    launch_const_depth(f, e, launch, 0)
}

fn launch_const_depth(f: &Function, e: ExprId, launch: &LaunchDims, depth: u32) -> Option<i64> {
    if depth > 32 {
        return None;
    }
    let rec = |x: ExprId| launch_const_depth(f, x, launch, depth + 1);
    match &f.expr(e).kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Bool(b) => Some(*b as i64),
        ExprKind::SizeOf(Some(n)) => i64::try_from(*n).ok(),
        ExprKind::Builtin(Builtin::WarpSize) => Some(32),
        ExprKind::Builtin(Builtin::BlockDim(d)) => {
            let i = match d {
                Dim::X => 0,
                Dim::Y => 1,
                Dim::Z => 2,
            };
            launch.block[i].map(i64::from)
        }
        ExprKind::TemplateParam(p) => launch.template_values.get(*p as usize).copied().flatten(),
        ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => rec(*a),
        ExprKind::Unary(UnOp::Neg, a) => rec(*a).and_then(|v| v.checked_neg()),
        ExprKind::Var(v) => super::barriers::single_def(f, v.0).and_then(rec),
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (rec(*a)?, rec(*b)?);
            super::barriers::fold_arith(*op, x, y)
        }
        _ => None,
    }
}

/// Whether `e` mentions `gridDim`.
fn mentions_grid(f: &Function, e: ExprId) -> bool {
    let mut v = Vec::new();
    exprs_in(f, e, &mut v);
    v.iter().any(|x| {
        matches!(f.expr(*x).kind, ExprKind::Builtin(Builtin::GridDim(_)))
            || matches!(&f.expr(*x).kind, ExprKind::Var(w)
                if super::barriers::single_def(f, w.0).is_some_and(|d| mentions_grid(f, d)))
    })
}

impl LoopFacts {
    /// Derive the loop facts of `f`.
    pub fn compute(f: &Function, r: &Relations, u: &Uniformity, launch: &LaunchDims) -> LoopFacts {
        use program::*;
        let loops: Vec<LoopParts> = (0..f.stmts.len())
            .filter_map(|i| loop_parts(f, StmtId(i as u32)))
            .collect();
        if loops.is_empty() {
            return LoopFacts::default();
        }
        let mut rt = Crepe::new();
        let decl_def = |s: StmtId| f.exprs.len() as u32 + s.0;
        // Definitions inside each loop, and which run once per iteration.
        let mut inside: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        let mut cond_exprs: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for p in &loops {
            let l = p.stmt.0;
            rt.extend([LoopStmt(l)]);
            let mut exprs = Vec::new();
            let mut decls = Vec::new();
            stmt_contents(f, p.body, &mut exprs, &mut decls);
            for e in p.cond.iter().chain(p.step.iter()) {
                exprs_in(f, *e, &mut exprs);
            }
            let defs: BTreeSet<u32> = exprs
                .iter()
                .map(|e| e.0)
                .chain(decls.iter().map(|s| decl_def(*s)))
                .collect();
            rt.extend(defs.iter().map(|d| DefIn(*d, l)));
            for e in every_iteration_defs(f, p) {
                rt.extend([EveryIter(e.0, l)]);
            }
            if let Some(c) = p.cond {
                let mut ce = Vec::new();
                exprs_in(f, c, &mut ce);
                rt.extend(ce.iter().map(|e| CondRead(l, e.0)));
                cond_exprs.insert(l, ce.iter().map(|e| e.0).collect());
                if let ExprKind::Binary(op, a, b) = &f.expr(strip(f, c)).kind
                    && let Some(code) = cmp_code(*op)
                {
                    let (a, b) = (strip(f, *a), strip(f, *b));
                    rt.extend([CondCmp(l, code, a.0, b.0), CondCmp(l, flip(code), b.0, a.0)]);
                }
            }
            inside.insert(l, defs);
        }
        for (i, e) in f.exprs.iter().enumerate() {
            let id = i as u32;
            rt.extend([One(id)]);
            match &e.kind {
                ExprKind::Var(v) => rt.extend([ReadOf(id, v.0)]),
                ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => {
                    // A cast of a read reads the same variable.
                    if let ExprKind::Var(v) = &f.expr(strip(f, *a)).kind {
                        rt.extend([ReadOf(id, v.0)]);
                    }
                }
                _ => {}
            }
            if let Some((v, op, k)) = step_update(f, ExprId(id)) {
                rt.extend([StepUpdate(id, v.0, op.code(), k.map_or(u32::MAX, |k| k.0))]);
            }
            if !u.is_uniform(id) {
                rt.extend([ThreadDep(id)]);
            }
            if u.expr_from_memory.get(i).copied().unwrap_or(false) {
                rt.extend([FromMemory(id)]);
            }
        }
        rt.extend([One(u32::MAX)]);
        rt.extend(r.child.iter().map(|&(p, c)| Child(p, c)));
        rt.extend(r.loads.iter().map(|e| Load(*e)));
        rt.extend(r.flow.def_var.iter().map(|&(d, v)| DefVar(d, v)));
        rt.extend(r.flow.def_value.iter().map(|&(d, e)| DefValue(d, e)));
        rt.extend(r.flow.reaches.iter().map(|&(u, d)| Reaches(u, d)));
        let (inductions, guards, inits, no_init, thread_bound, thread_init, memory_bound) =
            rt.run_with_hasher::<rustc_hash::FxBuildHasher>();

        let mut out = LoopFacts::default();
        for p in &loops {
            let l = p.stmt.0;
            let init_of = |v: u32| {
                inits
                    .iter()
                    .find(|Init(ll, vv, _)| *ll == l && *vv == v)
                    .map(|Init(_, _, e)| ExprId(*e))
            };
            let mut vars: Vec<InductionVar> = inductions
                .iter()
                .filter(|Induction(ll, ..)| *ll == l)
                .map(|Induction(_, v, op, k)| {
                    let step = (*k != u32::MAX).then_some(ExprId(*k));
                    let init = init_of(*v);
                    let uniform = step.is_none_or(|k| u.is_uniform(k.0))
                        && init.is_none_or(|i| u.is_uniform(i.0));
                    InductionVar {
                        var: VarId(*v),
                        op: StepOp::from_code(*op),
                        step,
                        init,
                        uniform,
                    }
                })
                .collect();
            vars.sort_by_key(|v| v.var);
            vars.dedup_by_key(|v| v.var);
            let mut gs: Vec<&GuardOf> = guards.iter().filter(|GuardOf(ll, ..)| *ll == l).collect();
            gs.sort_by_key(|GuardOf(_, v, op, b)| (*v, *op, *b));
            let guard = gs.first().map(|GuardOf(_, v, op, b)| Guard {
                var: VarId(*v),
                op: cmp_op(*op),
                bound: ExprId(*b),
            });
            let memory = memory_bound.iter().any(|MemoryBound(x)| *x == l);
            let tb = thread_bound.iter().any(|ThreadBound(x)| *x == l);
            let ti = thread_init.iter().any(|ThreadInit(x)| *x == l);
            let guard_var_no_init = guard.as_ref().is_some_and(|g| {
                no_init
                    .iter()
                    .any(|NoInitValue(ll, v)| *ll == l && *v == g.var.0)
            });
            let (kind, reason) = if memory {
                (
                    LoopKind::MemoryBound,
                    Some(format!(
                        "the loop condition `{}` reads a value loaded from memory",
                        p.cond.map(|c| f.expr_text(c)).unwrap_or_default()
                    )),
                )
            } else if let Some(g) = &guard {
                let iv = vars.iter().find(|v| v.var == g.var);
                if iv.is_some_and(|iv| !iv.step.is_none_or(|k| u.is_uniform(k.0))) {
                    (
                        LoopKind::Unknown,
                        Some(format!(
                            "`{}` steps by a thread-dependent amount",
                            f.var(g.var).name
                        )),
                    )
                } else if guard_var_no_init && f.var(g.var).param_position.is_none() {
                    (
                        LoopKind::Unknown,
                        Some(format!(
                            "`{}` enters the loop with more than one value",
                            f.var(g.var).name
                        )),
                    )
                } else if ti {
                    (LoopKind::ThreadInit, None)
                } else if tb {
                    (LoopKind::ThreadBound, None)
                } else {
                    (LoopKind::Counted, None)
                }
            } else {
                let why = match p.cond {
                    None => "the loop has no condition".to_string(),
                    Some(c) => format!(
                        "no induction variable with a loop-invariant bound in `{}`",
                        f.expr_text(c)
                    ),
                };
                (LoopKind::Unknown, Some(why))
            };
            let grid_stride = kind == LoopKind::ThreadInit
                && guard.as_ref().is_some_and(|g| {
                    vars.iter()
                        .find(|v| v.var == g.var)
                        .and_then(|v| v.step)
                        .is_some_and(|k| mentions_grid(f, k))
                });
            let values = match (&guard, kind) {
                (Some(g), LoopKind::Counted) => vars
                    .iter()
                    .find(|v| v.var == g.var)
                    .and_then(|iv| enumerate_values(f, iv, g, launch)),
                _ => None,
            };
            // Reads of the guard variable inside the loop that see only its
            // initial and stepping definitions.
            if let (Some(g), Some(vals)) = (&guard, &values) {
                let defs = &inside[&l];
                let init_defs: BTreeSet<u32> = r
                    .flow
                    .reaches
                    .iter()
                    .filter(|(uu, d)| {
                        cond_exprs.get(&l).is_some_and(|c| c.contains(uu)) && !defs.contains(d)
                    })
                    .map(|(_, d)| *d)
                    .collect();
                let var_defs: BTreeSet<u32> = r
                    .flow
                    .def_var
                    .iter()
                    .filter(|(_, v)| *v == g.var.0)
                    .map(|(d, _)| *d)
                    .collect();
                let loop_defs: BTreeSet<u32> = defs.intersection(&var_defs).copied().collect();
                let mut reads: BTreeMap<u32, bool> = BTreeMap::new();
                let mut all = Vec::new();
                let mut decls = Vec::new();
                stmt_contents(f, p.body, &mut all, &mut decls);
                for e in p.cond.iter().chain(p.step.iter()) {
                    exprs_in(f, *e, &mut all);
                }
                for e in all {
                    if matches!(f.expr(e).kind, ExprKind::Var(v) if v == g.var) {
                        let ok =
                            r.flow
                                .reaches
                                .iter()
                                .filter(|(uu, _)| *uu == e.0)
                                .all(|(_, d)| {
                                    (init_defs.contains(d) && var_defs.contains(d))
                                        || loop_defs.contains(d)
                                });
                        reads.insert(e.0, ok);
                    }
                }
                let exit = exit_value(f, vars.iter().find(|v| v.var == g.var), vals, launch);
                for (e, ok) in reads {
                    if !ok {
                        continue;
                    }
                    let mut v = vals.clone();
                    if cond_exprs.get(&l).is_some_and(|c| c.contains(&e)) {
                        match exit {
                            Some(x) => v.push(x),
                            None => continue,
                        }
                    }
                    out.value_reads.push((e, v));
                }
            }
            out.loops.push(LoopInfo {
                stmt: p.stmt,
                cond: p.cond,
                vars,
                guard,
                kind,
                reason,
                values,
                grid_stride,
            });
        }
        out
    }
}

/// The value after the last iteration (the one the failing test sees).
fn exit_value(
    f: &Function,
    iv: Option<&InductionVar>,
    vals: &[i64],
    launch: &LaunchDims,
) -> Option<i64> {
    let iv = iv?;
    let k = match iv.step {
        None => 1,
        Some(k) => launch_const(f, k, launch)?,
    };
    match vals.last() {
        Some(last) => iv.op.apply(*last, k),
        None => iv.init.and_then(|i| launch_const(f, i, launch)),
    }
}

/// The values the guard variable takes in the body, when everything is
/// constant under the launch.
fn enumerate_values(
    f: &Function,
    iv: &InductionVar,
    g: &Guard,
    launch: &LaunchDims,
) -> Option<Vec<i64>> {
    let mut v = launch_const(f, iv.init?, launch)?;
    let bound = launch_const(f, g.bound, launch)?;
    let k = match iv.step {
        None => 1,
        Some(k) => launch_const(f, k, launch)?,
    };
    let holds = |v: i64| match g.op {
        BinOp::Lt => v < bound,
        BinOp::Le => v <= bound,
        BinOp::Gt => v > bound,
        BinOp::Ge => v >= bound,
        _ => v != bound,
    };
    let mut out = Vec::new();
    while holds(v) {
        if out.len() >= super::affine::MAX_VALUES {
            return None;
        }
        out.push(v);
        let next = iv.op.apply(v, k)?;
        if next == v {
            return None;
        }
        v = next;
    }
    Some(out)
}
