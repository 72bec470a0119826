//! Branch divergence: for every branch, loop condition, `?:`, `&&`/`||` and
//! switch, whether threads of one warp can disagree on it.

use super::affine::Coef;
use super::barriers::{LaunchDims, warp_uniform};
use super::loops::{self, LoopFacts, LoopKind, StepOp};
use super::relations::Relations;
use super::stride::AffineCx;
use super::uniformity::Uniformity;
use crate::ir::{BinOp, Builtin, Dim, ExprId, ExprKind, Function, StmtId, StmtKind, UnOp};

/// How a branch condition behaves within warps.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BranchKind {
    /// The same for the whole block.
    Uniform,
    /// Differs only between warps (`threadIdx.x < 32·k`, `threadIdx.y == 0` with blockDim.x = 32).
    WarpUniform,
    /// True for at most one thread of a warp (`threadIdx.x == 0`).
    SingleThread,
    /// A bounds check on a grid-wide linear thread index (`if (i < n)`):
    /// diverges in at most one warp of the launch.
    BoundaryGuard,
    /// The condition of a block-, grid- or warp-stride loop (`for (i =
    /// threadIdx.x; i < n; i += blockDim.x)`): the lanes of a warp start
    /// less than one step apart, so their trip counts differ by at most one
    /// and only the last iteration runs with some lanes idle.
    StrideTail {
        /// The step involves `gridDim` (grid-stride loop).
        grid: bool,
        /// What the step strides over, for the message (session 6, audit #51).
        stride: Stride,
        /// The loop body accesses memory.
        memory: bool,
        /// `(bound, step)` when the lanes' starts are exactly the values
        /// `0 .. step` (plus a multiple of the step): the loop has no
        /// partial iteration when the bound is a multiple of the step
        /// (session 6, audit #31).
        exact_if: Option<(ExprId, ExprId)>,
    },
    /// Can split a warp.
    Divergent {
        /// The divergent region accesses memory.
        memory: bool,
        /// The divergent region contains a loop (or is one).
        looping: bool,
    },
}

/// What a stride loop's step strides over (session 6, audit #51).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stride {
    /// The step involves `gridDim`.
    Grid,
    /// The step involves `blockDim` or a block group's size.
    Block,
    /// The start is a lane index (`threadIdx.x % 32`, a warp tile's rank) or
    /// the step is `warpSize`.
    Warp,
    /// Another uniform step (a constant over a 2-D start).
    Other,
}

impl Stride {
    /// The loop's name in messages: "grid-stride loop", …
    pub fn loop_name(self) -> &'static str {
        match self {
            Stride::Grid => "grid-stride loop",
            Stride::Block => "block-stride loop",
            Stride::Warp => "warp-stride loop",
            Stride::Other => "stride loop",
        }
    }
}

/// One classified branch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BranchFact {
    /// The statement holding the branch.
    pub stmt: StmtId,
    /// Its condition.
    pub cond: ExprId,
    /// `true` when the branch is inside an expression (`?:`, `&&`, `||`).
    pub in_expression: bool,
    /// The verdict.
    pub kind: BranchKind,
    /// For a [`BranchKind::Divergent`] branch: what its divergence costs
    /// (audit classes D4 and D5).
    pub shape: Shape,
    /// For a [`BranchKind::Divergent`] branch: an estimate of the work in
    /// its divergent part, which the idle lanes of a split warp wait for.
    pub work: Work,
    /// (issue 8, session 14) For a divergent `if`/`else`: the [`Work`] of
    /// its shorter side, when that side is bounded and does at most half
    /// the other's work. A warp whose lanes take the longer side runs it
    /// anyway; the split adds the shorter one.
    /// The shorter side's work first, the longer's second.
    pub shorter_side: Option<(Work, Work)>,
    /// (session 15, audit 20261224 #30: HSOpticalFlow's `threadIdx.x < by`
    /// inside `threadIdx.y == 1`) `(n, m)` when the enclosing conditions on
    /// thread indices let only `n` of the block's `m` warps reach the
    /// branch (`n < m`, the block known): a split "in every warp" is in
    /// those `n`.
    pub reach: Option<(u32, u32)>,
    /// The condition depends on values loaded per thread (not only on
    /// thread indices): how often warps split follows the data.
    pub data_dependent: bool,
}

/// An estimate of the work in a divergent part (issue 8 audit, class 6):
/// what the idle lanes of a split warp wait for, in operations that each
/// compile to about one instruction. Arithmetic, comparisons, moves,
/// memory accesses (loads the condition already made are reused, not
/// counted again; a store is one), calls (the call, not its body) and
/// jumps count one each; names, constants and casts nothing. For an
/// `if`/`else` both sides count (a split warp runs one after the other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Work {
    /// Operations.
    pub ops: u32,
    /// Memory accesses among them.
    pub memory: u32,
    /// Calls of functions whose bodies are not seen here (not math
    /// functions, intrinsics, atomics or cooperative-group queries, which
    /// count one operation): each counts one operation, but what it runs
    /// is unknown, so a part with calls is never judged cheap.
    pub calls: u32,
    /// The divergent part contains a loop, a barrier, something the front
    /// end does not model, or a jump out of it (`break`, `continue`, a
    /// `return` with code after the branch): the lanes that leave or loop
    /// keep the warp split for a time this estimate does not bound.
    pub unbounded: bool,
}

/// What a divergent branch's divergence costs, beyond "can split a warp"
/// (issue 8 audit, classes D4/D5).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Nothing more is known: the divergent part runs with some lanes idle
    /// (both paths one after the other for an `if`/`else`).
    Plain,
    /// Both sides are a few assignments of register values (no memory
    /// access, call, loop or jump): the compiler if-converts them into
    /// selects or predicated moves, so no divergent path is executed.
    Select,
    /// An `if`/`else` whose two sides each make one call of the same
    /// function (the name), with other arguments.
    SameCall(String),
    /// One thread per row of a block narrower than a warp (`threadIdx.x ==
    /// 0` with 16-wide blocks) or per cooperative-groups tile
    /// (`tile16.thread_rank() == 0`): a single-writer epilogue of each row
    /// or tile, not divergence worth reporting.
    GroupLeader,
    /// A threshold test `a·tid + u OP n` (`a`, `u`, `n` uniform) on a thread
    /// index that grows (or shrinks) monotonically with the lane's linear
    /// position: the threads it selects form one contiguous run, so at most
    /// one warp per `scope` (block, row, z-slice) straddles the bound.
    OneWarp {
        /// Per what one warp splits: "block", "row of the block", "z-slice
        /// of the block".
        scope: &'static str,
        /// How many such threshold tests the condition combines (each can
        /// split one warp per scope).
        tests: u32,
    },
    /// A threshold test on a lane index (`threadIdx.x % 32`, a 32-thread
    /// tile's `thread_rank()`): the index repeats in every warp, so every
    /// warp can split the same way (session 5 audit V10).
    EveryWarp,
    /// (session 7, audit 20261128 #3, #24, #27, #30) Threshold tests whose
    /// selected threads form contiguous runs the [`Shape::OneWarp`] form
    /// does not cover: through a quotient or a local redefinition, an index
    /// taken modulo a uniform amount, a column test on blocks narrower than
    /// a warp. One clause per test says how many warps it can split.
    Runs {
        /// Per test: how its selected threads lie and which warps split.
        clauses: Vec<String>,
        /// Some test splits every warp of every block (a fixed subset of
        /// each warp's lanes).
        every_warp: bool,
    },
    /// (session 7, audit 20261128 #53) A loop whose bound is a quotient of
    /// a linear thread index (`t <= (idx / nh) % T`): the lanes of a warp
    /// see a few consecutive bounds, so their trip counts differ by at most
    /// `spread` (text), except where the bound wraps around (`wrap`).
    TripSpread {
        /// The thread-varying bound, as written.
        bound: String,
        /// The most its value differs across the 32 lanes of a warp.
        spread: String,
        /// Where the bound wraps to 0 (`% T`), the clause saying how often.
        wrap: Option<String>,
        /// `spread` is a known constant of at most 4.
        small: bool,
    },
}

/// Classify every branch of `f`.
pub fn classify(
    f: &Function,
    r: &Relations,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    callees: &super::Callees,
) -> Vec<BranchFact> {
    let mut out = Vec::new();
    for (s, c) in &r.branches {
        let (stmt, cond) = (StmtId(*s), ExprId(*c));
        let in_expression = !is_statement_condition(f, stmt, cond);
        let one_thread = launch.block == [Some(1), Some(1), Some(1)];
        let kind = if one_thread || u.is_uniform(cond.0) {
            BranchKind::Uniform
        } else if warp_uniform(f, u, cond, launch)
            || lane_invariant(f, cx, cond)
            || super::lanes::warps_agree(f, cx, launch, cond, 32)
            || z_slices_are_warps(u, cond, launch)
            || warp_uniform_value(f, u, launch, cond, 0)
            || (!in_expression && uniform_trip_count(f, u, cx, loops, stmt, cond))
            || (!in_expression && guard_below_loop_start(f, cx, launch, loops, stmt, cond))
        {
            BranchKind::WarpUniform
        } else if single_thread_cond(f, cx, launch, cond) {
            BranchKind::SingleThread
        } else if boundary_guard(f, u, cx, launch, cond) {
            BranchKind::BoundaryGuard
        } else if let Some((grid, tail)) = (!in_expression)
            .then(|| {
                // (session 6, audit #57) Trip counts compared per warp from
                // the start's value in every thread of a known block.
                let trips = warp_trips(f, cx, launch, loops, stmt, cond);
                let grid = || loops.get(stmt).is_some_and(|l| l.grid_stride);
                match trips {
                    Some(Trips::Uniform) => Some((grid(), false)),
                    Some(Trips::Tail) => Some((grid(), true)),
                    None => stride_loop(f, cx, launch, loops, stmt, cond)
                        .or_else(|| threshold_stride(f, cx, launch, stmt, cond).map(|g| (g, true)))
                        .or_else(|| {
                            guard_in_stride_loop(f, u, cx, launch, loops, stmt, cond)
                                .map(|(g, _)| (g, true))
                        })
                        .or_else(|| {
                            carried_window(f, u, cx, launch, loops, stmt, cond).map(|g| (g, true))
                        }),
                }
            })
            .flatten()
        {
            if tail {
                // A guard inside a stride loop is named after that loop.
                let named = guard_in_stride_loop(f, u, cx, launch, loops, stmt, cond)
                    .map_or(stmt, |(_, l)| l);
                let (stride, exact_if) = stride_name(f, cx, launch, loops, named, grid);
                BranchKind::StrideTail {
                    grid,
                    stride,
                    memory: stmt_region(f, loops, stmt).0,
                    exact_if,
                }
            } else {
                // Every warp's lanes run the same number of iterations.
                BranchKind::WarpUniform
            }
        } else {
            let (memory, looping) = if in_expression {
                (expr_region_has_access(f, cond), false)
            } else {
                stmt_region(f, loops, stmt)
            };
            BranchKind::Divergent { memory, looping }
        };
        let (shape, work, shorter_side) = if matches!(kind, BranchKind::Divergent { .. }) {
            (
                shape(f, u, cx, launch, stmt, cond, in_expression, callees),
                divergent_work(f, loops, stmt, cond, in_expression, Some(callees)),
                (!in_expression)
                    .then(|| shorter_side(f, loops, stmt, cond, callees))
                    .flatten(),
            )
        } else {
            (Shape::Plain, Work::default(), None)
        };
        let data_dependent = u.expr_from_memory.get(cond.0 as usize).copied() == Some(true)
            || u.expr_dims
                .get(cond.0 as usize)
                .is_some_and(|d| d & (1 << 3) != 0);
        out.push(BranchFact {
            stmt,
            cond,
            in_expression,
            kind,
            shape,
            work,
            shorter_side,
            reach: None,
            data_dependent,
        });
    }
    out
}

fn is_statement_condition(f: &Function, s: StmtId, c: ExprId) -> bool {
    match &f.stmt(s).kind {
        StmtKind::If { cond, .. }
        | StmtKind::Switch { cond, .. }
        | StmtKind::While { cond, .. }
        | StmtKind::DoWhile { cond, .. } => *cond == c,
        StmtKind::For { cond, .. } => *cond == Some(c),
        _ => false,
    }
}

/// Whether the statements a branch governs access memory / contain loops.
/// (session 6, audit #25) A loop inside with a small constant trip count
/// ([`unrolled_trips`]) is straight-line code once unrolled, and an element
/// of a thread-local array at indices constant after that unrolling
/// ([`static_index`]) is a register: neither counts.
fn stmt_region(f: &Function, loops: &LoopFacts, s: StmtId) -> (bool, bool) {
    let mut inside = std::collections::BTreeSet::new();
    let mut looping = matches!(
        f.stmt(s).kind,
        StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
    );
    let mut unrolled = Vec::new();
    let mut stack = f.child_stmts(s);
    while let Some(x) = stack.pop() {
        inside.insert(x.0);
        if matches!(
            f.stmt(x).kind,
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
        ) {
            match unrolled_trips(loops, x) {
                Some((_, v)) => unrolled.push(v),
                None => looping = true,
            }
        }
        stack.extend(f.child_stmts(x));
    }
    let memory = f.accesses.iter().any(|a| {
        inside.contains(&a.stmt.0)
            && !(a.space == crate::ir::MemSpace::Local
                && a.indices.iter().all(|i| static_index(f, *i, &unrolled)))
    });
    (memory, looping)
}

/// Most iterations of a loop with constant bounds that the estimate
/// treats as fully unrolled straight-line code (nvcc unrolls small
/// constant-trip loops, and must to keep a local array in registers).
const UNROLL_MAX: usize = 32;

/// For the loop at `s`: its constant trip count and guard variable when it
/// is at most [`UNROLL_MAX`].
fn unrolled_trips(loops: &LoopFacts, s: StmtId) -> Option<(u32, crate::ir::VarId)> {
    let l = loops.get(s)?;
    let n = l.values.as_ref()?.len();
    let g = l.guard.as_ref()?;
    (n <= UNROLL_MAX).then_some((n as u32, g.var))
}

/// Whether index `e` is a compile-time constant once the loops over
/// `unrolled` are unrolled: constants, those variables, locals with one
/// constant definition, and arithmetic of them.
fn static_index(f: &Function, e: ExprId, unrolled: &[crate::ir::VarId]) -> bool {
    match &f.expr(e).kind {
        ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::SizeOf(_) | ExprKind::TemplateParam(_) => {
            true
        }
        ExprKind::Builtin(Builtin::WarpSize) => true,
        ExprKind::Var(v) => unrolled.contains(v) || super::barriers::const_value(f, e).is_some(),
        ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Neg | UnOp::Plus, a) => {
            static_index(f, *a, unrolled)
        }
        ExprKind::Binary(
            BinOp::Add
            | BinOp::Sub
            | BinOp::Mul
            | BinOp::Div
            | BinOp::Rem
            | BinOp::Shl
            | BinOp::Shr,
            a,
            b,
        ) => static_index(f, *a, unrolled) && static_index(f, *b, unrolled),
        _ => false,
    }
}

fn expr_region_has_access(f: &Function, c: ExprId) -> bool {
    // Find the `?:`/`&&`/`||` whose condition is `c` and look in its arms.
    let arms: Vec<ExprId> = f
        .exprs
        .iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Cond(k, a, b) if *k == c => Some(vec![*a, *b]),
            ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, k, b) if *k == c => Some(vec![*b]),
            _ => None,
        })
        .flatten()
        .collect();
    let mut stack = arms;
    while let Some(x) = stack.pop() {
        if matches!(f.expr(x).kind, ExprKind::Index { .. }) {
            return true;
        }
        stack.extend(f.child_exprs(x));
    }
    false
}

