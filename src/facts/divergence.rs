//! Branch divergence: for every branch, loop condition, `?:`, `&&`/`||` and
//! switch, whether threads of one warp can disagree on it.

use super::affine::Coef;
use super::barriers::{LaunchDims, warp_uniform};
use super::relations::Relations;
use super::stride::AffineCx;
use super::uniformity::Uniformity;
use crate::ir::{BinOp, ExprId, ExprKind, Function, StmtId, StmtKind};

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
    /// Can split a warp.
    Divergent {
        /// The divergent region accesses memory.
        memory: bool,
        /// The divergent region contains a loop (or is one).
        looping: bool,
    },
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
}

/// Classify every branch of `f`.
pub fn classify(
    f: &Function,
    r: &Relations,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
) -> Vec<BranchFact> {
    let mut out = Vec::new();
    for (s, c) in &r.branches {
        let (stmt, cond) = (StmtId(*s), ExprId(*c));
        let in_expression = !is_statement_condition(f, stmt, cond);
        let kind = if u.is_uniform(cond.0) {
            BranchKind::Uniform
        } else if warp_uniform(f, u, cond, launch) || lane_invariant(f, cx, cond) {
            BranchKind::WarpUniform
        } else if single_thread_cond(f, cx, launch, cond) {
            BranchKind::SingleThread
        } else if boundary_guard(f, u, cx, launch, cond) {
            BranchKind::BoundaryGuard
        } else {
            let (memory, looping) = if in_expression {
                (expr_region_has_access(f, cond), false)
            } else {
                stmt_region(f, stmt)
            };
            BranchKind::Divergent { memory, looping }
        };
        out.push(BranchFact {
            stmt,
            cond,
            in_expression,
            kind,
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
fn stmt_region(f: &Function, s: StmtId) -> (bool, bool) {
    let mut inside = std::collections::BTreeSet::new();
    let mut looping = matches!(
        f.stmt(s).kind,
        StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
    );
    let mut stack = f.child_stmts(s);
    while let Some(x) = stack.pop() {
        inside.insert(x.0);
        if matches!(
            f.stmt(x).kind,
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
        ) {
            looping = true;
        }
        stack.extend(f.child_stmts(x));
    }
    let memory = f.accesses.iter().any(|a| inside.contains(&a.stmt.0));
    (memory, looping)
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

/// At most one thread of a warp satisfies `c` (`threadIdx.x == 0`, `tid == k && …`).
pub fn single_thread_cond(f: &Function, cx: &AffineCx<'_>, launch: &LaunchDims, c: ExprId) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd, a, b) => {
            single_thread_cond(f, cx, launch, *a) || single_thread_cond(f, cx, launch, *b)
        }
        ExprKind::Binary(BinOp::Eq, a, b) => {
            let (x, y) = (cx.form(*a), cx.form(*b));
            let (t, k) = if y.is_invariant() { (x, y) } else { (y, x) };
            if !k.is_invariant() {
                return false;
            }
            let ints = t.coef.iter().all(|c| matches!(c, Coef::Int(_)));
            let x_nonzero = !t.coef[0].is_zero();
            let warp_in_x = launch.block[0].is_none_or(|bx| bx >= 32);
            ints && x_nonzero && (warp_in_x || !t.coef[1].is_zero())
        }
        _ => false,
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
            let (x, y) = (cx.form(*a), cx.form(*b));
            let (t, k) = if y.is_invariant() { (x, y) } else { (y, x) };
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
            unit && others_zero && t.grid_offset
        }
        _ => false,
    }
}
