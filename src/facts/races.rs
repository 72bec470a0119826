//! Data races on shared and global memory (GPUVerify's race freedom, on the
//! barrier intervals of [`super::intervals`]).
//!
//! Two accesses race when they touch the same location, at least one writes,
//! they are not both atomic, two different threads can perform them, and no
//! barrier orders them (they can run in the same barrier interval). Since
//! Volta lanes of one warp are not in lock-step, so a warp gives no order
//! without `__syncwarp`.
//!
//! Addresses are linear forms over per-thread atoms (`threadIdx`, `blockIdx`,
//! loop counters) and thread-invariant symbols (parameters, uniform values).
//! For a pair of accesses, the atoms are instantiated once per thread and an
//! integer program (good_lp with the pure-Rust microlp solver) looks for two
//! distinct threads inside the launch's block (and grid) dimensions that
//! satisfy both accesses' guarding conditions and collide; a solution is the
//! witness. An index that is not affine is a *possible* race only where the
//! other access is a write to the same array in the same interval.
//!
//! Cost is bounded by counted work, not time (so results do not depend on
//! the machine's load): pairs per function, solver work per function
//! ([`WORK_BUDGET`]: programs plus branch-and-bound nodes) and nodes per
//! program ([`NODE_LIMIT`]); a function over a cap gets
//! [`RaceFacts::incomplete`] instead of a hang.

use super::LaunchDims;
use super::intervals::Intervals;
use super::uniformity::Uniformity;
use crate::ir::{
    BarrierKind, BinOp, Builtin, Dim, ExprId, ExprKind, Function, MemSpace, Span, StmtId, StmtKind,
    Type, UnOp, VarId,
};
use good_lp::{Expression, ProblemVariables, Variable, constraint, microlp, variable};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

/// At most this many pairs of accesses are examined per function.
pub const MAX_PAIRS: usize = 20_000;
/// Work budget of the integer programs per function, in solver work units:
/// one per program solved plus one per branch-and-bound node. A count, not
/// a wall-clock time, so that the findings do not depend on the machine's
/// load (issue 8, session 6: a 2 s budget gave different races on a loaded
/// and an idle machine).
pub const WORK_BUDGET: u64 = 60_000;
/// Branch-and-bound nodes one program may use; a program that needs more
/// stops the function's race check (`analysis-incomplete`) rather than
/// being read as "no race".
pub const NODE_LIMIT: u64 = 20_000;

/// One side of a race.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RaceSide {
    /// Index into `Function::accesses`, or `None` for a `__shared__` scalar.
    pub access: Option<usize>,
    /// The statement.
    pub stmt: u32,
    /// Where it is.
    pub span: Span,
    /// Write or read.
    pub is_write: bool,
    /// `array[index]` as written.
    pub text: String,
}

/// Two threads that collide.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Witness {
    /// threadIdx of the first and second thread.
    pub threads: [[i64; 3]; 2],
    /// blockIdx of both (only for races between blocks).
    pub blocks: Option<[[i64; 3]; 2]>,
    /// Values of thread-invariant symbols and loop counters in the witness.
    pub values: Vec<(String, i64)>,
    /// The witness was re-checked in integers outside the solver (threads
    /// in range and distinct, iterations valid, the addresses equal):
    /// only a checked witness is printed.
    pub checked: bool,
}

/// A race between two accesses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Race {
    /// The first access (by source order).
    pub first: RaceSide,
    /// The second access (the same one for a race of a statement with itself).
    pub second: RaceSide,
    /// Memory space.
    pub space: MemSpace,
    /// The array.
    pub array: String,
    /// `false`: an index is not affine, the race is possible, not proven.
    pub proven: bool,
    /// The threads (for a possible race: two threads that can both run the accesses).
    pub witness: Option<Witness>,
    /// Why the index is unknown (possible races).
    pub unknown: Option<String>,
    /// Thread-invariant symbols (parameters, values the program computes)
    /// whose values decide whether the addresses collide: the witness holds
    /// only for the values it names.
    pub depends_on: Vec<String>,
    /// For a possible race: what must hold of the data for the code to be
    /// race-free, in words, naming the loaded values or the data guard.
    pub assumption: Option<String>,
}

/// The races of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RaceFacts {
    /// Races found.
    pub races: Vec<Race>,
    /// Why the analysis stopped early (budget), when it did.
    pub incomplete: Option<String>,
}

/// Atoms of linear forms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Atom {
    Tid(usize),
    Bid(usize),
    /// A loop counter that is not an arithmetic sequence: (variable, loop).
    Loop(u32, u32),
    /// The iteration number of a loop with a constant step.
    Iter(u32),
    /// `floor(x / c)` of a form `x` (non-negative) and a constant `c > 0`:
    /// an integer `q` with `c·q <= x <= c·q + c - 1`.
    Quot(Box<Lin>, i64),
    /// A thread-invariant value; `true` when it can differ between blocks.
    Sym(String, bool),
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
struct Lin {
    terms: BTreeMap<Atom, i64>,
    c: i64,
}

impl Lin {
    fn constant(c: i64) -> Lin {
        Lin {
            terms: BTreeMap::new(),
            c,
        }
    }
    fn atom(a: Atom) -> Lin {
        Lin {
            terms: BTreeMap::from([(a, 1)]),
            c: 0,
        }
    }
    fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }
    fn add(mut self, o: &Lin, k: i64) -> Option<Lin> {
        for (a, v) in &o.terms {
            let e = self.terms.entry(a.clone()).or_insert(0);
            *e = e.checked_add(v.checked_mul(k)?)?;
            if *e == 0 {
                self.terms.remove(a);
            }
        }
        self.c = self.c.checked_add(o.c.checked_mul(k)?)?;
        Some(self)
    }
    fn scale(mut self, k: i64) -> Option<Lin> {
        if k == 0 {
            return Some(Lin::constant(0));
        }
        for v in self.terms.values_mut() {
            *v = v.checked_mul(k)?;
        }
        self.c = self.c.checked_mul(k)?;
        Some(self)
    }
    fn invariant(&self) -> bool {
        self.terms.keys().all(|a| match a {
            Atom::Sym(..) => true,
            Atom::Quot(x, _) => x.invariant(),
            _ => false,
        })
    }
    /// `floor(self / c)`.
    fn quot(self, c: i64) -> Option<Lin> {
        if c <= 0 {
            return None;
        }
        match self.as_const() {
            Some(v) => Some(Lin::constant(v.checked_div(c)?)),
            None => Some(Lin::atom(Atom::Quot(Box::new(self), c))),
        }
    }
    /// `self mod c` as `self - c·floor(self / c)`.
    fn rem(self, c: i64) -> Option<Lin> {
        let q = self.clone().quot(c)?;
        self.add(&q, -c)
    }
}

/// A guard: a condition and the value it has where the statement runs.
type Guard = (ExprId, bool);

#[derive(Clone, Debug, Default)]
struct Place {
    guards: Vec<Guard>,
    /// Enclosing loops (statement ids), outermost first.
    loops: Vec<u32>,
}

struct LoopInfo {
    var: Option<VarId>,
    /// The initial value of the counter.
    start: Option<ExprId>,
    /// Constant additive step; `None` for geometric steps (`*=`, `>>=`).
    stride: Option<i64>,
    /// The step adds something that is not constant: the counter is unknown.
    opaque: bool,
    /// The start is the same for all threads.
    start_uniform: bool,
    /// Lower / upper bound of the counter: expression plus an adjustment
    /// (`i < n` gives `i <= n - 1`).
    lower: Option<(ExprId, i64)>,
    upper: Option<(ExprId, i64)>,
    has_barrier: bool,
}

struct Cx<'a> {
    f: &'a Function,
    u: &'a Uniformity,
    launch: &'a LaunchDims,
    defs: Vec<u32>,
    init: Vec<Option<ExprId>>,
    places: HashMap<u32, Place>,
    loops: HashMap<u32, LoopInfo>,
    /// Linear lane conditions every caller calls under (`c·tid + k op 0`).
    entry: Vec<([i64; 3], i64, BinOp)>,
    /// `__shared__` scalars set by exactly one plain assignment, outside
    /// every loop (`if (threadIdx.x == 0) len = end - start;`): the
    /// assigning statement and the value, by variable.
    shared_once: HashMap<u32, (StmtId, ExprId)>,
    /// Solver work spent on this function (see [`WORK_BUDGET`]).
    work: Cell<u64>,
    /// Programs stopped at [`NODE_LIMIT`] without an answer.
    interrupted: Cell<u32>,
}

/// Turns a linear form into an LP expression (adding the constraints it
/// needs) for one of the two thread instances.
type ToExpr<'a> = dyn FnMut(&mut Inst, &Lin, u8, &mut Vec<good_lp::Constraint>) -> Expression + 'a;

fn dim_index(d: Dim) -> usize {
    match d {
        Dim::X => 0,
        Dim::Y => 1,
        Dim::Z => 2,
    }
}

fn exits(f: &Function, s: StmtId) -> bool {
    match &f.stmt(s).kind {
        StmtKind::Return(_) | StmtKind::Continue | StmtKind::Break => true,
        StmtKind::Block(v) => v.last().is_some_and(|l| exits(f, *l)),
        _ => false,
    }
}

fn stmt_contains_barrier(f: &Function, s: StmtId, depth: u32) -> bool {
    if depth > 200 {
        return true;
    }
    if let StmtKind::Barrier(i) = &f.stmt(s).kind
        && f.barriers.get(*i as usize).is_some_and(|b| {
            matches!(
                b.kind,
                BarrierKind::SyncThreads
                    | BarrierKind::SyncThreadsReduce
                    | BarrierKind::CgBlockSync
                    | BarrierKind::CgGridSync
            )
        })
    {
        return true;
    }
    f.child_stmts(s)
        .into_iter()
        .any(|c| stmt_contains_barrier(f, c, depth + 1))
}

impl<'a> Cx<'a> {
    fn new(f: &'a Function, u: &'a Uniformity, launch: &'a LaunchDims) -> Cx<'a> {
        let mut defs = vec![0u32; f.vars.len()];
        let mut init = vec![None; f.vars.len()];
        for s in &f.stmts {
            if let StmtKind::Decl { var, init: i } = &s.kind
                && let Some(d) = defs.get_mut(var.0 as usize)
            {
                *d += 1;
                init[var.0 as usize] = *i;
            }
        }
        for e in &f.exprs {
            let target = match &e.kind {
                ExprKind::Assign { lhs, .. } => Some(*lhs),
                ExprKind::IncDec { target, .. } => Some(*target),
                _ => None,
            };
            if let Some(t) = target
                && let ExprKind::Var(v) = f.expr(t).kind
                && let Some(d) = defs.get_mut(v.0 as usize)
            {
                *d += 1;
            }
            // Taking a local's address lets anything write it.
            if let ExprKind::Unary(UnOp::AddrOf, a) = &e.kind
                && let ExprKind::Var(v) = f.expr(*a).kind
                && let Some(d) = defs.get_mut(v.0 as usize)
            {
                *d += 2;
            }
        }
        let mut cx = Cx {
            f,
            u,
            launch,
            defs,
            init,
            places: HashMap::new(),
            loops: HashMap::new(),
            entry: Vec::new(),
            shared_once: HashMap::new(),
            work: Cell::new(0),
            interrupted: Cell::new(0),
        };
        if let Some(b) = f.body {
            let mut place = Place::default();
            cx.walk(b, &mut place, 0);
        }
        cx.shared_once = cx.shared_scalars_set_once();
        cx
    }

    /// See [`Cx::shared_once`].
    fn shared_scalars_set_once(&self) -> HashMap<u32, (StmtId, ExprId)> {
        let f = self.f;
        let scalar = |v: VarId| {
            let var = f.var(v);
            var.space == Some(MemSpace::Shared)
                && var.param_position.is_none()
                && !matches!(var.ty, Type::Array(..) | Type::Pointer(_))
        };
        let mut out = HashMap::new();
        for (si, st) in f.stmts.iter().enumerate() {
            let StmtKind::Expr(e) = &st.kind else {
                continue;
            };
            let ExprKind::Assign { op: None, lhs, rhs } = &f.expr(*e).kind else {
                continue;
            };
            let ExprKind::Var(v) = f.expr(*lhs).kind else {
                continue;
            };
            if !scalar(v) || self.init.get(v.0 as usize).copied().flatten().is_some() {
                continue;
            }
            // Declarations count one definition each; the assignment the other.
            let decls = f
                .stmts
                .iter()
                .filter(|s| matches!(&s.kind, StmtKind::Decl { var, .. } if *var == v))
                .count() as u32;
            let in_loop = self
                .places
                .get(&(si as u32))
                .is_none_or(|p| !p.loops.is_empty());
            if self.defs.get(v.0 as usize).copied() == Some(decls + 1) && !in_loop {
                out.insert(v.0, (StmtId(si as u32), *rhs));
            }
        }
        out
    }

    fn walk(&mut self, s: StmtId, place: &mut Place, depth: u32) {
        if depth > 200 {
            return;
        }
        self.places.insert(s.0, place.clone());
        let f = self.f;
        match &f.stmt(s).kind {
            StmtKind::Block(items) => {
                let n = place.guards.len();
                for i in items {
                    self.walk(*i, place, depth + 1);
                    // `if (c) return;` guards the rest of the block with !c.
                    if let StmtKind::If {
                        cond,
                        then,
                        els: None,
                    } = &f.stmt(*i).kind
                        && exits(f, *then)
                    {
                        place.guards.push((*cond, false));
                    }
                    // GPUVerify's `__requires(c)` / `__assume(c)`: c holds after.
                    if let StmtKind::Expr(e) = &f.stmt(*i).kind
                        && let ExprKind::Call { callee, args, .. } = &f.expr(*e).kind
                        && matches!(callee.as_str(), "__requires" | "__assume")
                        && args.len() == 1
                    {
                        place.guards.push((args[0], true));
                    }
                }
                place.guards.truncate(n);
            }
            StmtKind::If { cond, then, els } => {
                place.guards.push((*cond, true));
                self.walk(*then, place, depth + 1);
                place.guards.pop();
                if let Some(e) = els {
                    place.guards.push((*cond, false));
                    self.walk(*e, place, depth + 1);
                    place.guards.pop();
                }
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                if let Some(i) = init {
                    self.walk(*i, place, depth + 1);
                }
                let info = self.loop_info(*init, *cond, *step, *body);
                let counted = info.var.is_some();
                self.loops.insert(s.0, info);
                place.loops.push(s.0);
                let pushed = match cond {
                    Some(c) if !counted => {
                        place.guards.push((*c, true));
                        true
                    }
                    _ => false,
                };
                self.walk(*body, place, depth + 1);
                if pushed {
                    place.guards.pop();
                }
                place.loops.pop();
            }
            StmtKind::While { cond, body } => {
                self.loops.insert(
                    s.0,
                    LoopInfo {
                        var: None,
                        start: None,
                        stride: None,
                        opaque: false,
                        start_uniform: true,
                        lower: None,
                        upper: None,
                        has_barrier: stmt_contains_barrier(f, *body, 0),
                    },
                );
                place.loops.push(s.0);
                place.guards.push((*cond, true));
                self.walk(*body, place, depth + 1);
                place.guards.pop();
                place.loops.pop();
            }
            StmtKind::DoWhile { body, .. } => {
                self.loops.insert(
                    s.0,
                    LoopInfo {
                        var: None,
                        start: None,
                        stride: None,
                        opaque: false,
                        start_uniform: true,
                        lower: None,
                        upper: None,
                        has_barrier: stmt_contains_barrier(f, *body, 0),
                    },
                );
                place.loops.push(s.0);
                self.walk(*body, place, depth + 1);
                place.loops.pop();
            }
            _ => {
                for c in f.child_stmts(s) {
                    self.walk(c, place, depth + 1);
                }
            }
        }
    }

    /// The counter of `for (init; cond; step)` and its bounds.
    fn loop_info(
        &self,
        init: Option<StmtId>,
        cond: Option<ExprId>,
        step: Option<ExprId>,
        body: StmtId,
    ) -> LoopInfo {
        let f = self.f;
        let has_barrier = stmt_contains_barrier(f, body, 0);
        let none = LoopInfo {
            var: None,
            start: None,
            stride: None,
            opaque: false,
            start_uniform: true,
            lower: None,
            upper: None,
            has_barrier,
        };
        let (var, start) = match init.map(|i| &f.stmt(i).kind) {
            Some(StmtKind::Decl { var, init: Some(e) }) => (*var, *e),
            Some(StmtKind::Expr(e)) => match &f.expr(*e).kind {
                ExprKind::Assign { op: None, lhs, rhs } => match f.expr(*lhs).kind {
                    ExprKind::Var(v) => (v, *rhs),
                    _ => return none,
                },
                _ => return none,
            },
            _ => return none,
        };
        let is_var = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Var(v) if v == var);
        let Some(step) = step else { return none };
        // Direction: +1 increasing, -1 decreasing; the constant step.
        let mut opaque = false;
        let (dir, stride) = match &f.expr(step).kind {
            ExprKind::IncDec {
                target, increment, ..
            } if is_var(*target) => {
                if *increment {
                    (1, Some(1))
                } else {
                    (-1, Some(-1))
                }
            }
            ExprKind::Assign {
                op: Some(op),
                lhs,
                rhs,
            } if is_var(*lhs) => {
                let k = super::barriers::const_value(f, *rhs);
                match (op, k) {
                    (BinOp::Add, Some(k)) if k > 0 => (1, Some(k)),
                    (BinOp::Sub, Some(k)) if k > 0 => (-1, Some(-k)),
                    (BinOp::Add, None) => {
                        opaque = true;
                        (1, None)
                    }
                    (BinOp::Sub, None) => {
                        opaque = true;
                        (-1, None)
                    }
                    (BinOp::Mul | BinOp::Shl, _) => (1, None),
                    (BinOp::Div | BinOp::Shr, _) => (-1, None),
                    _ => return none,
                }
            }
            _ => return none,
        };
        // The counter's other writes make it no counter.
        let writes = f
            .exprs
            .iter()
            .filter(|e| match &e.kind {
                ExprKind::Assign { lhs, .. } => is_var(*lhs),
                ExprKind::IncDec { target, .. } => is_var(*target),
                _ => false,
            })
            .count();
        let decl = matches!(init.map(|i| &f.stmt(i).kind), Some(StmtKind::Decl { .. }));
        if writes != usize::from(!decl) + 1 {
            return none;
        }
        let c = cond.map(|c| &f.expr(c).kind);
        let (lower, upper) = if dir > 0 {
            let upper = match c {
                Some(ExprKind::Binary(BinOp::Lt, a, b)) if is_var(*a) => Some((*b, -1)),
                Some(ExprKind::Binary(BinOp::Le, a, b)) if is_var(*a) => Some((*b, 0)),
                _ => None,
            };
            (Some((start, 0)), upper)
        } else {
            let lower = match c {
                Some(ExprKind::Binary(BinOp::Gt, a, b)) if is_var(*a) => Some((*b, 1)),
                Some(ExprKind::Binary(BinOp::Ge, a, b)) if is_var(*a) => Some((*b, 0)),
                _ => None,
            };
            (lower, Some((start, 0)))
        };
        LoopInfo {
            var: Some(var),
            start: Some(start),
            stride,
            opaque,
            start_uniform: self.u.is_uniform(start.0),
            lower,
            upper,
            has_barrier,
        }
    }

