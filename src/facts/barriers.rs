//! Barrier divergence (GPUVerify's barrier-divergence freedom): a barrier
//! reachable under a condition — an enclosing branch or loop condition, or
//! the guard of an earlier `return`/`break`/`continue` — that can differ
//! between the threads that must meet at it.
//!
//! Block-wide barriers (`__syncthreads*`, cooperative-groups block and grid
//! syncs) need the condition to be uniform across the block. Named barriers
//! with a thread count (`bar.sync id, n`) and warp-level syncs only need it
//! to be uniform within each warp: producer/consumer code splits warps on
//! purpose. Whether a condition is warp-uniform depends on the launch's
//! block dimensions.

use super::relations::{DIM_X, DIM_Y, DIM_Z, Relations, VARIES};
use super::uniformity::Uniformity;
use crate::ir::{BarrierKind, BinOp, Builtin, Dim, ExprId, ExprKind, Function, StmtKind};

/// Block dimensions of the launches of a kernel (`None`: not known).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct LaunchDims {
    /// blockDim.x, .y, .z
    pub block: [Option<u32>; 3],
    /// gridDim.x, .y, .z (`None`: not known).
    pub grid: [Option<u32>; 3],
    /// Whether the lanes of a warp are assumed to run in lock-step
    /// (`[launch] warp_lockstep`).
    pub warp_lockstep: bool,
    /// Values of the kernel's non-type template parameters (by position in
    /// `Function::template_params`) that every launch site agrees on; only
    /// the first [`MAX_TEMPLATE_VALUES`] parameters are tracked.
    pub template_values: [Option<i64>; MAX_TEMPLATE_VALUES],
    /// (audit 20261205/20261206 #41, dwtHaar1D `bdim`) For each of the
    /// first [`MAX_PARAM_DIMS`] parameters, the block dimension (0 = x,
    /// 1 = y, 2 = z) every launch site passes as its argument: the same
    /// expression as that dimension of the launch's block (`k<<<g, b>>>(…,
    /// b.x)`), so the parameter equals `blockDim` there.
    #[serde(default)]
    pub param_block_dims: [Option<u8>; MAX_PARAM_DIMS],
    /// (issue 8, session 11; audits 20261208 #42, 20261209 #44, 20261210
    /// #43, boxFilter's `d_boxfilter_x_global`) No launch site in the
    /// indexed files launches the kernel (`<<<…>>>`, `cudaLaunchKernel`),
    /// or, for a device function, any kernel that calls it.
    #[serde(default)]
    pub unlaunched: bool,
    /// (issue 8, session 12; audit 20261211 #49/#50, softmax's `C = V =
    /// 50257`) For each of the first [`MAX_PARAM_DIMS`] parameters, the
    /// integer every launch site passes (a constant in the launching host
    /// function, or through its callers' constant arguments): the kernel
    /// runs with that value wherever the indexed files launch it.
    #[serde(default)]
    pub param_values: [Option<i64>; MAX_PARAM_DIMS],
    /// (issue 8, session 13; audit 20261216 #53/#54/#56, llm.c's
    /// `kernel7<block_size><<<g, block_size>>>`) For each tracked non-type
    /// template parameter (positions as in `template_values`), the block
    /// dimension every launch site passes the same expression for: the
    /// parameter equals `blockDim` in that dimension.
    #[serde(default)]
    pub template_block_dims: [Option<u8>; MAX_TEMPLATE_VALUES],
    /// (session 16; audits 20261226, 20261232 #40: imageDenoising's kernel
    /// headers, `dim3 threads(BLOCKDIM_X, BLOCKDIM_Y)` where no indexed
    /// file defines `BLOCKDIM_X` for the header) For each block dimension
    /// whose value is not known, the [`name_hash`] of the undefined name
    /// every launch site spells it as: that name equals `blockDim` there.
    #[serde(default)]
    pub name_block_dims: [Option<u64>; 3],
}