/// At most one thread of a warp (or of a cooperative group) satisfies `c`:
/// a single-writer condition in any spelling — `threadIdx.x == 0`, `0 ==
/// tid`, `!tid`, `tid == k && …`, `lane == 0` with `lane = threadIdx.x %
/// 32`, `(threadIdx.x & 31) == 0`, `block.thread_rank() == 0`.
pub fn single_thread_cond(f: &Function, cx: &AffineCx<'_>, launch: &LaunchDims, c: ExprId) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd, a, b) => {
            single_thread_cond(f, cx, launch, *a) || single_thread_cond(f, cx, launch, *b)
        }
        ExprKind::Unary(UnOp::Not, a) => lane_distinct(f, cx, launch, *a, 0),
        ExprKind::Binary(BinOp::Eq, a, b) => {
            let (x, y) = (cx.form(*a), cx.form(*b));
            if x.is_invariant() {
                lane_distinct(f, cx, launch, *b, 0)
            } else if y.is_invariant() {
                lane_distinct(f, cx, launch, *a, 0)
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Whether `e` takes a different value in every lane of a warp (so `e ==
/// k` holds in at most one): an affine thread index with integer
/// coefficients varying along the warp, `x % m` / `x & (m - 1)` of such an
/// index with `m ≥ 32` a multiple of 32, a cooperative group's
/// `thread_rank()` (of a group of at least a warp), or a variable every
/// definition of which is one of these.
fn lane_distinct(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    e: ExprId,
    depth: u32,
) -> bool {
    if depth > 4 {
        return false;
    }
    let t = cx.form(e);
    let ints = t.coef.iter().all(|c| matches!(c, Coef::Int(_)));
    let warp_in_x = launch.block[0].is_none_or(|bx| bx >= 32);
    if ints && !t.is_invariant() && !t.coef[0].is_zero() && (warp_in_x || !t.coef[1].is_zero()) {
        return true;
    }
    let konst = |x: ExprId| {
        let k = cx.form(x);
        // `warpSize` is 32; (session 15, cdpAdvancedQuicksort's
        // `threadIdx.x & (warpSize - 1)`) so is it in a difference.
        let warp = |y: ExprId| match f.expr(y).kind {
            ExprKind::Builtin(Builtin::WarpSize) => Some(32),
            _ => None,
        };
        (k.is_invariant() && k.rest_multiple == 0)
            .then_some(k.offset)
            .flatten()
            .or(warp(x))
            .or(match f.expr(x).kind {
                ExprKind::Binary(BinOp::Sub, a, b) => {
                    let kb = cx.form(b);
                    let b = (kb.is_invariant() && kb.rest_multiple == 0)
                        .then_some(kb.offset)
                        .flatten();
                    warp(a).zip(b).map(|(a, b)| a - b)
                }
                _ => None,
            })
    };
    // Only `threadIdx.x` (coefficient ±1) keeps residues distinct.
    let unit_x = |x: ExprId| {
        let t = cx.form(x);
        matches!(t.coef[0], Coef::Int(1) | Coef::Int(-1))
            && t.coef[1].is_zero()
            && t.coef[2].is_zero()
    };
    match &f.expr(e).kind {
        ExprKind::Binary(BinOp::Rem, a, m) => {
            konst(*m).is_some_and(|m| m >= 32 && m % 32 == 0) && unit_x(*a)
        }
        ExprKind::Binary(BinOp::BitAnd, a, m) | ExprKind::Binary(BinOp::BitAnd, m, a)
            if konst(*m).is_some() =>
        {
            konst(*m).is_some_and(|m| m >= 31 && (m + 1) % 32 == 0 && (m & (m + 1)) == 0)
                && unit_x(*a)
        }
        ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => {
            lane_distinct(f, cx, launch, *a, depth + 1)
        }
        ExprKind::Call { .. } => super::coop::group_call(f, e).is_some_and(|(m, g)| {
            m == "thread_rank" && super::coop::group_size(f, g).is_none_or(|n| n >= 32)
        }),
        ExprKind::Var(v) => {
            // Every definition of the variable (its initialiser and
            // assignments) is lane-distinct.
            let defs = super::coop::var_definitions(f, *v);
            !defs.is_empty()
                && defs
                    .iter()
                    .all(|d| lane_distinct(f, cx, launch, *d, depth + 1))
        }
        _ => false,
    }
}

/// Whether expression `e` (following local variables' definitions a few
/// levels) contains a node `want` accepts.
fn expr_mentions(f: &Function, e: ExprId, want: &dyn Fn(&ExprKind) -> bool) -> bool {
    let mut stack = vec![(e, 0u32)];
    while let Some((x, d)) = stack.pop() {
        let k = &f.expr(x).kind;
        if want(k) {
            return true;
        }
        if let ExprKind::Var(v) = k
            && d < 4
        {
            stack.extend(
                super::coop::var_definitions(f, *v)
                    .into_iter()
                    .map(|y| (y, d + 1)),
            );
        }
        stack.extend(f.child_exprs(x).into_iter().map(|y| (y, d)));
    }
    false
}

/// A block-/warp-stride pair recognised from the syntax: a start that
/// is a group's `thread_rank()` (or `threadIdx.x`) and a step that is that
/// group's `size()`/`num_threads()` (or involves `blockDim.x`, `warpSize`,
/// a constant covering the warp), with a common uniform factor on both
/// sides stripped (`threadIdx.x * S` / `32 * S`). Local variables are
/// followed through their definitions.
fn structural_stride(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    init: ExprId,
    step: ExprId,
    depth: u32,
) -> bool {
    if depth > 4 {
        return false;
    }
    let single_def = |e: ExprId| match f.expr(e).kind {
        ExprKind::Var(v) => match super::coop::var_definitions(f, v).as_slice() {
            [d] => Some(*d),
            _ => None,
        },
        _ => None,
    };
    if let Some(d) = single_def(init) {
        return structural_stride(f, cx, launch, d, step, depth + 1);
    }
    if let Some(d) = single_def(step) {
        return structural_stride(f, cx, launch, init, d, depth + 1);
    }
    if let (ExprKind::Binary(BinOp::Mul, a, b), ExprKind::Binary(BinOp::Mul, c, d)) =
        (&f.expr(init).kind, &f.expr(step).kind)
    {
        let t = |e: &ExprId| f.expr_text(*e);
        for (i, s, fi, fs) in [(a, c, b, d), (a, d, b, c), (b, c, a, d), (b, d, a, c)] {
            if t(fi) == t(fs) && cx.form(*fi).is_invariant() {
                return structural_stride(f, cx, launch, *i, *s, depth + 1);
            }
        }
        return false;
    }
    // The start: a group's rank, or threadIdx.x.
    if let Some((m, g)) = super::coop::group_call(f, init)
        && m == "thread_rank"
    {
        let size_of_same = super::coop::group_call(f, step).is_some_and(|(m2, g2)| {
            matches!(m2, "size" | "num_threads")
                && g.map(|x| f.expr_text(x)) == g2.map(|x| f.expr_text(x))
        });
        return size_of_same;
    }
    // (session 15) A lane index (`threadIdx.x % 32`) over a step of at
    // least a warp's 32 values.
    if is_lane_index(f, init, 0) {
        let sf = cx.form(step);
        return (sf.is_invariant() && sf.rest_multiple == 0 && sf.offset.is_some_and(|c| c >= 32))
            || expr_mentions(f, step, &|k| {
                matches!(k, ExprKind::Builtin(Builtin::WarpSize))
            });
    }
    if !matches!(
        f.expr(init).kind,
        ExprKind::Builtin(Builtin::ThreadIdx(Dim::X))
    ) {
        // With a common factor stripped (`(threadIdx.x + 32 *
        // threadIdx.y) * V::size` by `blockDim.y * 32 * V::size`), the
        // affine test on what remains (audit D1b).
        return depth > 0 && affine_stride(f, cx, launch, init, step);
    }
    let sf = cx.form(step);
    let span = launch.block[0].map_or(32, |bx| (bx as i64).min(32));
    (sf.is_invariant() && sf.rest_multiple == 0 && sf.offset.is_some_and(|c| c >= span))
        || expr_mentions(f, step, &|k| {
            matches!(
                k,
                ExprKind::Builtin(Builtin::BlockDim(Dim::X)) | ExprKind::Builtin(Builtin::WarpSize)
            )
        })
}

/// Whether the loop at `s` (with condition `cond`) is a block-, grid- or
/// warp-stride loop: its guard variable starts at `k·threadIdx.x + u` (u
/// uniform) and steps by a uniform amount at least the spread of the
/// starts within a warp (`blockDim.x`, `blockDim.x * gridDim.x`, a constant
/// ≥ 32·k), so lanes' trip counts differ by at most one. Returns whether
/// the step involves `gridDim`, and whether a warp can have a partial last
/// iteration at all (see [`no_tail`]).
fn stride_loop(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    cond: ExprId,
) -> Option<(bool, bool)> {
    let l = loops.get(s)?;
    let grid = stride_loop_kind(f, cx, launch, loops, s, cond)?;
    let g = l.guard.as_ref()?;
    let iv = l.vars.iter().find(|v| v.var == g.var)?;
    Some((grid, !no_tail(cx, launch, iv, g)))
}

/// Whether the stride loop with induction variable `iv` and guard `g` has
/// no partial iteration in any warp (audit D2): with the x-extent of a warp
/// an aligned run of `L` consecutive `threadIdx.x` values (`L` = 32 when
/// `blockDim.x` is a multiple of 32, `blockDim.x` when it divides 32), a
/// start `threadIdx.x + u`, a step `s` and a bound `n` with `u`, `s` and `n`
/// all multiples of `L` keep each warp's run of values wholly below or
/// wholly at/above the bound: `for (j = threadIdx.x; j < 512; j +=
/// blockDim.x)` with 256-thread blocks runs exactly twice in every lane.
/// Needs the block's x size from every launch site.
fn no_tail(
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    iv: &super::loops::InductionVar,
    g: &super::loops::Guard,
) -> bool {
    let Some(bx) = launch.block[0].map(i64::from) else {
        return false;
    };
    let span = if bx % 32 == 0 {
        32
    } else if bx > 0 && 32 % bx == 0 {
        bx
    } else {
        return false;
    };
    // A uniform value that is a known multiple of `span`.
    let multiple = |a: &super::affine::Affine| {
        a.is_invariant()
            && a.offset.is_some_and(|o| o % span == 0)
            && (a.rest_multiple == 0 || (a.rest_multiple as i64) % span == 0)
    };
    let (Some(init), Some(step)) = (iv.init, iv.step) else {
        return false;
    };
    let mut start = cx.form(init);
    if start.coef[0] != Coef::Int(1) || !start.coef[1].is_zero() || !start.coef[2].is_zero() {
        return false;
    }
    start.coef[0] = Coef::Int(0);
    let bound = cx.form(g.bound);
    let bound = match g.op {
        BinOp::Lt => bound,
        BinOp::Le => match bound.offset {
            Some(o) => super::affine::Affine {
                offset: o.checked_add(1),
                ..bound
            },
            None => return false,
        },
        _ => return false,
    };
    iv.op == StepOp::Add && multiple(&start) && multiple(&cx.form(step)) && multiple(&bound)
}

/// A loop at `s` whose condition `cond` is a threshold on a variable `v`
/// (`v >= 0`, `(v + 1) * 4 > n`: `v` under `+`/`-` of uniform values and
/// products with positive constants, compared with a uniform value) that
/// the loop steps towards the threshold by a uniform `S` covering a warp
/// (`v -= blockDim.x`), where the lanes of a warp enter with values less
/// than `S` apart (audit D1d): trip counts differ by at most one, a stride
/// tail. That holds when `v`'s only plain definition is `threadIdx.x + u`
/// (u uniform) and every other update is `v ±= S` (the same text) as a
/// top-level statement, or the step, of a loop with such a condition: a
/// loop stopping at the first value past a threshold keeps the lanes'
/// values within one step (counting down from where a previous loop
/// stopped). Returns whether `S` involves `gridDim`.
fn threshold_stride(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    s: StmtId,
    cond: ExprId,
) -> Option<bool> {
    let (v, step, down) = threshold_loop(f, cx, s, cond)?;
    let sf = cx.form(step);
    if !sf.is_invariant() {
        return None;
    }
    let span = launch.block[0].map_or(32, |bx| i64::from(bx).min(32));
    let mentions = |want: &dyn Fn(&ExprKind) -> bool| expr_mentions(f, step, want);
    let covers = matches!((sf.rest_multiple, sf.offset), (0, Some(c)) if c >= span)
        || mentions(&|k| matches!(k, ExprKind::Builtin(Builtin::BlockDim(Dim::X))));
    if !covers {
        return None;
    }
    let step_text = f.expr_text(step);
    let is_v = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Var(x) if x == v);
    // The one plain definition: `threadIdx.x + u`.
    let mut plain = Vec::new();
    for st in &f.stmts {
        if let StmtKind::Decl { var, init } = &st.kind
            && *var == v
        {
            plain.push(*init);
        }
    }
    // (session 14; audit 20261219 #4, lavaMD's `wtx = wtx + NUMBER_THREADS`)
    // `v = v + S` is the step written out.
    let written_step = |rhs: ExprId| match &f.expr(rhs).kind {
        ExprKind::Binary(BinOp::Add, a, b) if !down => {
            (is_v(*a) && f.expr_text(*b) == step_text) || (is_v(*b) && f.expr_text(*a) == step_text)
        }
        ExprKind::Binary(BinOp::Sub, a, b) if down => is_v(*a) && f.expr_text(*b) == step_text,
        _ => false,
    };
    for (i, e) in f.exprs.iter().enumerate() {
        let id = ExprId(i as u32);
        match &e.kind {
            ExprKind::Assign { op: None, lhs, rhs }
                if is_v(*lhs)
                    && written_step(*rhs)
                    && !stepped_by_threshold_loop(f, cx, v, id, down) =>
            {
                return None;
            }
            ExprKind::Assign { op: None, lhs, rhs } if is_v(*lhs) && written_step(*rhs) => {}
            ExprKind::Assign { op: None, lhs, rhs } if is_v(*lhs) => plain.push(Some(*rhs)),
            ExprKind::Assign {
                op: Some(op),
                lhs,
                rhs,
            } if is_v(*lhs) => {
                let same = matches!((op, down), (BinOp::Sub, true) | (BinOp::Add, false))
                    && f.expr_text(*rhs) == step_text;
                if !same || !stepped_by_threshold_loop(f, cx, v, id, down) {
                    return None;
                }
            }
            ExprKind::IncDec { target, .. } if is_v(*target) => return None,
            ExprKind::Unary(UnOp::AddrOf, x) if is_v(*x) => return None,
            _ => {}
        }
    }
    // (lavaMD's `wtx = tx;` after each copy loop) Plain definitions that
    // all repeat the same value are one.
    let Some(Some(init)) = plain.first().copied() else {
        return None;
    };
    if plain
        .iter()
        .any(|p| p.is_none_or(|x| f.expr_text(x) != f.expr_text(init)))
    {
        return None;
    }
    let init = &init;
    if f.var(v).param_position.is_some() || f.var(v).by_ref {
        return None;
    }
    let mut start = cx.form(*init);
    if start.coef[0] != Coef::Int(1) || !start.coef[1].is_zero() || !start.coef[2].is_zero() {
        return None;
    }
    start.coef[0] = Coef::Int(0);
    if !start.is_invariant() {
        return None;
    }
    Some(mentions(&|k| {
        matches!(k, ExprKind::Builtin(Builtin::GridDim(_)))
    }))
}

/// For a loop `s` with condition `cond` a threshold on a local `v` stepped
/// by `v -= S` / `v += S` towards it (as a top-level statement of its body
/// or its `for` step): `(v, S, counting down)`.
fn threshold_loop(
    f: &Function,
    cx: &AffineCx<'_>,
    s: StmtId,
    cond: ExprId,
) -> Option<(crate::ir::VarId, ExprId, bool)> {
    let (body, for_step) = match &f.stmt(s).kind {
        StmtKind::For {
            cond: Some(c),
            step,
            body,
            ..
        } if *c == cond => (*body, *step),
        StmtKind::While { cond: c, body } | StmtKind::DoWhile { cond: c, body } if *c == cond => {
            (*body, None)
        }
        _ => return None,
    };
    let ExprKind::Binary(op, a, b) = &f.expr(cond).kind else {
        return None;
    };
    // Normalise to `mono(v) OP uniform`; `up`: the loop runs while mono is
    // large (`>`/`>=`), so it must count down.
    let (mono, up) = match op {
        BinOp::Gt | BinOp::Ge if cx.form(*b).is_invariant() => (*a, true),
        BinOp::Lt | BinOp::Le if cx.form(*b).is_invariant() => (*a, false),
        BinOp::Gt | BinOp::Ge if cx.form(*a).is_invariant() => (*b, false),
        BinOp::Lt | BinOp::Le if cx.form(*a).is_invariant() => (*b, true),
        _ => return None,
    };
    let v = increasing_in(f, cx, mono, 0)?;
    let is_v = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Var(x) if x == v);
    let mut updates: Vec<ExprId> = for_step.into_iter().collect();
    let tops: Vec<StmtId> = match &f.stmt(body).kind {
        StmtKind::Block(xs) => xs.clone(),
        _ => vec![body],
    };
    for t in tops {
        if let StmtKind::Expr(e) = f.stmt(t).kind {
            updates.push(e);
        }
    }
    updates.into_iter().find_map(|e| match &f.expr(e).kind {
        ExprKind::Assign {
            op: Some(o @ (BinOp::Sub | BinOp::Add)),
            lhs,
            rhs,
        } if is_v(*lhs) && (*o == BinOp::Sub) == up => Some((v, *rhs, up)),
        // `v = v + S` / `v = S + v` / `v = v - S`, the step written out.
        ExprKind::Assign { op: None, lhs, rhs } if is_v(*lhs) => match &f.expr(*rhs).kind {
            ExprKind::Binary(BinOp::Add, a, b) if !up && is_v(*a) => Some((v, *b, up)),
            ExprKind::Binary(BinOp::Add, a, b) if !up && is_v(*b) => Some((v, *a, up)),
            ExprKind::Binary(BinOp::Sub, a, b) if up && is_v(*a) => Some((v, *b, up)),
            _ => None,
        },
        _ => None,
    })
}

/// Whether the update `upd` of `v` is the step of a loop whose condition is
/// a threshold on `v` in the same direction (see [`threshold_loop`]).
fn stepped_by_threshold_loop(
    f: &Function,
    cx: &AffineCx<'_>,
    v: crate::ir::VarId,
    upd: ExprId,
    down: bool,
) -> bool {
    f.stmts.iter().enumerate().any(|(i, st)| {
        let c = match &st.kind {
            StmtKind::For { cond: Some(c), .. }
            | StmtKind::While { cond: c, .. }
            | StmtKind::DoWhile { cond: c, .. } => *c,
            _ => return false,
        };
        let (body, for_step) = match &st.kind {
            StmtKind::For { step, body, .. } => (*body, *step),
            StmtKind::While { body, .. } | StmtKind::DoWhile { body, .. } => (*body, None),
            _ => return false,
        };
        let top = for_step == Some(upd)
            || match &f.stmt(body).kind {
                StmtKind::Block(xs) => xs
                    .iter()
                    .any(|x| matches!(f.stmt(*x).kind, StmtKind::Expr(e) if e == upd)),
                StmtKind::Expr(e) => *e == upd,
                _ => false,
            };
        top && threshold_loop(f, cx, StmtId(i as u32), c)
            .is_some_and(|(w, _, d)| w == v && d == down)
    })
}

/// The local variable `e` is monotone in: `v`, `v ± u`, `u + v`, `v · u`,
/// `u · v`, `v / u` (`u` uniform), casts of those.
fn increasing_in(
    f: &Function,
    cx: &AffineCx<'_>,
    e: ExprId,
    depth: u32,
) -> Option<crate::ir::VarId> {
    if depth > 8 {
        return None;
    }
    let inv = |x: ExprId| cx.form(x).is_invariant();
    // A uniform factor of unknown sign keeps `e` monotone: decreasing
    // when negative, which only a loop that never ends would step away
    // from, so the direction test of [`threshold_loop`] is moot there.
    let pos = inv;
    match &f.expr(e).kind {
        ExprKind::Var(v) => {
            let var = f.var(*v);
            (var.param_position.is_none() && !var.by_ref && var.space.is_none()).then_some(*v)
        }
        ExprKind::Cast(_, a) => increasing_in(f, cx, *a, depth + 1),
        ExprKind::Binary(BinOp::Add, a, b) if inv(*b) => increasing_in(f, cx, *a, depth + 1),
        ExprKind::Binary(BinOp::Add, a, b) if inv(*a) => increasing_in(f, cx, *b, depth + 1),
        ExprKind::Binary(BinOp::Sub, a, b) if inv(*b) => increasing_in(f, cx, *a, depth + 1),
        ExprKind::Binary(BinOp::Mul, a, b) if pos(*b) => increasing_in(f, cx, *a, depth + 1),
        ExprKind::Binary(BinOp::Mul, a, b) if pos(*a) => increasing_in(f, cx, *b, depth + 1),
        ExprKind::Binary(BinOp::Div, a, b) if pos(*b) => increasing_in(f, cx, *a, depth + 1),
        _ => None,
    }
}

/// `e` without casts, followed through locals defined once (a few steps):
/// `unsigned index = i + threadIdx.x;` gives `i + threadIdx.x`.
fn through_single_defs(f: &Function, e: ExprId) -> ExprId {
    let mut x = f.strip_casts(e);
    for _ in 0..4 {
        match f.expr(x).kind {
            ExprKind::Var(v) => match super::barriers::single_def(f, v.0) {
                Some(d) => x = f.strip_casts(d),
                None => break,
            },
            _ => break,
        }
    }
    x
}

/// Whether statement `inner` lies inside statement `outer`.
fn stmt_encloses(f: &Function, outer: StmtId, inner: StmtId) -> bool {
    let mut stack = f.child_stmts(outer);
    while let Some(t) = stack.pop() {
        if t == inner {
            return true;
        }
        stack.extend(f.child_stmts(t));
    }
    false
}