    fn block_dim(&self, d: usize) -> Option<i64> {
        self.launch.block[d].map(i64::from)
    }
    fn grid_dim(&self, d: usize) -> Option<i64> {
        self.launch.grid[d].map(i64::from)
    }

    fn mentions_block(&self, e: ExprId, depth: u32) -> bool {
        if depth > 24 {
            return true;
        }
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Builtin(Builtin::BlockIdx(_)) => true,
            ExprKind::Var(v) => match self.init.get(v.0 as usize).copied().flatten() {
                Some(i) if self.defs[v.0 as usize] == 1 => self.mentions_block(i, depth + 1),
                _ => f.var(*v).param_position.is_none(),
            },
            _ => f
                .child_exprs(e)
                .into_iter()
                .any(|c| self.mentions_block(c, depth + 1)),
        }
    }

    /// (issue 8, session 12, llm.c flash attention `Kj[(y * d) + x]`)
    /// Whether `e` reads the counter of one of the enclosing `loops` (or a
    /// local defined once from one): a value the threads agree on, but not
    /// a single thread-invariant symbol, since it changes every iteration.
    fn mentions_loop_counter(&self, e: ExprId, loops: &[u32], depth: u32) -> bool {
        if depth > 24 {
            return true;
        }
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Var(v) => {
                loops
                    .iter()
                    .any(|l| self.loops.get(l).is_some_and(|i| i.var == Some(*v)))
                    || match self.init.get(v.0 as usize).copied().flatten() {
                        Some(i) if self.defs[v.0 as usize] == 1 => {
                            self.mentions_loop_counter(i, loops, depth + 1)
                        }
                        _ => false,
                    }
            }
            _ => f
                .child_exprs(e)
                .into_iter()
                .any(|c| self.mentions_loop_counter(c, loops, depth + 1)),
        }
    }

    /// Where pointer variable `v` points when statement `at` runs: at the
    /// start of its own pointee ([`Rebase::Plain`]: a parameter never
    /// written, an array), at an offset from another variable (`T *p =
    /// base + off`, `p = &a[i]`, a parameter advanced once by `p += off`
    /// before `at`), or somewhere the model cannot follow.
    fn rebase(&self, v: VarId, at: StmtId, depth: u32) -> Rebase {
        let f = self.f;
        let var = f.var(v);
        if !matches!(var.ty, Type::Pointer(_)) {
            return Rebase::Plain;
        }
        if depth > 8 {
            return Rebase::Unknown;
        }
        let vi = v.0 as usize;
        let defs = self.defs.get(vi).copied().unwrap_or(u32::MAX);
        let is_param = var.param_position.is_some();
        if is_param && defs == 0 {
            return Rebase::Plain;
        }
        // The statements that set `v`: declarations and top-level assignments.
        let mut sets: Vec<(StmtId, ExprId, Option<BinOp>, bool)> = Vec::new();
        let mut bare_decl = false;
        for (si, st) in f.stmts.iter().enumerate() {
            match &st.kind {
                StmtKind::Decl { var: w, init } if *w == v => match init {
                    Some(e) => sets.push((StmtId(si as u32), *e, None, true)),
                    None => bare_decl = true,
                },
                StmtKind::Expr(e) => {
                    if let ExprKind::Assign { op, lhs, rhs } = &f.expr(*e).kind
                        && matches!(f.expr(*lhs).kind, ExprKind::Var(w) if w == v)
                    {
                        sets.push((StmtId(si as u32), *rhs, *op, false));
                    }
                }
                _ => {}
            }
        }
        let expected = sets.len() as u32 + u32::from(bare_decl);
        if sets.len() != 1 || defs != expected {
            return Rebase::Unknown;
        }
        let (s, rhs, op, is_decl) = sets[0];
        if !is_decl && !self.dominates(s, at) {
            return Rebase::Unknown;
        }
        let loops = self
            .places
            .get(&s.0)
            .map(|p| p.loops.clone())
            .unwrap_or_default();
        match op {
            None => match self.pointer_value(rhs, s, &loops, depth + 1) {
                Some((base, off)) => Rebase::Offset(base, off),
                None => Rebase::Unknown,
            },
            Some(op @ (BinOp::Add | BinOp::Sub)) if is_param => {
                let elem = var.ty.element().and_then(Type::bytes);
                let off = match (self.lin(rhs, &loops, 0), elem) {
                    (Some(l), Some(b)) => l.scale(if op == BinOp::Add {
                        b as i64
                    } else {
                        -(b as i64)
                    }),
                    _ => None,
                };
                Rebase::Offset(v, off)
            }
            _ => Rebase::Unknown,
        }
    }

    /// Whether statement `s` runs before `at` whenever `at` runs: its loops
    /// and guards enclose `at` too, and it comes first.
    fn dominates(&self, s: StmtId, at: StmtId) -> bool {
        let (Some(ps), Some(pa)) = (self.places.get(&s.0), self.places.get(&at.0)) else {
            return false;
        };
        let (ss, sa) = (self.f.stmt(s).span, self.f.stmt(at).span);
        pa.loops.starts_with(&ps.loops)
            && pa.guards.starts_with(&ps.guards)
            && (ss.end_line, ss.end_col) <= (sa.line, sa.col)
    }

    /// A pointer expression as (base variable, byte offset from it).
    fn pointer_value(
        &self,
        e: ExprId,
        at: StmtId,
        loops: &[u32],
        depth: u32,
    ) -> Option<(VarId, Option<Lin>)> {
        if depth > 16 {
            return None;
        }
        let f = self.f;
        let add = |x: Option<Lin>, y: Option<Lin>, k: i64| match (x, y) {
            (Some(x), Some(y)) => x.add(&y, k),
            _ => None,
        };
        match &f.expr(e).kind {
            ExprKind::Var(w) => match &f.var(*w).ty {
                Type::Pointer(_) => match self.rebase(*w, at, depth + 1) {
                    Rebase::Plain => Some((*w, Some(Lin::constant(0)))),
                    Rebase::Offset(b, off) => Some((b, off)),
                    Rebase::Unknown => None,
                },
                Type::Array(..) => Some((*w, Some(Lin::constant(0)))),
                _ => None,
            },
            ExprKind::Cast(_, a) => self.pointer_value(*a, at, loops, depth + 1),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                let (p, i, k) = if is_pointer_expr(f, *a) {
                    (*a, *b, if *op == BinOp::Add { 1 } else { -1 })
                } else if *op == BinOp::Add && is_pointer_expr(f, *b) {
                    (*b, *a, 1)
                } else {
                    return None;
                };
                let (base, off) = self.pointer_value(p, at, loops, depth + 1)?;
                let step = match (self.lin(i, loops, 0), pointee_bytes(f, p)) {
                    (Some(l), Some(n)) => l.scale(n as i64),
                    _ => None,
                };
                Some((base, add(off, step, k)))
            }
            ExprKind::Unary(UnOp::AddrOf, x) => {
                let (r, idx) = f.index_chain(*x);
                let ExprKind::Var(w) = f.expr(r).kind else {
                    return None;
                };
                let (base, off) = self.pointer_value(r, at, loops, depth + 1)?;
                if idx.is_empty() {
                    return (w == base).then_some((base, off));
                }
                // Byte strides of the subscripts, innermost last.
                let mut ty = f.var(w).ty.clone();
                let mut total = off;
                for i in idx {
                    let elem = ty.element().cloned();
                    let stride = elem.as_ref().and_then(Type::bytes);
                    let step = match (self.lin(i, loops, 0), stride) {
                        (Some(l), Some(n)) => l.scale(n as i64),
                        _ => None,
                    };
                    total = add(total, step, 1);
                    ty = elem?;
                }
                Some((base, total))
            }
            _ => None,
        }
    }

    /// Whether `p` is a local (not a parameter, not a shared or global
    /// variable): what it points to can be written by the thread itself.
    fn local_pointer(&self, p: ExprId) -> bool {
        match &self.f.expr(p).kind {
            ExprKind::Var(v) => {
                let var = self.f.var(*v);
                var.param_position.is_none()
                    && !matches!(
                        var.space,
                        Some(MemSpace::Shared | MemSpace::Global | MemSpace::Constant)
                    )
                    && matches!(var.ty, Type::Pointer(_))
            }
            ExprKind::Cast(_, a) => self.local_pointer(*a),
            _ => false,
        }
    }

    /// The value of loop `l`'s counter inside the loop (`outer`: the loops
    /// around `l`): `start + step·iteration` for constant steps, an opaque
    /// counter bounded by the loop condition for geometric ones.
    fn counter(&self, l: u32, outer: &[u32], depth: u32) -> Option<Lin> {
        let info = self.loops.get(&l)?;
        if info.opaque {
            return None;
        }
        match info.stride {
            Some(k) => {
                let start = self.lin(info.start?, outer, depth + 1)?;
                start.add(&Lin::atom(Atom::Iter(l)), k)
            }
            None => Some(Lin::atom(Atom::Loop(info.var?.0, l))),
        }
    }

    /// The linear thread index in the block, when the block's shape allows
    /// it (`threadIdx.x` for 1-D blocks).
    fn linear_tid(&self) -> Option<Lin> {
        let (bx, by, bz) = (self.block_dim(0), self.block_dim(1), self.block_dim(2));
        match (by, bz) {
            (Some(1), Some(1)) => Some(Lin::atom(Atom::Tid(0))),
            (Some(y), Some(z)) => {
                let bx = bx?;
                Lin::atom(Atom::Tid(0))
                    .add(&Lin::atom(Atom::Tid(1)), bx)?
                    .add(&Lin::atom(Atom::Tid(2)), bx.checked_mul(y)?)
                    .filter(|_| z >= 1)
            }
            _ => None,
        }
    }

    /// Cooperative groups' ranks and sizes (issue 8, class 2):
    /// `tile.thread_rank()` is the linear thread index mod N for a tile of
    /// N threads, `tile.meta_group_rank()` its quotient, `tile.size()` N;
    /// `block.thread_rank()` the linear thread index.
    fn group_rank(&self, e: ExprId) -> Option<Lin> {
        let f = self.f;
        let (base, group) = super::coop::group_call(f, e)?;
        let group = group?;
        match super::coop::group_size(f, Some(group)) {
            Some(n) if n > 0 => match base {
                "thread_rank" => self.linear_tid()?.rem(n),
                "meta_group_rank" => self.linear_tid()?.quot(n),
                "size" | "num_threads" => Some(Lin::constant(n)),
                _ => None,
            },
            _ => {
                let text = match &f.expr(group).kind {
                    ExprKind::Var(v) => {
                        let mut t = format!("{:?}", f.var(*v).ty);
                        for d in super::coop::var_definitions(f, *v) {
                            t.push_str(&f.expr_text(d));
                        }
                        t
                    }
                    _ => f.expr_text(group),
                };
                let block = text.contains("this_thread_block")
                    || (text.contains("thread_block") && !text.contains("tile"));
                match base {
                    "thread_rank" if block => self.linear_tid(),
                    _ => None,
                }
            }
        }
    }

    /// Whether `e` (through locals set once) calls a cooperative group's
    /// rank (`thread_rank`, `meta_group_rank`, `thread_index`, …).
    fn mentions_group_rank(&self, e: ExprId, depth: u32) -> bool {
        if depth > 12 {
            return false;
        }
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Call { callee, .. } => {
                let base = callee.rsplit(['.', ':']).next().unwrap_or(callee);
                matches!(
                    base,
                    "thread_rank" | "meta_group_rank" | "thread_index" | "group_index"
                ) || f
                    .child_exprs(e)
                    .into_iter()
                    .any(|c| self.mentions_group_rank(c, depth + 1))
            }
            ExprKind::Var(v) => match self.init.get(v.0 as usize).copied().flatten() {
                Some(i) if self.defs[v.0 as usize] == 1 => self.mentions_group_rank(i, depth + 1),
                _ => false,
            },
            _ => f
                .child_exprs(e)
                .into_iter()
                .any(|c| self.mentions_group_rank(c, depth + 1)),
        }
    }

    /// A thread-invariant value named by its text.
    fn sym(&self, e: ExprId) -> Lin {
        Lin::atom(Atom::Sym(self.f.expr_text(e), self.mentions_block(e, 0)))
    }

    /// The linear form of `e` at a statement enclosed by `loops`.
    fn lin(&self, e: ExprId, loops: &[u32], depth: u32) -> Option<Lin> {
        if depth > 32 {
            return None;
        }
        let f = self.f;
        // Block-uniform per the uniformity facts, and not a per-warp value
        // (cooperative groups' `meta_group_rank()` counts as uniform there).
        let uniform = self.u.is_uniform(e.0) && !self.mentions_group_rank(e, 0);
        match &f.expr(e).kind {
            ExprKind::Int(v) => Some(Lin::constant(*v)),
            ExprKind::Bool(b) => Some(Lin::constant(i64::from(*b))),
            ExprKind::SizeOf(Some(n)) => i64::try_from(*n).ok().map(Lin::constant),
            ExprKind::Builtin(b) => Some(match b {
                Builtin::ThreadIdx(d) => Lin::atom(Atom::Tid(dim_index(*d))),
                Builtin::BlockIdx(d) => Lin::atom(Atom::Bid(dim_index(*d))),
                Builtin::BlockDim(d) => match self.block_dim(dim_index(*d)) {
                    Some(v) => Lin::constant(v),
                    None => self.sym(e),
                },
                Builtin::GridDim(d) => match self.grid_dim(dim_index(*d)) {
                    Some(v) => Lin::constant(v),
                    None => self.sym(e),
                },
                Builtin::WarpSize => Lin::constant(32),
            }),
            ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => self.lin(*a, loops, depth + 1),
            ExprKind::Unary(UnOp::Neg, a) => self.lin(*a, loops, depth + 1)?.scale(-1),
            ExprKind::Var(v) => {
                if let Some(pos) = loops
                    .iter()
                    .rposition(|l| self.loops.get(l).is_some_and(|i| i.var == Some(*v)))
                {
                    return self.counter(loops[pos], &loops[..pos], depth + 1);
                }
                // A `__shared__` scalar read after its one assignment holds
                // that value, when it is the same for every thread.
                if let Some(&(s, rhs)) = self.shared_once.get(&v.0) {
                    let (ss, se) = (f.stmt(s).span, f.expr(e).span);
                    if (ss.end_line, ss.end_col) <= (se.line, se.col)
                        && let Some(l) = self.lin(rhs, &[], depth + 1)
                        && l.invariant()
                    {
                        return Some(l);
                    }
                }
                let var = f.var(*v);
                if var.param_position.is_some() && self.defs[v.0 as usize] == 0 {
                    // A device function's parameter can carry a per-thread value.
                    return uniform.then(|| Lin::atom(Atom::Sym(var.name.clone(), false)));
                }
                match self.init.get(v.0 as usize).copied().flatten() {
                    Some(i) if self.defs[v.0 as usize] == 1 => self.lin(i, loops, depth + 1),
                    _ if uniform => Some(self.sym(e)),
                    _ => None,
                }
            }
            ExprKind::Binary(op, a, b) => {
                let la = self.lin(*a, loops, depth + 1);
                let lb = self.lin(*b, loops, depth + 1);
                match (op, la, lb) {
                    (BinOp::Add, Some(x), Some(y)) => x.add(&y, 1),
                    (BinOp::Sub, Some(x), Some(y)) => x.add(&y, -1),
                    (BinOp::Mul, Some(x), Some(y)) => match (x.as_const(), y.as_const()) {
                        (Some(k), _) => y.scale(k),
                        (_, Some(k)) => x.scale(k),
                        _ if x.invariant() && y.invariant() => Some(self.sym(e)),
                        _ => None,
                    },
                    (BinOp::Div, Some(x), Some(y)) if y.as_const().is_some_and(|c| c > 0) => {
                        x.quot(y.as_const()?)
                    }
                    (BinOp::Rem, Some(x), Some(y)) if y.as_const().is_some_and(|c| c > 0) => {
                        x.rem(y.as_const()?)
                    }
                    (BinOp::Shr, Some(x), Some(y))
                        if y.as_const().is_some_and(|k| (0..31).contains(&k)) =>
                    {
                        x.quot(1 << y.as_const()?)
                    }
                    (BinOp::BitAnd, Some(x), Some(y))
                        if y.as_const().is_some_and(|m| m > 0 && (m + 1) & m == 0) =>
                    {
                        x.rem(y.as_const()? + 1)
                    }
                    (BinOp::BitAnd, Some(x), Some(y))
                        if x.as_const().is_some_and(|m| m > 0 && (m + 1) & m == 0) =>
                    {
                        y.rem(x.as_const()? + 1)
                    }
                    (BinOp::Shl, Some(x), Some(y)) => match y.as_const() {
                        Some(k) if (0..31).contains(&k) => x.scale(1 << k),
                        _ if x.invariant() && y.invariant() => Some(self.sym(e)),
                        _ => None,
                    },
                    (_, Some(x), Some(y)) if x.as_const().is_some() && y.as_const().is_some() => {
                        super::barriers::const_value(f, e).map(Lin::constant)
                    }
                    (_, Some(x), Some(y)) if x.invariant() && y.invariant() => Some(self.sym(e)),
                    _ if uniform && !self.mentions_loop_counter(e, loops, 0) => Some(self.sym(e)),
                    _ => None,
                }
            }
            ExprKind::Unary(UnOp::Deref, p) | ExprKind::Index { base: p, .. }
                if self.local_pointer(*p) =>
            {
                None
            }
            ExprKind::Call { callee, args, .. }
                if matches!(callee.as_str(), "__mul24" | "__umul24") && args.len() == 2 =>
            {
                let x = self.lin(args[0], loops, depth + 1)?;
                let y = self.lin(args[1], loops, depth + 1)?;
                match (x.as_const(), y.as_const()) {
                    (Some(k), _) => y.scale(k),
                    (_, Some(k)) => x.scale(k),
                    _ if x.invariant() && y.invariant() => Some(self.sym(e)),
                    _ => None,
                }
            }
            ExprKind::Call { .. } if self.group_rank(e).is_some() => self.group_rank(e),
            ExprKind::Call { callee, args, .. } => {
                let base = callee.rsplit("::").next().unwrap_or(callee);
                // An atomic add of something that can be 0 can return the
                // same old value to two threads.
                if matches!(base, "atomicAdd" | "atomicSub")
                    && args.len() == 2
                    && super::barriers::const_value(f, args[1]).is_none_or(|k| k == 0)
                {
                    Some(Lin::atom(Atom::Sym(f.expr_text(e), false)))
                } else if uniform && !base.starts_with("atomic") {
                    Some(self.sym(e))
                } else {
                    None
                }
            }
            _ if uniform => Some(self.sym(e)),
            _ => None,
        }
    }
}