/// A stable 64-bit hash of a name (FNV-1a), for
/// [`LaunchDims::name_block_dims`].
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl LaunchDims {
    /// Dimensions with the given block size and no template values.
    pub const fn with_block(block: [Option<u32>; 3]) -> LaunchDims {
        LaunchDims {
            block,
            grid: [None; 3],
            warp_lockstep: false,
            template_values: [None; MAX_TEMPLATE_VALUES],
            param_block_dims: [None; MAX_PARAM_DIMS],
            unlaunched: false,
            param_values: [None; MAX_PARAM_DIMS],
            template_block_dims: [None; MAX_TEMPLATE_VALUES],
            name_block_dims: [None; 3],
        }
    }
}

/// How many parameters [`LaunchDims::param_block_dims`] tracks.
pub const MAX_PARAM_DIMS: usize = 16;

/// How many template parameters [`LaunchDims::template_values`] tracks.
pub const MAX_TEMPLATE_VALUES: usize = 8;

/// Where threads must meet: a barrier of the function, or a call to a
/// device function that contains a block-wide barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierSite {
    /// Index into `Function::barriers`.
    Barrier(usize),
    /// Index into `Function::calls`.
    Call(usize),
}

/// Why a barrier is divergent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BarrierVerdict {
    /// The barrier, or the call that reaches one.
    pub site: BarrierSite,
    /// The condition expression that can differ.
    pub cond: ExprId,
    /// Whether the condition guards an earlier exit (`return`/`break`/`continue`)
    /// rather than enclosing the barrier.
    pub via_exit: bool,
}

/// The barriers of `f` that can be reached by some but not all of the threads
/// that must meet there, including calls to device functions that contain a
/// block-wide barrier (`callees` says which).
pub fn divergent_barriers(
    f: &Function,
    r: &Relations,
    u: &Uniformity,
    launch: &LaunchDims,
    callees: &super::Callees,
) -> Vec<BarrierVerdict> {
    let mut sites: Vec<(BarrierSite, u32, bool, i64)> = Vec::new();
    let mut grid_sites: Vec<BarrierSite> = Vec::new();
    for (i, b) in f.barriers.iter().enumerate() {
        let warp_level = match b.kind {
            BarrierKind::SyncThreads
            | BarrierKind::SyncThreadsReduce
            | BarrierKind::CgBlockSync
            | BarrierKind::CgGridSync => false,
            BarrierKind::BarSync | BarrierKind::BarArrive | BarrierKind::BarRed => {
                // Without a thread count a named barrier waits for the whole block.
                b.thread_count.is_some() || b.thread_count_text.is_some()
            }
            BarrierKind::SyncWarp | BarrierKind::CgTileSync => true,
        };
        // The threads that must meet: a tile of known size, else a warp.
        let group = match (b.kind, b.thread_count) {
            (BarrierKind::CgTileSync, Some(t)) if t > 0 && t <= 32 && 32 % t == 0 => t,
            _ => 32,
        };
        sites.push((BarrierSite::Barrier(i), b.stmt.0, warp_level, group));
        if b.kind == BarrierKind::CgGridSync {
            grid_sites.push(BarrierSite::Barrier(i));
        }
    }
    for (i, c) in f.calls.iter().enumerate() {
        if callees.get(&c.callee).is_some_and(|s| s.block_barrier) {
            sites.push((BarrierSite::Call(i), c.stmt.0, false, 32));
        }
    }
    let mut out = Vec::new();
    for (site, s, warp_level, group) in sites {
        let enclosing = r
            .under
            .iter()
            .filter(|(st, _)| *st == s)
            .map(|(_, c)| (*c, false));
        let exits = r
            .skipped_by
            .iter()
            .filter(|(st, _)| *st == s)
            .map(|(_, c)| (*c, true));
        for (c, via_exit) in enclosing.chain(exits) {
            let divergent = if warp_level {
                !group_uniform(f, u, ExprId(c), launch, group)
            } else {
                !(u.is_uniform(c) || super::ranges::decided(f, ExprId(c), launch).is_some())
                    // A grid barrier needs the condition to agree across blocks too.
                    || (grid_sites.contains(&site) && depends_on_block(f, ExprId(c), 0))
            };
            if divergent {
                out.push(BarrierVerdict {
                    site,
                    cond: ExprId(c),
                    via_exit,
                });
                break;
            }
        }
    }
    out
}