/// (audit 20261215 #31, cdpBitonicSort's `for (i = len; i < len2; i +=
/// blockDim.x) { index = i + threadIdx.x; if (index < len) … }`) An `if`
/// testing `i + r < B` where `i` is the counter of an enclosing loop that
/// starts at `B` and never decreases, and `r` is never negative: never
/// true, so it splits no warp.
fn guard_below_loop_start(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    cond: ExprId,
) -> bool {
    if !matches!(f.stmt(s).kind, StmtKind::If { .. }) {
        return false;
    }
    let ExprKind::Binary(BinOp::Lt, x, bound) = f.expr(cond).kind else {
        return false;
    };
    if !cx.form(bound).is_invariant() {
        return false;
    }
    let x = through_single_defs(f, x);
    let ExprKind::Binary(BinOp::Add, p, q) = f.expr(x).kind else {
        return false;
    };
    let bound_text = f.expr_text(f.strip_casts(bound));
    let nonneg =
        |e: ExprId| super::ranges::value_range(f, e, launch).is_some_and(|(lo, _)| lo >= 0);
    let encloses = |outer: StmtId| stmt_encloses(f, outer, s);
    [(p, q), (q, p)].into_iter().any(|(counter, rest)| {
        let ExprKind::Var(v) = f.expr(f.strip_casts(counter)).kind else {
            return false;
        };
        loops.loops.iter().any(|l| {
            l.vars.iter().any(|iv| {
                iv.var == v
                    && iv.op == StepOp::Add
                    && iv.step.is_none_or(nonneg)
                    && iv.init.is_some_and(|i| {
                        let i = match f.expr(i).kind {
                            ExprKind::Assign { op: None, rhs, .. } => rhs,
                            _ => i,
                        };
                        f.expr_text(f.strip_casts(i)) == bound_text
                    })
                    && encloses(l.stmt)
            })
        }) && nonneg(rest)
    })
}

/// (issue 8, session 12; audit 20261212 #34, cdpBitonicSort's copy loop
/// `for (i = 0; i < len; i += blockDim.x) { index = i + threadIdx.x; if
/// (index < len) … }`) An `if` comparing `i + k·threadIdx.x + …` with a
/// uniform bound, where `i` is the counter of an enclosing loop that starts
/// uniform and steps by a uniform amount covering the lanes' spread: each
/// iteration the lanes of a warp cover one window of consecutive values
/// that moves past the bound at most once, so at most one iteration splits
/// the warp. Returns whether the step involves `gridDim`, and the loop.
fn guard_in_stride_loop(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    cond: ExprId,
) -> Option<(bool, StmtId)> {
    if !matches!(f.stmt(s).kind, StmtKind::If { .. }) {
        return None;
    }
    let ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = f.expr(cond).kind
    else {
        return None;
    };
    let (x, bound) = if cx.form(b).is_invariant() {
        (a, b)
    } else if cx.form(a).is_invariant() {
        (b, a)
    } else {
        return None;
    };
    // Through locals defined once (`unsigned index = i + threadIdx.x;`).
    let x = through_single_defs(f, x);
    let ExprKind::Binary(BinOp::Add, p, q) = f.expr(x).kind else {
        return None;
    };
    let encloses = |outer: StmtId| stmt_encloses(f, outer, s);
    for (counter, rest) in [(p, q), (q, p)] {
        if let Some(found) = chunk_window(f, u, cx, launch, loops, s, counter, rest)
            && !changes_in_loop(f, loops, found.1, bound)
        {
            return Some(found);
        }
        let ExprKind::Var(v) = f.expr(f.strip_casts(counter)).kind else {
            continue;
        };
        for l in &loops.loops {
            let Some(iv) = l.vars.iter().find(|iv| iv.var == v) else {
                continue;
            };
            let (Some(init), Some(step)) = (iv.init, iv.step) else {
                continue;
            };
            if iv.op != StepOp::Add
                || !cx.form(init).is_invariant()
                || !encloses(l.stmt)
                || !affine_stride(f, cx, launch, rest, step)
            {
                continue;
            }
            let grid = l.grid_stride
                || expr_mentions(f, step, &|k| {
                    matches!(k, ExprKind::Builtin(Builtin::GridDim(_)))
                });
            return Some((grid, l.stmt));
        }
    }
    None
}

/// (session 15, audits 20261222 #56, 20261223 #56, 20261224 #54, 20261225
/// #57: llm.c's `global_index = lane * x128::size + c * C_per_iteration`
/// with `C_per_iteration = WARP_SIZE * x128::size`) The guard's value is
/// `c·K + r`: `c` the counter of an enclosing loop that starts at a
/// warp-uniform value and steps by a warp-uniform amount, `K` uniform and
/// at least the spread of `r` over a warp's lanes. Each iteration the lanes
/// cover one window of `K` values; a lane's test is true for a prefix of the
/// iterations, and only the iteration whose window straddles the bound splits
/// the warp. Returns that loop, as [`guard_in_stride_loop`] does.
#[allow(clippy::too_many_arguments)]
fn chunk_window(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    counter: ExprId,
    rest: ExprId,
) -> Option<(bool, StmtId)> {
    let ExprKind::Binary(BinOp::Mul, a, b) = f.expr(f.strip_casts(counter)).kind else {
        return None;
    };
    let warp_same = |e: ExprId| cx.form(e).is_invariant() || warp_uniform_value(f, u, launch, e, 0);
    for (c, k) in [(a, b), (b, a)] {
        let ExprKind::Var(v) = f.expr(f.strip_casts(c)).kind else {
            continue;
        };
        if !cx.form(k).is_invariant() {
            continue;
        }
        for l in &loops.loops {
            let Some(iv) = l.vars.iter().find(|iv| iv.var == v) else {
                continue;
            };
            // `c++` has no step operand: a step of 1.
            let Some(init) = iv.init else {
                continue;
            };
            if iv.op != StepOp::Add
                || !warp_same(init)
                || !iv.step.is_none_or(warp_same)
                || !stmt_encloses(f, l.stmt, s)
                || l.guard.as_ref().is_none_or(|g| g.var != v)
                || !(structural_stride(f, cx, launch, rest, k, 0)
                    || affine_stride(f, cx, launch, rest, k))
            {
                continue;
            }
            return Some((false, l.stmt));
        }
    }
    None
}

/// (session 15, llm.c's causal mask `i * Br + tx < j * Bc + y` inside the
/// `y` loop) Whether `e` reads the counter of loop `l` or of a loop inside
/// it (following locals with one definition): a bound that moves while the
/// window loop runs, so more than one of its iterations can straddle it.
fn changes_in_loop(f: &Function, loops: &LoopFacts, l: StmtId, e: ExprId) -> bool {
    let inner: Vec<crate::ir::VarId> = loops
        .loops
        .iter()
        .filter(|x| x.stmt == l || stmt_encloses(f, l, x.stmt))
        .flat_map(|x| x.vars.iter().map(|iv| iv.var))
        .collect();
    fn reads(f: &Function, e: ExprId, inner: &[crate::ir::VarId], depth: u32) -> bool {
        expr_mentions(f, e, &|k| match k {
            ExprKind::Var(v) => {
                inner.contains(v)
                    || (depth < 4
                        && match super::coop::var_definitions(f, *v).as_slice() {
                            [d] => reads(f, *d, inner, depth + 1),
                            _ => false,
                        })
            }
            _ => false,
        })
    }
    reads(f, e, &inner, 0)
}

/// (session 15, audits 20261224 #55, 20261226 #55, 20261227 #56: llm.c's
/// `for (; t2 <= t; t2 += warp.size())` after earlier loops over `t2`, and
/// the count-down `for (; c >= 0; c -= WarpSize * x128::size)`) A loop
/// without an initialiser whose counter's lane values form one window of
/// a step at its entry: every definition of the counter is a start whose
/// lanes lie within one step (`t2 = warp.thread_rank()`), or an update by
/// that same step, either as the step of a loop that runs while the
/// counter is on one side of a uniform bound (lanes stop in the window past
/// it), unconditional, or under a test of the counter against a uniform
/// bound on the side the update leaves (`if (t2 <= t) … t2 += 32`). Each
/// of these keeps the lanes' values a window of consecutive values one step
/// wide, so the lanes' trip counts differ by at most one. `Some(grid)`.
fn carried_window(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    cond: ExprId,
) -> Option<bool> {
    let l = loops.get(s)?;
    if l.cond != Some(cond) {
        return None;
    }
    let g = l.guard.as_ref()?;
    let iv = l.vars.iter().find(|v| v.var == g.var)?;
    let up = match (iv.op, g.op) {
        (StepOp::Add, BinOp::Lt | BinOp::Le) => true,
        (StepOp::Sub, BinOp::Gt | BinOp::Ge) => false,
        _ => return None,
    };
    let step = iv.step?;
    if iv.init.is_some() || !cx.form(g.bound).is_invariant() || !cx.form(step).is_invariant() {
        return None;
    }
    let v = g.var;
    if f.vars.get(v.0 as usize)?.param_position.is_some() {
        return None;
    }
    let step_text = f.expr_text(step);
    let is_v = |e: ExprId| matches!(f.expr(f.strip_casts(e)).kind, ExprKind::Var(x) if x == v);
    let window_start = |e: ExprId| {
        structural_stride(f, cx, launch, e, step, 0) || affine_stride(f, cx, launch, e, step)
    };
    // A test of the counter against a uniform bound on the side an update
    // by the step in direction `up` leaves.
    let threshold_on_v = |c: ExprId, up: bool| match f.expr(f.strip_casts(c)).kind {
        ExprKind::Binary(op, a, b) if is_v(a) && cx.form(b).is_invariant() => {
            if up {
                matches!(op, BinOp::Lt | BinOp::Le)
            } else {
                matches!(op, BinOp::Gt | BinOp::Ge)
            }
        }
        _ => false,
    };
    let parents = stmt_parents(f);
    let mut starts = 0;
    for (i, st) in f.stmts.iter().enumerate() {
        let id = StmtId(i as u32);
        // The expressions this statement evaluates directly.
        let (own, loop_step): (Vec<ExprId>, bool) = match &st.kind {
            StmtKind::Decl { var, init } if *var == v => {
                match init {
                    Some(e) if window_start(*e) => starts += 1,
                    _ => return None,
                }
                continue;
            }
            StmtKind::Expr(e) => (vec![*e], false),
            StmtKind::For {
                step: Some(e),
                cond,
                ..
            } => {
                // The step of a loop over `v` that runs while `v` is short
                // of a uniform bound keeps the window.
                let guarded = cond.is_some_and(|c| {
                    threshold_on_v(c, true) && up || threshold_on_v(c, false) && !up
                });
                (vec![*e], guarded)
            }
            _ => continue,
        };
        for e in own {
            let mut stack = vec![e];
            while let Some(x) = stack.pop() {
                stack.extend(f.child_exprs(x));
                let (op, rhs) = match &f.expr(x).kind {
                    ExprKind::Assign { op, lhs, rhs } if is_v(*lhs) => (*op, *rhs),
                    ExprKind::IncDec { target, .. } if is_v(*target) => return None,
                    ExprKind::Unary(UnOp::AddrOf, a) if is_v(*a) => return None,
                    _ => continue,
                };
                match op {
                    None if window_start(rhs) => starts += 1,
                    Some(o)
                        if ((o == BinOp::Add && up) || (o == BinOp::Sub && !up))
                            && f.expr_text(rhs) == step_text =>
                    {
                        if loop_step {
                            continue;
                        }
                        // Straight-line, or under tests that keep the
                        // window: uniform ones, or the counter's threshold.
                        let mut at = parents.get(id.0 as usize).copied().flatten();
                        while let Some(p) = at {
                            if let StmtKind::If { cond: c, els, .. } = &f.stmt(p).kind
                                && !(u.is_uniform(c.0) || (els.is_none() && threshold_on_v(*c, up)))
                            {
                                return None;
                            }
                            at = parents.get(p.0 as usize).copied().flatten();
                        }
                    }
                    // (`up` updates in a count-down loop, or by another
                    // step, or another start.)
                    Some(o)
                        if ((o == BinOp::Sub && up) || (o == BinOp::Add && !up))
                            && f.expr_text(rhs) == step_text =>
                    {
                        // One step back, unconditionally (`c -= S;` before
                        // counting down): a shift of the window.
                        let mut at = parents.get(id.0 as usize).copied().flatten();
                        while let Some(p) = at {
                            if !matches!(f.stmt(p).kind, StmtKind::Block(_)) {
                                return None;
                            }
                            at = parents.get(p.0 as usize).copied().flatten();
                        }
                    }
                    _ => return None,
                }
            }
        }
    }
    if starts == 0 {
        return None;
    }
    Some(expr_mentions(f, step, &|k| {
        matches!(k, ExprKind::Builtin(Builtin::GridDim(_)))
    }))
}

/// [`stride_loop`]'s recognition: `Some(grid)` for a stride loop.
fn stride_loop_kind(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    cond: ExprId,
) -> Option<bool> {
    let l = loops.get(s)?;
    if l.cond != Some(cond) {
        return None;
    }
    let g = l.guard.as_ref()?;
    if !matches!(g.op, BinOp::Lt | BinOp::Le) {
        return None;
    }
    let iv = l.vars.iter().find(|v| v.var == g.var)?;
    if iv.op != StepOp::Add || !cx.form(g.bound).is_invariant() {
        return None;
    }
    // (session 14, binaryPartitionCG's `i += grid.size()`) The size of a
    // grid group is a grid-wide step too.
    let grid_in = |e: ExprId| {
        expr_mentions(f, e, &|k| {
            matches!(k, ExprKind::Builtin(Builtin::GridDim(_)))
        }) || {
            let mut stack = vec![e];
            let mut found = false;
            while let Some(x) = stack.pop() {
                if let Some((m, Some(g))) = super::coop::group_call(f, x)
                    && matches!(m, "size" | "num_threads")
                    && super::coop::group_of(f, g) == Some(super::coop::Group::Grid)
                {
                    found = true;
                    break;
                }
                stack.extend(f.child_exprs(x));
            }
            found
        }
    };
    // Structural match first: `g.thread_rank()` stepping by `g.size()`,
    // `threadIdx.x * S` stepping by `blockDim.x * S` / `32 * S`.
    if let (Some(init), Some(step)) = (iv.init, iv.step)
        && structural_stride(f, cx, launch, init, step, 0)
    {
        return Some(l.grid_stride || grid_in(step));
    }
    if l.kind != LoopKind::ThreadInit {
        return None;
    }
    let step = iv.step?;
    affine_stride(f, cx, launch, iv.init?, step).then_some(l.grid_stride || grid_in(step))
}

/// Whether a start `init` (`k·threadIdx.x + …`, the other thread terms
/// constant over a warp's lanes) and a uniform step `step` covering the
/// spread of the starts within a warp make a stride loop.
fn affine_stride(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    init: ExprId,
    step: ExprId,
) -> bool {
    let init = cx.form(init);
    let Coef::Int(k) = init.coef[0] else {
        return false;
    };
    // y/z terms are constant over a warp's lanes when the threads before
    // that dimension (blockDim.x for y, blockDim.x·blockDim.y for z) are a
    // multiple of 32, so a warp lies in one row / z-slice (session 5 audit
    // V11: `dim3(4, 8, z)`), or the dimension is trivial.
    let lanes_below = |d: usize| {
        launch.block[..d]
            .iter()
            .try_fold(1u64, |n, b| b.map(|b| n * u64::from(b)))
    };
    let const_in_warp = |d: usize| {
        init.coef[d].is_zero()
            || (!matches!(init.coef[d], Coef::Unknown)
                && (lanes_below(d).is_some_and(|n| n % 32 == 0) || launch.block[d] == Some(1)))
    };
    if k <= 0 || !const_in_warp(1) || !const_in_warp(2) {
        return false;
    }
    let sf = cx.form(step);
    if !sf.is_invariant() {
        return false;
    }
    let mentions = |want: &dyn Fn(&ExprKind) -> bool| expr_mentions(f, step, want);
    // Lanes of one warp span at most min(32, blockDim.x) values of threadIdx.x.
    let span = k * launch.block[0].map_or(32, |bx| (bx as i64).min(32));
    match (sf.rest_multiple, sf.offset) {
        (0, Some(c)) => c >= span,
        // `blockDim.x` (times anything uniform, e.g. `gridDim.x`) covers a
        // unit start; `k·blockDim.x` is checked through the multiple.
        _ => {
            (k == 1 && mentions(&|k| matches!(k, ExprKind::Builtin(Builtin::BlockDim(Dim::X)))))
                || (sf.rest_multiple as i64 >= span && sf.rest_multiple > 1)
        }
    }
}

/// `i < n`-style checks of a grid-wide linear thread index against a
/// thread-invariant bound (and conjunctions/disjunctions of them).
/// Whether a condition compares values whose affine forms do not vary
/// across the lanes of a warp (every thread coefficient zero) — e.g. a
/// warp index `threadIdx.x / 32` passed into a device function, which the
/// callee sees only as a parameter.
fn lane_invariant(f: &Function, cx: &AffineCx<'_>, c: ExprId) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, a, b) => {
            lane_invariant(f, cx, *a) && lane_invariant(f, cx, *b)
        }
        ExprKind::Unary(crate::ir::UnOp::Not, a) => lane_invariant(f, cx, *a),
        ExprKind::Binary(
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne,
            a,
            b,
        ) => cx.form(*a).is_invariant() && cx.form(*b).is_invariant(),
        _ => cx.form(c).is_invariant(),
    }
}

fn boundary_guard(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    c: ExprId,
) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, a, b) => [*a, *b].iter().all(|x| {
            u.is_uniform(x.0)
                || warp_uniform(f, u, *x, launch)
                || boundary_guard(f, u, cx, launch, *x)
        }),
        ExprKind::Unary(crate::ir::UnOp::Not, a) => boundary_guard(f, u, cx, launch, *a),
        ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) => {
            let (x, y) = (guard_form(f, cx, *a, 0), guard_form(f, cx, *b, 0));
            let y_invariant = y.is_invariant();
            let (t, k) = if y_invariant { (x, y) } else { (y, x) };
            if !k.is_invariant() {
                return false;
            }
            let unit = t
                .coef
                .iter()
                .filter(|c| matches!(c, Coef::Int(1) | Coef::Int(-1)))
                .count()
                == 1;
            let others_zero = t.coef.iter().filter(|c| c.is_zero()).count() == 2;
            // (session 16; audit 20261230 #54, llm.c's `(blockIdx.x *
            // blockDim.x + threadIdx.x) * x128::size < N`) The global index
            // of a 1-D launch scaled by a factor cudalog does not know.
            let (side, bound) = if y_invariant { (*a, *b) } else { (*b, *a) };
            (unit && others_zero && t.grid_offset)
                || block_disjoint(&t, &k, launch)
                || (launch.grid[1] == Some(1)
                    && launch.grid[2] == Some(1)
                    && launch.block[1] == Some(1)
                    && launch.block[2] == Some(1)
                    && !super::barriers::depends_on_block(f, bound, 0)
                    && !loop_varying(f, bound, 0)
                    && grid_linear(f, u, side, launch, 0))
        }
        _ => false,
    }
}

/// (issue 8, session 8, audit 20261130 #51) A grid-wide index whose
/// block-dependent part steps by at least the range one block's threads
/// cover (`blockIdx.x * 64 + 8 * threadIdx.y` with 8 rows: 57 values per
/// block, 64 between blocks), compared against a bound that does not move
/// with the block: every block covers its own disjoint range, so only the
/// blocks at one value of the block offset can straddle the bound — a
/// grid-edge guard, whatever the thread stride.
fn block_disjoint(
    t: &super::affine::Affine,
    k: &super::affine::Affine,
    launch: &LaunchDims,
) -> bool {
    if !t.grid_offset || k.grid_offset || t.rest_multiple <= 1 {
        return false;
    }
    let mut span: u64 = 1;
    for (c, b) in t.coef.iter().zip(launch.block) {
        match c {
            Coef::Int(0) => {}
            Coef::Int(a) => match b {
                Some(b) => span += a.unsigned_abs() * u64::from(b.saturating_sub(1)),
                None => return false,
            },
            _ => return false,
        }
    }
    t.rest_multiple >= span
}