/// One access as the race check sees it.
#[derive(Clone)]
struct Acc {
    side: RaceSide,
    key: String,
    space: MemSpace,
    atomic: bool,
    indices: Vec<ExprId>,
    elem: Option<u64>,
    bytes: Option<u64>,
    field: u64,
    /// Declared extents of a multi-dimensional array, outermost first.
    dims: Vec<Option<u64>>,
    /// The access goes through a pointer derived from another variable
    /// (`p = base + off`, `p += off`): the byte offset of `p` from the base,
    /// evaluated where `p` was set (`None` inside: not linear).
    base_off: Option<Option<Lin>>,
    /// The accessed expression (the left side of a store).
    expr: Option<ExprId>,
    /// The per-thread row the access stays in, when it has one.
    row: Option<Row>,
}

/// Expressions of a statement (not of nested statements).
fn stmt_exprs(f: &Function, s: StmtId) -> Vec<ExprId> {
    match &f.stmt(s).kind {
        StmtKind::Decl { init: Some(e), .. } | StmtKind::Expr(e) => vec![*e],
        StmtKind::If { cond, .. }
        | StmtKind::While { cond, .. }
        | StmtKind::DoWhile { cond, .. }
        | StmtKind::Switch { cond, .. } => vec![*cond],
        StmtKind::For { cond, step, .. } => cond.iter().chain(step.iter()).copied().collect(),
        StmtKind::Return(Some(e)) => vec![*e],
        _ => Vec::new(),
    }
}

/// Reads and writes of `__shared__` scalars (not recorded as accesses).
fn shared_scalars(f: &Function) -> Vec<Acc> {
    let is_shared_scalar = |v: VarId| {
        let var = f.var(v);
        var.space == Some(MemSpace::Shared)
            && var.param_position.is_none()
            && !matches!(var.ty, Type::Array(..) | Type::Pointer(_))
    };
    if !f
        .vars
        .iter()
        .enumerate()
        .any(|(i, _)| is_shared_scalar(VarId(i as u32)))
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (si, _) in f.stmts.iter().enumerate() {
        let s = StmtId(si as u32);
        let mut stack: Vec<(ExprId, bool)> =
            stmt_exprs(f, s).into_iter().map(|e| (e, false)).collect();
        while let Some((e, write)) = stack.pop() {
            match &f.expr(e).kind {
                ExprKind::Var(v) if is_shared_scalar(*v) => {
                    let var = f.var(*v);
                    out.push(Acc {
                        side: RaceSide {
                            access: None,
                            stmt: s.0,
                            span: f.expr(e).span,
                            is_write: write,
                            text: var.name.clone(),
                        },
                        key: format!("var:{}", v.0),
                        space: MemSpace::Shared,
                        atomic: false,
                        indices: Vec::new(),
                        elem: var.ty.bytes(),
                        bytes: var.ty.bytes(),
                        field: 0,
                        dims: Vec::new(),
                        base_off: None,
                        expr: Some(e),
                        row: None,
                    });
                }
                ExprKind::Assign { op, lhs, rhs } => {
                    stack.push((*rhs, false));
                    stack.push((*lhs, true));
                    if op.is_some() {
                        stack.push((*lhs, false));
                    }
                }
                ExprKind::IncDec { target, .. } => {
                    stack.push((*target, true));
                    stack.push((*target, false));
                }
                ExprKind::Unary(UnOp::AddrOf, _) => {}
                ExprKind::Member { .. } | ExprKind::Index { .. } => {
                    // Fields and elements of shared scalars: handled as the
                    // whole variable only when written directly.
                    for c in f.child_exprs(e) {
                        stack.push((c, false));
                    }
                }
                _ => {
                    for c in f.child_exprs(e) {
                        stack.push((c, false));
                    }
                }
            }
        }
    }
    out
}

/// How much work the race check of one function may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Pairs of accesses examined.
    pub pairs: usize,
    /// Solver work units (one per integer program, one per branch-and-bound node).
    pub work: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            pairs: MAX_PAIRS,
            work: WORK_BUDGET,
        }
    }
}

/// Find the races of `f` (default [`Budget`]).
pub fn races(
    f: &Function,
    u: &Uniformity,
    launch: &LaunchDims,
    iv: &Intervals,
    access_space: &[MemSpace],
    params: &super::ParamFacts,
) -> RaceFacts {
    races_with_budget(f, u, launch, iv, access_space, params, Budget::default())
}

/// Find the races of `f` within `budget`: over it, the races found so far
/// and [`RaceFacts::incomplete`]. The budget counts work, not time, so the
/// result does not depend on the machine's load.
pub fn races_with_budget(
    f: &Function,
    u: &Uniformity,
    launch: &LaunchDims,
    iv: &Intervals,
    access_space: &[MemSpace],
    params: &super::ParamFacts,
    budget: Budget,
) -> RaceFacts {
    // Wall-clock time is only logged (`CUDALOG_LOG=cudalog::facts::races=debug`),
    // never used to decide anything.
    let started = std::time::Instant::now();
    let out = races_in(f, u, launch, iv, access_space, params, budget);
    tracing::debug!(
        function = %f.name,
        races = out.races.len(),
        incomplete = out.incomplete.is_some(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "race check"
    );
    out
}

fn races_in(
    f: &Function,
    u: &Uniformity,
    launch: &LaunchDims,
    iv: &Intervals,
    access_space: &[MemSpace],
    params: &super::ParamFacts,
    budget: Budget,
) -> RaceFacts {
    let groups = &params.groups[..];
    let mut out = RaceFacts::default();
    if f.kind == crate::ir::FunctionKind::Host || f.body.is_none() {
        return out;
    }
    let mut accs: Vec<Acc> = Vec::new();
    for (i, a) in f.accesses.iter().enumerate() {
        let space = access_space.get(i).copied().unwrap_or(a.space);
        if !matches!(space, MemSpace::Shared | MemSpace::Global) {
            continue;
        }
        let key = match a.var {
            Some(v) => format!("var:{}", v.0),
            None => format!("name:{}", a.array),
        };
        accs.push(Acc {
            side: RaceSide {
                access: Some(i),
                stmt: a.stmt.0,
                span: a.span,
                is_write: a.is_write,
                text: format!("{}{}", a.array, a.index_text),
            },
            key,
            space,
            atomic: a.atomic,
            indices: a.indices.clone(),
            elem: a.elem_bytes,
            bytes: a.access_bytes,
            field: a.field_offset.unwrap_or(0),
            dims: a.dims.clone(),
            base_off: None,
            expr: Some(a.expr),
            row: None,
        });
    }
    accs.extend(shared_scalars(f));
    if !accs.iter().any(|a| a.side.is_write && !a.atomic) {
        return out;
    }
    let mut cx = Cx::new(f, u, launch);
    cx.entry = params
        .entry_lanes
        .iter()
        .filter_map(super::lanes::LaneTest::linear)
        .collect();
    // Accesses through pointers set from another array or pointer are
    // accesses of that base at an offset.
    for acc in accs.iter_mut() {
        let Some(i) = acc.side.access else { continue };
        let a = &f.accesses[i];
        // `*((T *)&buf[i][0] + k)`: a dereference of pointer arithmetic on
        // another array is an access of that array at a byte offset.
        if let ExprKind::Unary(UnOp::Deref, p) = &f.expr(a.expr).kind
            && !matches!(f.expr(*p).kind, ExprKind::Var(_))
        {
            let loops = cx
                .places
                .get(&a.stmt.0)
                .map(|pl| pl.loops.clone())
                .unwrap_or_default();
            if let Some((base, off)) = cx.pointer_value(*p, a.stmt, &loops, 0) {
                acc.key = format!("var:{}", base.0);
                acc.base_off = Some(off);
                acc.indices.clear();
                acc.dims.clear();
                acc.side.text = f.expr_text(a.expr);
                continue;
            }
        }
        let Some(v) = a.var else { continue };
        match cx.rebase(v, a.stmt, 0) {
            Rebase::Plain => {}
            Rebase::Offset(base, off) => {
                acc.key = format!("var:{}", base.0);
                acc.base_off = Some(off);
            }
            Rebase::Unknown => {
                // A pointer whose value can differ between threads and is
                // not linear: the address is unknown.
                let per_thread = base_var_expr(f, a.expr)
                    .map(|e| !u.is_uniform(e.0) || cx.mentions_block(e, 0))
                    .unwrap_or(true);
                if per_thread {
                    acc.base_off = Some(None);
                }
            }
        }
    }
    for acc in accs.iter_mut() {
        if let Some(i) = acc.side.access {
            acc.row = cx.row_of(i);
        }
    }
    // Two statements can run at once in different threads when they share a
    // barrier interval (either order, either branch of an `if`).
    let starts = iv.starts();
    let conc = Concurrency::new(f, u);
    let share = |x: u32, y: u32| {
        (match (starts.get(&x), starts.get(&y)) {
            (Some(a), Some(b)) => a.iter().any(|s| b.contains(s)),
            _ => false,
        }) && conc.concurrent(x, y)
    };
    let scopes = tile_scopes(&cx, u, groups);
    let grid_sync = f.barriers.iter().any(|b| b.kind == BarrierKind::CgGridSync);
    let mut by_key: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, a) in accs.iter().enumerate() {
        by_key.entry(a.key.as_str()).or_default().push(i);
    }
    let mut pairs = 0usize;
    let mut reported: HashSet<(&str, u32, u32)> = HashSet::new();
    let stores = plain_stores(f);
    'outer: for idx in by_key.values() {
        if !idx
            .iter()
            .any(|&i| accs[i].side.is_write && !accs[i].atomic)
        {
            continue;
        }
        for (n, &i) in idx.iter().enumerate() {
            for &j in &idx[n..] {
                let (a, b) = (&accs[i], &accs[j]);
                if !(a.side.is_write || b.side.is_write) || (a.atomic && b.atomic) {
                    continue;
                }
                let same_stmt = a.side.stmt == b.side.stmt;
                // A device function every caller calls from one thread of
                // its block races only with other blocks.
                let block_conc =
                    !params.single_thread && (same_stmt || share(a.side.stmt, b.side.stmt));
                // Blocks: known from the launch, else only where an index
                // uses blockIdx (the kernel is evidently multi-block).
                let multi_block = match launch.grid {
                    [Some(x), Some(y), Some(z)] => u64::from(x) * u64::from(y) * u64::from(z) > 1,
                    _ => uses_block(&cx, a) || uses_block(&cx, b),
                };
                let inter_block =
                    a.space == MemSpace::Global && multi_block && (!grid_sync || block_conc);
                if !block_conc && !inter_block {
                    continue;
                }
                // (issue 8 audit #8) Both in the same per-thread rows: the
                // threads the row index tells apart never share an element
                // when both indices stay inside the row; when that is not
                // proven, the finding names what must hold.
                let (block_conc, inter_block, row_note) =
                    match row_pair(&cx, a, b, block_conc, inter_block) {
                        RowPair::Apart => continue,
                        RowPair::Modes(bc, ib, note) => (bc, ib, note),
                    };
                let lines = (a.key.as_str(), a.side.span.line, b.side.span.line);
                if reported.contains(&lines) {
                    continue;
                }
                // Every writer stores the same constant (`*over = true;`,
                // `flag[0] = 1;`): a benign write-write race, the intended
                // idiom (GPUVerify's benign same-value writes). A read of the
                // location in the same interval pairs with each write and is
                // still reported.
                if a.side.is_write
                    && b.side.is_write
                    && !a.atomic
                    && !b.atomic
                    && same_constant_store(f, &stores, a, b)
                {
                    continue;
                }
                let tile = tile_mode(&scopes, a.side.stmt, b.side.stmt, same_stmt);
                pairs += 1;
                if pairs > budget.pairs || cx.work.get() > budget.work {
                    out.incomplete = Some(format!(
                        "race check stopped after {} pairs of accesses and {} units of solver \
                         work (budget {} pairs, {} units)",
                        pairs - 1,
                        cx.work.get(),
                        budget.pairs,
                        budget.work
                    ));
                    break 'outer;
                }
                let t = tile.as_ref();
                // Which iterations of the innermost loop with a barrier
                // the two accesses can share an interval in.
                let offsets = iteration_offsets(&cx, &conc, a, b, i == j);
                let run = |warps_apart: bool| {
                    offsets.iter().find_map(|&c| {
                        check_pair(
                            &cx,
                            a,
                            b,
                            i == j,
                            block_conc,
                            inter_block,
                            warps_apart,
                            t,
                            c,
                        )
                    })
                };
                if let Some(r) = run(false) {
                    // Lanes of one warp storing one warp-uniform value (a
                    // warp reduction's result, a constant) in the same
                    // statement: benign, like GPUVerify's equality
                    // abstraction, when threads of different warps never
                    // collide.
                    if i == j
                        && a.side.is_write
                        && r.proven
                        && !launch.warp_lockstep
                        && stored_value_warp_uniform(&cx, a)
                        && run(true).is_none()
                    {
                        continue;
                    }
                    let mut r = r;
                    if let Some(note) = &row_note {
                        r.proven = false;
                        r.depends_on.clear();
                        r.assumption = Some(note.clone());
                    }
                    reported.insert(lines);
                    out.races.push(r);
                }
            }
        }
    }
    let undecided = cx.interrupted.get();
    if undecided > 0 && out.incomplete.is_none() {
        out.incomplete = Some(format!(
            "{undecided} integer program{} of the race check needed more than {NODE_LIMIT} \
             branch-and-bound nodes and {} left undecided (those pairs of accesses may race)",
            if undecided == 1 { "" } else { "s" },
            if undecided == 1 { "was" } else { "were" }
        ));
    }
    out
}