/// Whether `e` depends on `blockIdx` (through locals: every definition of a
/// local assigned several times is followed; a cycle adds nothing).
pub fn depends_on_block(f: &Function, e: ExprId, depth: u32) -> bool {
    let mut visiting = Vec::new();
    depends_on_block_in(f, e, depth, &mut visiting)
}

fn depends_on_block_in(f: &Function, e: ExprId, depth: u32, visiting: &mut Vec<u32>) -> bool {
    if depth > 32 {
        return true;
    }
    match &f.expr(e).kind {
        ExprKind::Builtin(Builtin::BlockIdx(_)) => true,
        ExprKind::Var(v) => {
            if f.var(*v).param_position.is_some() || visiting.contains(&v.0) {
                return false;
            }
            let Some(defs) = all_defs(f, v.0) else {
                // Address taken: assume it may.
                return true;
            };
            visiting.push(v.0);
            let r = defs
                .into_iter()
                .any(|d| depends_on_block_in(f, d, depth + 1, visiting));
            visiting.pop();
            r
        }
        _ => f
            .child_exprs(e)
            .into_iter()
            .any(|c| depends_on_block_in(f, c, depth + 1, visiting)),
    }
}

/// Every value a local is set from (initialiser, right-hand sides of plain
/// and compound assignments); `None` when its address is taken.
fn all_defs(f: &Function, v: u32) -> Option<Vec<ExprId>> {
    let mut out = Vec::new();
    for s in &f.stmts {
        if let StmtKind::Decl {
            var,
            init: Some(init),
        } = &s.kind
            && var.0 == v
        {
            out.push(*init);
        }
    }
    let is_v = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Var(w) if w.0 == v);
    for e in &f.exprs {
        match &e.kind {
            ExprKind::Assign { lhs, rhs, .. } if is_v(*lhs) => out.push(*rhs),
            ExprKind::Unary(crate::ir::UnOp::AddrOf, x) if is_v(*x) => return None,
            _ => {}
        }
    }
    Some(out)
}

/// Whether condition `c` has the same value for all threads of each warp.
pub fn warp_uniform(f: &Function, u: &Uniformity, c: ExprId, launch: &LaunchDims) -> bool {
    group_uniform(f, u, c, launch, 32)
}