/// The [`Shape`] of a divergent branch.
#[allow(clippy::too_many_arguments)]
fn shape(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    stmt: StmtId,
    cond: ExprId,
    in_expression: bool,
    callees: &super::Callees,
) -> Shape {
    if in_expression {
        // `c ? a : b`, `c && b`, `c || b` with register-only operands.
        let arms: Vec<ExprId> = f
            .exprs
            .iter()
            .filter_map(|e| match &e.kind {
                ExprKind::Cond(k, a, b) if *k == cond => Some(vec![*a, *b]),
                ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, k, b) if *k == cond => {
                    Some(vec![*b])
                }
                _ => None,
            })
            .flatten()
            .collect();
        let none = SelectCx { loads: &[] };
        if !arms.is_empty() && arms.iter().all(|a| select_expr(f, &none, *a, 0)) {
            return Shape::Select;
        }
        return Shape::Plain;
    }
    let StmtKind::If { then, els, .. } = &f.stmt(stmt).kind else {
        return trip_spread(f, u, cx, launch, cond).unwrap_or(Shape::Plain);
    };
    if group_leader(f, cx, launch, cond) {
        return Shape::GroupLeader;
    }
    // Loads the condition makes may be repeated in the sides (`if (a[j] >
    // m) m = a[j];`): the compiler reuses the value, a max/min select.
    let mut cond_loads = Vec::new();
    let mut stack = vec![cond];
    while let Some(e) = stack.pop() {
        if matches!(f.expr(e).kind, ExprKind::Index { .. }) {
            cond_loads.push(f.expr_text(e));
        }
        stack.extend(f.child_exprs(e));
    }
    let cx_sel = SelectCx { loads: &cond_loads };
    let arms: Vec<StmtId> = std::iter::once(*then).chain(*els).collect();
    let mut budget = 4usize;
    if arms
        .iter()
        .all(|a| select_stmt(f, &cx_sel, *a, &mut budget))
    {
        return Shape::Select;
    }
    // `if (c) return a; else return b;`
    if let Some(els) = els
        && let (Some(a), Some(b)) = (single_return(f, *then), single_return(f, *els))
        && select_expr(f, &cx_sel, a, 0)
        && select_expr(f, &cx_sel, b, 0)
    {
        return Shape::Select;
    }
    // `if (s < 0) return 0; else if (s > 255) return 255; return s;`: a
    // clamp written as early returns is a chain of selects (audit D4r).
    if return_chain(f, &cx_sel, stmt, 0) {
        return Shape::Select;
    }
    // (issue 8, session 11; heartwall's padding `if (inside) p[e] = in[…];
    // else p[e] = 0;`) Both sides end in one store to the same element,
    // after a few register assignments: the compiler selects the value and
    // stores once, predicating the one load a side may make.
    if let Some(els) = els
        && let (Some(a), Some(b)) = (
            one_store_side(f, &cx_sel, *then),
            one_store_side(f, &cx_sel, *els),
        )
        && a == b
    {
        return Shape::Select;
    }
    if let Some(els) = els
        && let (Some(a), Some(b)) = (single_call(f, *then), single_call(f, *els))
        && a == b
    {
        return Shape::SameCall(a);
    }
    match threshold_tests(f, u, cx, launch, cond, 0) {
        // (session 5 audit V10) A lane index (`threadIdx.x % 32`, a
        // 32-thread tile's rank) repeats in every warp: a threshold on it
        // splits every warp the same way, not one per block.
        Some(_) if mentions_lane_index(f, cond) => Shape::EveryWarp,
        Some((scope, tests)) if tests > 0 => Shape::OneWarp { scope, tests },
        _ => {
            let mut rc = RunCx {
                f,
                u,
                cx,
                launch,
                at: stmt,
                callees,
                clauses: Vec::new(),
                every_warp: false,
            };
            if rc.tests(cond, 0) && !rc.clauses.is_empty() {
                Shape::Runs {
                    clauses: rc.clauses,
                    every_warp: rc.every_warp,
                }
            } else {
                Shape::Plain
            }
        }
    }
}

/// Whether `e` (following local variables' definitions a few levels)
/// contains a lane index: `x % m` or `x & (m - 1)` with `m` a power of two
/// of at most 32 (or `warpSize`), or the `thread_rank()` of a cooperative
/// group of at most 32 threads.
fn mentions_lane_index(f: &Function, e: ExprId) -> bool {
    let small_pow2 = |e: ExprId, minus_one: bool| match f.expr(e).kind {
        ExprKind::Int(v) => {
            let m = if minus_one { v + 1 } else { v };
            (2..=32).contains(&m) && m & (m - 1) == 0
        }
        ExprKind::Builtin(Builtin::WarpSize) => !minus_one,
        _ => false,
    };
    let mut stack = vec![(e, 0u32)];
    while let Some((x, d)) = stack.pop() {
        let hit = match &f.expr(x).kind {
            ExprKind::Binary(BinOp::Rem, _, m) => small_pow2(*m, false),
            ExprKind::Binary(BinOp::BitAnd, a, b) => small_pow2(*a, true) || small_pow2(*b, true),
            ExprKind::Call { .. } => super::coop::group_call(f, x).is_some_and(|(m, g)| {
                m == "thread_rank" && super::coop::group_size(f, g).is_some_and(|n| n <= 32)
            }),
            ExprKind::Var(v) if d < 4 => {
                stack.extend(
                    super::coop::var_definitions(f, *v)
                        .into_iter()
                        .map(|y| (y, d + 1)),
                );
                false
            }
            _ => false,
        };
        if hit {
            return true;
        }
        stack.extend(f.child_exprs(x).into_iter().map(|y| (y, d)));
    }
    false
}

/// Math functions that compile to a few arithmetic instructions (no memory,
/// no divergence of their own).
const PURE_MATH: &[&str] = &[
    "min", "max", "fminf", "fmaxf", "fmin", "fmax", "abs", "fabsf", "fabs", "umin", "umax",
];

/// Whether `e` computes a register value without memory access, calls
/// (other than [`PURE_MATH`]) or side effects on memory.
/// What a select may read besides registers: loads the condition already
/// made (by their text).
struct SelectCx<'a> {
    loads: &'a [String],
}

fn select_expr(f: &Function, sc: &SelectCx<'_>, e: ExprId, depth: u32) -> bool {
    if depth > 24 {
        return false;
    }
    match &f.expr(e).kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Name(_)
        | ExprKind::TemplateParam(_)
        | ExprKind::Builtin(_)
        | ExprKind::SizeOf(_) => true,
        ExprKind::Var(v) => register_var(f, *v),
        ExprKind::Unary(UnOp::Deref | UnOp::AddrOf, _) => false,
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => select_expr(f, sc, *a, depth + 1),
        ExprKind::Binary(_, a, b) => {
            select_expr(f, sc, *a, depth + 1) && select_expr(f, sc, *b, depth + 1)
        }
        ExprKind::Cond(c, a, b) => [c, a, b].iter().all(|x| select_expr(f, sc, **x, depth + 1)),
        ExprKind::Member { base, arrow, .. } => !arrow && select_expr(f, sc, *base, depth + 1),
        ExprKind::Call {
            callee,
            receiver,
            args,
        } => {
            receiver.is_none()
                && PURE_MATH.contains(&callee.as_str())
                && args.iter().all(|a| select_expr(f, sc, *a, depth + 1))
        }
        ExprKind::Index { .. } => sc.loads.contains(&f.expr_text(e)),
        ExprKind::Assign { .. }
        | ExprKind::IncDec { .. }
        | ExprKind::Str
        | ExprKind::Unknown(_) => false,
    }
}

/// (session 16; audits 20261234 #2, 20261235 #1, 20261237 #5: hybridsort's
/// merge step `if (a) { if (b) { … x = y; } else { … } } else { if (b) { …
/// } else break; }`) Whether the `if` at `s` only moves values between
/// registers (nested `if`s on register conditions, assignments of register
/// values to register locals) or leaves the innermost loop (`break`), with
/// at least one `break`: the moves are selects, and the exit is what
/// splits the warp.
pub fn registers_or_exit(f: &Function, s: StmtId) -> bool {
    fn walk(f: &Function, sc: &SelectCx<'_>, s: StmtId, exits: &mut bool) -> bool {
        match &f.stmt(s).kind {
            StmtKind::Block(v) => v.iter().all(|x| walk(f, sc, *x, exits)),
            StmtKind::Break => {
                *exits = true;
                true
            }
            StmtKind::Expr(e) => match &f.expr(*e).kind {
                ExprKind::Assign { lhs, rhs, .. } => {
                    matches!(f.expr(*lhs).kind, ExprKind::Var(v) if register_var(f, v))
                        && select_expr(f, sc, *rhs, 0)
                }
                ExprKind::IncDec { target, .. } => {
                    matches!(f.expr(*target).kind, ExprKind::Var(v) if register_var(f, v))
                }
                _ => false,
            },
            StmtKind::If { cond, then, els } => {
                select_expr(f, sc, *cond, 0)
                    && walk(f, sc, *then, exits)
                    && els.is_none_or(|e| walk(f, sc, e, exits))
            }
            _ => false,
        }
    }
    let sc = SelectCx { loads: &[] };
    let mut exits = false;
    matches!(f.stmt(s).kind, StmtKind::If { .. }) && walk(f, &sc, s, &mut exits) && exits
}

/// A local scalar held in registers (not `__shared__`, not a reference, not
/// an array).
fn register_var(f: &Function, v: crate::ir::VarId) -> bool {
    let var = f.var(v);
    var.space.is_none() && !var.by_ref
}

/// Whether statement `s` is at most `budget` assignments of register values
/// to local scalars (or declarations of them): if-converted into selects.
fn select_stmt(f: &Function, sc: &SelectCx<'_>, s: StmtId, budget: &mut usize) -> bool {
    match &f.stmt(s).kind {
        StmtKind::Block(v) => v.iter().all(|x| select_stmt(f, sc, *x, budget)),
        StmtKind::Decl { var, init } => {
            *budget = budget.saturating_sub(1);
            *budget > 0 && register_var(f, *var) && init.is_none_or(|e| select_expr(f, sc, e, 0))
        }
        StmtKind::Expr(e) => {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            match &f.expr(*e).kind {
                ExprKind::Assign { lhs, rhs, .. } => {
                    matches!(f.expr(*lhs).kind, ExprKind::Var(v) if register_var(f, v))
                        && select_expr(f, sc, *rhs, 0)
                }
                ExprKind::IncDec { target, .. } => {
                    matches!(f.expr(*target).kind, ExprKind::Var(v) if register_var(f, v))
                }
                _ => false,
            }
        }
        // A nested select: `if (c) { if (d) x = y; }`.
        StmtKind::If { cond, then, els } => {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            select_expr(f, sc, *cond, 0)
                && select_stmt(f, sc, *then, budget)
                && els.is_none_or(|e| select_stmt(f, sc, e, budget))
        }
        _ => false,
    }
}

/// For a branch side that is at most three register assignments followed
/// by exactly one plain store `lhs = v;` to memory, whose index is a
/// register value and whose value is a register value or one load at a
/// register index: the text of `lhs`.
fn one_store_side(f: &Function, sc: &SelectCx<'_>, s: StmtId) -> Option<String> {
    let items: Vec<StmtId> = match &f.stmt(s).kind {
        StmtKind::Block(v) => v.clone(),
        _ => vec![s],
    };
    let (last, before) = items.split_last()?;
    let mut budget = 4usize;
    if !before.iter().all(|x| select_stmt(f, sc, *x, &mut budget)) {
        return None;
    }
    let StmtKind::Expr(e) = &f.stmt(*last).kind else {
        return None;
    };
    let ExprKind::Assign { op: None, lhs, rhs } = &f.expr(*e).kind else {
        return None;
    };
    if !register_indexed(f, sc, *lhs) {
        return None;
    }
    let value_ok = select_expr(f, sc, *rhs, 0) || register_indexed(f, sc, f.strip_casts(*rhs));
    value_ok.then(|| f.expr_text(*lhs))
}

/// Whether `e` is an element `a[i]…[j]` whose subscripts are register
/// values (the array expression itself makes no call or assignment).
fn register_indexed(f: &Function, sc: &SelectCx<'_>, e: ExprId) -> bool {
    let ExprKind::Index { .. } = &f.expr(e).kind else {
        return false;
    };
    let mut at = e;
    for _ in 0..8 {
        match &f.expr(at).kind {
            ExprKind::Index { base, index } => {
                if !select_expr(f, sc, *index, 0) {
                    return false;
                }
                at = *base;
            }
            ExprKind::Member { base, .. } => at = *base,
            ExprKind::Var(_) | ExprKind::Name(_) => return true,
            _ => return false,
        }
    }
    false
}

/// The value of a branch side that is exactly one `return e;`.
fn single_return(f: &Function, s: StmtId) -> Option<ExprId> {
    match &f.stmt(s).kind {
        StmtKind::Block(v) if v.len() == 1 => single_return(f, v[0]),
        StmtKind::Return(e) => *e,
        _ => None,
    }
}

/// Whether the `if` at `s` is an `if`/`else if` chain whose every side is
/// one `return` of a register value, with the value of the fall-through
/// (no final `else`) the `return` that follows the chain: each lane returns
/// one of the values, which the compiler selects without a divergent path.
fn return_chain(f: &Function, sc: &SelectCx<'_>, s: StmtId, depth: u32) -> bool {
    if depth > 8 {
        return false;
    }
    let StmtKind::If { cond, then, els } = &f.stmt(s).kind else {
        return false;
    };
    if depth > 0 && !select_expr(f, sc, *cond, 0) {
        return false;
    }
    if !single_return(f, *then).is_some_and(|e| select_expr(f, sc, e, 0)) {
        return false;
    }
    match els {
        Some(e) => {
            let e = unwrap_block(f, *e);
            if matches!(f.stmt(e).kind, StmtKind::If { .. }) {
                return_chain(f, sc, e, depth + 1)
            } else {
                single_return(f, e).is_some_and(|x| select_expr(f, sc, x, 0))
            }
        }
        None => continuation(f, s, 0)
            .and_then(|n| single_return(f, n))
            .is_some_and(|x| select_expr(f, sc, x, 0)),
    }
}

/// `s` itself, or the one statement of the block `s`.
fn unwrap_block(f: &Function, s: StmtId) -> StmtId {
    match &f.stmt(s).kind {
        StmtKind::Block(v) if v.len() == 1 => v[0],
        _ => s,
    }
}

/// The statement that runs after `s` when `s` completes normally, when it
/// is the next one of an enclosing block (through `if`/`else` sides).
fn continuation(f: &Function, s: StmtId, depth: u32) -> Option<StmtId> {
    if depth > 8 {
        return None;
    }
    for (i, st) in f.stmts.iter().enumerate() {
        let p = StmtId(i as u32);
        match &st.kind {
            StmtKind::Block(v) => {
                if let Some(k) = v.iter().position(|x| *x == s) {
                    return match v.get(k + 1) {
                        Some(n) => Some(*n),
                        None => continuation(f, p, depth + 1),
                    };
                }
            }
            StmtKind::If { then, els, .. } if *then == s || *els == Some(s) => {
                return continuation(f, p, depth + 1);
            }
            _ => {}
        }
    }
    None
}

/// `threadIdx.x == k` (or `k == threadIdx.x`) in blocks narrower than a
/// warp, holding for one thread per row; `g.thread_rank() == k` for a
/// group `g` of fewer than 32 threads, one per tile; `&&` with anything.
fn group_leader(f: &Function, cx: &AffineCx<'_>, launch: &LaunchDims, c: ExprId) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd, a, b) => {
            group_leader(f, cx, launch, *a) || group_leader(f, cx, launch, *b)
        }
        ExprKind::Binary(BinOp::Eq, a, b) => {
            let (x, y) = (cx.form(*a), cx.form(*b));
            let (t, e) = if y.is_invariant() && !x.is_invariant() {
                (x, *a)
            } else if x.is_invariant() && !y.is_invariant() {
                (y, *b)
            } else {
                return false;
            };
            let narrow = launch.block[0].is_some_and(|bx| bx < 32);
            let x_only = matches!(t.coef[0], Coef::Int(1) | Coef::Int(-1))
                && t.coef[1].is_zero()
                && t.coef[2].is_zero();
            let tile_rank = super::coop::group_call(f, e).is_some_and(|(m, g)| {
                m == "thread_rank" && super::coop::group_size(f, g).is_some_and(|n| n < 32)
            });
            (narrow && x_only) || tile_rank
        }
        _ => false,
    }
}