// ---------------------------------------------------------------------------
// Thread-private rows (issue 8 audit #8, session 7).
//
// `p = &a[tid * s]` with `tid` an injective thread index and accesses
// `p[j]` with 0 <= j < s: each thread touches only its own row of `s`
// elements of `a`, so two threads never share an element whatever `j` is.
// The same for direct accesses `a[tid * s + j]`.
// ---------------------------------------------------------------------------

/// Which threads an index tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowScope {
    /// Distinct for the threads of one block (`threadIdx.x` of 1-D blocks).
    Block,
    /// Distinct for all threads of the grid (a global thread id).
    Grid,
}

/// An access inside a per-thread row.
#[derive(Clone, Debug)]
struct Row {
    /// The array the rows partition.
    base: VarId,
    /// The thread index, as written (after following single-definition
    /// locals), and which threads it tells apart.
    row: String,
    scope: RowScope,
    /// The row length (elements), as written and after following locals.
    stride: ExprId,
    stride_text: String,
    /// The index inside the row (`None`: the row's start, `a[tid * s]`).
    j: Option<ExprId>,
    /// The thread index as written, for messages.
    row_shown: String,
    /// How the row is formed, for messages (`lower = &work_mem_d[tid*stride]`).
    origin: String,
}

/// Whether `j` is known to lie in `[0, s)`: (lower bound proven, upper bound proven).
type RowRange = (bool, bool);

impl Cx<'_> {
    /// `e` after following casts and single-definition locals.
    fn resolve(&self, mut e: ExprId) -> ExprId {
        let f = self.f;
        for _ in 0..16 {
            match &f.expr(e).kind {
                ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => e = *a,
                ExprKind::Var(v)
                    if f.var(*v).param_position.is_none()
                        && self.defs.get(v.0 as usize) == Some(&1) =>
                {
                    match self.init.get(v.0 as usize).copied().flatten() {
                        Some(i) => e = i,
                        None => return e,
                    }
                }
                _ => return e,
            }
        }
        e
    }

    /// The kernel reads `threadIdx` (`block`: `blockIdx`) in dimension `d`.
    fn reads_dim(&self, d: usize, block: bool) -> bool {
        self.f.exprs.iter().any(|e| match &e.kind {
            ExprKind::Builtin(Builtin::ThreadIdx(x)) if !block => dim_index(*x) == d,
            ExprKind::Builtin(Builtin::BlockIdx(x)) if block => dim_index(*x) == d,
            _ => false,
        })
    }

    /// Dimension `d` of the block (`grid`: of the grid) has one thread
    /// (block): from the launch, or, when no launch gives it, because the
    /// kernel never reads that dimension's index (it is written for 1-D).
    fn trivial_dim(&self, d: usize, grid: bool) -> bool {
        let known = if grid {
            self.launch.grid[d]
        } else {
            self.launch.block[d]
        };
        match known {
            Some(n) => n == 1,
            None => !self.reads_dim(d, grid),
        }
    }

    /// `blockIdx.x`, or `blockIdx.x + gridDim.x * blockIdx.y`: distinct
    /// for distinct blocks.
    fn injective_block_index(&self, e: ExprId) -> bool {
        let f = self.f;
        let e = self.resolve(e);
        let is = |e: ExprId, want: &dyn Fn(&Builtin) -> bool| matches!(&f.expr(self.resolve(e)).kind, ExprKind::Builtin(b) if want(b));
        let bx = |e: ExprId| {
            is(
                e,
                &|b| matches!(b, Builtin::BlockIdx(d) if dim_index(*d) == 0),
            )
        };
        if bx(e) {
            return self.trivial_dim(1, true) && self.trivial_dim(2, true);
        }
        if let ExprKind::Binary(BinOp::Add, a, b) = &f.expr(e).kind {
            for (x, m) in [(*a, *b), (*b, *a)] {
                if !bx(x) {
                    continue;
                }
                if let ExprKind::Binary(BinOp::Mul, p, q) = &f.expr(self.resolve(m)).kind {
                    let gx = |e| {
                        is(
                            e,
                            &|b| matches!(b, Builtin::GridDim(d) if dim_index(*d) == 0),
                        )
                    };
                    let by = |e| {
                        is(
                            e,
                            &|b| matches!(b, Builtin::BlockIdx(d) if dim_index(*d) == 1),
                        )
                    };
                    if ((gx(*p) && by(*q)) || (gx(*q) && by(*p))) && self.trivial_dim(2, true) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// Whether `e` is an injective thread index: `threadIdx.x` of 1-D
    /// blocks (within a block) or `blockIdx.x * blockDim.x + threadIdx.x`
    /// (over the grid, also with a 2-D block index).
    fn thread_row_scope(&self, e: ExprId) -> Option<RowScope> {
        let f = self.f;
        let e = self.resolve(e);
        let one_d = self.trivial_dim(1, false) && self.trivial_dim(2, false);
        let tx = |e: ExprId| {
            matches!(&f.expr(self.resolve(e)).kind,
                ExprKind::Builtin(Builtin::ThreadIdx(d)) if dim_index(*d) == 0)
        };
        if tx(e) {
            return one_d.then_some(RowScope::Block);
        }
        let ExprKind::Binary(BinOp::Add, a, b) = &f.expr(e).kind else {
            return None;
        };
        for (t, m) in [(*a, *b), (*b, *a)] {
            if !tx(t) || !one_d {
                continue;
            }
            let ExprKind::Binary(BinOp::Mul, p, q) = &f.expr(self.resolve(m)).kind else {
                continue;
            };
            let block_x = |e: ExprId| match &f.expr(self.resolve(e)).kind {
                ExprKind::Builtin(Builtin::BlockDim(d)) => dim_index(*d) == 0,
                ExprKind::Int(v) => self.block_dim(0) == Some(*v),
                _ => false,
            };
            if (block_x(*p) && self.injective_block_index(*q))
                || (block_x(*q) && self.injective_block_index(*p))
            {
                return Some(RowScope::Grid);
            }
        }
        None
    }

    /// `r * s` with `r` an injective thread index and `s` thread-invariant.
    fn row_product(&self, e: ExprId) -> Option<(ExprId, RowScope, ExprId)> {
        let f = self.f;
        let ExprKind::Binary(BinOp::Mul, a, b) = &f.expr(self.resolve(e)).kind else {
            return None;
        };
        for (r, s) in [(*a, *b), (*b, *a)] {
            if let Some(scope) = self.thread_row_scope(r)
                && self.u.is_uniform(s.0)
                && !self.mentions_group_rank(s, 0)
            {
                return Some((r, scope, s));
            }
        }
        None
    }

    /// The per-thread row of access `i`, when it has one.
    fn row_of(&self, i: usize) -> Option<Row> {
        let f = self.f;
        let a = &f.accesses[i];
        let v = a.var?;
        if a.indices.len() != 1 {
            return None;
        }
        let j = a.indices[0];
        let text = |e: ExprId| f.expr_text(self.resolve(e));
        let make =
            |base: VarId, r: ExprId, scope, s: ExprId, j: Option<ExprId>, origin: String| Row {
                base,
                row: text(r),
                row_shown: f.expr_text(r),
                scope,
                stride: s,
                stride_text: text(s),
                j,
                origin,
            };
        let var = f.var(v);
        if matches!(var.ty, Type::Pointer(_))
            && (var.param_position.is_none() || self.defs.get(v.0 as usize) != Some(&0))
        {
            // `p = &a[r * s]` or `p = a + r * s`, p's only definition.
            if var.param_position.is_some() || self.defs.get(v.0 as usize) != Some(&1) {
                return None;
            }
            let init = self.init.get(v.0 as usize).copied().flatten()?;
            let mut rhs = init;
            while let ExprKind::Cast(_, x) = &f.expr(rhs).kind {
                rhs = *x;
            }
            let (bexpr, ix) = match &f.expr(rhs).kind {
                ExprKind::Unary(UnOp::AddrOf, x) => match &f.expr(*x).kind {
                    ExprKind::Index { base, index } => (*base, *index),
                    _ => return None,
                },
                ExprKind::Binary(BinOp::Add, p, q) if is_pointer_expr(f, *p) => (*p, *q),
                ExprKind::Binary(BinOp::Add, p, q) if is_pointer_expr(f, *q) => (*q, *p),
                _ => return None,
            };
            let ExprKind::Var(base) = f.expr(bexpr).kind else {
                return None;
            };
            // Rows count elements of the same size on both sides.
            let eb = f.var(base).ty.element().and_then(Type::bytes);
            if eb.is_none() || eb != var.ty.element().and_then(Type::bytes) {
                return None;
            }
            let (r, scope, s) = self.row_product(ix)?;
            let origin = format!("`{} = {}`", var.name, f.expr_text(init));
            return Some(make(base, r, scope, s, Some(j), origin));
        }
        // `a[r * s + j]`, `a[r * s]`.
        let origin = format!("`{}[{}]`", a.array, f.expr_text(j));
        if let Some((r, scope, s)) = self.row_product(j) {
            return Some(make(v, r, scope, s, None, origin));
        }
        let ExprKind::Binary(BinOp::Add, p, q) = &f.expr(j).kind else {
            return None;
        };
        for (m, jj) in [(*p, *q), (*q, *p)] {
            if let Some((r, scope, s)) = self.row_product(m) {
                return Some(make(v, r, scope, s, Some(jj), origin));
            }
        }
        None
    }

    /// What is known of `0 <= j < s` for the row's index at statement `at`.
    fn row_range(&self, row: &Row, at: u32) -> RowRange {
        let f = self.f;
        let Some(row_j) = row.j else {
            // The row's start: inside the row when it has an element.
            let s = self.lin(row.stride, &[], 0).and_then(|l| l.as_const());
            return (true, s.is_some_and(|n| n >= 1));
        };
        let place = self.places.get(&at).cloned().unwrap_or_default();
        let s_text = &row.stride_text;
        let same_s =
            |e: ExprId| &f.expr_text(self.resolve(e)) == s_text || f.expr_text(e) == *s_text;
        let j = self.resolve(row_j);
        let j_text = f.expr_text(j);
        let is_j = |e: ExprId| {
            let r = self.resolve(e);
            r == j || f.expr_text(r) == j_text || f.expr_text(e) == f.expr_text(row_j)
        };
        let (mut lo, mut hi) = (false, false);
        let nonneg = |e: ExprId| {
            self.thread_row_scope(e).is_some()
                || self.lin(e, &place.loops, 0).is_some_and(|l| {
                    l.c >= 0
                        && l.terms.iter().all(|(a, k)| {
                            *k > 0 && matches!(a, Atom::Tid(_) | Atom::Bid(_) | Atom::Iter(_))
                        })
                })
        };
        if nonneg(j) {
            lo = true;
        }
        // Constants on both sides.
        if let (Some(c), Some(n)) = (
            self.lin(j, &place.loops, 0).and_then(|l| l.as_const()),
            self.lin(row.stride, &[], 0).and_then(|l| l.as_const()),
        ) && c < n
        {
            hi = true;
        }
        // `x % s` of a non-negative `x`.
        if let ExprKind::Binary(BinOp::Rem, x, m) = &f.expr(j).kind
            && same_s(*m)
        {
            hi = true;
            lo |= nonneg(*x);
        }
        // A loop counter bounded by `s`.
        if let ExprKind::Var(v) = f.expr(j).kind {
            for l in &place.loops {
                let Some(info) = self.loops.get(l) else {
                    continue;
                };
                if info.var != Some(v) || info.opaque {
                    continue;
                }
                if let Some((u, adj)) = info.upper
                    && adj <= -1
                    && same_s(u)
                {
                    hi = true;
                }
                if let Some((lb, adj)) = info.lower
                    && self
                        .lin(lb, &[], 0)
                        .and_then(|l| l.as_const())
                        .is_some_and(|c| c.saturating_add(adj) >= 0)
                {
                    lo = true;
                }
            }
        }
        // Dominating guards (`if (j < s)`, `if (j >= s) return;`).
        let mut conds: Vec<(ExprId, bool)> = Vec::new();
        for &(g, val) in &place.guards {
            let mut stack = vec![g];
            while let Some(c) = stack.pop() {
                match &f.expr(c).kind {
                    ExprKind::Binary(BinOp::LogAnd, x, y) if val => stack.extend([*x, *y]),
                    ExprKind::Binary(BinOp::LogOr, x, y) if !val => stack.extend([*x, *y]),
                    _ => conds.push((c, val)),
                }
            }
        }
        for (c, val) in conds {
            let ExprKind::Binary(op, x, y) = &f.expr(c).kind else {
                continue;
            };
            let op = cmp_under(*op, val);
            let zero = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Int(0));
            match op {
                BinOp::Lt if is_j(*x) && same_s(*y) => hi = true,
                BinOp::Gt if same_s(*x) && is_j(*y) => hi = true,
                BinOp::Ge if is_j(*x) && zero(*y) => lo = true,
                BinOp::Le if zero(*x) && is_j(*y) => lo = true,
                _ => {}
            }
        }
        (lo, hi)
    }
}

/// What per-thread rows say about a pair of accesses.
enum RowPair {
    /// No two threads the check would pair can share an element.
    Apart,
    /// The modes still to check (threads of one block, of different
    /// blocks) and, when the rows separate the threads only under a
    /// condition on the indices, the message's assumption.
    Modes(bool, bool, Option<String>),
}

fn row_pair(cx: &Cx<'_>, a: &Acc, b: &Acc, block_conc: bool, inter_block: bool) -> RowPair {
    let same = |ra: &Row, rb: &Row| {
        ra.base == rb.base && ra.row == rb.row && ra.stride_text == rb.stride_text
    };
    let (Some(ra), Some(rb)) = (&a.row, &b.row) else {
        return RowPair::Modes(block_conc, inter_block, None);
    };
    if !same(ra, rb) {
        return RowPair::Modes(block_conc, inter_block, None);
    }
    let grid = ra.scope == RowScope::Grid && rb.scope == RowScope::Grid;
    let f = cx.f;
    let mut ranges = [cx.row_range(ra, a.side.stmt), cx.row_range(rb, b.side.stmt)];
    // A side proven inside its row runs only when the row has an element,
    // so the other side's row start is inside it too.
    for k in 0..2 {
        let (me, other) = if k == 0 {
            (ra, ranges[1])
        } else {
            (rb, ranges[0])
        };
        if me.j.is_none() && other == (true, true) {
            ranges[k] = (true, true);
        }
    }
    let mut conds: Vec<String> = Vec::new();
    for (r, range) in [(ra, ranges[0]), (rb, ranges[1])] {
        if let Some(c) = row_condition(f, r, range)
            && !conds.contains(&c)
        {
            conds.push(c);
        }
    }
    if conds.is_empty() {
        let inter_block = inter_block && !grid;
        if !inter_block {
            return RowPair::Apart;
        }
        return RowPair::Modes(false, inter_block, None);
    }
    if inter_block && !grid {
        // Rows of one block's threads only: threads of different blocks
        // are not told apart; the generic check stands.
        return RowPair::Modes(block_conc, inter_block, None);
    }
    let origins = if ra.origin == rb.origin {
        ra.origin.clone()
    } else {
        format!("{}, {}", ra.origin, rb.origin)
    };
    let note = format!(
        "each thread accesses only its own row of `{}` elements of `{}` ({origins}, row `{}`), \
         so the code is race-free if {}, which cudalog does not check",
        short_text(f, ra.stride, 40),
        f.var(ra.base).name,
        ra.row_shown,
        conds.join(" and ")
    );
    RowPair::Modes(block_conc, inter_block, Some(note))
}

/// The condition under which a row's index stays in its row, in words
/// (`0 <= `K` < `stride``), or `None` when both bounds are proven.
fn row_condition(f: &Function, row: &Row, range: RowRange) -> Option<String> {
    let s = short_text(f, row.stride, 40);
    let Some(j) = row.j else {
        return (!range.1).then(|| format!("`{s}` >= 1"));
    };
    let j = short_text(f, j, 60);
    match range {
        (true, true) => None,
        (true, false) => Some(format!("`{j}` < `{s}`")),
        (false, true) => Some(format!("`{j}` >= 0")),
        (false, false) => Some(format!("0 <= `{j}` < `{s}`")),
    }
}

/// The threads one tile or warp sync orders among themselves: a
/// cooperative-groups tile of known size (`thread_block_tile<N>`,
/// `tiled_partition(g, N)`, a `thread_group` parameter every caller passes
/// such a tile for) or `__syncwarp()` with the full mask (32).
fn tile_of(f: &Function, b: &crate::ir::Barrier, groups: &[Option<i64>]) -> Option<i64> {
    let n = match b.kind {
        BarrierKind::SyncWarp => b.thread_count,
        BarrierKind::CgTileSync => b.thread_count.or_else(|| {
            let name = b.thread_count_text.as_deref()?;
            let p = f
                .vars
                .iter()
                .find(|v| v.name == name && v.param_position.is_some())?
                .param_position?;
            groups.get(p as usize).copied().flatten()
        }),
        _ => None,
    }?;
    (n > 0).then_some(n)
}

/// Intervals for the threads of one tile of `n` threads: tile syncs of a
/// multiple of `n` threads separate them too.
struct TileScope {
    n: i64,
    starts: Vec<Vec<u32>>,
    conc: Concurrency,
    /// Loops whose body holds such a sync: the threads of one tile run them
    /// in step.
    loops: Vec<u32>,
}

/// How the tile syncs of a function refine one pair of statements.
struct TileMode {
    /// Tile size.
    n: i64,
    /// Whether two threads of one tile can run the pair at once.
    same_conc: bool,
    /// Loops the threads of one tile run in step.
    loops: Vec<u32>,
}

fn tile_scopes(cx: &Cx<'_>, u: &Uniformity, groups: &[Option<i64>]) -> Vec<TileScope> {
    let f = cx.f;
    if f.stmts.len() > CONCURRENCY_LIMIT {
        return Vec::new();
    }
    let sizes: Vec<Option<i64>> = f.barriers.iter().map(|b| tile_of(f, b, groups)).collect();
    let mut ns: Vec<i64> = sizes.iter().flatten().copied().collect();
    ns.sort_unstable_by(|a, b| b.cmp(a));
    ns.dedup();
    ns.truncate(4);
    let mut out = Vec::new();
    for n in ns {
        let orders = |i: usize| sizes[i].is_some_and(|m| m % n == 0);
        let Some(fl) = super::intervals::flow_with(f, &orders) else {
            continue;
        };
        let starts = super::intervals::starts_in(&fl);
        let loops = cx
            .loops
            .keys()
            .filter(|l| stmt_contains_sync(f, StmtId(**l), &orders, 0))
            .copied()
            .collect();
        out.push(TileScope {
            n,
            starts,
            conc: Concurrency::from_flow(Some(fl), u),
            loops,
        });
    }
    out
}

/// Whether statement `s` holds a barrier that `pick` accepts.
fn stmt_contains_sync(f: &Function, s: StmtId, pick: &dyn Fn(usize) -> bool, depth: u32) -> bool {
    if depth > 200 {
        return false;
    }
    if let StmtKind::Barrier(i) = &f.stmt(s).kind
        && pick(*i as usize)
    {
        return true;
    }
    f.child_stmts(s)
        .into_iter()
        .any(|c| stmt_contains_sync(f, c, pick, depth + 1))
}

/// The tile refinement of the pair of statements `x`, `y`: the largest
/// tile whose syncs order them for the threads of one tile, else the
/// largest tile (whose syncs may still order other iterations).
fn tile_mode(scopes: &[TileScope], x: u32, y: u32, same: bool) -> Option<TileMode> {
    let conc = |s: &TileScope| {
        same || {
            let (sx, sy) = (s.starts.get(x as usize), s.starts.get(y as usize));
            sx.zip(sy)
                .is_some_and(|(a, b)| a.iter().any(|v| b.contains(v)))
                && s.conc.concurrent(x, y)
        }
    };
    let s = scopes
        .iter()
        .find(|s| !conc(s))
        .or_else(|| scopes.first())?;
    Some(TileMode {
        n: s.n,
        same_conc: conc(s),
        loops: s.loops.clone(),
    })
}

/// How an access through a pointer variable relates to other accesses.
enum Rebase {
    /// The pointer is its own base.
    Plain,
    /// `base` plus a byte offset (`None`: not linear).
    Offset(VarId, Option<Lin>),
    /// Set in ways the model does not follow.
    Unknown,
}

/// Whether `e` is a pointer (or array) expression.
fn is_pointer_expr(f: &Function, e: ExprId) -> bool {
    match &f.expr(e).kind {
        ExprKind::Var(v) => f.var(*v).ty.is_indexable(),
        ExprKind::Cast(t, _) => matches!(t, Type::Pointer(_)),
        ExprKind::Unary(UnOp::AddrOf, _) => true,
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
            is_pointer_expr(f, *a) || is_pointer_expr(f, *b)
        }
        _ => false,
    }
}

/// Size of what pointer expression `e` points to.
fn pointee_bytes(f: &Function, e: ExprId) -> Option<u64> {
    match &f.expr(e).kind {
        ExprKind::Var(v) => f.var(*v).ty.element().and_then(Type::bytes),
        ExprKind::Cast(t, _) => t.element().and_then(Type::bytes),
        ExprKind::Unary(UnOp::AddrOf, x) => {
            let mut r = *x;
            let mut n = 0;
            while let ExprKind::Index { base, .. } = &f.expr(r).kind {
                n += 1;
                r = *base;
            }
            let ExprKind::Var(w) = f.expr(r).kind else {
                return None;
            };
            let mut ty = f.var(w).ty.clone();
            for _ in 0..n {
                ty = ty.element()?.clone();
            }
            ty.bytes()
        }
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
            if is_pointer_expr(f, *a) {
                pointee_bytes(f, *a)
            } else {
                pointee_bytes(f, *b)
            }
        }
        _ => None,
    }
}