/// Whether condition `c` has the same value for all threads of each group of
/// `group` consecutive threads (a warp, or a cooperative-groups tile; `group`
/// divides 32).
pub fn group_uniform(
    f: &Function,
    u: &Uniformity,
    c: ExprId,
    launch: &LaunchDims,
    group: i64,
) -> bool {
    let dims = u.expr_dims.get(c.0 as usize).copied().unwrap_or(0);
    if dims == 0 {
        return true;
    }
    if dims & (1 << VARIES) != 0 {
        return false;
    }
    // (issue 8, session 12) A condition no thread of any launch can make
    // true (or false) splits nothing.
    if super::ranges::decided(f, c, launch).is_some() {
        return true;
    }
    let bx = launch.block[0];
    let x_is_full_warps = bx.is_some_and(|x| i64::from(x) % group == 0);
    if dims & (1 << DIM_X) == 0 {
        // Only y/z: uniform within a warp when a warp never spans two rows.
        return x_is_full_warps
            || (dims & (1 << DIM_Z) == 0
                && dims & (1 << DIM_Y) != 0
                && launch.block[1] == Some(1));
    }
    // Depends on x: `x < K`-style comparisons with K a multiple of 32 split
    // only at warp boundaries (when warps start at x multiples of 32). With
    // an unknown block, a comparison of the warp index itself
    // (`threadIdx.x / warpSize == 0`) is taken as warp-uniform, as the race
    // check takes an unknown blockDim.x to be whole warps; edges of
    // `threadIdx.x` still need a known block.
    // In a 1-D block warps are runs of 32 consecutive `threadIdx.x`
    // whatever blockDim.x is, so an edge at a multiple of 32 is a warp
    // boundary (audit 20261203 #25, reduce6 `tid < 64`).
    let one_d = launch.block[1] == Some(1) && launch.block[2] == Some(1);
    // (audit 20261208 #26, reduce6 `cta.thread_rank() < 32`) A block's
    // `thread_rank()` is the linear thread index, and warps are runs of
    // 32 consecutive linear indices whatever the block's shape: an edge at
    // a multiple of the group never splits one.
    if rank_splits_at_group_boundary(f, u, c, group) {
        return true;
    }
    dims & !(1 << DIM_X) == 0
        && if x_is_full_warps || one_d {
            splits_at_group_boundary(f, u, c, group, true)
        } else {
            bx.is_none() && splits_at_group_boundary(f, u, c, group, false)
        }
}

/// Whether every comparison in condition `c` compares a block's linear
/// thread rank (`g.thread_rank()` of `this_thread_block()`, plus a constant)
/// with a constant at a multiple of `group`.
fn rank_splits_at_group_boundary(f: &Function, u: &Uniformity, c: ExprId, group: i64) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, a, b) => {
            rank_splits_at_group_boundary(f, u, *a, group)
                && rank_splits_at_group_boundary(f, u, *b, group)
        }
        ExprKind::Unary(crate::ir::UnOp::Not, a) => rank_splits_at_group_boundary(f, u, *a, group),
        ExprKind::Binary(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
            let (x_side, k_side, flip) = if u.is_uniform(b.0) {
                (*a, *b, false)
            } else {
                (*b, *a, true)
            };
            let (Some(k), Some(c0)) = (const_value(f, k_side), rank_offset(f, x_side, 0)) else {
                return false;
            };
            // `r + c0 < k` splits at r = k - c0; `<=`/`>` one further
            // (mirrored when the rank is on the right).
            let le_gt = matches!(op, BinOp::Le | BinOp::Gt) != flip;
            (k - c0 + i64::from(le_gt)).rem_euclid(group) == 0
        }
        _ => false,
    }
}

/// `Some(c0)` when `e` is a block's thread rank plus the constant `c0`
/// (through locals set once).
fn rank_offset(f: &Function, e: ExprId, depth: u32) -> Option<i64> {
    if depth > 8 {
        return None;
    }
    match &f.expr(e).kind {
        ExprKind::Call { .. } => matches!(
            super::coop::group_method(f, e),
            Some((super::coop::Group::Block, "thread_rank"))
        )
        .then_some(0),
        ExprKind::Cast(_, a) => rank_offset(f, *a, depth + 1),
        ExprKind::Var(v) => single_def(f, v.0).and_then(|d| rank_offset(f, d, depth + 1)),
        ExprKind::Binary(BinOp::Add, a, b) => match (const_value(f, *a), const_value(f, *b)) {
            (None, Some(k)) => rank_offset(f, *a, depth + 1).map(|c| c + k),
            (Some(k), None) => rank_offset(f, *b, depth + 1).map(|c| c + k),
            _ => None,
        },
        ExprKind::Binary(BinOp::Sub, a, b) => {
            rank_offset(f, *a, depth + 1).and_then(|c| Some(c - const_value(f, *b)?))
        }
        _ => None,
    }
}