/// The callee of a branch side that is exactly one call statement.
fn single_call(f: &Function, s: StmtId) -> Option<String> {
    match &f.stmt(s).kind {
        StmtKind::Block(v) if v.len() == 1 => single_call(f, v[0]),
        StmtKind::Expr(e) => match &f.expr(*e).kind {
            ExprKind::Call { callee, .. } => Some(callee.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// For a condition built from threshold tests on a monotone thread index
/// (and uniform / warp-uniform parts), combined by `&&`/`||`/`!`: the scope
/// within which each test splits at most one warp, and the number of tests.
fn threshold_tests(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    c: ExprId,
    depth: u32,
) -> Option<(&'static str, u32)> {
    if u.is_uniform(c.0) || warp_uniform(f, u, c, launch) {
        return Some(("block", 0));
    }
    if depth > 8 {
        return None;
    }
    match &f.expr(c).kind {
        // (audit 20261203 #4, pathfinder `isValid`) A local flag set once
        // from such tests.
        ExprKind::Var(v) => {
            let d = super::barriers::single_def(f, v.0)?;
            threshold_tests(f, u, cx, launch, d, depth + 1)
        }
        ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, a, b) => {
            let (sa, na) = threshold_tests(f, u, cx, launch, *a, depth + 1)?;
            let (sb, nb) = threshold_tests(f, u, cx, launch, *b, depth + 1)?;
            // Report the coarser guarantee when the two scopes differ.
            let scope = match (na, nb) {
                (0, _) => sb,
                (_, 0) => sa,
                _ if sa == sb => sa,
                // A whole-grid run is also one run per block.
                _ if sa == "grid" && sb == "block" => sb,
                _ if sb == "grid" && sa == "block" => sa,
                _ => return None,
            };
            Some((scope, na + nb))
        }
        ExprKind::Unary(UnOp::Not, a) => threshold_tests(f, u, cx, launch, *a, depth + 1),
        ExprKind::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            a,
            b,
        ) => {
            let (x, y) = (monotone_form(f, cx, *a, 0), monotone_form(f, cx, *b, 0));
            let y_invariant = y.is_invariant();
            let t = if y.is_invariant() && !x.is_invariant() {
                x
            } else if x.is_invariant() && !y.is_invariant() {
                y
            } else {
                return None;
            };
            // `==`/`!=` select a run with two ends, each can split a warp.
            let ends = if matches!(op, BinOp::Eq | BinOp::Ne) {
                2
            } else {
                1
            };
            // (session 16; audit 20261230 #54, llm.c's `idx < N` with `idx =
            // (blockIdx.x * blockDim.x + threadIdx.x) * x128::size`) A global
            // index of a 1-D grid against a bound the same in every block
            // selects one contiguous run of the whole grid's threads.
            let (side, bound) = if y_invariant { (*a, *b) } else { (*b, *a) };
            let scope = monotone_scope(&t, launch)?;
            let grid = scope == "block"
                && launch.grid[1] == Some(1)
                && launch.grid[2] == Some(1)
                && !super::barriers::depends_on_block(f, bound, 0)
                && !loop_varying(f, bound, 0)
                && grid_linear(f, u, side, launch, 0);
            Some((if grid { "grid" } else { scope }, ends))
        }
        _ => None,
    }
}

/// (session 16) Whether `e` is a multiple of the global thread index of a
/// 1-D launch plus a grid-wide constant: `blockIdx.x * blockDim.x +
/// threadIdx.x` (either order), scaled by or offset by thread-invariant
/// values that no block index enters (`(…) * x128::size`, `… + base`),
/// through locals with one definition.
fn grid_linear(f: &Function, u: &Uniformity, e: ExprId, launch: &LaunchDims, depth: u32) -> bool {
    if depth > 8 {
        return false;
    }
    let e = f.strip_casts(e);
    let uniform = |x: ExprId| u.is_uniform(x.0) && !super::barriers::depends_on_block(f, x, 0);
    let is = |x: ExprId, b: Builtin| matches!(f.expr(f.strip_casts(x)).kind, ExprKind::Builtin(ref k) if *k == b);
    let block_part = |x: ExprId| match &f.expr(f.strip_casts(x)).kind {
        ExprKind::Binary(BinOp::Mul, p, q) => {
            let width = |w: ExprId| {
                is(w, Builtin::BlockDim(crate::ir::Dim::X))
                    || launch.block[0]
                        .is_some_and(|bx| super::barriers::const_value(f, w) == Some(i64::from(bx)))
            };
            (is(*p, Builtin::BlockIdx(crate::ir::Dim::X)) && width(*q))
                || (is(*q, Builtin::BlockIdx(crate::ir::Dim::X)) && width(*p))
        }
        _ => false,
    };
    match &f.expr(e).kind {
        // An integer local with one definition (a float `x * step` is not
        // an index).
        ExprKind::Var(v) => {
            matches!(&f.var(*v).ty, crate::ir::Type::Scalar(t) if t.is_integral())
                && super::barriers::single_def(f, v.0)
                    .is_some_and(|d| grid_linear(f, u, d, launch, depth + 1))
        }
        ExprKind::Binary(BinOp::Add, p, q) => {
            (block_part(*p) && is(*q, Builtin::ThreadIdx(crate::ir::Dim::X)))
                || (block_part(*q) && is(*p, Builtin::ThreadIdx(crate::ir::Dim::X)))
                || (uniform(*q) && grid_linear(f, u, *p, launch, depth + 1))
                || (uniform(*p) && grid_linear(f, u, *q, launch, depth + 1))
        }
        ExprKind::Binary(BinOp::Sub, p, q) => {
            uniform(*q) && grid_linear(f, u, *p, launch, depth + 1)
        }
        ExprKind::Binary(BinOp::Mul, p, q) => {
            (uniform(*q) && grid_linear(f, u, *p, launch, depth + 1))
                || (uniform(*p) && grid_linear(f, u, *q, launch, depth + 1))
        }
        ExprKind::Binary(BinOp::Shl, p, q) => {
            uniform(*q) && grid_linear(f, u, *p, launch, depth + 1)
        }
        _ => false,
    }
}

/// For a thread-dependent affine form: whether it is monotone in the linear
/// thread index (`x + bx·y + bx·by·z`) within some scope, and that scope.
fn monotone_scope(t: &super::affine::Affine, launch: &LaunchDims) -> Option<&'static str> {
    if t.coef.iter().any(|c| matches!(c, Coef::Unknown)) {
        return None;
    }
    let used = [
        !t.coef[0].is_zero(),
        !t.coef[1].is_zero(),
        !t.coef[2].is_zero(),
    ];
    let [bx, by, bz] = launch.block;
    match used {
        // Only x: warps must be runs of one row.
        [true, false, false] => {
            if by == Some(1) && bz == Some(1) {
                Some("block")
            } else if bx.is_some_and(|x| x % 32 == 0) {
                Some("row of the block")
            } else {
                None
            }
        }
        // Only y: monotone in the linear index within each z-slice.
        [false, true, false] => Some(if bz == Some(1) {
            "block"
        } else {
            "z-slice of the block"
        }),
        [false, false, true] => Some("block"),
        // x and y with the y coefficient bx times the x one: linear.
        [true, true, false] => match (&t.coef[0], &t.coef[1], bx) {
            (Coef::Int(a), Coef::Int(b), Some(bx)) if *b == a * i64::from(bx) => {
                Some(if bz == Some(1) {
                    "block"
                } else {
                    "z-slice of the block"
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// The [`Work`] of the divergent part of the branch at `stmt` with condition
/// `cond`: the sides of an `if` (both), the cases of a `switch`, the arms
/// of a `?:`/`&&`/`||`; a loop's condition makes it unbounded.
pub fn divergent_work(
    f: &Function,
    loops: &LoopFacts,
    stmt: StmtId,
    cond: ExprId,
    in_expression: bool,
    callees: Option<&super::Callees>,
) -> Work {
    let mut w = part_cx(f, loops, cond, callees);
    if in_expression {
        for e in &f.exprs {
            match &e.kind {
                ExprKind::Cond(k, a, b) if *k == cond => {
                    w.expr(*a);
                    w.expr(*b);
                }
                ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, k, b) if *k == cond => w.expr(*b),
                _ => {}
            }
        }
        return w.work;
    }
    match &f.stmt(stmt).kind {
        StmtKind::If { then, els, .. } => {
            // A `return` leaves the function: cheap when nothing runs after
            // the branch anyway (every side returns, or the branch ends the
            // function), else the returned lanes idle through the rest.
            w.returns_ok = (ends_in_return(f, *then) && els.is_some_and(|e| ends_in_return(f, e)))
                || ends_function(f, stmt);
            w.stmt(*then);
            if let Some(e) = els {
                w.stmt(*e);
            }
        }
        StmtKind::Switch { body, .. } => {
            w.switches = 1;
            w.stmt(*body);
        }
        _ => w.work.unbounded = true,
    }
    w.work
}

/// A [`WorkCx`] for the divergent part of a branch on `cond`: values the
/// condition loaded (by text) are reused by the sides, not counted again.
fn part_cx<'a>(
    f: &'a Function,
    loops: &'a LoopFacts,
    cond: ExprId,
    callees: Option<&'a super::Callees>,
) -> WorkCx<'a> {
    let mut reused = std::collections::BTreeSet::new();
    let mut stack = vec![cond];
    while let Some(e) = stack.pop() {
        if is_memory(f, e) {
            reused.insert(f.expr_text(e));
        }
        stack.extend(f.child_exprs(e));
    }
    WorkCx {
        f,
        loops,
        unrolled: Vec::new(),
        reused,
        work: Work::default(),
        returns_ok: false,
        switches: 0,
        callees,
        whole: false,
    }
}

/// (issue 8, session 14; audit 20261217 #5, cfd's `if (nb >= 0) … else if
/// (nb == -1) … else …`) The [`Work`] of the shorter side of the `if`/`else`
/// at `stmt`, when both sides are bounded and the shorter does at most half
/// the longer's work (operations, memory accesses counted again): a warp
/// split between them runs the longer side for its lanes that take it
/// anyway, and the split adds the shorter one.
fn shorter_side(
    f: &Function,
    loops: &LoopFacts,
    stmt: StmtId,
    cond: ExprId,
    callees: &super::Callees,
) -> Option<(Work, Work)> {
    let StmtKind::If {
        then,
        els: Some(els),
        ..
    } = &f.stmt(stmt).kind
    else {
        return None;
    };
    let returns_ok =
        (ends_in_return(f, *then) && ends_in_return(f, *els)) || ends_function(f, stmt);
    let side = |s: StmtId| {
        let mut w = part_cx(f, loops, cond, Some(callees));
        w.returns_ok = returns_ok;
        w.stmt(s);
        w.work
    };
    let (a, b) = (side(*then), side(*els));
    if a.unbounded || b.unbounded {
        return None;
    }
    let size = |w: &Work| w.ops + w.memory;
    let (short, long) = if size(&a) <= size(&b) { (a, b) } else { (b, a) };
    (2 * size(&short) <= size(&long)).then_some((short, long))
}

/// (issue 8, session 11) The [`Work`] of one run of statement `s` (a loop's
/// body: one iteration), counted as [`divergent_work`] counts a divergent
/// part: inner loops make it unbounded.
pub fn stmt_work(
    f: &Function,
    loops: &LoopFacts,
    s: StmtId,
    callees: Option<&super::Callees>,
) -> Work {
    let mut w = WorkCx {
        f,
        loops,
        unrolled: Vec::new(),
        reused: std::collections::BTreeSet::new(),
        work: Work::default(),
        returns_ok: false,
        switches: 0,
        callees,
        whole: true,
    };
    w.stmt(s);
    w.work
}

struct WorkCx<'a> {
    f: &'a Function,
    loops: &'a LoopFacts,
    /// Guard variables of the enclosing loops counted as unrolled.
    unrolled: Vec<crate::ir::VarId>,
    reused: std::collections::BTreeSet<String>,
    work: Work,
    returns_ok: bool,
    /// `switch` statements inside the part enclosing the current statement
    /// (a `break` there stays inside).
    switches: u32,
    /// (session 7) Summaries of the device functions called: a call of one
    /// whose body is straight-line code counts its operations.
    callees: Option<&'a super::Callees>,
    /// Counting a whole statement ([`stmt_work`]), not a divergent part:
    /// barriers and jumps are one instruction each.
    whole: bool,
}

impl WorkCx<'_> {
    fn op(&mut self) {
        self.work.ops = self.work.ops.saturating_add(1);
    }

    fn access(&mut self) {
        self.op();
        self.work.memory = self.work.memory.saturating_add(1);
    }

    fn stmt(&mut self, s: StmtId) {
        if self.work.unbounded {
            return;
        }
        let f = self.f;
        match &f.stmt(s).kind {
            StmtKind::Block(v) => {
                for x in v {
                    self.stmt(*x);
                }
            }
            StmtKind::Decl { init, .. } => {
                if let Some(e) = init {
                    self.value_into_register(*e);
                }
            }
            StmtKind::Expr(e) => self.expr(*e),
            StmtKind::If { cond, then, els } => {
                // Its comparison sets the predicate the sides run under.
                self.expr(*cond);
                self.stmt(*then);
                if let Some(e) = els {
                    self.stmt(*e);
                }
            }
            StmtKind::PreprocAlt { then, els, .. } => {
                // One of the two runs, the same for every thread: the larger.
                let before = self.work;
                self.stmt(*then);
                let a = self.work;
                self.work = before;
                if let Some(e) = els {
                    self.stmt(*e);
                }
                if a.ops > self.work.ops {
                    self.work = Work {
                        unbounded: a.unbounded || self.work.unbounded,
                        ..a
                    };
                }
            }
            StmtKind::Switch { cond, body } => {
                self.expr(*cond);
                self.op();
                self.switches += 1;
                self.stmt(*body);
                self.switches -= 1;
            }
            StmtKind::Case(_) => {}
            StmtKind::Break if self.switches > 0 => self.op(),
            StmtKind::Return(e) if self.returns_ok => {
                if let Some(e) = e {
                    self.expr(*e);
                }
                self.op();
            }
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::DoWhile { body, .. }
                if unrolled_trips(self.loops, s).is_some() =>
            {
                // (session 6, audit #25) A small constant trip count:
                // straight-line code once unrolled, the body that many
                // times (the counter and its test fold away).
                let Some((n, v)) = unrolled_trips(self.loops, s) else {
                    return;
                };
                let outer = self.work;
                self.work = Work::default();
                self.unrolled.push(v);
                self.stmt(*body);
                self.unrolled.pop();
                let once = self.work;
                self.work = Work {
                    ops: outer.ops.saturating_add(once.ops.saturating_mul(n)),
                    memory: outer.memory.saturating_add(once.memory.saturating_mul(n)),
                    calls: outer.calls.saturating_add(once.calls.saturating_mul(n)),
                    unbounded: outer.unbounded || once.unbounded,
                };
            }
            StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(None)
            | StmtKind::Barrier(_)
                if self.whole =>
            {
                self.op()
            }
            StmtKind::For { .. }
            | StmtKind::While { .. }
            | StmtKind::DoWhile { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(_)
            | StmtKind::Barrier(_)
            | StmtKind::Opaque(_) => self.work.unbounded = true,
        }
    }

    /// A value computed into a register: anything but a plain copy ends in
    /// the instruction that computes it; a copy of a name or constant is a
    /// register move, which the compiler renames or predicates away
    /// (session 6, audit #28): it counts nothing.
    fn value_into_register(&mut self, e: ExprId) {
        self.expr(e);
    }

    /// Whether `e` is an element of a thread-local array at indices that are
    /// constant once the enclosing counted loops are unrolled: a register.
    fn register_element(&self, e: ExprId) -> bool {
        let f = self.f;
        f.accesses.iter().any(|a| {
            a.expr == e
                && a.space == crate::ir::MemSpace::Local
                && a.indices
                    .iter()
                    .all(|i| static_index(f, *i, &self.unrolled))
        })
    }

    /// The target of an assignment or `++`/`--`: a store for memory (with
    /// a load first when `rmw` and the condition did not load it), nothing
    /// for a register.
    fn lvalue(&mut self, e: ExprId, rmw: bool) {
        let f = self.f;
        if is_memory(f, e) && !self.register_element(e) {
            if rmw && !self.reused.contains(&f.expr_text(e)) {
                self.access();
            }
            self.access();
            for c in f.child_exprs(e) {
                self.address(c);
            }
        } else {
            for c in f.child_exprs(e) {
                self.address(c);
            }
        }
    }

    /// The parts of an address: subscripts are values; a base that is
    /// itself an element (`a[i].f[j]`) is address arithmetic, not a load.
    fn address(&mut self, e: ExprId) {
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Index { base, index } => {
                self.address(*base);
                self.expr(*index);
            }
            ExprKind::Member {
                base, arrow: false, ..
            } => self.address(*base),
            _ => self.expr(e),
        }
    }

    fn expr(&mut self, e: ExprId) {
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Str
            | ExprKind::Var(_)
            | ExprKind::Name(_)
            | ExprKind::TemplateParam(_)
            | ExprKind::Builtin(_)
            | ExprKind::SizeOf(_) => {}
            ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus | UnOp::AddrOf, a) => {
                if matches!(f.expr(e).kind, ExprKind::Unary(UnOp::AddrOf, _)) {
                    self.address(*a);
                } else {
                    self.expr(*a);
                }
            }
            ExprKind::Index { .. } if self.register_element(e) => {}
            ExprKind::Unary(_, _) | ExprKind::Index { .. } | ExprKind::Member { .. }
                if is_memory(f, e) =>
            {
                if !self.reused.contains(&f.expr_text(e)) {
                    self.access();
                    for c in f.child_exprs(e) {
                        self.address(c);
                    }
                }
            }
            ExprKind::Member { base, .. } => self.expr(*base),
            ExprKind::Index { base, index } => {
                // An element of a register array or an unmodelled base.
                self.op();
                self.address(*base);
                self.expr(*index);
            }
            ExprKind::Unary(_, a) => {
                self.op();
                self.expr(*a);
            }
            ExprKind::Binary(_, a, b) => {
                self.op();
                self.expr(*a);
                self.expr(*b);
            }
            ExprKind::Assign { op, lhs, rhs } => {
                if is_memory(f, *lhs) {
                    self.expr(*rhs);
                    if op.is_some() {
                        self.op();
                    }
                    self.lvalue(*lhs, op.is_some());
                } else {
                    self.lvalue(*lhs, false);
                    if op.is_some() {
                        self.expr(*rhs);
                        self.op();
                    } else {
                        self.value_into_register(*rhs);
                    }
                }
            }
            ExprKind::IncDec { target, .. } => {
                self.op();
                self.lvalue(*target, true);
            }
            ExprKind::Cond(c, a, b) => {
                self.op();
                self.expr(*c);
                self.expr(*a);
                self.expr(*b);
            }
            ExprKind::Call {
                callee,
                receiver,
                args,
            } => {
                self.op();
                let known = (receiver.is_none() && known_short_call(callee))
                    || super::coop::group_call(f, e).is_some_and(|(m, _)| {
                        matches!(
                            m,
                            "thread_rank"
                                | "meta_group_rank"
                                | "meta_group_size"
                                | "size"
                                | "num_threads"
                                | "thread_index"
                                | "group_index"
                                | "dim_threads"
                                | "group_dim"
                                | "ballot"
                                | "any"
                                | "all"
                                | "shfl"
                                | "shfl_up"
                                | "shfl_down"
                                | "shfl_xor"
                        )
                    });
                // (session 7, audit 20261128 #31) A device function whose
                // body is straight-line code: its operations, not a call of
                // unknown work.
                let body = self
                    .callees
                    .and_then(|c| c.get(callee.as_str()))
                    .and_then(|s| Some((s.ops?, s.memory)));
                match body {
                    // (session 15, audit 20261225 #28: bisect's
                    // `atomicExch` on a shared flag) An atomic reads and
                    // writes memory.
                    _ if known && receiver.is_none() && callee.starts_with("atomic") => {
                        self.work.memory = self.work.memory.saturating_add(1);
                    }
                    _ if known => {}
                    Some((n, m)) => {
                        self.work.ops = self.work.ops.saturating_add(n);
                        self.work.memory = self.work.memory.saturating_add(m);
                    }
                    None => self.work.calls = self.work.calls.saturating_add(1),
                }
                if let Some(r) = receiver {
                    self.address(*r);
                }
                for a in args {
                    self.expr(*a);
                }
            }
            // Not modelled (a template or member call the front end keeps
            // as text, a lambda): what it runs is unknown, as for a call.
            ExprKind::Unknown(_) => {
                self.op();
                self.work.calls = self.work.calls.saturating_add(1);
            }
        }
    }
}