/// The variable expression at the root of an access (`p` in `p[i]`, `*(p + i)`).
fn base_var_expr(f: &Function, mut e: ExprId) -> Option<ExprId> {
    for _ in 0..64 {
        match &f.expr(e).kind {
            ExprKind::Var(_) => return Some(e),
            ExprKind::Index { base, .. } => e = *base,
            ExprKind::Unary(UnOp::Deref, p) | ExprKind::Cast(_, p) => e = *p,
            ExprKind::Member { base, .. } => e = *base,
            ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
                e = if is_pointer_expr(f, *a) { *a } else { *b }
            }
            _ => return None,
        }
    }
    None
}

/// Whether two statements can run at the same time in two threads of one
/// block, refining "they share a barrier interval": threads that leave the
/// same barrier instance take the same side of every block-uniform branch,
/// so they can be at `a` and `b` at once only when one follows the other
/// without a barrier (the same path, at different progress) or a
/// thread-dependent branch sends them different ways.
struct Concurrency {
    flow: Option<super::intervals::Flow>,
    /// Thread-dependent branch nodes and their successors.
    splits: Vec<Vec<u32>>,
    /// Nodes reachable without crossing a barrier, per start node.
    memo: std::cell::RefCell<HashMap<u32, std::rc::Rc<Vec<u64>>>>,
}

/// Functions with more statements than this keep the coarse interval test.
const CONCURRENCY_LIMIT: usize = 30_000;

impl Concurrency {
    fn new(f: &Function, u: &Uniformity) -> Concurrency {
        let flow = (f.stmts.len() <= CONCURRENCY_LIMIT)
            .then(|| super::intervals::flow(f))
            .flatten();
        Concurrency::from_flow(flow, u)
    }

    fn from_flow(flow: Option<super::intervals::Flow>, u: &Uniformity) -> Concurrency {
        let mut splits = Vec::new();
        if let Some(fl) = &flow {
            for (i, c) in fl.cond.iter().enumerate() {
                if let Some(c) = c
                    && fl.succ[i].len() > 1
                    && !u.is_uniform(c.0)
                {
                    splits.push(fl.succ[i].clone());
                }
            }
        }
        Concurrency {
            flow,
            splits,
            memo: std::cell::RefCell::new(HashMap::new()),
        }
    }

    /// Nodes a thread can reach from the start of node `x` (`x` included
    /// unless it is a barrier) without crossing a barrier.
    fn reach(&self, x: u32) -> std::rc::Rc<Vec<u64>> {
        if let Some(r) = self.memo.borrow().get(&x) {
            return r.clone();
        }
        let fl = self.flow.as_ref().expect("flow");
        let n = fl.succ.len();
        let mut seen = vec![0u64; n.div_ceil(64)];
        let mut stack = vec![x as usize];
        while let Some(t) = stack.pop() {
            if fl.barrier[t] || seen[t / 64] & (1 << (t % 64)) != 0 {
                continue;
            }
            seen[t / 64] |= 1 << (t % 64);
            stack.extend(fl.succ[t].iter().map(|&v| v as usize));
        }
        let r = std::rc::Rc::new(seen);
        self.memo.borrow_mut().insert(x, r.clone());
        r
    }

    fn after(&self, x: u32, y: u32) -> bool {
        // y reachable from x's successors without a barrier.
        let fl = self.flow.as_ref().expect("flow");
        fl.succ[x as usize].iter().any(|&s| {
            let r = self.reach(s);
            r[y as usize / 64] & (1 << (y % 64)) != 0
        })
    }

    /// `y` reachable from `x`'s successors without a barrier and without
    /// passing loop header `header`: inside one iteration of that loop.
    fn after_within(&self, x: u32, y: u32, header: u32) -> bool {
        let Some(fl) = self.flow.as_ref() else {
            return true;
        };
        let n = fl.succ.len();
        let mut seen = vec![false; n];
        let mut stack: Vec<usize> = fl.succ[x as usize].iter().map(|&v| v as usize).collect();
        while let Some(t) = stack.pop() {
            if fl.barrier[t] || t == header as usize || seen[t] {
                continue;
            }
            if t == y as usize {
                return true;
            }
            seen[t] = true;
            stack.extend(fl.succ[t].iter().map(|&v| v as usize));
        }
        false
    }

    fn concurrent(&self, a: u32, b: u32) -> bool {
        if self.flow.is_none() {
            return true;
        }
        if self.after(a, b) || self.after(b, a) {
            return true;
        }
        let has = |r: &Vec<u64>, y: u32| r[y as usize / 64] & (1 << (y % 64)) != 0;
        self.splits.iter().any(|succ| {
            let rs: Vec<std::rc::Rc<Vec<u64>>> = succ.iter().map(|&s| self.reach(s)).collect();
            rs.iter().enumerate().any(|(i, ri)| {
                has(ri, a) && rs.iter().enumerate().any(|(j, rj)| i != j && has(rj, b))
            })
        })
    }
}

/// Whether the value `a` (a write) stores is the same for every lane of a
/// warp: a constant, a block-uniform value, or the result of a warp
/// collective that returns one value to all lanes (`cg::reduce`,
/// `__reduce_*_sync`, a shuffle from a fixed lane), directly or through a
/// local set once.
fn stored_value_warp_uniform(cx: &Cx<'_>, a: &Acc) -> bool {
    let f = cx.f;
    let Some(i) = a.side.access else {
        return false;
    };
    let target = f.accesses[i].expr;
    let Some(rhs) = f.exprs.iter().find_map(|e| match &e.kind {
        ExprKind::Assign { op: None, lhs, rhs } if *lhs == target => Some(*rhs),
        _ => None,
    }) else {
        return false;
    };
    warp_uniform_value(cx, rhs, 0) || reaching_value_warp_uniform(cx, rhs, a.side.stmt)
}

/// For a store of a local `v`: whether the one definition of `v` that
/// reaches statement `at` (the last one before it, dominating it, with the
/// later ones outside every loop around `at`) gives a warp-uniform value.
fn reaching_value_warp_uniform(cx: &Cx<'_>, e: ExprId, at: u32) -> bool {
    let f = cx.f;
    let ExprKind::Var(v) = f.expr(e).kind else {
        return false;
    };
    if f.var(v).param_position.is_some() {
        return false;
    }
    let mut defs: Vec<(StmtId, ExprId)> = Vec::new();
    for (si, st) in f.stmts.iter().enumerate() {
        match &st.kind {
            StmtKind::Decl { var, init: Some(i) } if *var == v => {
                defs.push((StmtId(si as u32), *i))
            }
            StmtKind::Expr(x) => {
                if let ExprKind::Assign { op: None, lhs, rhs } = &f.expr(*x).kind
                    && matches!(f.expr(*lhs).kind, ExprKind::Var(w) if w == v)
                {
                    defs.push((StmtId(si as u32), *rhs));
                }
            }
            _ => {}
        }
    }
    if defs.len() as u32 != cx.defs.get(v.0 as usize).copied().unwrap_or(0) {
        return false;
    }
    let at_span = f.stmt(StmtId(at)).span;
    let before = |s: StmtId| {
        let sp = f.stmt(s).span;
        (sp.end_line, sp.end_col) <= (at_span.line, at_span.col)
    };
    let Some(&(last, value)) = defs
        .iter()
        .filter(|(s, _)| before(*s))
        .max_by_key(|(s, _)| (f.stmt(*s).span.line, f.stmt(*s).span.col))
    else {
        return false;
    };
    let at_loops = cx
        .places
        .get(&at)
        .map(|p| p.loops.clone())
        .unwrap_or_default();
    let later_ok = defs.iter().filter(|(s, _)| !before(*s)).all(|(s, _)| {
        cx.places
            .get(&s.0)
            .is_some_and(|p| !p.loops.iter().any(|l| at_loops.contains(l)))
    });
    let decl = matches!(f.stmt(last).kind, StmtKind::Decl { .. });
    later_ok && (decl || cx.dominates(last, StmtId(at))) && warp_uniform_value(cx, value, 0)
}

/// Whether local `v` is assigned anywhere (a plain or compound assignment).
fn reaching_assigned(f: &Function, v: VarId) -> bool {
    f.exprs.iter().any(|e| match &e.kind {
        ExprKind::Assign { lhs, .. } | ExprKind::IncDec { target: lhs, .. } => {
            matches!(f.expr(*lhs).kind, ExprKind::Var(w) if w == v)
        }
        _ => false,
    })
}

fn warp_uniform_value(cx: &Cx<'_>, e: ExprId, depth: u32) -> bool {
    if depth > 8 {
        return false;
    }
    let f = cx.f;
    // A local never set (`pair_t fresh; p[k] = fresh;`) holds garbage that
    // can differ per thread, whatever the uniformity facts say.
    if let ExprKind::Var(v) = f.expr(e).kind
        && f.var(v).param_position.is_none()
        && f.var(v).space.is_none()
        && cx.defs.get(v.0 as usize).copied().unwrap_or(0) <= 1
        && cx.init.get(v.0 as usize).copied().flatten().is_none()
        && !reaching_assigned(f, v)
    {
        return false;
    }
    if cx.u.is_uniform(e.0) {
        return true;
    }
    match &f.expr(e).kind {
        ExprKind::Cast(_, x) | ExprKind::Unary(UnOp::Neg | UnOp::Plus, x) => {
            warp_uniform_value(cx, *x, depth + 1)
        }
        ExprKind::Var(v) => match (
            cx.init.get(v.0 as usize).copied().flatten(),
            cx.defs.get(v.0 as usize),
        ) {
            (Some(i), Some(1)) => warp_uniform_value(cx, i, depth + 1),
            _ => false,
        },
        ExprKind::Call { callee, args, .. } => {
            let base = callee.rsplit("::").next().unwrap_or(callee);
            match base {
                "reduce" => callee.contains("cg::") || callee.contains("cooperative_groups"),
                b if b.starts_with("__reduce_") && b.ends_with("_sync") => true,
                "__shfl_sync" => args
                    .get(2)
                    .is_some_and(|l| super::barriers::const_value(f, *l).is_some()),
                _ => false,
            }
        }
        _ => false,
    }
}

/// The constant a plain store `acc = value` writes, when `value` is a
/// compile-time constant (integer, `true`/`false`, a floating literal),
/// as a comparable key (`true` and `1` are the same stored value).
fn stored_constant(f: &Function, stores: &HashMap<u32, ExprId>, acc: &Acc) -> Option<(u8, i64)> {
    let rhs = *stores.get(&acc.expr?.0)?;
    constant_key(f, rhs, 0)
}

/// The right side of every plain assignment, by its left side.
fn plain_stores(f: &Function) -> HashMap<u32, ExprId> {
    f.exprs
        .iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Assign { op: None, lhs, rhs } => Some((lhs.0, *rhs)),
            _ => None,
        })
        .collect()
}

fn constant_key(f: &Function, e: ExprId, depth: u32) -> Option<(u8, i64)> {
    if depth > 8 {
        return None;
    }
    match &f.expr(e).kind {
        ExprKind::Bool(b) => Some((0, i64::from(*b))),
        ExprKind::Float(t) => {
            let t = t.trim_end_matches(['f', 'F', 'l', 'L']);
            let v: f64 = t.parse().ok()?;
            // An integral float equals the integer of the same value.
            if v.fract() == 0.0 && v.abs() < 1e15 {
                Some((0, v as i64))
            } else {
                Some((1, v.to_bits() as i64))
            }
        }
        ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => constant_key(f, *a, depth + 1),
        _ => super::barriers::const_value(f, e).map(|v| (0, v)),
    }
}