fn splits_at_group_boundary(
    f: &Function,
    u: &Uniformity,
    c: ExprId,
    group: i64,
    lane_edges: bool,
) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, a, b) => {
            splits_at_group_boundary(f, u, *a, group, lane_edges)
                && splits_at_group_boundary(f, u, *b, group, lane_edges)
        }
        ExprKind::Unary(crate::ir::UnOp::Not, a) => {
            splits_at_group_boundary(f, u, *a, group, lane_edges)
        }
        ExprKind::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            a,
            b,
        ) => {
            let (x_side, k_side) = if u.is_uniform(b.0) {
                (*a, *b)
            } else {
                (*b, *a)
            };
            if !u.is_uniform(k_side.0) {
                return false;
            }
            let form = warp_index_form(f, u, group, x_side);
            // A warp index compared with anything uniform (audit 20261211
            // #49, softmax `row = blockIdx.x * warpsPerBlock + warpId` with
            // `row >= N`).
            if matches!(form, Some(Form::WarpIndex)) {
                return true;
            }
            let Some(k) = const_value(f, k_side) else {
                return false;
            };
            match form {
                // threadIdx.x + c0 (+ a uniform multiple of the group)
                // compared with k: splits at k - c0 (+1 for <=, >).
                Some(Form::Lane(c0, _)) if lane_edges => {
                    let edge = k - c0 + i64::from(matches!(op, BinOp::Le | BinOp::Gt));
                    !matches!(op, BinOp::Eq | BinOp::Ne) && edge.rem_euclid(group) == 0
                }
                // threadIdx.x / 32 (a warp index) compared with anything uniform.
                Some(Form::WarpIndex) => true,
                _ => false,
            }
        }
        _ => false,
    }
}

enum Form {
    /// `threadIdx.x + c0`, plus (when the flag is set) a thread-invariant
    /// multiple of the group size (`idx + 64 * i` for groups of 32).
    Lane(i64, bool),
    /// `threadIdx.x / (32·m)` or `threadIdx.x >> (5 + m)`
    WarpIndex,
}

/// Whether `e` is thread-invariant and a multiple of `group`: a constant
/// one, or a product (or left shift) with such a constant factor.
fn uniform_multiple(f: &Function, u: &Uniformity, group: i64, e: ExprId) -> bool {
    if !u.is_uniform(e.0) || group <= 0 {
        return false;
    }
    let mult = |x: ExprId| const_value(f, x).is_some_and(|k| k % group == 0);
    match &f.expr(e).kind {
        ExprKind::Cast(_, a) => uniform_multiple(f, u, group, *a),
        ExprKind::Binary(BinOp::Mul, a, b) => mult(*a) || mult(*b),
        ExprKind::Binary(BinOp::Shl, _, b) => {
            const_value(f, *b).is_some_and(|k| (0..62).contains(&k) && (1i64 << k) % group == 0)
        }
        _ => mult(e),
    }
}