/// Calls whose cost is a few instructions, known without their body:
/// [`PURE_MATH`], the CUDA math library's single-precision and
/// double-precision functions, intrinsics (`__popc`, `__shfl_sync`,
/// `__hadd2`, `__fdividef`, `__ldg`), atomics and vector constructors
/// (`make_float2`). Anything else is a function whose body (which may
/// loop) is not seen here.
fn known_short_call(callee: &str) -> bool {
    const MATH: &[&str] = &[
        "expf",
        "exp",
        "exp2f",
        "exp2",
        "exp10f",
        "expm1f",
        "logf",
        "log",
        "log2f",
        "log2",
        "log10f",
        "log10",
        "log1pf",
        "sqrtf",
        "sqrt",
        "rsqrtf",
        "rsqrt",
        "cbrtf",
        "sinf",
        "sin",
        "cosf",
        "cos",
        "tanf",
        "tan",
        "sincosf",
        "asinf",
        "acosf",
        "atanf",
        "atan2f",
        "atan2",
        "sinhf",
        "coshf",
        "tanhf",
        "tanh",
        "powf",
        "pow",
        "fmaf",
        "fma",
        "floorf",
        "floor",
        "ceilf",
        "ceil",
        "truncf",
        "trunc",
        "roundf",
        "round",
        "rintf",
        "lrintf",
        "llrintf",
        "copysignf",
        "fmodf",
        "fmod",
        "erff",
        "erfcf",
        "normf",
        "hypotf",
        "isnan",
        "isinf",
        "isfinite",
        "signbit",
        "saturate",
        "llabs",
        "labs",
        "float2int",
        "int2float",
    ];
    let c = callee.trim_start_matches("::").trim_start_matches("std::");
    PURE_MATH.contains(&c)
        || MATH.contains(&c)
        || c.starts_with("__")
        || c.starts_with("make_")
        || c.strip_prefix("atomic")
            .map(|r| r.trim_end_matches("_block").trim_end_matches("_system"))
            .is_some_and(|op| {
                matches!(
                    op,
                    "Add"
                        | "Sub"
                        | "Exch"
                        | "Min"
                        | "Max"
                        | "Inc"
                        | "Dec"
                        | "CAS"
                        | "And"
                        | "Or"
                        | "Xor"
                )
            })
}

/// Whether `e` reads or writes memory: an element of a pointer or array
/// (the one that is not itself the base of a further subscript), `*p`,
/// `p->f`.
fn is_memory(f: &Function, e: ExprId) -> bool {
    match &f.expr(e).kind {
        ExprKind::Index { .. } => f.accesses.iter().any(|a| a.expr == e) || indexes_non_local(f, e),
        ExprKind::Unary(UnOp::Deref, _) => true,
        ExprKind::Member { arrow: true, .. } => true,
        _ => false,
    }
}

/// (session 15, audits 20261222 #30, 20261225 #25: cdpQuadtree's
/// `set_point`, `m_x[idx] = p.x` on a member of `this`) Whether the
/// subscripts of `e` start from a name that is not a local: a member of the
/// enclosing object or a global array, memory either way (a register array
/// is a local).
fn indexes_non_local(f: &Function, e: ExprId) -> bool {
    let mut x = e;
    for _ in 0..8 {
        match &f.expr(f.strip_casts(x)).kind {
            ExprKind::Index { base, .. } => x = *base,
            ExprKind::Name(_) => return true,
            _ => return false,
        }
    }
    false
}

/// Whether statement `s` ends with a `return` on every path through it.
fn ends_in_return(f: &Function, s: StmtId) -> bool {
    match &f.stmt(s).kind {
        StmtKind::Return(_) => true,
        StmtKind::Block(v) => v.last().is_some_and(|x| ends_in_return(f, *x)),
        StmtKind::If {
            then, els: Some(e), ..
        } => ends_in_return(f, *then) && ends_in_return(f, *e),
        _ => false,
    }
}

/// Whether nothing but (at most) a `return` runs after statement `s`: it
/// is, through enclosing blocks and `if`s, the last statement of the
/// function body, outside every loop and `switch`.
fn ends_function(f: &Function, s: StmtId) -> bool {
    let mut cur = s;
    for _ in 0..64 {
        if Some(cur) == f.body {
            return true;
        }
        let Some((p, _)) = f
            .stmts
            .iter()
            .enumerate()
            .map(|(i, _)| StmtId(i as u32))
            .find_map(|p| f.child_stmts(p).contains(&cur).then_some((p, ())))
        else {
            return false;
        };
        match &f.stmt(p).kind {
            StmtKind::Block(v) => {
                let k = v.iter().position(|x| *x == cur).unwrap_or(0);
                let rest = &v[k + 1..];
                if !rest
                    .iter()
                    .all(|x| matches!(f.stmt(*x).kind, StmtKind::Return(_)))
                {
                    return false;
                }
            }
            StmtKind::If { .. } | StmtKind::PreprocAlt { .. } => {}
            _ => return false,
        }
        cur = p;
    }
    false
}

/// Whether a reported divergent branch `b` already tells the user that the
/// warp runs its whole region with lanes idle, so that divergent branches
/// nested inside it are folded into its finding (audit V4): a statement
/// branch (not `?:`/`&&`/`||`) of kind [`BranchKind::Divergent`] whose
/// shape speaks of any warp ([`Shape::Plain`], [`Shape::EveryWarp`]). A
/// threshold that splits at most one warp per block ([`Shape::OneWarp`])
/// leaves the other warps wholly inside its region, where a nested branch
/// is a divergence of its own.
pub fn folds_nested(b: &BranchFact) -> bool {
    matches!(b.kind, BranchKind::Divergent { .. })
        && !b.in_expression
        && matches!(b.shape, Shape::Plain | Shape::EveryWarp)
}

/// The statements strictly inside statement `s` (its region, without `s`
/// itself): a branch whose statement is among them is nested in `s`'s
/// divergent part.
pub fn region_stmts(f: &Function, s: StmtId) -> std::collections::BTreeSet<u32> {
    let mut inside = std::collections::BTreeSet::new();
    let mut stack = f.child_stmts(s);
    while let Some(x) = stack.pop() {
        if inside.insert(x.0) {
            stack.extend(f.child_stmts(x));
        }
    }
    inside
}

/// The parent of every statement of `f` (by statement index), `None` for
/// the body and for statements outside it.
pub fn stmt_parents(f: &Function) -> Vec<Option<StmtId>> {
    let mut parents = vec![None; f.stmts.len()];
    for p in 0..f.stmts.len() {
        for c in f.child_stmts(StmtId(p as u32)) {
            if let Some(slot) = parents.get_mut(c.0 as usize) {
                *slot = Some(StmtId(p as u32));
            }
        }
    }
    parents
}

/// Whether statement `s` ends in a jump: `Some(true)` for a `return`,
/// `Some(false)` for a `break`.
fn ends_in_jump(f: &Function, s: StmtId) -> Option<bool> {
    match &f.stmt(s).kind {
        StmtKind::Return(_) => Some(true),
        StmtKind::Break => Some(false),
        StmtKind::Block(v) => v.last().and_then(|x| ends_in_jump(f, *x)),
        _ => None,
    }
}

/// For an early exit — a statement `if` without `else` whose taken side
/// ends in a `return`, or in a `break` that leaves a loop (not a
/// `switch`) — the innermost loop it leaves (audit V7): lanes taking it
/// at different iterations make the loop's trip count differ between the
/// lanes of a warp. `parents` is [`stmt_parents`] of `f`.
pub fn loop_exit(f: &Function, parents: &[Option<StmtId>], s: StmtId) -> Option<StmtId> {
    let StmtKind::If {
        then, els: None, ..
    } = &f.stmt(s).kind
    else {
        return None;
    };
    let is_return = ends_in_jump(f, *then)?;
    let mut cur = s;
    for _ in 0..256 {
        let p = parents.get(cur.0 as usize).copied().flatten()?;
        match &f.stmt(p).kind {
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::DoWhile { body, .. }
                if *body == cur =>
            {
                return Some(p);
            }
            StmtKind::Switch { .. } if !is_return => return None,
            _ => {}
        }
        cur = p;
    }
    None
}

/// (issue 8, session 6) How the trip counts of a loop's lanes compare
/// within each warp, from the start's value in every thread of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trips {
    /// Every lane of each warp runs the same number of iterations.
    Uniform,
    /// The lanes of a warp differ by at most one iteration (some warp does
    /// differ): a stride tail.
    Tail,
}

/// `ceil(a / b)` for `b > 0`.
fn ceil_div(a: i64, b: i64) -> i64 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) == 0 { q } else { q + 1 }
}

/// (issue 8, session 6, audit #57) The loop at `s` with condition `cond`:
/// its guard `v OP B` with `v` stepped by a constant `S` towards `B`,
/// starting at a value `T(thread) + U` where `T` is computable in every
/// thread of a fully known block ([`super::lanes::thread_value`]: `2 *
/// threadIdx.y + threadIdx.x / 8`) and `U` is uniform (or absent). A lane
/// runs `ceil((B' − T − U) / S)` iterations counting up (`B' = B` for `<`,
/// `B + 1` for `<=`), which only depends on `T` through `ceil((r − T) / S)`
/// with `r ≡ B' − U (mod S)` when `B' − U` is a constant or a known
/// multiple of `S` plus a constant: the trip counts of each warp's lanes
/// are compared by evaluating that for every thread. `None` when any part
/// is not known.
fn warp_trips(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    cond: ExprId,
) -> Option<Trips> {
    let l = loops.get(s)?;
    if l.cond != Some(cond) {
        return None;
    }
    let g = l.guard.as_ref()?;
    let iv = l.vars.iter().find(|v| v.var == g.var)?;
    let init = iv.init?;
    let step = match iv.step {
        Some(e) => super::loops::launch_const(f, e, launch)?,
        None => 1,
    };
    let up = match (iv.op, g.op) {
        (StepOp::Add, BinOp::Lt | BinOp::Le) => true,
        (StepOp::Sub, BinOp::Gt | BinOp::Ge) => false,
        _ => return None,
    };
    if step <= 0 {
        return None;
    }
    let [Some(bx), Some(by), Some(bz)] = launch.block else {
        return None;
    };
    let (bx, by, bz) = (i64::from(bx), i64::from(by), i64::from(bz));
    let threads = bx * by * bz;
    if threads <= 0 || threads > 4096 {
        return None;
    }
    let coord = |l: i64| [l % bx, (l / bx) % by, l / (bx * by)];
    // The start's thread part `T` and uniform part `U` (an expression).
    let probe = coord(0);
    let (thread_part, uniform_part) =
        if super::lanes::thread_value(f, init, launch, probe).is_some() {
            (init, None)
        } else {
            match &f.expr(init).kind {
                ExprKind::Binary(BinOp::Add, a, b) if cx.form(*b).is_invariant() => (*a, Some(*b)),
                ExprKind::Binary(BinOp::Add, a, b) if cx.form(*a).is_invariant() => (*b, Some(*a)),
                _ => return None,
            }
        };
    // The bound relative to the uniform part, as a residue modulo the step
    // (or exactly when it is a constant).
    let adjust = match (up, g.op) {
        (true, BinOp::Le) => 1,
        (false, BinOp::Ge) => -1,
        _ => 0,
    };
    let r = match (super::loops::launch_const(f, g.bound, launch), uniform_part) {
        (Some(b), None) => b.checked_add(adjust)?,
        _ => {
            let mut d = cx.form(g.bound);
            if let Some(u) = uniform_part {
                d = d.add_form(&cx.form(u).times(-1));
            }
            let multiple_ok = d.rest_multiple == 0 || (d.rest_multiple as i64) % step == 0;
            if !d.is_invariant() || !multiple_ok {
                return None;
            }
            d.offset?.checked_add(adjust)?.rem_euclid(step)
        }
    };
    let ws = 32;
    let mut tail = false;
    for w in 0..(threads + ws - 1) / ws {
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for l in ws * w..(ws * w + ws).min(threads) {
            let t = super::lanes::thread_value(f, thread_part, launch, coord(l))?;
            let k = if up {
                ceil_div(r.checked_sub(t)?, step)
            } else {
                ceil_div(t.checked_sub(r)?, step)
            };
            lo = lo.min(k);
            hi = hi.max(k);
        }
        match hi - lo {
            0 => {}
            1 => tail = true,
            _ => return None,
        }
    }
    Some(if tail { Trips::Tail } else { Trips::Uniform })
}

/// (session 6, audits #31, #51) What the stride loop at `s` strides over,
/// and `(bound, step)` when its starts are `0 .. step` in the lanes (a
/// start `threadIdx.x`, a lane index, `blockIdx.x * blockDim.x +
/// threadIdx.x` with a matching grid step: unit x coefficient, constant part
/// 0) so that a bound that is a multiple of the step leaves no partial
/// iteration.
fn stride_name(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    loops: &LoopFacts,
    s: StmtId,
    grid: bool,
) -> (Stride, Option<(ExprId, ExprId)>) {
    let Some(l) = loops.get(s) else {
        return (if grid { Stride::Grid } else { Stride::Other }, None);
    };
    let iv = l
        .guard
        .as_ref()
        .and_then(|g| l.vars.iter().find(|v| v.var == g.var));
    let (init, step) = match iv {
        Some(iv) => (iv.init, iv.step),
        None => (None, None),
    };
    let block_size = |e: ExprId| {
        expr_mentions(f, e, &|k| {
            matches!(k, ExprKind::Builtin(Builtin::BlockDim(_)))
        }) || super::coop::group_call(f, e).is_some_and(|(m, g)| {
            matches!(m, "size" | "num_threads")
                && super::coop::group_size(f, g).is_none_or(|n| n > 32)
        })
    };
    let warp_step = |e: ExprId| {
        expr_mentions(f, e, &|k| matches!(k, ExprKind::Builtin(Builtin::WarpSize)))
            || super::coop::group_call(f, e).is_some_and(|(m, g)| {
                matches!(m, "size" | "num_threads")
                    && super::coop::group_size(f, g).is_some_and(|n| n <= 32)
            })
    };
    let grid_step = |e: ExprId| {
        expr_mentions(f, e, &|k| {
            matches!(k, ExprKind::Builtin(Builtin::GridDim(_)))
        })
    };
    // A constant step: the block's width (from the launch) is a block
    // stride; 32 over a start `threadIdx.x + u` strides a warp's lanes.
    let step_const = step.and_then(|e| super::loops::launch_const(f, e, launch));
    let x_start = init.is_some_and(|e| {
        let a = cx.form(e);
        a.coef[0] == Coef::Int(1) && a.coef[1].is_zero() && a.coef[2].is_zero()
    });
    let stride = if grid || step.is_some_and(grid_step) {
        Stride::Grid
    } else if step.is_some_and(block_size)
        || (step_const.is_some() && step_const == launch.block[0].map(i64::from))
    {
        Stride::Block
    } else if step.is_some_and(warp_step)
        || init.is_some_and(|e| mentions_lane_index(f, e))
        || (step_const == Some(32) && x_start)
    {
        Stride::Warp
    } else {
        Stride::Other
    };
    let exact_if = match (init, step, &l.guard) {
        (Some(i), Some(st), Some(g)) if matches!(g.op, BinOp::Lt) => {
            let form = cx.form(i);
            let unit = form.coef[0] == Coef::Int(1)
                && form.coef[1].is_zero()
                && form.coef[2].is_zero()
                && form.offset == Some(0)
                && (form.rest_multiple == 0 || stride == Stride::Grid);
            (unit || is_lane_index(f, i, 0)).then_some((g.bound, st))
        }
        _ => None,
    };
    (stride, exact_if)
}

/// Whether `e` is exactly a lane index (values `0 .. 32`): `x % 32`,
/// `x & 31`, `warpSize` as the modulus, a tile of at most 32 threads'
/// `thread_rank()`, through casts and locals with one definition.
fn is_lane_index(f: &Function, e: ExprId, depth: u32) -> bool {
    if depth > 4 {
        return false;
    }
    match &f.expr(e).kind {
        ExprKind::Cast(_, a) => is_lane_index(f, *a, depth + 1),
        ExprKind::Var(v) => match super::coop::var_definitions(f, *v).as_slice() {
            [d] => is_lane_index(f, *d, depth + 1),
            _ => false,
        },
        ExprKind::Binary(BinOp::Rem, _, m) => matches!(
            f.expr(*m).kind,
            ExprKind::Int(32) | ExprKind::Builtin(Builtin::WarpSize)
        ),
        ExprKind::Binary(BinOp::BitAnd, a, b) => {
            matches!(f.expr(*a).kind, ExprKind::Int(31))
                || matches!(f.expr(*b).kind, ExprKind::Int(31))
        }
        ExprKind::Call { .. } => super::coop::group_call(f, e).is_some_and(|(m, g)| {
            m == "thread_rank" && super::coop::group_size(f, g).is_some_and(|n| n <= 32)
        }),
        _ => false,
    }
}

/// (session 6, audit #25) The affine form a threshold test sees in `e`:
/// its own, or for a clamp `max(u, a)` / `min(u, a)` of a value with a
/// known thread form by a uniform `u` (through casts and locals with one
/// definition), the form of `a`: the clamp keeps the value monotone in the
/// thread index, so a threshold on it still selects one contiguous run.
fn monotone_form(f: &Function, cx: &AffineCx<'_>, e: ExprId, depth: u32) -> super::affine::Affine {
    let own = cx.form(e);
    let known = |a: &super::affine::Affine| {
        !a.is_invariant() && a.coef.iter().all(|c| !matches!(c, Coef::Unknown))
    };
    if known(&own) || own.is_invariant() || depth > 4 {
        return own;
    }
    match &f.expr(e).kind {
        ExprKind::Cast(_, a) => monotone_form(f, cx, *a, depth + 1),
        ExprKind::Var(v) => match super::coop::var_definitions(f, *v).as_slice() {
            [d] => monotone_form(f, cx, *d, depth + 1),
            _ => own,
        },
        ExprKind::Call {
            callee,
            receiver: None,
            args,
        } if args.len() == 2
            && matches!(
                callee.trim_start_matches("::").trim_start_matches("std::"),
                "max" | "min" | "umax" | "umin" | "fmaxf" | "fminf" | "fmax" | "fmin"
            ) =>
        {
            let (p, q) = (cx.form(args[0]), cx.form(args[1]));
            let inner = if p.is_invariant() {
                monotone_form(f, cx, args[1], depth + 1)
            } else if q.is_invariant() {
                monotone_form(f, cx, args[0], depth + 1)
            } else {
                return own;
            };
            if known(&inner) { inner } else { own }
        }
        _ => own,
    }
}

/// (session 6, V1) The form a boundary guard compares: `e`'s own, or for a
/// quotient `i / n` or shift `i >> k` by a uniform amount (through casts and
/// locals with one definition) the form of `i`: `i / n < m` holds for a
/// prefix of the values of `i`, as `i < m·n` does.
fn guard_form(f: &Function, cx: &AffineCx<'_>, e: ExprId, depth: u32) -> super::affine::Affine {
    let own = cx.form(e);
    if own.is_invariant() || depth > 4 || own.coef.iter().all(|c| !matches!(c, Coef::Unknown)) {
        return own;
    }
    match &f.expr(e).kind {
        ExprKind::Cast(_, a) => guard_form(f, cx, *a, depth + 1),
        ExprKind::Var(v) => match super::coop::var_definitions(f, *v).as_slice() {
            [d] => guard_form(f, cx, *d, depth + 1),
            _ => own,
        },
        ExprKind::Binary(BinOp::Div | BinOp::Shr, a, b) if cx.form(*b).is_invariant() => {
            let inner = guard_form(f, cx, *a, depth + 1);
            if inner.coef.iter().all(|c| !matches!(c, Coef::Unknown)) {
                inner
            } else {
                own
            }
        }
        _ => own,
    }
}