/// Whether both stores write the same compile-time constant.
fn same_constant_store(f: &Function, stores: &HashMap<u32, ExprId>, a: &Acc, b: &Acc) -> bool {
    match (stored_constant(f, stores, a), stored_constant(f, stores, b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Whether an index of `a` depends on `blockIdx`.
fn uses_block(cx: &Cx<'_>, a: &Acc) -> bool {
    a.indices.iter().any(|e| cx.mentions_block(*e, 0))
        || matches!(&a.base_off, Some(Some(l)) if lin_mentions_block(l))
}

fn lin_mentions_block(l: &Lin) -> bool {
    l.terms.keys().any(|a| match a {
        Atom::Bid(_) | Atom::Sym(_, true) => true,
        Atom::Quot(x, _) => lin_mentions_block(x),
        _ => false,
    })
}

/// For a pair where one access goes through a rebased pointer: both
/// addresses as one byte offset from the common base (element size 1, so
/// the solver compares byte ranges); `None` entries where it is not linear.
fn flatten(acc: &Acc, lins: &[Option<Lin>]) -> (Acc, Vec<Option<Lin>>) {
    let mut out = acc.clone();
    out.elem = Some(1);
    out.field = 0;
    let n = lins.len().max(1);
    let unknown = (out.clone(), vec![None; n]);
    let off = match &acc.base_off {
        Some(None) => return unknown,
        Some(Some(l)) => l.clone(),
        None => Lin::constant(0),
    };
    let (Some(elem), Some(_)) = (acc.elem, acc.bytes) else {
        return unknown;
    };
    let dims = acc
        .side
        .access
        .map(|_| acc.dims.clone())
        .unwrap_or_default();
    let mut total = Some(off);
    for (k, l) in lins.iter().enumerate() {
        let mut stride = Some(elem as i64);
        for d in dims.iter().skip(k + 1) {
            stride = match (stride, d) {
                (Some(s), Some(d)) => s.checked_mul(*d as i64),
                _ => None,
            };
        }
        if lins.len() > 1 && dims.len() != lins.len() {
            stride = None;
        }
        total = match (total, l, stride) {
            (Some(t), Some(l), Some(s)) => l.clone().scale(s).and_then(|x| t.add(&x, 1)),
            _ => None,
        };
    }
    let total = total.and_then(|t| t.add(&Lin::constant(acc.field as i64), 1));
    (out, vec![total])
}

/// Per-thread instance of the atoms of a pair.
struct Inst {
    vars: ProblemVariables,
    map: BTreeMap<(Atom, u8), Variable>,
    /// Atoms with their copy and a display name, for the witness.
    named: Vec<(String, Variable)>,
    tid: [[Variable; 3]; 2],
    bid: [[Variable; 3]; 2],
    /// Guards left out of the program: bit 0 thread-index arithmetic that
    /// is not linear, bit 1 data loaded from memory.
    dropped: u8,
    /// The guards on data loaded from memory that were left out: the
    /// condition, the value it has where the access runs, its loops.
    data_guards: Vec<DataGuard>,
    /// Thread-invariant symbols take values ≥ 0 (a second solve for a
    /// readable witness).
    sym_nonneg: bool,
}

/// A guard on data loaded from memory: condition, value, enclosing loops.
type DataGuard = (ExprId, bool, Vec<u32>);

/// The iterations of the innermost loop around both accesses whose body
/// holds a barrier in which they can run in one barrier interval:
/// `None` (the same iteration: the loop runs in step) when a thread can
/// go from one to the other inside one iteration without crossing a
/// barrier (or they sit in different branches of a thread-dependent
/// split), else `Some((loop, d))` for each direction in which one reaches
/// the other only through the loop's back edge: the second access (`b`)
/// runs `d` iterations after the first (`a`): a write before the barrier
/// in iteration `i + 1` with a read after it in iteration `i`.
fn iteration_offsets(
    cx: &Cx<'_>,
    conc: &Concurrency,
    a: &Acc,
    b: &Acc,
    same: bool,
) -> Vec<Option<(u32, i64)>> {
    let (x, y) = (a.side.stmt, b.side.stmt);
    let pa = cx.places.get(&x);
    let pb = cx.places.get(&y);
    let (Some(pa), Some(pb)) = (pa, pb) else {
        return vec![None];
    };
    let Some(&l) = pa
        .loops
        .iter()
        .rev()
        .find(|l| pb.loops.contains(l) && cx.loops.get(l).is_some_and(|i| i.has_barrier))
    else {
        return vec![None];
    };
    if same || conc.flow.is_none() {
        return vec![None];
    }
    let (ab, ba) = (conc.after(x, y), conc.after(y, x));
    if (!ab && !ba) || conc.after_within(x, y, l) || conc.after_within(y, x, l) {
        return vec![None];
    }
    let mut out = Vec::new();
    if ab {
        out.push(Some((l, 1)));
    }
    if ba {
        out.push(Some((l, -1)));
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn check_pair(
    cx: &Cx<'_>,
    a: &Acc,
    b: &Acc,
    same: bool,
    block_conc: bool,
    inter_block: bool,
    warps_apart: bool,
    tile: Option<&TileMode>,
    carried: Option<(u32, i64)>,
) -> Option<Race> {
    let f = cx.f;
    let pa = cx.places.get(&a.side.stmt).cloned().unwrap_or_default();
    let pb = cx.places.get(&b.side.stmt).cloned().unwrap_or_default();
    let ia: Vec<Option<Lin>> = a.indices.iter().map(|e| cx.lin(*e, &pa.loops, 0)).collect();
    let ib: Vec<Option<Lin>> = b.indices.iter().map(|e| cx.lin(*e, &pb.loops, 0)).collect();
    // Through rebased pointers: compare byte offsets from the common base.
    let flat;
    let (a, b, ia, ib) = if a.base_off.is_some() || b.base_off.is_some() {
        let (fa, la) = flatten(a, &ia);
        let (fb, lb) = flatten(b, &ib);
        flat = (fa, fb);
        (&flat.0, &flat.1, la, lb)
    } else {
        (a, b, ia, ib)
    };
    let known = ia.iter().chain(&ib).all(Option::is_some) && ia.len() == ib.len();
    // A device function does not know how many threads call it (often one,
    // under `if (tid == 0)` in the caller): addresses that do not depend on
    // the thread say nothing there.
    let threaded = |v: &[Option<Lin>]| {
        v.iter().flatten().any(|l| {
            l.terms
                .keys()
                .any(|a| !matches!(a, Atom::Sym(..) | Atom::Iter(_) | Atom::Loop(..)))
        })
    };
    if f.kind == crate::ir::FunctionKind::Device && !threaded(&ia) && !threaded(&ib) {
        return None;
    }
    let unknown = if known {
        None
    } else {
        // Possible only against a write by another access.
        if same || (!a.side.is_write && !b.side.is_write) {
            return None;
        }
        let which = if ia.iter().any(Option::is_none) { a } else { b };
        // Only indices loaded from memory (scatter through an index array):
        // other non-affine forms are limits of the model, not evidence.
        let loaded = |acc: &Acc, l: &[Option<Lin>]| {
            acc.indices.iter().zip(l).any(|(e, l)| {
                l.is_none()
                    && cx
                        .u
                        .expr_from_memory
                        .get(e.0 as usize)
                        .copied()
                        .unwrap_or(false)
            })
        };
        if !loaded(a, &ia) && !loaded(b, &ib) {
            return None;
        }
        Some(format!(
            "the index of `{}` is not affine in the thread indices",
            which.side.text
        ))
    };
    if unknown.is_some() && !(a.side.is_write && b.side.is_write) {
        return None;
    }
    // Field ranges inside the element must overlap.
    if let (Some(sa), Some(sb)) = (a.bytes, b.bytes)
        && a.elem == b.elem
        && (a.field + sa <= b.field || b.field + sb <= a.field)
    {
        return None;
    }
    // Loops shared by both accesses whose body holds a barrier run in step.
    // (Not the loop whose back edge separates them: there the second
    // access runs in a later iteration, see `iteration_offsets`.)
    let shared_loops: Vec<u32> = pa
        .loops
        .iter()
        .filter(|l| pb.loops.contains(l) && cx.loops.get(l).is_some_and(|i| i.has_barrier))
        .filter(|l| carried.is_none_or(|(c, _)| c != **l))
        .copied()
        .collect();
    let modes: Vec<bool> = {
        let mut m = Vec::new();
        if block_conc {
            m.push(false);
        }
        if inter_block {
            m.push(true);
        }
        m
    };
    let block_sym = |v: &[Option<Lin>]| {
        v.iter()
            .flatten()
            .any(|l| l.terms.keys().any(|a| matches!(a, Atom::Sym(_, true))))
    };
    let lockstep =
        (cx.launch.warp_lockstep && !(same && a.side.is_write && b.side.is_write)) || warps_apart;
    // Queries: (between blocks, dimension (3: threads of different groups
    // of `group` threads in the linear rank), group, same tile of `n`).
    let mut queries: Vec<(bool, usize, i64, Option<i64>)> = Vec::new();
    for between_blocks in modes {
        if between_blocks {
            queries.extend((0..3).map(|d| (true, d, 32, None)));
            continue;
        }
        match tile {
            // Tile syncs order the threads of one tile: threads of
            // different tiles race on the block's intervals, threads of
            // one tile only on the tile's.
            Some(t) => {
                let g = if lockstep { t.n.max(32) } else { t.n };
                queries.push((false, 3, g, None));
                if t.same_conc && !(lockstep && t.n <= 32) {
                    queries.extend((0..3).map(|d| (false, d, 32, Some(t.n))));
                }
            }
            // Lock-step warps: only threads of different warps race (or
            // lanes writing in the same statement).
            None if lockstep => queries.push((false, 3, 32, None)),
            // (audit 20261208 #61, softmax_forward `max_or_sum_storage`)
            // Threads of different warps first: no warp-level
            // synchronisation (a shuffle, `cg::reduce`) orders them, so
            // their witness is the one that convinces; then any two.
            // Only where the block is known to hold several warps: with an
            // unknown block, a witness across warps would make the race
            // conditional on a block size the pair within one warp does
            // not need.
            None => {
                let threads: Option<i64> = (0..3)
                    .map(|d| cx.block_dim(d))
                    .try_fold(1i64, |acc, x| x.map(|x| acc.saturating_mul(x)));
                if threads.is_some_and(|t| t > 32) {
                    queries.push((false, 3, 32, None));
                }
                queries.extend((0..3).map(|d| (false, d, 32, None)));
            }
        }
    }
    let mut tile_loops = shared_loops.clone();
    if let Some(t) = tile {
        tile_loops.extend(
            pa.loops
                .iter()
                .filter(|l| pb.loops.contains(l) && t.loops.contains(l))
                .copied(),
        );
    }
    for (between_blocks, d, group, same_tile) in queries {
        // Opaque values that differ between blocks say nothing across blocks.
        if between_blocks && (block_sym(&ia) || block_sym(&ib)) {
            continue;
        }
        let in_step = if same_tile.is_some() {
            &tile_loops
        } else {
            &shared_loops
        };
        {
            let extent = if d == 3 {
                2
            } else if between_blocks {
                cx.grid_dim(d).unwrap_or(if d == 0 { 2 } else { 1 })
            } else {
                cx.block_dim(d).unwrap_or(if d == 0 { 2 } else { 1 })
            };
            if extent < 2 {
                continue;
            }
            for dir in [1i64, -1] {
                if same && dir < 0 {
                    continue;
                }
                let run = |nonneg: bool, dir: i64| {
                    solve(
                        cx,
                        a,
                        b,
                        (&pa, &pb),
                        (&ia, &ib),
                        known,
                        in_step,
                        between_blocks,
                        (d, group, same_tile, nonneg),
                        dir,
                        carried,
                    )
                };
                let mut w = run(false, dir);
                // A witness with negative thread-invariant values (a block
                // size of -1023) reads as nonsense: prefer one whose
                // symbols are all non-negative when there is one. Only where
                // the message shows them: a proven collision that depends on
                // symbols (a warning naming them).
                if !between_blocks
                    && known
                    && w.as_ref()
                        .is_some_and(|(w, g)| g.is_empty() && w.values.iter().any(|(_, v)| *v < 0))
                    && !symbols_deciding(&ia, &ib).is_empty()
                    && let Some(better) = run(true, dir).or_else(|| run(true, -dir))
                {
                    w = Some(better);
                }
                if let Some((w, guards)) = w {
                    let data_guard = !guards.is_empty();
                    let unknown = unknown.clone().or_else(|| {
                        data_guard.then(|| {
                            "a condition guarding them depends on data loaded from memory"
                                .to_string()
                        })
                    });
                    let assumption = if !known {
                        Some(loaded_index_assumption(cx, a, b, &ia, &ib))
                    } else if data_guard {
                        Some(data_guard_assumption(cx, &guards))
                    } else {
                        None
                    };
                    let depends_on = if between_blocks {
                        Vec::new()
                    } else {
                        symbols_deciding(&ia, &ib)
                    };
                    return Some(Race {
                        depends_on,
                        first: a.side.clone(),
                        second: b.side.clone(),
                        space: a.space,
                        array: match a.side.access {
                            Some(i) => f.accesses[i].array.clone(),
                            None => a.side.text.clone(),
                        },
                        proven: known && !data_guard,
                        witness: Some(w),
                        unknown,
                        assumption,
                    });
                }
            }
        }
    }
    None
}

/// Source text for a message, shortened to `max` characters.
fn short_text(f: &Function, e: ExprId, max: usize) -> String {
    let t = f.expr_text(e);
    if t.chars().count() <= max {
        t
    } else {
        let mut s: String = t.chars().take(max).collect();
        s.push('…');
        s
    }
}

/// The loads an expression's value comes from (following locals set
/// once): array elements, dereferences and calls on data loaded from
/// memory, outermost only.
fn loaded_sources(cx: &Cx<'_>, e: ExprId, out: &mut Vec<ExprId>, depth: u32) {
    if depth > 12 || out.len() >= 3 {
        return;
    }
    let f = cx.f;
    let from_memory =
        cx.u.expr_from_memory
            .get(e.0 as usize)
            .copied()
            .unwrap_or(false);
    match &f.expr(e).kind {
        ExprKind::Index { .. } | ExprKind::Unary(UnOp::Deref, _) | ExprKind::Call { .. }
            if from_memory =>
        {
            if !out.contains(&e) {
                out.push(e);
            }
        }
        ExprKind::Var(v) => {
            if let (Some(i), Some(1)) = (
                cx.init.get(v.0 as usize).copied().flatten(),
                cx.defs.get(v.0 as usize),
            ) {
                loaded_sources(cx, i, out, depth + 1);
            } else if let Some(&(_, rhs)) = cx.shared_once.get(&v.0) {
                loaded_sources(cx, rhs, out, depth + 1);
            }
        }
        _ => {
            for c in f.child_exprs(e) {
                loaded_sources(cx, c, out, depth + 1);
            }
        }
    }
}

/// What must hold for a pair with an index loaded from memory to be
/// race-free, naming where the index comes from.
fn loaded_index_assumption(
    cx: &Cx<'_>,
    a: &Acc,
    b: &Acc,
    ia: &[Option<Lin>],
    ib: &[Option<Lin>],
) -> String {
    let f = cx.f;
    let mut srcs = Vec::new();
    for (acc, l) in [(a, ia), (b, ib)] {
        for (e, l) in acc.indices.iter().zip(l) {
            if l.is_none() {
                loaded_sources(cx, *e, &mut srcs, 0);
            }
        }
    }
    let names: Vec<String> = srcs
        .iter()
        .map(|e| format!("`{}`", short_text(f, *e, 60)))
        .collect();
    let from = if names.is_empty() {
        "values loaded from memory".to_string()
    } else {
        format!("values loaded from memory ({})", names.join(", "))
    };
    if a.side.stmt == b.side.stmt {
        format!(
            "the index comes from {from}; the code is race-free only if those values differ \
             between threads (distinct keys, a permutation, exclusive-prefix-sum offsets); \
             cudalog does not check this"
        )
    } else {
        format!(
            "the indices come from {from}; the code is race-free only if those values keep \
             different threads' locations apart (`{}` of one thread never the element `{}` of \
             another), as distinct ranks or exclusive-prefix-sum offsets of per-thread counts \
             do; cudalog does not check this",
            a.side.text, b.side.text
        )
    }
}

/// The array and linear index of a load `base[index]` (through casts and
/// members of the element: `node.keys[i]`).
fn load_parts(cx: &Cx<'_>, e: ExprId, loops: &[u32]) -> Option<(String, Lin)> {
    let f = cx.f;
    match &f.expr(e).kind {
        ExprKind::Cast(_, a) => load_parts(cx, *a, loops),
        ExprKind::Index { base, index } => {
            let l = cx.lin(*index, loops, 0)?;
            Some((f.expr_text(*base), l))
        }
        _ => None,
    }
}

/// What must hold for a pair under guards on loaded data to be race-free:
/// a key found by equality must be unique, an interval search between
/// consecutive elements needs them sorted, any other data condition must
/// hold for one thread.
fn data_guard_assumption(cx: &Cx<'_>, guards: &[DataGuard]) -> String {
    let f = cx.f;
    // (array, index, op with the load on the left, uniform side, guard).
    let mut tests: Vec<(String, Lin, BinOp, ExprId, ExprId)> = Vec::new();
    for (g, val, loops) in guards {
        let ExprKind::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            x,
            y,
        ) = &f.expr(*g).kind
        else {
            continue;
        };
        let op = cmp_under(*op, *val);
        let uniform = |e: ExprId| cx.u.is_uniform(e.0);
        let (load, other, op) = if uniform(*y) && !uniform(*x) {
            (*x, *y, op)
        } else if uniform(*x) && !uniform(*y) {
            let flipped = match op {
                BinOp::Lt => BinOp::Gt,
                BinOp::Le => BinOp::Ge,
                BinOp::Gt => BinOp::Lt,
                BinOp::Ge => BinOp::Le,
                o => o,
            };
            (*y, *x, flipped)
        } else {
            continue;
        };
        let Some((arr, idx)) = load_parts(cx, load, loops) else {
            continue;
        };
        // The index must differ between threads.
        if idx.invariant() {
            continue;
        }
        tests.push((arr, idx, op, other, *g));
    }
    // An interval search: `arr[i] <= k` (or `<`) and `arr[i + 1] > k` (or `>=`).
    for (arr, lo_idx, op_lo, k, g_lo) in &tests {
        if !matches!(op_lo, BinOp::Le | BinOp::Lt) {
            continue;
        }
        for (arr2, hi_idx, op_hi, k2, g_hi) in &tests {
            let next = lo_idx.clone().add(&Lin::constant(1), 1);
            if arr2 == arr
                && matches!(op_hi, BinOp::Gt | BinOp::Ge)
                && f.expr_text(*k) == f.expr_text(*k2)
                && next.as_ref() == Some(hi_idx)
            {
                return format!(
                    "the guards `{}` and `{}` bracket `{}` between consecutive elements of `{}`: \
                     the code is race-free only if `{}` is sorted, so that one thread's pair \
                     brackets it, which cudalog does not check",
                    short_text(f, *g_lo, 60),
                    short_text(f, *g_hi, 60),
                    short_text(f, *k, 40),
                    arr,
                    arr
                );
            }
        }
    }
    // A key looked up (not a constant sentinel such as `== 0` or `== -1`,
    // which many threads can match).
    let constant = |k: ExprId| {
        super::barriers::const_value(f, k).is_some()
            || matches!(f.expr(k).kind, ExprKind::Float(_) | ExprKind::Bool(_))
    };
    if let Some((arr, _, _, k, g)) = tests.iter().find(|t| t.2 == BinOp::Eq && !constant(t.3)) {
        return format!(
            "the guard `{}` compares each thread's element of `{arr}` with `{}`: the code is \
             race-free only if the elements of `{arr}` the threads read are distinct (unique \
             keys), so that one thread matches, which cudalog does not check",
            short_text(f, *g, 60),
            short_text(f, *k, 40)
        );
    }
    let texts: Vec<String> = guards
        .iter()
        .map(|(g, _, _)| format!("`{}`", short_text(f, *g, 60)))
        .collect();
    format!(
        "a condition guarding them depends on data loaded from memory ({}); the code is \
         race-free only if it holds for at most one of the threads that can reach the same \
         location, which cudalog does not check",
        texts.join(", ")
    )
}

/// The thread-invariant symbols (not `blockDim`/`gridDim`) left in the
/// difference of two addresses: whether they collide depends on them.
fn symbols_deciding(ia: &[Option<Lin>], ib: &[Option<Lin>]) -> Vec<String> {
    fn syms(l: &Lin, out: &mut Vec<String>) {
        for a in l.terms.keys() {
            match a {
                Atom::Sym(s, _) if !s.starts_with("blockDim.") && !s.starts_with("gridDim.") => {
                    out.push(s.clone())
                }
                Atom::Quot(x, _) => syms(x, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for (la, lb) in ia.iter().zip(ib) {
        if let (Some(la), Some(lb)) = (la, lb)
            && let Some(d) = la.clone().add(lb, -1)
        {
            syms(&d, &mut out);
        }
    }
    out.sort();
    out.dedup();
    out
}

#[allow(clippy::too_many_arguments)]
fn solve(
    cx: &Cx<'_>,
    a: &Acc,
    b: &Acc,
    places: (&Place, &Place),
    idx: (&[Option<Lin>], &[Option<Lin>]),
    known: bool,
    shared_loops: &[u32],
    between_blocks: bool,
    (d, group, same_tile, nonneg): (usize, i64, Option<i64>, bool),
    dir: i64,
    carried: Option<(u32, i64)>,
) -> Option<(Witness, Vec<DataGuard>)> {
    const BIG: f64 = 1_000_000.0;
    // A zero launch dimension leaves no thread (and an integer variable
    // with an empty range, which microlp would not reject).
    if (0..3)
        .any(|d| cx.block_dim(d).is_some_and(|v| v < 1) || cx.grid_dim(d).is_some_and(|v| v < 1))
    {
        return None;
    }
    let mut vars = ProblemVariables::new();
    let mut tid = Vec::new();
    let mut bid = Vec::new();
    for _k in 0..2 {
        let t: [Variable; 3] = std::array::from_fn(|dd| {
            let hi = cx
                .block_dim(dd)
                .map(|v| v as f64 - 1.0)
                .unwrap_or(if dd == 0 { 1023.0 } else { 0.0 });
            vars.add(variable().integer().min(0.0).max(hi))
        });
        let bb: [Variable; 3] = std::array::from_fn(|dd| {
            let hi = cx
                .grid_dim(dd)
                .map(|v| v as f64 - 1.0)
                .unwrap_or(if dd == 0 { 65534.0 } else { 0.0 });
            vars.add(variable().integer().min(0.0).max(hi))
        });
        tid.push(t);
        bid.push(bb);
    }
    let mut inst = Inst {
        vars,
        map: BTreeMap::new(),
        named: Vec::new(),
        tid: [tid[0], tid[1]],
        bid: [bid[0], bid[1]],
        dropped: 0,
        data_guards: Vec::new(),
        sym_nonneg: nonneg,
    };
    let mut cons: Vec<good_lp::Constraint> = Vec::new();
    // Same block unless asked otherwise.
    for dd in 0..3 {
        if !between_blocks {
            cons.push(constraint::eq(inst.bid[0][dd], inst.bid[1][dd]));
        }
    }
    // Group (warp, tile) indices of the linear thread index.
    let groups_of = |inst: &mut Inst, cons: &mut Vec<good_lp::Constraint>, g: i64| {
        let b = [0, 1, 2].map(|dd| cx.block_dim(dd).unwrap_or(1) as f64);
        let g = g as f64;
        let mut w = Vec::new();
        for k in 0..2 {
            let wv = inst.vars.add(variable().integer().min(0.0).max(BIG));
            let t = Expression::from(inst.tid[k][0])
                + b[0] * inst.tid[k][1]
                + b[0] * b[1] * inst.tid[k][2];
            cons.push(constraint::leq(g * wv, t.clone()));
            cons.push(constraint::leq(t, g * wv + (g - 1.0)));
            w.push(wv);
        }
        (w[0], w[1])
    };
    if let Some(n) = same_tile {
        let (q0, q1) = groups_of(&mut inst, &mut cons, n);
        cons.push(constraint::eq(q0, q1));
    }
    // Distinct threads: in dimension d, thread 0 below (dir 1) or above thread 1.
    let (x0, x1) = if d == 3 {
        groups_of(&mut inst, &mut cons, group)
    } else if between_blocks {
        (inst.bid[0][d], inst.bid[1][d])
    } else {
        (inst.tid[0][d], inst.tid[1][d])
    };
    if dir > 0 {
        cons.push(constraint::leq(Expression::from(x0) + 1.0, x1));
    } else {
        cons.push(constraint::leq(Expression::from(x1) + 1.0, x0));
    }
    let mut ok = true;
    let mut to_expr =
        |inst: &mut Inst, l: &Lin, k: u8, cons: &mut Vec<good_lp::Constraint>| -> Expression {
            let mut e = Expression::from(l.c as f64);
            for (atom, c) in &l.terms {
                let v = atom_var(cx, inst, atom, k, shared_loops, between_blocks, cons, BIG);
                e += (*c as f64) * v;
            }
            e
        };
    // Guards.
    for (k, place) in [(0u8, places.0), (1u8, places.1)] {
        for (g, val) in &place.guards {
            guard_constraints(
                cx,
                &mut inst,
                *g,
                *val,
                k,
                &place.loops,
                &mut cons,
                &mut to_expr,
                0,
            );
        }
        // Loop bounds of the counters in scope.
        for l in &place.loops {
            if let Some(info) = cx.loops.get(l)
                && let Some(v) = info.var
            {
                let _ = v;
                let outer = &place.loops[..place.loops.iter().position(|x| x == l).unwrap_or(0)];
                let Some(counter) = cx.counter(*l, outer, 0) else {
                    continue;
                };
                let ce = to_expr(&mut inst, &counter, k, &mut cons);
                if let Some((lo, adj)) = info.lower
                    && let Some(lo) = cx.lin(lo, outer, 0)
                {
                    let le = to_expr(&mut inst, &lo, k, &mut cons);
                    cons.push(constraint::geq(ce.clone(), le + adj as f64));
                }
                if let Some((hi, adj)) = info.upper
                    && let Some(h) = cx.lin(hi, outer, 0)
                {
                    let he = to_expr(&mut inst, &h, k, &mut cons);
                    cons.push(constraint::leq(ce, he + adj as f64));
                }
            }
        }
    }
    // The lane conditions of every call site hold for both threads.
    for k in 0..2 {
        for (c, off, op) in &cx.entry {
            let t = &inst.tid[k];
            let e = Expression::from(*off as f64)
                + (c[0] as f64) * t[0]
                + (c[1] as f64) * t[1]
                + (c[2] as f64) * t[2];
            match op {
                BinOp::Lt => cons.push(constraint::leq(e + 1.0, 0.0)),
                BinOp::Le => cons.push(constraint::leq(e, 0.0)),
                BinOp::Gt => cons.push(constraint::geq(e, 1.0)),
                BinOp::Ge => cons.push(constraint::geq(e, 0.0)),
                BinOp::Eq => cons.push(constraint::eq(e, 0.0)),
                _ => {}
            }
        }
    }
    // A thread-dependent guard that is not linear: whether two threads
    // pass it is unknown, so nothing is claimed.
    if inst.dropped & 1 != 0 {
        return None;
    }
    // Addresses (for an unknown index, the components known on both sides
    // must still agree).
    if known || idx.0.len() == idx.1.len() {
        let n = idx.0.len();
        for i in 0..n {
            let (Some(la), Some(lb)) = (&idx.0[i], &idx.1[i]) else {
                if known {
                    ok = false;
                    break;
                }
                continue;
            };
            let ea = to_expr(&mut inst, la, 0, &mut cons);
            let eb = to_expr(&mut inst, lb, 1, &mut cons);
            let last = i + 1 == n;
            match (last, a.elem, b.elem, a.bytes, b.bytes) {
                (true, Some(ea_b), Some(eb_b), Some(sa), Some(sb))
                    if ea_b != eb_b || sa != sb || ea_b == 1 =>
                {
                    // Byte ranges overlap.
                    let start_a = ea * ea_b as f64 + a.field as f64;
                    let start_b = eb * eb_b as f64 + b.field as f64;
                    cons.push(constraint::leq(
                        start_a.clone(),
                        start_b.clone() + (sb as f64 - 1.0),
                    ));
                    cons.push(constraint::leq(start_b, start_a + (sa as f64 - 1.0)));
                }
                _ => {
                    if let Some((ta, tb, g, lo, hi)) = modular_thread_parts(cx, la, lb) {
                        // (issue 8, session 13) The index parts differ by
                        // `g·m` for a small integer `m`: a cut that spares
                        // the solver from branching over loop counters.
                        let xa = to_expr(&mut inst, &ta, 0, &mut cons);
                        let xb = to_expr(&mut inst, &tb, 1, &mut cons);
                        let m = inst
                            .vars
                            .add(variable().integer().min(lo as f64).max(hi as f64));
                        cons.push(constraint::eq(xa, xb + (g as f64) * m));
                    }
                    cons.push(constraint::eq(ea, eb))
                }
            }
        }
        if n == 0 {
            // Scalars: always the same location.
        }
    }
    if !ok {
        return None;
    }
    // With the block size unknown, a write at `C·blockIdx.x + (thread
    // part)` stays inside its block's window of C elements: the code's own
    // block stride says how many threads a block has (stated in
    // docs/evaluation.md; a known launch uses its real block size).
    if between_blocks && cx.block_dim(0).is_none() {
        // A read at the same address form as the write it is paired with
        // is in the window too.
        let same_form = idx.0.len() == 1 && idx.0 == idx.1;
        for (k, acc, other, lins) in [(0u8, a, b, idx.0), (1u8, b, a, idx.1)] {
            let windowed = acc.side.is_write || (same_form && other.side.is_write);
            let ([Some(l)], true) = (lins, windowed) else {
                continue;
            };
            let Some(&c) = l.terms.get(&Atom::Bid(0)) else {
                continue;
            };
            let per_thread = |x: &Atom| match x {
                Atom::Tid(_) => true,
                Atom::Quot(q, _) => q.terms.keys().all(|y| matches!(y, Atom::Tid(_))),
                _ => false,
            };
            if c <= 0
                || l.terms.keys().any(|x| {
                    matches!(
                        x,
                        Atom::Iter(_) | Atom::Loop(..) | Atom::Bid(1) | Atom::Bid(2)
                    )
                })
                || !l.terms.keys().any(per_thread)
            {
                continue;
            }
            let part = Lin {
                terms: l
                    .terms
                    .iter()
                    .filter(|(x, _)| per_thread(x))
                    .map(|(x, v)| (x.clone(), *v))
                    .collect(),
                c: l.c,
            };
            let e = to_expr(&mut inst, &part, k, &mut cons);
            cons.push(constraint::geq(e.clone(), 0.0));
            cons.push(constraint::leq(e, c as f64 - 1.0));
        }
    }
    // Iterations of a loop whose back edge separates the two accesses: the
    // second thread's is the first's plus the offset.
    if let Some((l, delta)) = carried {
        let atom = Atom::Iter(l);
        let v0 = atom_var(
            cx,
            &mut inst,
            &atom,
            0,
            shared_loops,
            between_blocks,
            &mut cons,
            BIG,
        );
        let v1 = atom_var(
            cx,
            &mut inst,
            &atom,
            1,
            shared_loops,
            between_blocks,
            &mut cons,
            BIG,
        );
        cons.push(constraint::eq(
            Expression::from(v1),
            Expression::from(v0) + delta as f64,
        ));
    }
    let Inst {
        vars,
        named,
        tid,
        bid,
        data_guards,
        map,
        ..
    } = inst;
    // Variables by position: good_lp adds them to microlp in this order.
    let position: HashMap<Variable, usize> = vars
        .iter_variables_with_def()
        .enumerate()
        .map(|(i, (v, _))| (v, i))
        .collect();
    let mut model = vars.minimise(Expression::from(0.0)).using(microlp);
    for c in cons {
        model = good_lp::SolverModel::with(model, c);
    }
    // Solved with a node limit instead of a time limit: the answer does
    // not depend on the machine's load.
    let mut opts = ::microlp::SolveOptions::default();
    opts.node_limit = Some(NODE_LIMIT);
    cx.work.set(cx.work.get() + 1);
    let values: Vec<f64> = match model.as_inner().solve_with(opts) {
        Ok(outcome) => {
            cx.work.set(cx.work.get() + outcome.stats().nodes_solved);
            match outcome.into_solution() {
                Ok(sol) => sol.iter().map(|(_, x)| x).collect(),
                Err(_) => {
                    cx.interrupted.set(cx.interrupted.get() + 1);
                    return None;
                }
            }
        }
        Err(_) => return None,
    };
    let val = |v: Variable| {
        position
            .get(&v)
            .and_then(|&i| values.get(i))
            .copied()
            .unwrap_or(0.0)
            .round() as i64
    };
    let threads = [
        std::array::from_fn(|dd| val(tid[0][dd])),
        std::array::from_fn(|dd| val(tid[1][dd])),
    ];
    let blocks = between_blocks.then(|| {
        [
            std::array::from_fn(|dd| val(bid[0][dd])),
            std::array::from_fn(|dd| val(bid[1][dd])),
        ]
    });
    let mut values: Vec<(String, i64)> = named.into_iter().map(|(n, v)| (n, val(v))).collect();
    values.sort();
    values.dedup();
    // Re-check the witness in integers, outside the solver (whose values
    // are floats within a tolerance): both threads inside the block (and
    // grid) dimensions, distinct, iteration numbers non-negative, and the
    // two addresses equal (or the byte ranges overlapping) when evaluated
    // from the linear forms with the rounded values. A witness that fails
    // is not printed (`Witness::checked`).
    let atom_value = |atom: &Atom, k: u8| -> Option<i64> {
        match atom {
            Atom::Tid(d) => Some(val(tid[k as usize][*d])),
            Atom::Bid(d) => Some(val(bid[k as usize][*d])),
            _ => map
                .get(&(atom.clone(), k))
                .or_else(|| map.get(&(atom.clone(), 0)))
                .map(|v| val(*v)),
        }
    };
    let eval = |l: &Lin, k: u8| -> Option<i64> {
        let mut x = l.c;
        for (atom, c) in &l.terms {
            x = x.checked_add(c.checked_mul(atom_value(atom, k)?)?)?;
        }
        Some(x)
    };
    let in_dims = (0..3).all(|dd| {
        (0..2).all(|k| {
            let t = threads[k][dd];
            t >= 0 && cx.block_dim(dd).is_none_or(|b| t < b)
        })
    }) && blocks.is_none_or(|b| {
        (0..3)
            .all(|dd| (0..2).all(|k| b[k][dd] >= 0 && cx.grid_dim(dd).is_none_or(|g| b[k][dd] < g)))
    });
    let distinct = threads[0] != threads[1] || blocks.is_some_and(|b| b[0] != b[1]);
    let iterations_ok = map
        .iter()
        .filter(|((a, _), _)| matches!(a, Atom::Iter(_)))
        .all(|(_, v)| val(*v) >= 0);
    let addresses_ok = !known
        || (idx.0.len() == idx.1.len()
            && idx.0.iter().zip(idx.1).enumerate().all(|(i, (la, lb))| {
                let (Some(la), Some(lb)) = (la, lb) else {
                    return false;
                };
                let (Some(xa), Some(xb)) = (eval(la, 0), eval(lb, 1)) else {
                    return false;
                };
                match (i + 1 == idx.0.len(), a.elem, b.elem, a.bytes, b.bytes) {
                    (true, Some(ea), Some(eb), Some(sa), Some(sb))
                        if ea != eb || sa != sb || ea == 1 =>
                    {
                        let sa0 = xa * ea as i64 + a.field as i64;
                        let sb0 = xb * eb as i64 + b.field as i64;
                        sa0 < sb0 + sb as i64 && sb0 < sa0 + sa as i64
                    }
                    _ => xa == xb,
                }
            }));
    let checked = in_dims && distinct && iterations_ok && addresses_ok;
    Some((
        Witness {
            threads,
            blocks,
            values,
            checked,
        },
        data_guards,
    ))
}

/// (issue 8, session 13; hybridsort's `bucketprefixoffset`, `d[i]` with
/// `i = tid + 1024·k` on 1024 threads) For the equation `la = lb` between
/// two threads' addresses: when every term other than a thread or block
/// index is a multiple of some `g ≥ 2`, the index parts (with the
/// constants) agree modulo `g`: they differ by `g·m` for an integer `m`
/// that the solver's bounds on the indices confine to `lo..=hi` (`m = 0`
/// when their difference lies strictly between `-g` and `g`). Returns the
/// two index parts, `g`, `lo` and `hi` when at most 64 values of `m`
/// remain: a valid cut, which branch and bound would otherwise have to find
/// by enumerating the counters.
fn modular_thread_parts(cx: &Cx<'_>, la: &Lin, lb: &Lin) -> Option<(Lin, Lin, i64, i64, i64)> {
    let gcd = |mut a: i64, mut b: i64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a.abs()
    };
    let index = |a: &Atom| matches!(a, Atom::Tid(_) | Atom::Bid(_));
    let g = la
        .terms
        .iter()
        .chain(lb.terms.iter())
        .filter(|(a, _)| !index(a))
        .fold(0, |g, (_, c)| gcd(g, *c));
    if g < 2 {
        return None;
    }
    // The solver's bounds on the indices (see `solve`).
    let hi = |a: &Atom| -> Option<i64> {
        match a {
            Atom::Tid(d) => {
                Some(
                    cx.block_dim(*d)
                        .map(|v| v - 1)
                        .unwrap_or(if *d == 0 { 1023 } else { 0 }),
                )
            }
            Atom::Bid(d) => {
                Some(
                    cx.grid_dim(*d)
                        .map(|v| v - 1)
                        .unwrap_or(if *d == 0 { 65534 } else { 0 }),
                )
            }
            _ => None,
        }
    };
    let part = |l: &Lin| Lin {
        terms: l
            .terms
            .iter()
            .filter(|(a, _)| index(a))
            .map(|(a, c)| (a.clone(), *c))
            .collect(),
        c: l.c,
    };
    let (ta, tb) = (part(la), part(lb));
    // The range of ta - tb.
    let (mut lo, mut up) = (ta.c.checked_sub(tb.c)?, ta.c.checked_sub(tb.c)?);
    for (l, sign) in [(&ta, 1i64), (&tb, -1i64)] {
        for (a, c) in &l.terms {
            let span = c.checked_mul(sign)?.checked_mul(hi(a)?)?;
            if span < 0 {
                lo = lo.checked_add(span)?;
            } else {
                up = up.checked_add(span)?;
            }
        }
    }
    let (mlo, mhi) = (
        lo.div_euclid(g) + i64::from(lo.rem_euclid(g) != 0),
        up.div_euclid(g),
    );
    (mhi - mlo < 64 && !(ta.terms.is_empty() && tb.terms.is_empty()))
        .then_some((ta, tb, g, mlo, mhi))
}

#[allow(clippy::too_many_arguments)]
fn atom_var(
    cx: &Cx<'_>,
    inst: &mut Inst,
    atom: &Atom,
    k: u8,
    shared_loops: &[u32],
    between_blocks: bool,
    _cons: &mut Vec<good_lp::Constraint>,
    big: f64,
) -> Variable {
    match atom {
        Atom::Tid(d) => return inst.tid[k as usize][*d],
        Atom::Bid(d) => return inst.bid[k as usize][*d],
        Atom::Quot(x, c) => {
            let per_thread = !x.invariant()
                || (between_blocks && x.terms.keys().any(|a| matches!(a, Atom::Sym(_, true))));
            let copy = if per_thread { k } else { 0 };
            if let Some(v) = inst.map.get(&(atom.clone(), copy)) {
                return *v;
            }
            let mut xe = Expression::from(x.c as f64);
            for (a, m) in &x.terms {
                let v = atom_var(cx, inst, a, k, shared_loops, between_blocks, _cons, big);
                xe += (*m as f64) * v;
            }
            let q = inst.vars.add(variable().integer().min(-big).max(big));
            let c = *c as f64;
            _cons.push(constraint::leq(c * q, xe.clone()));
            _cons.push(constraint::leq(xe, c * q + (c - 1.0)));
            inst.map.insert((atom.clone(), copy), q);
            return q;
        }
        _ => {}
    }
    let copy = match atom {
        Atom::Iter(l) if shared_loops.contains(l) && !between_blocks => 0,
        Atom::Loop(_, l)
            if shared_loops.contains(l)
                && !between_blocks
                && cx.loops.get(l).is_some_and(|i| i.start_uniform) =>
        {
            0
        }
        Atom::Loop(..) | Atom::Iter(_) => k,
        Atom::Sym(_, true) if between_blocks => k,
        _ => 0,
    };
    if let Some(v) = inst.map.get(&(atom.clone(), copy)) {
        return *v;
    }
    let lo = if matches!(atom, Atom::Iter(_)) || (inst.sym_nonneg && matches!(atom, Atom::Sym(..)))
    {
        0.0
    } else {
        -big
    };
    // blockDim and gridDim of an unknown launch are at least 1 (blockDim
    // at most 1024, 64 in z; blockDim.x whole warps) and bound the thread
    // and block indices.
    let dim_atom = match atom {
        Atom::Sym(s, _) => {
            let d = match s.rsplit('.').next() {
                Some("x") => Some(0usize),
                Some("y") => Some(1),
                Some("z") => Some(2),
                _ => None,
            };
            match (s.split('.').next(), d) {
                (Some("blockDim"), Some(d)) => Some((true, d)),
                (Some("gridDim"), Some(d)) => Some((false, d)),
                _ => None,
            }
        }
        _ => None,
    };
    let v = match dim_atom {
        Some((block, d)) => {
            let hi = match (block, d) {
                (true, 2) => 64.0,
                (true, _) => 1024.0,
                (false, 0) => 2_147_483_647.0,
                (false, _) => 65_535.0,
            };
            let v = inst.vars.add(variable().integer().min(1.0).max(hi));
            if block && d == 0 {
                // Code sized by warps (`blockDim.x / 32`) is launched with
                // whole warps: an unknown blockDim.x is a multiple of 32.
                let w = inst.vars.add(variable().integer().min(1.0).max(32.0));
                _cons.push(constraint::eq(Expression::from(v), 32.0 * w));
            }
            for kk in 0..2 {
                let idx = if block {
                    inst.tid[kk][d]
                } else {
                    inst.bid[kk][d]
                };
                _cons.push(constraint::leq(Expression::from(idx) + 1.0, v));
            }
            v
        }
        None => inst.vars.add(variable().integer().min(lo).max(big)),
    };
    let name = match atom {
        Atom::Iter(l) => {
            let n = cx
                .loops
                .get(l)
                .and_then(|i| i.var)
                .map(|v| cx.f.var(v).name.clone())
                .unwrap_or_default();
            if copy == 0 {
                format!("iteration of {n}")
            } else {
                format!("iteration of {n} (second thread)")
            }
        }
        Atom::Loop(var, _) => {
            let n = cx.f.var(VarId(*var)).name.clone();
            if copy == 0 && k == 0 {
                n
            } else {
                format!("{n} (second thread)")
            }
        }
        Atom::Sym(s, _) => {
            if copy == 0 {
                s.clone()
            } else {
                format!("{s} (second thread)")
            }
        }
        _ => String::new(),
    };
    inst.named.push((name, v));
    inst.map.insert((atom.clone(), copy), v);
    v
}

/// Add the linear constraints a guard implies (others are dropped, which
/// only lets more threads in).
#[allow(clippy::too_many_arguments)]
fn guard_constraints(
    cx: &Cx<'_>,
    inst: &mut Inst,
    g: ExprId,
    val: bool,
    k: u8,
    loops: &[u32],
    cons: &mut Vec<good_lp::Constraint>,
    to_expr: &mut ToExpr<'_>,
    depth: u32,
) {
    if depth > 16 {
        note_drop(cx, inst, g, val, loops);
        return;
    }
    let f = cx.f;
    match &f.expr(g).kind {
        ExprKind::Unary(UnOp::Not, a) => {
            guard_constraints(cx, inst, *a, !val, k, loops, cons, to_expr, depth + 1)
        }
        ExprKind::Binary(BinOp::LogAnd, a, b) if val => {
            guard_constraints(cx, inst, *a, true, k, loops, cons, to_expr, depth + 1);
            guard_constraints(cx, inst, *b, true, k, loops, cons, to_expr, depth + 1);
        }
        ExprKind::Binary(BinOp::LogOr, a, b) if !val => {
            guard_constraints(cx, inst, *a, false, k, loops, cons, to_expr, depth + 1);
            guard_constraints(cx, inst, *b, false, k, loops, cons, to_expr, depth + 1);
        }
        ExprKind::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            a,
            b,
        ) => {
            let (Some(la), Some(lb)) = (cx.lin(*a, loops, 0), cx.lin(*b, loops, 0)) else {
                note_drop(cx, inst, g, val, loops);
                return;
            };
            // Normalise to la OP lb under `val`.
            let op = cmp_under(*op, val);
            let ea = to_expr(inst, &la, k, cons);
            let eb = to_expr(inst, &lb, k, cons);
            match op {
                BinOp::Lt => cons.push(constraint::leq(ea + 1.0, eb)),
                BinOp::Le => cons.push(constraint::leq(ea, eb)),
                BinOp::Gt => cons.push(constraint::geq(ea, eb + 1.0)),
                BinOp::Ge => cons.push(constraint::geq(ea, eb)),
                BinOp::Eq => cons.push(constraint::eq(ea, eb)),
                _ => note_drop(cx, inst, g, val, loops),
            }
        }
        ExprKind::Cast(_, a) => {
            guard_constraints(cx, inst, *a, val, k, loops, cons, to_expr, depth + 1)
        }
        _ => note_drop(cx, inst, g, val, loops),
    }
}

/// Record that guard `g` could not be modelled.
fn note_drop(cx: &Cx<'_>, inst: &mut Inst, g: ExprId, val: bool, loops: &[u32]) {
    if cx.u.is_uniform(g.0) {
        return;
    }
    if cx
        .u
        .expr_from_memory
        .get(g.0 as usize)
        .copied()
        .unwrap_or(false)
    {
        inst.dropped |= 2;
        if !inst
            .data_guards
            .iter()
            .any(|(x, v, _)| *x == g && *v == val)
        {
            inst.data_guards.push((g, val, loops.to_vec()));
        }
    } else {
        inst.dropped |= 1;
    }
}

/// The comparison `op` as it holds when its outcome is `val`: itself when
/// true, its negation when false (`<` ↔ `>=`, `==` ↔ `!=`).
fn cmp_under(op: BinOp, val: bool) -> BinOp {
    if val {
        return op;
    }
    match op {
        BinOp::Lt => BinOp::Ge,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Ge => BinOp::Lt,
        BinOp::Eq => BinOp::Ne,
        _ => BinOp::Eq,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{Analysis, Callees};

    fn lower(src: &str) -> Function {
        crate::frontend::lower_last(src)
    }

    fn launch_1d(x: u32) -> LaunchDims {
        LaunchDims {
            block: [Some(x), Some(1), Some(1)],
            grid: [Some(1), Some(1), Some(1)],
            ..LaunchDims::default()
        }
    }

    /// Issue 8, session 6: the budget is counted work (pairs, solver
    /// programs and nodes), not seconds: a tiny work budget stops the
    /// check at the same point on every run, with the races found so far
    /// and an `incomplete` reason that names the work, never a time.
    #[test]
    fn the_work_budget_is_deterministic_and_reported() {
        let mut body = String::new();
        for k in 0..12 {
            body.push_str(&format!("    s[threadIdx.x + {k}] = a[{k}];\n"));
        }
        let f = lower(&format!(
            "__global__ void k(float* a) {{\n    __shared__ float s[512];\n{body}    a[threadIdx.x] = s[0];\n}}\n"
        ));
        let an = Analysis::compute(&f, launch_1d(256), &Callees::default());
        let space: Vec<MemSpace> = f.accesses.iter().map(|a| a.space).collect();
        let full = races(
            &f,
            &an.uniformity,
            &an.launch,
            &intervals_of(&f),
            &space,
            &Default::default(),
        );
        assert!(full.incomplete.is_none(), "{:?}", full.incomplete);
        assert!(full.races.len() > 3, "{:?}", full.races.len());
        let small = Budget {
            pairs: MAX_PAIRS,
            work: 5,
        };
        let runs: Vec<RaceFacts> = (0..3)
            .map(|_| {
                races_with_budget(
                    &f,
                    &an.uniformity,
                    &an.launch,
                    &intervals_of(&f),
                    &space,
                    &Default::default(),
                    small,
                )
            })
            .collect();
        let why = runs[0].incomplete.clone().expect("over the budget");
        assert!(why.contains("units of solver work"), "{why}");
        assert!(
            !why.contains(" s)") && !why.contains(" s,"),
            "no seconds: {why}"
        );
        assert!(runs[0].races.len() < full.races.len());
        assert!(
            runs.iter().all(|r| *r == runs[0]),
            "same result on every run"
        );
    }

    fn intervals_of(f: &Function) -> Intervals {
        super::super::intervals::compute(f)
    }

    /// Issue 8 audit #61 (session 6): a write before the barrier of a loop
    /// and a read after it race only across the back edge (the write of
    /// iteration `i + 1` against the read of iteration `i`): the witness
    /// gives the two threads different iterations, a trip count that has
    /// both, and threads whose addresses are equal; and it is checked.
    #[test]
    fn a_race_across_the_back_edge_has_a_witness_in_consecutive_iterations() {
        let f = lower(
            "__global__ void k(float* out, const float* in, int n) {\n\
               __shared__ float part[32];\n\
               int lane = threadIdx.x % 32;\n\
               int warp = threadIdx.x / 32;\n\
               for (int r = 0; r < n; ++r) {\n\
                 if (lane == 0) { part[warp] = in[r]; }\n\
                 __syncthreads();\n\
                 out[r * 1024 + threadIdx.x] = part[lane];\n\
               }\n\
             }\n",
        );
        let an = Analysis::compute(&f, launch_1d(1024), &Callees::default());
        let race = an
            .races
            .races
            .iter()
            .find(|r| r.first.is_write != r.second.is_write)
            .expect("the read-write race");
        let w = race.witness.as_ref().expect("a witness");
        assert!(w.checked, "{w:?}");
        let value = |n: &str| w.values.iter().find(|(m, _)| m == n).map(|(_, v)| *v);
        let (wi, ri) = if race.first.is_write { (0, 1) } else { (1, 0) };
        let (writer, reader) = (w.threads[wi][0], w.threads[ri][0]);
        assert_eq!(writer % 32, 0, "the writer is a lane 0: {w:?}");
        assert_eq!(writer / 32, reader % 32, "same element: {w:?}");
        let it = |k: usize| {
            if k == 0 {
                value("iteration of r")
            } else {
                value("iteration of r (second thread)")
            }
        };
        let (iw, ir) = (
            it(wi).expect("write iteration"),
            it(ri).expect("read iteration"),
        );
        assert_eq!(iw, ir + 1, "the write is one iteration later: {w:?}");
        assert!(
            value("n").expect("n") > iw,
            "the loop runs both iterations: {w:?}"
        );
    }
}