fn warp_index_form(f: &Function, u: &Uniformity, group: i64, e: ExprId) -> Option<Form> {
    let rec = |x: ExprId| warp_index_form(f, u, group, x);
    match &f.expr(e).kind {
        ExprKind::Builtin(Builtin::ThreadIdx(Dim::X)) => Some(Form::Lane(0, false)),
        ExprKind::Cast(_, a) => rec(*a),
        ExprKind::Var(v) => single_def(f, v.0).and_then(rec),
        // A warp index plus (or minus) anything uniform is a warp index.
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b)
            if matches!(rec(*a), Some(Form::WarpIndex)) && u.is_uniform(b.0) =>
        {
            Some(Form::WarpIndex)
        }
        ExprKind::Binary(BinOp::Add, a, b)
            if u.is_uniform(a.0) && matches!(rec(*b), Some(Form::WarpIndex)) =>
        {
            Some(Form::WarpIndex)
        }
        ExprKind::Binary(BinOp::Add, a, b) => match (rec(*a), const_value(f, *b)) {
            (Some(Form::Lane(c, m)), Some(k)) => Some(Form::Lane(c + k, m)),
            (Some(Form::Lane(c, _)), None) if uniform_multiple(f, u, group, *b) => {
                Some(Form::Lane(c, true))
            }
            _ => match (const_value(f, *a), rec(*b)) {
                (Some(k), Some(Form::Lane(c, m))) => Some(Form::Lane(c + k, m)),
                (None, Some(Form::Lane(c, _))) if uniform_multiple(f, u, group, *a) => {
                    Some(Form::Lane(c, true))
                }
                _ => None,
            },
        },
        ExprKind::Binary(BinOp::Sub, a, b) => match (rec(*a), const_value(f, *b)) {
            (Some(Form::Lane(c, m)), Some(k)) => Some(Form::Lane(c - k, m)),
            (Some(Form::Lane(c, _)), None) if uniform_multiple(f, u, group, *b) => {
                Some(Form::Lane(c, true))
            }
            _ => None,
        },
        ExprKind::Binary(BinOp::Div, a, b) => match (rec(*a), const_value(f, *b)) {
            (Some(Form::Lane(0, false)), Some(k)) if k > 0 && k % 32 == 0 => Some(Form::WarpIndex),
            _ => None,
        },
        ExprKind::Binary(BinOp::Shr, a, b) => match (rec(*a), const_value(f, *b)) {
            (Some(Form::Lane(0, false)), Some(k)) if k >= 5 => Some(Form::WarpIndex),
            _ => None,
        },
        _ => None,
    }
}

/// The initialiser of a variable that is assigned exactly once (its
/// declaration), and whose address is never taken (session 13,
/// binaryPartitionCG's `int threadsPerBlock = 0;` filled in through
/// `cudaOccupancyMaxPotentialBlockSize(&…, &threadsPerBlock, …)`).
pub fn single_def(f: &Function, v: u32) -> Option<ExprId> {
    let mut found = None;
    for s in &f.stmts {
        if let StmtKind::Decl { var, init } = &s.kind
            && var.0 == v
        {
            if found.is_some() {
                return None;
            }
            found = Some((*init)?);
        }
    }
    let written = f.exprs.iter().any(|e| match &e.kind {
        ExprKind::Assign { lhs, .. }
        | ExprKind::IncDec { target: lhs, .. }
        | ExprKind::Unary(crate::ir::UnOp::AddrOf, lhs) => {
            matches!(f.expr(*lhs).kind, ExprKind::Var(w) if w.0 == v)
        }
        _ => false,
    });
    if written { None } else { found }
}

/// `x op y` for the integer arithmetic operators (`+ - * / % << >>`),
/// checked: `None` on overflow, division by zero or another operator.
pub fn fold_arith(op: BinOp, x: i64, y: i64) -> Option<i64> {
    match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::Div => x.checked_div(y),
        BinOp::Rem => x.checked_rem(y),
        BinOp::Shl => x.checked_shl(u32::try_from(y).ok()?),
        BinOp::Shr => x.checked_shr(u32::try_from(y).ok()?),
        _ => None,
    }
}

/// The constant value of an expression, when it has one.
pub fn const_value(f: &Function, e: ExprId) -> Option<i64> {
    match &f.expr(e).kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Builtin(Builtin::WarpSize) => Some(32),
        ExprKind::SizeOf(Some(n)) => i64::try_from(*n).ok(),
        ExprKind::Cast(_, a) => const_value(f, *a),
        ExprKind::Unary(crate::ir::UnOp::Neg, a) => const_value(f, *a).map(|v| -v),
        ExprKind::Var(v) => single_def(f, v.0).and_then(|d| const_value(f, d)),
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (const_value(f, *a)?, const_value(f, *b)?);
            fold_arith(*op, x, y)
        }
        _ => None,
    }
}