/// (issue 8, session 6, V5) In a device function every caller calls from at
/// most one lane of each warp (`single_lane`), a branch the analysis found
/// able to split a warp has one active lane to split: single-thread.
pub fn in_single_lane(mut b: BranchFact, single_lane: bool) -> BranchFact {
    if single_lane
        && matches!(
            b.kind,
            BranchKind::Divergent { .. }
                | BranchKind::StrideTail { .. }
                | BranchKind::BoundaryGuard
        )
    {
        b.kind = BranchKind::SingleThread;
        b.shape = Shape::Plain;
        b.work = Work::default();
    }
    b
}

/// (session 6) A condition depending on `threadIdx.z` alone (no data) in a
/// block whose z-slices are whole warps (`blockDim.x · blockDim.y` a
/// multiple of 32, `dim3(4, 8, z)`): the same in every lane of a warp.
fn z_slices_are_warps(u: &Uniformity, c: ExprId, launch: &LaunchDims) -> bool {
    use super::relations::DIM_Z;
    let dims = u.expr_dims.get(c.0 as usize).copied().unwrap_or(0);
    let slice = match launch.block {
        [Some(x), Some(y), _] => u64::from(x) * u64::from(y),
        _ => return false,
    };
    dims == 1 << DIM_Z && slice % 32 == 0
}

/// (session 6) The loop at `s` with condition `cond` runs the same number of
/// iterations in every thread: its guard variable steps by a uniform amount
/// and either starts at a uniform value with a bound that is a static
/// member read through an object (`k < packed.size`, where the function
/// also names `T::size` for the object's type `T`: only a static member can
/// be named so), or runs a uniform distance from its start to its bound
/// (`si = start; si < start + 32; si += 4`).
fn uniform_trip_count(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    loops: &LoopFacts,
    s: StmtId,
    cond: ExprId,
) -> bool {
    let Some(l) = loops.get(s) else {
        return false;
    };
    let Some(g) = l.guard.as_ref() else {
        return false;
    };
    if l.cond != Some(cond) {
        return false;
    }
    let Some(iv) = l.vars.iter().find(|v| v.var == g.var) else {
        return false;
    };
    let Some(init) = iv.init else {
        return false;
    };
    // (audit 20261212 #1, heartwall `for (position = pos_ori; …)`) An
    // assignment in the loop's init: its value.
    let init = match f.expr(init).kind {
        ExprKind::Assign { op: None, rhs, .. } => rhs,
        _ => init,
    };
    if !matches!(iv.op, StepOp::Add | StepOp::Sub) || iv.step.is_some_and(|e| !u.is_uniform(e.0)) {
        return false;
    }
    // The guard must be the whole condition: `v OP bound`.
    let ExprKind::Binary(_, a, b) = &f.expr(cond).kind else {
        return false;
    };
    let is_v =
        |e: ExprId| matches!(f.expr(loops::strip(f, e)).kind, ExprKind::Var(x) if x == g.var);
    let is_bound = |e: ExprId| loops::strip(f, e) == loops::strip(f, g.bound);
    if !(is_v(*a) && is_bound(*b) || is_v(*b) && is_bound(*a)) {
        return false;
    }
    if u.is_uniform(init.0) && static_member(f, g.bound) {
        return true;
    }
    // (session 8) `for (p = start; p < start + n; p++)` with `start` a
    // per-thread local the loop does not change (its bound is loop-
    // invariant) and `n` uniform: every thread runs `n` iterations, even
    // where `start`'s own form is not known (heartwall's per-column sums).
    if let ExprKind::Var(w) = f.expr(loops::strip(f, init)).kind
        && let ExprKind::Binary(BinOp::Add, p, q) = f.expr(loops::strip(f, g.bound)).kind
    {
        let is_w =
            |e: ExprId| matches!(f.expr(loops::strip(f, e)).kind, ExprKind::Var(x) if x == w);
        if (is_w(p) && u.is_uniform(q.0)) || (is_w(q) && u.is_uniform(p.0)) {
            return true;
        }
    }
    let d = cx.form(g.bound).add_form(&cx.form(init).times(-1));
    d.is_invariant()
        && d.offset.is_some()
        && !cx.form(init).is_invariant()
        && cx
            .form(init)
            .coef
            .iter()
            .all(|c| !matches!(c, Coef::Unknown))
}

/// Whether `e` (through casts) reads `obj.field` where the function also
/// names `T::field` (only a static member, the same value for every
/// object, can be named so) and `obj`'s type has no data member `field`.
fn static_member(f: &Function, e: ExprId) -> bool {
    let e = loops::strip(f, e);
    let ExprKind::Member {
        base,
        field,
        arrow: false,
    } = &f.expr(e).kind
    else {
        return false;
    };
    let ExprKind::Var(v) = f.expr(*base).kind else {
        return false;
    };
    // The object's type as the front end sees it may be the template
    // instance behind a typedef (`x128` → `Packed128<float>`), so any
    // `X::field` named in the function counts, unless the type's known
    // layout has a data member of that name.
    match &f.var(v).ty {
        crate::ir::Type::Record { fields, .. } => {
            if fields.iter().any(|(n, _, _)| n == field) {
                return false;
            }
        }
        crate::ir::Type::Named(_) | crate::ir::Type::TemplateParam(_) => {}
        _ => return false,
    }
    let suffix = format!("::{field}");
    f.exprs.iter().any(
        |x| matches!(&x.kind, ExprKind::Name(n) if n.ends_with(&suffix) && n.len() > suffix.len()),
    )
}

/// (issue 8, session 7, audit 20261128 #31) The operations of a device
/// function's whole body, counted as a divergent part's ([`Work`]), when it
/// is straight-line code: no loop (beyond none), barrier or call whose work
/// is unknown (`callees` gives the callees' own estimates). A `return`
/// ends the body here. `None` otherwise.
pub fn body_ops(f: &Function, callees: &super::Callees) -> Option<(u32, u32)> {
    let body = f.body?;
    let loops = LoopFacts::default();
    let mut w = WorkCx {
        f,
        loops: &loops,
        unrolled: Vec::new(),
        reused: std::collections::BTreeSet::new(),
        work: Work::default(),
        returns_ok: true,
        switches: 0,
        callees: Some(callees),
        whole: false,
    };
    w.stmt(body);
    (!w.work.unbounded && w.work.calls == 0).then_some((w.work.ops, w.work.memory))
}

/// (session 7, audit 20261128 #33) Whether the integer or boolean value `e`
/// is the same in every lane of each warp, from the launch's known block
/// width: `threadIdx.y` (and `.z`) when `blockDim.x` is a multiple of 32
/// (each warp lies in one row), and a quotient `(a + threadIdx.x) / k` or
/// shift `>> s` of the lane's position by a multiple of 32 (`warpSize`,
/// `32`, `64`, `>> 5`) when `a` is a multiple of 32: a warp index. Sums,
/// products and comparisons of such values and uniform ones are too.
fn warp_uniform_value(
    f: &Function,
    u: &Uniformity,
    launch: &LaunchDims,
    e: ExprId,
    depth: u32,
) -> bool {
    if u.is_uniform(e.0) {
        return true;
    }
    let [bx, by, _] = launch.block;
    let rows = bx.is_some_and(|x| x > 0 && x % 32 == 0);
    if depth > 12 {
        return false;
    }
    let rec = |x: ExprId| warp_uniform_value(f, u, launch, x, depth + 1);
    match &f.expr(e).kind {
        ExprKind::Builtin(Builtin::ThreadIdx(Dim::Y | Dim::Z)) if rows => {
            // A z-slice holds blockDim.x · blockDim.y threads, a multiple
            // of 32 as soon as each row is.
            let _ = by;
            true
        }
        ExprKind::Call { .. } => warp_collective_result(f, u, launch, e, depth),
        ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus | UnOp::Neg | UnOp::Not, a) => rec(*a),
        ExprKind::Var(v) => match one_def(f, u, *v, e) {
            Some(d) => rec(d),
            None => every_def(f, u, *v, e, depth).is_some_and(|defs| defs.into_iter().all(rec)),
        },
        ExprKind::Binary(BinOp::Div, a, k)
            if rows
                && super::barriers::const_value(f, *k).is_some_and(|k| k > 0 && k % 32 == 0)
                && lane_plus_aligned(f, u, launch, *a, depth + 1) =>
        {
            true
        }
        ExprKind::Binary(BinOp::Shr, a, k)
            if rows
                && super::barriers::const_value(f, *k).is_some_and(|k| (5..63).contains(&k))
                && lane_plus_aligned(f, u, launch, *a, depth + 1) =>
        {
            true
        }
        ExprKind::Binary(
            BinOp::Add
            | BinOp::Sub
            | BinOp::Mul
            | BinOp::Div
            | BinOp::Rem
            | BinOp::Shl
            | BinOp::Shr
            | BinOp::BitAnd
            | BinOp::BitOr
            | BinOp::BitXor
            | BinOp::Lt
            | BinOp::Le
            | BinOp::Gt
            | BinOp::Ge
            | BinOp::Eq
            | BinOp::Ne
            | BinOp::LogAnd
            | BinOp::LogOr,
            a,
            b,
        ) => rec(*a) && rec(*b),
        _ => false,
    }
}

/// (session 7, scout audit 20261130) Whether call `e` returns the same
/// value in every lane of a warp, whatever the lanes pass: the warp votes
/// (`__any_sync`, `__all_sync`, `__ballot_sync` and their legacy forms,
/// cooperative groups' `any`/`all`/`ballot` on a tile of 32, or of a
/// multiple of 32 lanes), the warp reductions (`__reduce_*_sync`), a
/// broadcast `__shfl_sync(mask, v, lane)` from a warp-uniform lane with the
/// full width, and the SM clock (`clock()`, `clock64()`: one instruction
/// reads it for the whole warp).
fn warp_collective_result(
    f: &Function,
    u: &Uniformity,
    launch: &LaunchDims,
    e: ExprId,
    depth: u32,
) -> bool {
    let ExprKind::Call {
        callee,
        receiver,
        args,
    } = &f.expr(e).kind
    else {
        return false;
    };
    // A cast to a typedef name (`(clock_t)(a - b)`) reaches the IR as a
    // call of `(clock_t)`.
    if receiver.is_none() && callee.starts_with('(') && callee.ends_with(')') && args.len() == 1 {
        return warp_uniform_value(f, u, launch, args[0], depth + 1);
    }
    let base = callee.rsplit("::").next().unwrap_or(callee);
    if receiver.is_none() {
        match base {
            "clock" | "clock64" | "__any_sync" | "__all_sync" | "__ballot_sync" | "__any"
            | "__all" | "__ballot" => return true,
            _ if base.starts_with("__reduce_") && base.ends_with("_sync") => return true,
            "__shfl_sync" if args.len() == 3 => {
                return warp_uniform_value(f, u, launch, args[2], depth + 1);
            }
            _ => {}
        }
    }
    match super::coop::group_call(f, e) {
        Some(("any" | "all" | "ballot", g)) if receiver.is_some() => {
            super::coop::group_size(f, g).is_some_and(|n| n > 0 && n % 32 == 0)
        }
        _ => false,
    }
}

/// Every definition of local `v` read at `use_`, when it has several (at
/// most four, looked through at shallow depth): a value assigned in a
/// loop and before it. None when a write the front end does not see as
/// an assignment may reach the use (its thread dependence is more than
/// the definitions' together).
fn every_def(
    f: &Function,
    u: &Uniformity,
    v: crate::ir::VarId,
    use_: ExprId,
    depth: u32,
) -> Option<Vec<ExprId>> {
    if depth > 6 || f.vars.get(v.0 as usize)?.param_position.is_some() {
        return None;
    }
    let defs = super::coop::var_definitions(f, v);
    if defs.is_empty() || defs.len() > 4 {
        return None;
    }
    let dims = |x: ExprId| u.expr_dims.get(x.0 as usize).copied().unwrap_or(0);
    let joined = defs.iter().fold(0u8, |a, d| a | dims(*d));
    (dims(use_) & !joined == 0).then_some(defs)
}

/// The one definition of local `v` read at `use_`, when `v` has one
/// ([`super::coop::var_definitions`]) and the use depends on the same
/// thread dimensions as it: a write the front end does not see as an
/// assignment (a call taking `v` by reference) makes them differ.
fn one_def(f: &Function, u: &Uniformity, v: crate::ir::VarId, use_: ExprId) -> Option<ExprId> {
    match super::coop::var_definitions(f, v).as_slice() {
        [d] if u.expr_dims.get(use_.0 as usize) == u.expr_dims.get(d.0 as usize) => Some(*d),
        _ => None,
    }
}

/// Whether `e` reads a local that changes while the function runs (a loop
/// counter, a variable assigned more than once or updated in place),
/// following locals with one definition.
fn loop_varying(f: &Function, e: ExprId, depth: u32) -> bool {
    expr_mentions(f, e, &|k| match k {
        ExprKind::Var(v) => {
            f.vars
                .get(v.0 as usize)
                .is_some_and(|x| x.param_position.is_none())
                && match super::coop::var_definitions(f, *v).as_slice() {
                    [d] => depth < 4 && loop_varying(f, *d, depth + 1),
                    _ => true,
                }
        }
        _ => false,
    })
}

/// `threadIdx.x` plus warp-uniform multiples of 32 (`blockIdx.x *
/// blockDim.x` with `blockDim.x` a multiple of 32, `threadIdx.y *
/// blockDim.x`, `64 * w`): the 32 lanes of a warp see 32 consecutive
/// values starting at a multiple of 32. Only called when `blockDim.x` is a
/// known multiple of 32.
fn lane_plus_aligned(
    f: &Function,
    u: &Uniformity,
    launch: &LaunchDims,
    e: ExprId,
    depth: u32,
) -> bool {
    if depth > 12 {
        return false;
    }
    match &f.expr(e).kind {
        ExprKind::Builtin(Builtin::ThreadIdx(Dim::X)) => true,
        ExprKind::Cast(_, a) => lane_plus_aligned(f, u, launch, *a, depth + 1),
        ExprKind::Var(v) => {
            one_def(f, u, *v, e).is_some_and(|d| lane_plus_aligned(f, u, launch, d, depth + 1))
        }
        ExprKind::Binary(BinOp::Add, a, b) => {
            (lane_plus_aligned(f, u, launch, *a, depth + 1)
                && aligned32(f, u, launch, *b, depth + 1))
                || (aligned32(f, u, launch, *a, depth + 1)
                    && lane_plus_aligned(f, u, launch, *b, depth + 1))
        }
        _ => false,
    }
}

/// A warp-uniform integer that is a multiple of 32 (see [`lane_plus_aligned`]).
fn aligned32(f: &Function, u: &Uniformity, launch: &LaunchDims, e: ExprId, depth: u32) -> bool {
    if depth > 12 {
        return false;
    }
    if let Some(v) = super::barriers::const_value(f, e) {
        return v % 32 == 0;
    }
    let rec = |x: ExprId| aligned32(f, u, launch, x, depth + 1);
    let uniform = |x: ExprId| warp_uniform_value(f, u, launch, x, depth + 1);
    match &f.expr(e).kind {
        ExprKind::Builtin(Builtin::BlockDim(Dim::X)) => {
            launch.block[0].is_some_and(|x| x > 0 && x % 32 == 0)
        }
        ExprKind::Cast(_, a) => rec(*a),
        ExprKind::Var(v) => one_def(f, u, *v, e).is_some_and(rec),
        ExprKind::Binary(BinOp::Mul, a, b) => (rec(*a) && uniform(*b)) || (uniform(*a) && rec(*b)),
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => rec(*a) && rec(*b),
        ExprKind::Binary(BinOp::Shl, a, k) => {
            super::barriers::const_value(f, *k).is_some_and(|k| (5..63).contains(&k)) && uniform(*a)
        }
        _ => false,
    }
}

/// The value assigned to local `v` by the nearest assignment before the
/// statement `at` in the blocks enclosing it, when that assignment is sure
/// to reach `at`: no enclosing loop lies between them (a later assignment
/// in the loop body could come round), and nothing else writes `v` in
/// between. (session 7, audit #3: `i = (tid + offset) / n; if (i < m)` in
/// a loop, `i` assigned elsewhere too.)
fn local_definition(f: &Function, v: crate::ir::VarId, at: StmtId) -> Option<ExprId> {
    if f.vars
        .get(v.0 as usize)
        .is_none_or(|x| x.param_position.is_some())
    {
        return None;
    }
    let parents = stmt_parents(f);
    let mut cur = at;
    let (def, from) = 'search: loop {
        let p = (*parents.get(cur.0 as usize)?)?;
        match &f.stmt(p).kind {
            StmtKind::Block(children) => {
                let idx = children.iter().position(|c| *c == cur)?;
                for sib in children[..idx].iter().rev() {
                    match &f.stmt(*sib).kind {
                        StmtKind::Expr(e) => {
                            if let ExprKind::Assign {
                                op: None, lhs, rhs, ..
                            } = &f.expr(*e).kind
                                && matches!(f.expr(*lhs).kind, ExprKind::Var(x) if x == v)
                            {
                                break 'search (*rhs, *sib);
                            }
                        }
                        StmtKind::Decl { var, init: Some(e) } if *var == v => {
                            break 'search (*e, *sib);
                        }
                        _ => {}
                    }
                }
            }
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. } => {
                return None;
            }
            _ => {}
        }
        cur = p;
    };
    let start = |s: &crate::ir::Span| (s.line, s.col);
    let (lo, hi) = (start(&f.stmt(from).span), start(&f.stmt(at).span));
    let is_v = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Var(x) if x == v);
    let other_write = f.exprs.iter().any(|e| {
        let here = start(&e.span);
        here > lo
            && here < hi
            && match &e.kind {
                ExprKind::Assign { lhs, .. } => is_v(*lhs),
                ExprKind::IncDec { target, .. } => is_v(*target),
                ExprKind::Unary(UnOp::AddrOf, x) => is_v(*x),
                _ => false,
            }
    });
    (!other_write).then_some(def)
}

/// (session 7) The thread-varying side of a threshold test, as far as the
/// contiguous-run argument needs it: the affine form of the underlying
/// linear index and, when the index is taken modulo a uniform amount
/// (`x % m`, `x & (m - 1)`), that amount.
struct RunIndex {
    form: super::affine::Affine,
    modulus: Option<ExprId>,
    /// (session 16) The value taken modulo [`RunIndex::modulus`] (`x` in
    /// `x % m`).
    base: Option<ExprId>,
    /// A uniform divisor applied before the modulus (`(i / d) % m`): each
    /// group then holds `m·d` threads.
    divisor: Option<ExprId>,
}

impl RunIndex {
    /// Whether the index steps by one in the linear thread index (x only,
    /// with 1-D blocks or rows of whole warps): only then is each group of
    /// `m` consecutive values one group of `m` consecutive threads.
    fn unit_x(&self, launch: &LaunchDims) -> bool {
        matches!(self.form.coef[0], Coef::Int(1) | Coef::Int(-1))
            && self.form.coef[1].is_zero()
            && self.form.coef[2].is_zero()
            && (launch.block[1] == Some(1) && launch.block[2] == Some(1)
                || launch.block[0].is_some_and(|x| x % 32 == 0))
    }
}

struct RunCx<'a> {
    f: &'a Function,
    u: &'a Uniformity,
    cx: &'a AffineCx<'a>,
    launch: &'a LaunchDims,
    /// The statement holding the condition (for local definitions).
    at: StmtId,
    /// Summaries of called device functions (which depend on their
    /// arguments only).
    callees: &'a super::Callees,
    clauses: Vec<String>,
    every_warp: bool,
}

impl RunCx<'_> {
    fn known(a: &super::affine::Affine) -> bool {
        !a.is_invariant() && a.coef.iter().all(|c| !matches!(c, Coef::Unknown))
    }

    /// The [`RunIndex`] of `e`: its own affine form when known; through
    /// casts, locals (one definition, or the one that reaches the test),
    /// quotients and shifts by a uniform amount (monotone), `min`/`max`
    /// clamps by a uniform value, and one modulus or mask by a uniform amount.
    fn index(&self, e: ExprId, depth: u32) -> Option<RunIndex> {
        let (f, cx) = (self.f, self.cx);
        let own = cx.form(e);
        if Self::known(&own) {
            return Some(RunIndex {
                form: own,
                modulus: None,
                base: None,
                divisor: None,
            });
        }
        if own.is_invariant() || depth > 6 {
            return None;
        }
        let invariant = |x: ExprId| cx.form(x).is_invariant() && self.u.is_uniform(x.0);
        match &f.expr(e).kind {
            ExprKind::Cast(_, a) => self.index(*a, depth + 1),
            ExprKind::Var(v) => match super::coop::var_definitions(f, *v).as_slice() {
                [_] => self.index(one_def(f, self.u, *v, e)?, depth + 1),
                _ => self.index(local_definition(f, *v, self.at)?, depth + 1),
            },
            ExprKind::Binary(op @ (BinOp::Div | BinOp::Shr), a, b) if invariant(*b) => {
                let inner = self.index(*a, depth + 1)?;
                // Only a quotient (not a shift) is named as a divisor; one
                // at most, and none after a modulus.
                if inner.modulus.is_some() || inner.divisor.is_some() {
                    return None;
                }
                Some(RunIndex {
                    divisor: (*op == BinOp::Div).then_some(*b),
                    ..inner
                })
            }
            ExprKind::Binary(BinOp::Rem, a, m) if invariant(*m) => {
                let inner = self.index(*a, depth + 1)?;
                inner.modulus.is_none().then_some(RunIndex {
                    modulus: Some(*m),
                    base: Some(*a),
                    ..inner
                })
            }
            ExprKind::Binary(BinOp::BitAnd, a, b) => {
                let mask_of = |x: ExprId| match &f.expr(x).kind {
                    ExprKind::Binary(BinOp::Sub, m, one)
                        if matches!(f.expr(*one).kind, ExprKind::Int(1)) && invariant(*m) =>
                    {
                        Some(*m)
                    }
                    _ => None,
                };
                let (x, m) = match (mask_of(*b), mask_of(*a)) {
                    (Some(m), _) => (*a, m),
                    (None, Some(m)) => (*b, m),
                    _ => return None,
                };
                let inner = self.index(x, depth + 1)?;
                (inner.modulus.is_none() && inner.divisor.is_none()).then_some(RunIndex {
                    modulus: Some(m),
                    base: Some(x),
                    ..inner
                })
            }
            ExprKind::Call {
                callee,
                receiver: None,
                args,
            } if args.len() == 2
                && matches!(
                    callee.trim_start_matches("::").trim_start_matches("std::"),
                    "max" | "min" | "umax" | "umin"
                ) =>
            {
                if invariant(args[0]) {
                    self.index(args[1], depth + 1)
                } else if invariant(args[1]) {
                    self.index(args[0], depth + 1)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Whether `e` is the same in every thread of each aligned group of
    /// `m` (text) consecutive threads: uniform values, a group's base `x -
    /// (x & (m - 1))`, and arithmetic and calls (of functions that read
    /// no thread index themselves) on those.
    ///
    /// (session 16; audit 20261232 #52, attention_forward's `t2 > t` with
    /// `t2 = idx % T`, `t = (idx / T) % T`) Also the quotient `x / m` of
    /// `base`, the value the index takes modulo `m` (`base` a local with
    /// one definition): the group's number.
    fn group_const(&self, e: ExprId, m: &str, base: Option<ExprId>, depth: u32) -> bool {
        let f = self.f;
        if self.u.is_uniform(e.0) {
            return true;
        }
        if depth > 10 {
            return false;
        }
        let rec = |x: ExprId| self.group_const(x, m, base, depth + 1);
        let same_base = |x: ExprId| {
            let (Some(b), ExprKind::Var(w)) = (base, &f.expr(f.strip_casts(x)).kind) else {
                return false;
            };
            matches!(f.expr(f.strip_casts(b)).kind, ExprKind::Var(v) if v == *w)
                && super::coop::var_definitions(f, *w).len() == 1
        };
        let masked = |x: ExprId, y: ExprId| -> bool {
            let y = match &f.expr(y).kind {
                ExprKind::Var(v) => one_def(f, self.u, *v, y).unwrap_or(y),
                _ => y,
            };
            match &f.expr(y).kind {
                ExprKind::Binary(BinOp::BitAnd, p, q) => {
                    let mask = |z: ExprId| match &f.expr(z).kind {
                        ExprKind::Binary(BinOp::Sub, k, one) => {
                            matches!(f.expr(*one).kind, ExprKind::Int(1)) && f.expr_text(*k) == m
                        }
                        _ => false,
                    };
                    let xt = f.expr_text(x);
                    (mask(*q) && f.expr_text(*p) == xt) || (mask(*p) && f.expr_text(*q) == xt)
                }
                _ => false,
            }
        };
        match &f.expr(e).kind {
            ExprKind::Cast(_, a) => rec(*a),
            ExprKind::Var(v) => one_def(f, self.u, *v, e).is_some_and(rec),
            ExprKind::Binary(BinOp::Sub, x, y) if masked(*x, *y) => true,
            ExprKind::Binary(BinOp::Div, x, k) if f.expr_text(*k) == m && same_base(*x) => true,
            ExprKind::Binary(_, a, b) => rec(*a) && rec(*b),
            ExprKind::Unary(UnOp::Neg | UnOp::Plus | UnOp::Not, a) => rec(*a),
            ExprKind::Call {
                callee,
                receiver: None,
                args,
            } => {
                (matches!(callee.as_str(), "min" | "max" | "umin" | "umax")
                    || self
                        .callees
                        .get(callee.as_str())
                        .is_some_and(|s| s.dims == 0))
                    && args.iter().all(|a| rec(*a))
            }
            _ => false,
        }
    }

    /// Collects one clause per threshold test of `c` (combined by `&&`,
    /// `||`, `!`; uniform and warp-uniform parts add none); `false` when
    /// some part is not such a test.
    fn tests(&mut self, c: ExprId, depth: u32) -> bool {
        let (f, u, launch) = (self.f, self.u, self.launch);
        if u.is_uniform(c.0)
            || warp_uniform(f, u, c, launch)
            || warp_uniform_value(f, u, launch, c, 0)
        {
            return true;
        }
        if depth > 8 {
            return false;
        }
        match &f.expr(c).kind {
            ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, a, b) => {
                self.tests(*a, depth + 1) && self.tests(*b, depth + 1)
            }
            ExprKind::Unary(UnOp::Not, a) => self.tests(*a, depth + 1),
            ExprKind::Binary(
                op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
                a,
                b,
            ) => {
                let (ia, ib) = (u.is_uniform(a.0), u.is_uniform(b.0));
                let side = match (ia, ib) {
                    (false, true) => *a,
                    (true, false) => *b,
                    // (session 7, audit #24) `i < bound(pos - i)` with `i =
                    // pos & (m - 1)`: the bound is the same in each group of
                    // `m` threads, where the test selects one run.
                    (false, false) => {
                        let grouped = |x: ExprId, y: ExprId| {
                            self.index(x, 0).filter(|ix| {
                                ix.divisor.is_none()
                                    && ix.modulus.is_some_and(|m| {
                                        self.group_const(y, &f.expr_text(m), ix.base, 0)
                                    })
                            })
                        };
                        let Some(ix) = grouped(*a, *b).or_else(|| grouped(*b, *a)) else {
                            return false;
                        };
                        let ends = if matches!(op, BinOp::Eq | BinOp::Ne) {
                            2
                        } else {
                            1
                        };
                        if ends == 2 {
                            return false;
                        }
                        return self.clause(c, *a, *b, &ix, ends);
                    }
                    _ => return false,
                };
                let Some(ix) = self.index(side, 0) else {
                    return false;
                };
                let ends = if matches!(op, BinOp::Eq | BinOp::Ne) {
                    2
                } else {
                    1
                };
                // `i % m == k` selects one value in every group: a strided
                // pick, not a run (`tid % (2 * s) == 0`).
                if ix.modulus.is_some() && ends == 2 {
                    return self.pick_clause(c, &ix);
                }
                self.clause(c, *a, *b, &ix, ends)
            }
            _ => false,
        }
    }

    /// (session 16; audits 20261237 #24, 20261238 #24: convolutionFFT2D's
    /// `x == 0` with `x` a thread index taken modulo `DX / 2`) An `==`/`!=`
    /// test of an index taken modulo a group size that is a constant of at
    /// least 32, or a uniform value that no loop changes: it picks (or
    /// leaves out) one thread per group, so only the warp holding it
    /// splits. A modulus below 32 or one a loop varies (`tid % (2 * s) ==
    /// 0`) is left to the plain message: every warp can split.
    fn pick_clause(&mut self, c: ExprId, ix: &RunIndex) -> bool {
        let (f, launch) = (self.f, self.launch);
        let Some(m) = ix.modulus else {
            return false;
        };
        if ix.divisor.is_some() {
            return false;
        }
        if !ix.unit_x(launch) {
            return false;
        }
        let text = f.expr_text(c);
        let small = self
            .cx
            .form(m)
            .values
            .as_ref()
            .and_then(|v| v.first().copied());
        match super::barriers::const_value(f, m) {
            Some(v) if v >= 32 => self.clauses.push(format!(
                "`{text}` picks one thread in every group of {v} consecutive threads (its index \
                 is taken modulo {v}), so it splits only the warp holding that thread, one warp \
                 in every {}, where one lane differs from the other 31",
                v / 32
            )),
            Some(_) => return false,
            None if small.is_some() || loop_varying(f, m, 0) => return false,
            None => {
                let group = f.expr_text(m);
                self.clauses.push(format!(
                    "`{text}` picks one thread in every group of `{group}` consecutive threads \
                     (its index is taken modulo `{group}`), so while `{group}` is at least 32 \
                     it splits only the warp holding that thread, one warp in every `{group}` / \
                     32, where one lane differs from the other 31 (every warp can split when \
                     `{group}` is below 32)"
                ))
            }
        }
        true
    }

    fn clause(&mut self, c: ExprId, a: ExprId, b: ExprId, ix: &RunIndex, ends: u32) -> bool {
        let (f, launch) = (self.f, self.launch);
        let text = f.expr_text(c);
        let warps = |n: u32| {
            if n == 1 {
                "at most one warp".to_string()
            } else {
                format!("at most {n} warps")
            }
        };
        if let Some(m) = ix.modulus {
            if !ix.unit_x(launch) {
                return false;
            }
            let group = match ix.divisor {
                Some(d) => format!("`{}`·`{}`", f.expr_text(m), f.expr_text(d)),
                None => format!("`{}`", f.expr_text(m)),
            };
            let small = self
                .cx
                .form(m)
                .values
                .as_ref()
                .and_then(|v| v.first().copied());
            match super::barriers::const_value(f, m).filter(|_| ix.divisor.is_none()) {
                Some(v) if v <= 32 => {
                    self.every_warp = true;
                    self.clauses.push(format!(
                        "`{text}` tests an index that repeats every {v} threads, so every warp \
                         can split the same way"
                    ));
                }
                Some(v) => self.clauses.push(format!(
                    "`{text}` tests an index taken modulo {v}: within each group of {v} \
                     consecutive threads the selected ones are one contiguous run, so it splits \
                     {} per {v} threads",
                    warps(ends)
                )),
                _ if ix.divisor.is_none()
                    && (small.is_some_and(|v| v < 32)
                        || (small.is_none() && loop_varying(f, m, 0))) =>
                {
                    // The modulus changes while the kernel runs (a loop
                    // counter), through values below a warp: then every
                    // warp splits.
                    self.every_warp = true;
                    self.clauses.push(format!(
                        "`{text}` tests an index taken modulo {group}, which changes as the \
                         kernel runs: within each group of {group} consecutive threads the \
                         selected ones are one contiguous run, so it splits {} per group while \
                         the group holds at least 32 threads, but every warp while it holds fewer",
                        warps(ends)
                    ));
                }
                // (session 15, audits 20261223 #32, 20261226 #32, 20261229
                // #33: mergeSort's `i < segmentSamplesA` with `i = pos &
                // (stride / 128 - 1)` and a bound that is the group's size)
                // The values the index takes are below the group's size:
                // a bound at or past either end splits nothing.
                _ => self.clauses.push(format!(
                    "`{text}` tests an index taken modulo {group}: within each group of {group} \
                     consecutive threads the selected ones are one contiguous run, so it splits \
                     {} per group when the group holds at least 32 threads (every warp can split \
                     when it holds fewer){}",
                    warps(ends),
                    if ix.divisor.is_none() {
                        format!(
                            "; the index stays below {group}, so where the value it is compared \
                             with is at least {group} (or at most 0) every thread of a group is \
                             on one side and no warp splits"
                        )
                    } else {
                        String::new()
                    }
                )),
            }
            return true;
        }
        if let Some(scope) = monotone_scope(&ix.form, launch) {
            self.clauses.push(format!(
                "`{text}` selects one contiguous run of threads (its index grows with the \
                 lane's position), so it splits {} per {scope}",
                warps(ends)
            ));
            return true;
        }
        // A column test on blocks narrower than a warp: each warp spans
        // 32 / bx whole rows, and every row is cut at the same column.
        let [bx, _, _] = launch.block;
        let Some(bx) = bx.filter(|x| *x < 32 && 32 % *x == 0) else {
            return false;
        };
        let only_x =
            !ix.form.coef[0].is_zero() && ix.form.coef[1].is_zero() && ix.form.coef[2].is_zero();
        if !only_x {
            return false;
        }
        let rows = 32 / bx;
        let ExprKind::Binary(op, _, _) = &f.expr(c).kind else {
            return false;
        };
        let op = *op;
        let row_hits: Option<Vec<bool>> = (0..i64::from(bx))
            .map(|x| {
                let t = [x, 0, 0];
                let va = super::lanes::thread_value(f, a, launch, t)?;
                let vb = super::lanes::thread_value(f, b, launch, t)?;
                Some(match op {
                    BinOp::Lt => va < vb,
                    BinOp::Le => va <= vb,
                    BinOp::Gt => va > vb,
                    BinOp::Ge => va >= vb,
                    BinOp::Eq => va == vb,
                    _ => va != vb,
                })
            })
            .collect();
        if let Some(hits) = row_hits {
            let k = hits.iter().filter(|h| **h).count() as u32;
            if k == 0 || k == bx {
                // The same in every thread of the block: no split.
                return true;
            }
            self.every_warp = true;
            self.clauses.push(format!(
                "`{text}` holds for {k} of the {bx} threads of every row, so in every warp \
                 ({rows} rows of {bx}) {} of the 32 lanes run the part and the others idle: a \
                 fixed subset of the threads by construction, costing the idle lanes' share of \
                 the part in every warp",
                k * rows
            ));
            return true;
        }
        // The x range advances by whole blocks (a block index times the
        // block width): only the blocks at the edge of the range straddle.
        let tiled = ix.form.grid_offset
            || expr_mentions(f, c, &|k| match k {
                ExprKind::Binary(BinOp::Mul, p, q) => [*p, *q].iter().any(|x| {
                    matches!(
                        f.expr(*x).kind,
                        ExprKind::Builtin(Builtin::BlockDim(Dim::X) | Builtin::BlockIdx(Dim::X))
                    )
                }),
                _ => false,
            });
        if tiled {
            self.clauses.push(format!(
                "`{text}` cuts every row of {bx} threads at the same column; a warp spans {rows} \
                 rows, so warps split only in a block whose x range straddles the bound, where \
                 every warp does (the x range advances by whole blocks, so only the blocks at \
                 its edge do)"
            ));
        } else {
            self.every_warp = true;
            self.clauses.push(format!(
                "`{text}` cuts every row of {bx} threads at the same column; a warp spans {rows} \
                 rows, so in every block whose x range straddles the bound every warp splits"
            ));
        }
        true
    }
}

/// (session 7, audit 20261128 #53) For a loop condition `i OP B` (`i`
/// uniform) whose bound `B` is `(L / d) % T` or `L / d` with `L` a linear
/// thread index (one contiguous run of values per warp) and `d` uniform:
/// the 32 lanes of a warp see at most ⌈31/d⌉ + 1 consecutive values of
/// `L / d`, so their trip counts differ by at most ⌈31/d⌉ — except where
/// `% T` wraps to 0.
fn trip_spread(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    cond: ExprId,
) -> Option<Shape> {
    let ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = &f.expr(cond).kind
    else {
        return None;
    };
    let bound = match (u.is_uniform(a.0), u.is_uniform(b.0)) {
        (true, false) => *b,
        (false, true) => *a,
        _ => return None,
    };
    let strip = |mut e: ExprId| {
        for _ in 0..6 {
            match &f.expr(e).kind {
                ExprKind::Cast(_, x) => e = *x,
                ExprKind::Var(v) => match one_def(f, u, *v, e) {
                    Some(d) => e = d,
                    None => break,
                },
                _ => break,
            }
        }
        e
    };
    let uniform = |x: ExprId| u.is_uniform(x.0) && cx.form(x).is_invariant();
    let mut e = strip(bound);
    let mut wrap = None;
    if let ExprKind::Binary(BinOp::Rem, x, t) = &f.expr(e).kind
        && uniform(*t)
    {
        wrap = Some((*t, *x));
        e = strip(*x);
    }
    let ExprKind::Binary(BinOp::Div, l, d) = &f.expr(e).kind else {
        return None;
    };
    if !uniform(*d) {
        return None;
    }
    let form = cx.form(*l);
    let unit =
        matches!(form.coef[0], Coef::Int(1)) && form.coef[1].is_zero() && form.coef[2].is_zero();
    if !unit || monotone_scope(&form, launch).is_none() {
        return None;
    }
    let dt = f.expr_text(*d);
    let (spread, small) = match super::barriers::const_value(f, *d) {
        Some(k) if k > 0 => {
            let s = ceil_div(31, k);
            (s.to_string(), s <= 4)
        }
        Some(_) => return None,
        None => (format!("⌈31/`{dt}`⌉"), false),
    };
    let wrap = wrap.map(|(t, x)| {
        let tt = f.expr_text(t);
        format!(
            "except in a warp where `{}` crosses a multiple of `{tt}` (once every `{tt}`·`{dt}` \
             threads), where the bound wraps around to 0",
            f.expr_text(x)
        )
    });
    Some(Shape::TripSpread {
        bound: f.expr_text(bound),
        spread,
        wrap,
        small,
    })
}
