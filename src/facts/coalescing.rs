//! Global-memory coalescing: sectors and lines (32 B and 128 B by default,
//! `[cost] sector_bytes`/`line_bytes`) one warp touches per access, from
//! the access's affine index (RaCUDA's MemReads, generalised to element and
//! field sizes).

use super::affine::{Affine, Coef};
use super::barriers::LaunchDims;
use super::cost::CostModel;
use super::stride::AffineCx;
use super::uniformity::Uniformity;
use crate::ir::{Access, ExprId, Function, MemSpace};
use std::collections::BTreeSet;

/// How many sectors one warp's access touches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Sectors {
    /// Exactly this many when the array start is 128-byte aligned
    /// (`actual` adds a known constant misalignment).
    Exact {
        /// Sectors with the index's constant offset applied (when the rest of
        /// the address is known to be 32-byte aligned), else `aligned`.
        actual: u32,
        /// Sectors from the stride pattern alone.
        aligned: u32,
        /// 128-byte lines, pattern alone.
        lines: u32,
        /// Whether `actual` is exact (alignment known) or `aligned` is a lower bound.
        alignment_known: bool,
    },
    /// At most this many (symbolic or non-affine stride).
    UpTo(u32, String),
    /// The index comes from memory.
    DataDependent,
    /// The index is not affine in the thread index (`i % n`, a value merged
    /// after a thread-dependent branch): no claim either way.
    Unknown,
}

impl Sectors {
    /// The most sectors this verdict allows (unbounded for unknowns).
    pub fn upper_bound(&self) -> u32 {
        match self {
            Sectors::Exact {
                actual, aligned, ..
            } => (*actual).max(*aligned),
            Sectors::UpTo(n, _) => *n,
            Sectors::DataDependent | Sectors::Unknown => u32::MAX,
        }
    }
}

/// The coalescing verdict for one global access.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlobalAccessCost {
    /// Index into `Function::accesses`.
    pub access: usize,
    /// Sectors touched.
    pub sectors: Sectors,
    /// Sectors an aligned unit-stride access of the same bytes would touch.
    pub min_sectors: u32,
    /// The affine index (elements).
    pub form: Affine,
    /// (issue 8) Rows of the warp whose starts a symbolic row stride and a
    /// constant offset leave misaligned: `Sectors::Exact::actual` is then
    /// the count under the worst alignment (reported as "up to").
    pub misaligned_rows: Option<u32>,
    /// (issue 8) When several fields of one element are read (or written)
    /// by the same statement: the byte range of each element they use
    /// together (offset, length), costed once for the group.
    pub fields: Option<(i64, i64)>,
    /// Whether a previous access of the same statement's field group
    /// carries the cost (this one is not reported again).
    pub grouped: bool,
    /// (issue 8 audit #42) The warp's rows are separate runs (symbolic row
    /// stride) but fetch no more sectors than the whole elements they read:
    /// the rows are not the cause of the overfetch (reading part of wider
    /// elements is).
    pub row_runs: Option<RowRuns>,
    /// (issue 8 audit M1, #36) This access carries a stencil whose
    /// neighbours lie on both sides of it (`h[i + 1] - h[i - 1]`): a
    /// misalignment of its rows is the stencil's halo, unavoidable.
    pub halo: bool,
    /// (issue 8 audit #14) For a data-dependent index: the values loaded
    /// from memory that it uses, each with the lane stride of its own index
    /// when that is an integer (`d_iS[row]` read at consecutive positions
    /// by consecutive lanes: stride 1).
    pub gather: Vec<(String, Option<i64>)>,
    /// (issue 8 audit #43, #46) An upper bound on this access's share of
    /// the function's estimated global traffic, in per mille (see
    /// [`traffic_shares`]); `None` when it cannot be bounded (a loop of
    /// unknown trip count around it, an unknown index).
    pub share_permille: Option<u32>,
    /// (audit 20261203 #45) Another access of the same array with the same
    /// lane strides inside a loop this one is not in (`od[y * w]` before
    /// `for (x …) od[y * w + x]`): that one (index into
    /// `Function::accesses`) repeats the pattern and carries its cost.
    pub repeated_by: Option<usize>,
    /// (issue 8 audit #43) A sparse sample: outside every loop, alone (no
    /// group), each lane reads one element at this many bytes from the
    /// next lane's, at least a line apart, with the rest of the index a
    /// multiple of the lane stride (no other block or warp reads the
    /// elements in between): the lane stride in elements and bytes.
    pub sparse: Option<(i64, i64)>,
    /// (issue 8, session 13; audit 20261217 #64, llm.c's `dim3
    /// blockDim(s, s)` with `s` from the command line) The block's x size is
    /// not known and its y size may exceed 1: the cost above is for rows
    /// of a warp's width or more. With narrower rows a warp covers several
    /// values of threadIdx.y; `(row width, sectors)` of the narrowest such
    /// rows (1 to 16 threads wide) that touch fewer sectors, when some do.
    pub narrow_rows: Option<(u32, u32)>,
}

/// The rows of a warp under a symbolic row stride whose sectors are those
/// of whole elements (see [`GlobalAccessCost::row_runs`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RowRuns {
    /// Rows of the warp.
    pub rows: u32,
    /// Lanes per row.
    pub lanes_per_row: u32,
    /// The symbolic row stride (elements).
    pub stride: String,
    /// Each row starts where row 0's alignment does when the stride is a
    /// multiple of this many elements (stride × element size a multiple of
    /// the sector).
    pub multiple: i64,
    /// Whether the index's constant offset keeps row 0's element start
    /// sector-aligned (else every row may straddle one more sector).
    pub offset_aligned: bool,
    /// (session 7, audit #45) When the whole elements laid end to end
    /// would take fewer sectors, but one run of the warp's lanes at their
    /// x stride would not: that stride in bytes (each lane's record, a
    /// 4-float pixel `(float*)(row) + 4 * x`). `None`: whole elements.
    pub lane_stride_bytes: Option<i64>,
}

/// Lane coordinates (x, y) of the `warp` lanes of a full warp: consecutive
/// `threadIdx.x`, wrapping into the next row when blockDim.x < warp (unknown
/// blockDim.x counts as a full row).
///
/// (audit 20261208 #22, Needleman-Wunsch's 16-thread blocks) A block of
/// fewer threads than a warp, all three dimensions known, fills only that
/// many lanes: the warp is the block.
pub fn lanes(launch: &LaunchDims, warp: u32) -> Vec<(i64, i64)> {
    let w = i64::from(warp.max(1));
    let bx = launch.block[0].map(|b| b as i64).unwrap_or(w).max(1);
    let n = match launch.block {
        [Some(x), Some(y), Some(z)] => (i64::from(x) * i64::from(y) * i64::from(z)).clamp(1, w),
        _ => w,
    };
    (0..n)
        .map(|l| if bx >= w { (l, 0) } else { (l % bx, l / bx) })
        .collect()
}

/// The element index of an access as an affine form (flattening
/// multi-dimensional arrays with known extents). For an access through a
/// local pointer (`T* p = base + off; p[i]` or `p->f`), the pointer's own
/// offset is added: the address is `base + off + i`.
///
/// The pointer's offset counts its own pointee type; an access through a
/// cast (`*(uint32_t*)p` with `uint8_t* p`) counts the accessed element, so
/// the offset is converted (`None` when the units do not divide).
pub fn index_form(cx: &AffineCx<'_>, a: &Access) -> Option<Affine> {
    let pointer = cx.local_pointer_form(a);
    let form = subscript_form(cx, a)?;
    Some(match pointer {
        Some(p) => {
            let pointee = a
                .var
                .and_then(|v| cx.function().var(v).ty.element().and_then(|t| t.bytes()));
            let p = match (pointee, a.elem_bytes) {
                (Some(from), Some(to)) => p.rescale(from, to)?,
                _ => p,
            };
            form.add_form(&p)
        }
        None => form,
    })
}

fn subscript_form(cx: &AffineCx<'_>, a: &Access) -> Option<Affine> {
    let mut acc: Option<Affine> = None;
    for (i, idx) in a.indices.iter().enumerate() {
        let f = cx.form(*idx);
        acc = Some(match acc {
            None => f,
            Some(prev) => {
                let extent = *a.dims.get(i)?;
                prev.times(extent? as i64).add_form(&f)
            }
        });
    }
    acc
}

/// Cost of every global access of `f` not in a single-thread region.
#[allow(clippy::too_many_arguments)]
pub fn global_costs(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    spaces: &[MemSpace],
    active: &super::lanes::ActiveLanes,
    single_thread: &dyn Fn(&Access) -> bool,
    cost: &CostModel,
) -> Vec<GlobalAccessCost> {
    let mut out = Vec::new();
    let lanes = lanes(launch, cost.warp);
    // With sectors as large as lines (`sector_bytes = 128`, GPUDrano's
    // unit) the model counts each instruction's L1 transactions: an L1 hit
    // of a later statement still costs its own, and a small cost is still
    // a cost. Sector reuse across statements, loop chunks, halo columns and
    // once-per-block guards then do not apply (fields of one statement
    // still share one instruction's transactions).
    let per_instruction = cost.sector_bytes >= cost.line_bytes;
    let plan = share_plan(f, cx, per_instruction);
    let chunks = if per_instruction {
        Default::default()
    } else {
        chunk_loops(f)
    };
    let in_loop = enclosing_loops(f);
    let defs = super::reuse::single_defs(f);
    // Whether the function indexes its block by rows (threadIdx.y or
    // blockDim.y): only then can a block of unknown shape have several.
    let reads_y = f.exprs.iter().any(|e| {
        matches!(
            e.kind,
            crate::ir::ExprKind::Builtin(
                crate::ir::Builtin::ThreadIdx(crate::ir::Dim::Y)
                    | crate::ir::Builtin::BlockDim(crate::ir::Dim::Y)
            )
        )
    });
    let once = if per_instruction {
        BTreeSet::new()
    } else {
        once_per_block_guarded(f)
    };
    for (i, a) in f.accesses.iter().enumerate() {
        if spaces.get(i).copied().unwrap_or(a.space) != MemSpace::Global || single_thread(a) {
            continue;
        }
        let (Some(elem), Some(k)) = (a.elem_bytes, a.access_bytes) else {
            continue;
        };
        // (audit C3, M1) Sectors another access of the same thread already
        // brought in: a re-read, a stencil neighbour. Not costed again.
        if plan.covered[i].is_some() {
            continue;
        }
        // (audit C5) Under `blockIdx.d == c && threadIdx.e == c'`: one row
        // or column of threads in the selected blocks, once per launch:
        // negligible next to the kernel's other traffic.
        if once.contains(&a.stmt.0) {
            continue;
        }
        let group = plan.span.get(&i).map(|(lo, len, _)| (*lo, *len));
        let costed = plan.span.get(&i).map_or(i, |(_, _, l)| *l);
        let (field, k) = match group {
            Some((lo, len)) => (lo, len),
            None => (a.field_offset.unwrap_or(0) as i64, k.max(1) as i64),
        };
        let grouped = plan.member_of[i].is_some();
        let elem = elem as i64;
        if a.indices.iter().any(|e| from_memory(u, *e)) {
            out.push(GlobalAccessCost {
                access: i,
                sectors: Sectors::DataDependent,
                min_sectors: 1,
                form: Affine::unknown_form(),
                misaligned_rows: None,
                fields: None,
                grouped,
                row_runs: None,
                halo: false,
                gather: loaded_values(f, u, cx, a),
                share_permille: None,
                repeated_by: None,
                sparse: None,
                narrow_rows: None,
            });
            continue;
        }
        let Some(form) = index_form(cx, &f.accesses[costed]) else {
            continue;
        };
        // (audit C1c) `a[S * tid + k]` inside `for (k = 0; k < S; ++k)`:
        // across the loop each lane uses its whole chunk of S elements.
        let mut chunk_note = None;
        let (form, elem, k, field) = if group.is_none() && k == elem {
            match chunk_form(f, &defs, &chunks, a, &form) {
                Some(Chunk::Sized(form2, s)) if elem * s <= i64::from(cost.line_bytes) => {
                    (form2, elem * s, k * s, 0)
                }
                Some(Chunk::Symbolic(name)) => {
                    chunk_note = Some(name);
                    (form, elem, k, field)
                }
                _ => (form, elem, k, field),
            }
        } else {
            (form, elem, k, field)
        };
        let worst = match active.warps(a.stmt) {
            Some(warps) if !warps.is_empty() => warps
                .iter()
                .map(|w| lane_cost(i, form.clone(), elem, k, field, w, cost))
                .max_by_key(|c| c.sectors.upper_bound())
                .unwrap_or_else(|| lane_cost(i, form.clone(), elem, k, field, &lanes, cost)),
            _ => lane_cost(i, form.clone(), elem, k, field, &lanes, cost),
        };
        let narrow_rows = (launch.block[0].is_none()
            && launch.block[1] != Some(1)
            && reads_y
            && active.warps(a.stmt).is_none_or(|w| w.is_empty()))
        .then(|| {
            let full = worst.sectors.upper_bound();
            let w = i64::from(cost.warp.max(1));
            let mut best: Option<(u32, u32)> = None;
            let mut bx = w / 2;
            // A known y size bounds the rows one warp can span.
            let min_bx = launch.block[1].map_or(1, |by| (w / i64::from(by.max(1))).max(1));
            while bx >= min_bx {
                let rows: Vec<(i64, i64)> = (0..w).map(|l| (l % bx, l / bx)).collect();
                let n = lane_cost(i, form.clone(), elem, k, field, &rows, cost)
                    .sectors
                    .upper_bound();
                if n < full && best.is_none_or(|(_, b)| n < b) {
                    best = Some((bx as u32, n));
                }
                bx /= 2;
            }
            best
        })
        .flatten();
        let mut c = GlobalAccessCost {
            fields: group,
            grouped,
            halo: plan.halo.contains(&i),
            narrow_rows,
            ..worst
        };
        if group.is_none() && !in_loop.contains_key(&a.stmt.0) {
            c.sparse = sparse_sample(&c, elem, cost);
        }
        // A chunk of symbolic size: per iteration the bound holds; when the
        // chunk is short the later iterations hit the sectors the first
        // fetched. Say so.
        if let (Some(name), Sectors::UpTo(_, cause)) = (chunk_note, &mut c.sectors) {
            cause.push_str(&format!(
                "; the enclosing loop accesses each lane's whole chunk of `{name}` elements, so when \
                 `{name}` is small (a chunk of up to {} B) its later iterations reuse the sectors \
                 the first one fetched",
                cost.line_bytes
            ));
        }
        out.push(c);
    }
    out
}

/// (issue 8 audit #43, #46) Bound each reported access's share of the
/// function's global traffic, estimated per block in sectors: each costed
/// access counts its sectors per warp × the warps of the block that run it
/// × the trip counts of its enclosing loops. For the access itself the
/// upper bounds (its worst sector count, the loops' largest trip counts;
/// no bound when a loop's count is unknown), for the others the lower ones
/// (the sectors their bytes need, the loops' smallest trip counts, a loop
/// of unknown count once): the result is an upper bound on the share.
pub fn traffic_shares(
    f: &Function,
    launch: &LaunchDims,
    active: &super::lanes::ActiveLanes,
    loops: &super::loops::LoopFacts,
    cost: &CostModel,
    global: &mut [GlobalAccessCost],
) {
    let enclosing = enclosing_loops(f);
    mark_repeated(f, &enclosing, global);
    let block_warps: Option<u64> = match launch.block {
        [Some(x), Some(y), Some(z)] => {
            Some((u64::from(x) * u64::from(y) * u64::from(z)).div_ceil(u64::from(cost.warp.max(1))))
        }
        _ => None,
    };
    let sector = u64::from(cost.sector_bytes.max(1));
    // (lower, upper) weights of each entry.
    let weights: Vec<(u64, Option<u64>)> = global
        .iter()
        .map(|g| {
            let a = &f.accesses[g.access];
            let warps = match active.warps(a.stmt) {
                Some(w) => Some(w.len() as u64),
                None => block_warps,
            };
            let (mut lo, mut hi) = (warps.unwrap_or(1), warps);
            for l in enclosing.get(&a.stmt.0).into_iter().flatten() {
                let (tl, th) = trip_bounds(f, launch, loops, *l);
                lo = lo.saturating_mul(tl);
                hi = match (hi, th) {
                    (Some(h), Some(t)) => Some(h.saturating_mul(t)),
                    _ => None,
                };
            }
            (lo, hi)
        })
        .collect();
    let own_upper = |g: &GlobalAccessCost| -> Option<u64> {
        let a = &f.accesses[g.access];
        match &g.sectors {
            Sectors::Exact {
                actual, aligned, ..
            } => Some(u64::from((*actual).max(*aligned))),
            Sectors::UpTo(n, _) => Some(u64::from(*n)),
            Sectors::DataDependent => a
                .access_bytes
                .map(|k| u64::from(cost.warp) * k.div_ceil(sector).max(1)),
            Sectors::Unknown => None,
        }
    };
    let lower = |g: &GlobalAccessCost| -> u64 {
        match &g.sectors {
            Sectors::Exact { aligned, .. } => u64::from(*aligned).max(u64::from(g.min_sectors)),
            _ => u64::from(g.min_sectors),
        }
    };
    let lows: Vec<u64> = global
        .iter()
        .zip(&weights)
        .map(|(g, w)| {
            if g.grouped {
                0
            } else {
                lower(g).saturating_mul(w.0)
            }
        })
        .collect();
    let total_low: u64 = lows.iter().fold(0u64, |a, b| a.saturating_add(*b));
    for (i, g) in global.iter_mut().enumerate() {
        if g.grouped {
            continue;
        }
        let (Some(own), Some(w)) = (own_upper(g), weights[i].1) else {
            continue;
        };
        let own = own.saturating_mul(w);
        let others = total_low - lows[i];
        let total = own.saturating_add(others);
        if total == 0 {
            continue;
        }
        g.share_permille = Some(((own as u128 * 1000).div_ceil(total as u128)).min(1000) as u32);
    }
}

/// Sets [`GlobalAccessCost::repeated_by`]: for an access with a lane
/// stride, another access of the same array whose lane coefficients are
/// the same, whose loops extend this one's by at least one (it runs in a
/// loop around which this one does not), and which costs at least as many
/// sectors per warp.
fn mark_repeated(
    f: &Function,
    enclosing: &std::collections::HashMap<u32, Vec<crate::ir::StmtId>>,
    global: &mut [GlobalAccessCost],
) {
    let none = Vec::new();
    let loops_of =
        |g: &GlobalAccessCost| enclosing.get(&f.accesses[g.access].stmt.0).unwrap_or(&none);
    let found: Vec<Option<usize>> = global
        .iter()
        .map(|g| {
            let a = &f.accesses[g.access];
            if g.grouped || g.form.coef.iter().all(|c| *c == Coef::Int(0)) {
                return None;
            }
            let mine = loops_of(g);
            global
                .iter()
                .find(|h| {
                    let b = &f.accesses[h.access];
                    let theirs = loops_of(h);
                    h.access != g.access
                        && b.array == a.array
                        && h.form.coef == g.form.coef
                        && theirs.len() > mine.len()
                        && theirs.starts_with(mine)
                        && h.sectors.upper_bound() >= g.sectors.upper_bound()
                        && h.sectors.upper_bound() != u32::MAX
                })
                .map(|h| h.access)
        })
        .collect();
    for (g, r) in global.iter_mut().zip(found) {
        g.repeated_by = r;
    }
}

/// For each statement: the loops around it (outermost first).
fn enclosing_loops(f: &Function) -> std::collections::HashMap<u32, Vec<crate::ir::StmtId>> {
    use crate::ir::StmtKind;
    fn walk(
        f: &Function,
        s: crate::ir::StmtId,
        stack: &mut Vec<crate::ir::StmtId>,
        out: &mut std::collections::HashMap<u32, Vec<crate::ir::StmtId>>,
    ) {
        let is_loop = matches!(
            f.stmt(s).kind,
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
        );
        if is_loop {
            stack.push(s);
        }
        if !stack.is_empty() {
            out.insert(s.0, stack.clone());
        }
        for c in f.child_stmts(s) {
            walk(f, c, stack, out);
        }
        if is_loop {
            stack.pop();
        }
    }
    let mut out = std::collections::HashMap::new();
    if let Some(b) = f.body {
        walk(f, b, &mut Vec::new(), &mut out);
    }
    out
}

/// (smallest, largest) trip count of loop `s` over the block's threads:
/// exact when its guard variable's values are known; else from each
/// conjunct `v < B` / `v <= B` of its condition whose variable steps by a
/// constant (`+=`, `++`) from a constant or `c + threadIdx.x` (block-stride
/// loops) to a constant bound: the loop runs at most as often as the
/// fewest of them allows. Unknown: (1, `None`).
fn trip_bounds(
    f: &Function,
    launch: &LaunchDims,
    loops: &super::loops::LoopFacts,
    s: crate::ir::StmtId,
) -> (u64, Option<u64>) {
    use crate::ir::{BinOp, ExprKind};
    let Some(l) = loops.get(s) else {
        return (1, None);
    };
    if let Some(v) = &l.values {
        let n = v.len() as u64;
        return (n, Some(n));
    }
    let Some(cond) = l.cond else {
        return (1, None);
    };
    let mut conjuncts = Vec::new();
    let mut stack = vec![cond];
    while let Some(e) = stack.pop() {
        match &f.expr(super::loops::strip(f, e)).kind {
            ExprKind::Binary(BinOp::LogAnd, a, b) => {
                stack.push(*a);
                stack.push(*b);
            }
            _ => conjuncts.push(e),
        }
    }
    // A conjunct that is not such a counter (`i < n` with `i` from a
    // block index: a boundary guard) is taken not to cut the loop short for
    // the smallest count; a loop none of whose conjuncts is one runs once.
    let bounds: Vec<(Option<u64>, u64)> = conjuncts
        .into_iter()
        .filter_map(|c| conjunct_trips(f, launch, l, c))
        .collect();
    let upper = bounds.iter().map(|b| b.1).min();
    let lower = bounds
        .iter()
        .map(|b| b.0)
        .try_fold(u64::MAX, |m, x| x.map(|x| m.min(x)))
        .filter(|m| *m != u64::MAX)
        .unwrap_or(1);
    (lower.min(upper.unwrap_or(u64::MAX)), upper)
}

/// Trip counts (smallest if known, largest) one conjunct `v < B` of a
/// loop condition allows (see [`trip_bounds`]).
fn conjunct_trips(
    f: &Function,
    launch: &LaunchDims,
    l: &super::loops::LoopInfo,
    c: ExprId,
) -> Option<(Option<u64>, u64)> {
    use crate::ir::{BinOp, Builtin, Dim, ExprKind};
    let strip = |e: ExprId| super::loops::strip(f, e);
    let ExprKind::Binary(op @ (BinOp::Lt | BinOp::Le), v, b) = &f.expr(strip(c)).kind else {
        return None;
    };
    let ExprKind::Var(var) = f.expr(strip(*v)).kind else {
        return None;
    };
    let iv = l.vars.iter().find(|x| x.var == var)?;
    if iv.op != super::loops::StepOp::Add {
        return None;
    }
    let step = match iv.step {
        Some(e) => super::loops::launch_const(f, e, launch)?,
        None => 1,
    };
    let bound =
        super::loops::launch_const(f, *b, launch)?.saturating_add(i64::from(*op == BinOp::Le));
    if step <= 0 {
        return None;
    }
    let init = iv.init?;
    let tid = |e: ExprId| {
        matches!(
            f.expr(strip(e)).kind,
            ExprKind::Builtin(Builtin::ThreadIdx(Dim::X))
        )
    };
    // init = c, threadIdx.x, or c + threadIdx.x (either order).
    let (start, spread) = match super::loops::launch_const(f, init, launch) {
        Some(c) => (c, false),
        None if tid(init) => (0, true),
        None => match &f.expr(strip(init)).kind {
            ExprKind::Binary(BinOp::Add, a, b) if tid(*a) => {
                (super::loops::launch_const(f, *b, launch)?, true)
            }
            ExprKind::Binary(BinOp::Add, a, b) if tid(*b) => {
                (super::loops::launch_const(f, *a, launch)?, true)
            }
            _ => return None,
        },
    };
    let trips =
        |from: i64| -> u64 { (bound.saturating_sub(from).max(0) as u64).div_ceil(step as u64) };
    let lower = if spread {
        launch.block[0].map(|bx| trips(start.saturating_add(i64::from(bx) - 1)))
    } else {
        Some(trips(start))
    };
    Some((lower, trips(start)))
}

/// (audit #43) See [`GlobalAccessCost::sparse`]: an exact cost whose only
/// lane coefficient is an integer `c` with `c × elem` at least a line, a
/// constant offset and a rest that is a multiple of `c`.
fn sparse_sample(g: &GlobalAccessCost, elem: i64, cost: &CostModel) -> Option<(i64, i64)> {
    if !matches!(g.sectors, Sectors::Exact { .. }) {
        return None;
    }
    let Coef::Int(c) = g.form.coef[0] else {
        return None;
    };
    let c = c.abs();
    let bytes = c.checked_mul(elem)?;
    let others_zero = g.form.coef[1..].iter().all(|x| x.is_zero());
    let rest_ok =
        g.form.rest_multiple == 0 || (c > 0 && g.form.rest_multiple.is_multiple_of(c as u64));
    (others_zero
        && rest_ok
        && g.form.offset.is_some()
        && bytes >= i64::from(cost.line_bytes)
        && cost.sector_bytes < cost.line_bytes)
        .then_some((c, bytes))
}

/// How the accesses of one thread share sectors (from [`super::reuse`]).
struct SharePlan {
    /// Per access: another access whose sectors hold this one's bytes (a
    /// re-read, a stencil neighbour); it is not costed.
    covered: Vec<Option<usize>>,
    /// Per access: the group carrier, for the group's other members.
    member_of: Vec<Option<usize>>,
    /// For a group's members: the byte range the group uses of each lane's
    /// data, relative to the group's lowest element, and that element's
    /// access (whose index form costs the group).
    span: std::collections::HashMap<usize, (i64, i64, usize)>,
    /// Carriers of stencils with neighbours on both sides (audit M1).
    halo: BTreeSet<usize>,
}

/// (issue 8 audit C1, C1b, C3, C6, M1) Re-reads are covered by the first
/// access; a group of accesses at several constant offsets or fields of
/// one base index is costed once over the bytes they use together, unless
/// the lanes' ranges overlap (stride below the group's extent: a stencil),
/// where the neighbours' sectors are the centre's (`a[p]`, else the first).
/// When what a group leaves unused of each lane's record (element, or
/// stride × element) is no larger than its widest member (padding, the one
/// component a statement skips), the whole record counts as used.
fn share_plan(f: &Function, cx: &AffineCx<'_>, per_statement: bool) -> SharePlan {
    let r = super::reuse::compute(f);
    let n = f.accesses.len();
    let same_stmt = |a: usize, b: usize| f.accesses[a].stmt == f.accesses[b].stmt;
    let mut plan = SharePlan {
        covered: r
            .reread_of
            .iter()
            .enumerate()
            .map(|(i, c)| c.filter(|p| !per_statement || same_stmt(i, *p)))
            .collect(),
        member_of: vec![None; n],
        span: std::collections::HashMap::new(),
        halo: BTreeSet::new(),
    };
    // Per statement only: split each group by statement.
    let groups: Vec<super::reuse::Group> = if per_statement {
        let mut out = Vec::new();
        for g in &r.groups {
            let mut by: std::collections::BTreeMap<u32, Vec<super::reuse::Member>> =
                std::collections::BTreeMap::new();
            for m in &g.members {
                by.entry(f.accesses[m.access].stmt.0).or_default().push(*m);
            }
            out.extend(by.into_values().map(|members| super::reuse::Group {
                elem: g.elem,
                members,
            }));
        }
        out
    } else {
        r.groups.clone()
    };
    for g in &groups {
        let Some(first) = g.members.first() else {
            continue;
        };
        let elem = g.elem.max(1);
        let stride = index_form(cx, &f.accesses[first.access]).and_then(|fm| match fm.coef[0] {
            Coef::Int(c) => Some(c.abs()),
            _ => None,
        });
        let ks: BTreeSet<i64> = g.members.iter().map(|m| m.k).collect();
        let (kmin, kmax) = (
            ks.first().copied().unwrap_or(0),
            ks.last().copied().unwrap_or(0),
        );
        let extent = kmax - kmin + 1;
        let stencil = ks.len() > 1 && stride.is_some_and(|s| s < extent);
        let members: Vec<super::reuse::Member> = if stencil {
            let centre = if ks.contains(&0) { 0 } else { first.k };
            let carrier = g
                .members
                .iter()
                .find(|m| m.k == centre)
                .map(|m| m.access)
                .unwrap_or(first.access);
            for m in g.members.iter().filter(|m| m.k != centre) {
                plan.covered[m.access] = Some(carrier);
            }
            // (audit #36) Neighbours on both sides of the index (`h[i + 1]
            // - h[i - 1]`, no centre read): whatever alignment the carrier
            // has, the lanes need the halo's sectors on both sides.
            if kmin < 0 && kmax > 0 {
                plan.halo.insert(carrier);
            }
            g.members
                .iter()
                .filter(|m| m.k == centre)
                .copied()
                .collect()
        } else {
            g.members.clone()
        };
        let distinct: BTreeSet<(i64, i64, i64)> =
            members.iter().map(|m| (m.k, m.lo, m.len)).collect();
        if distinct.len() < 2 {
            continue;
        }
        let carrier = members[0];
        // The group is costed from its lowest element (its address is the
        // group's start): `lo` is relative to that element.
        let lowest = members
            .iter()
            .min_by_key(|m| (m.k, m.access))
            .copied()
            .unwrap_or(carrier);
        let base = lowest.k * elem;
        let lo = members.iter().map(|m| m.k * elem + m.lo).min().unwrap_or(0);
        let hi = members
            .iter()
            .map(|m| m.k * elem + m.lo + m.len)
            .max()
            .unwrap_or(0);
        let widest = members.iter().map(|m| m.len).max().unwrap_or(0);
        // (session 15) With the lanes' stride unknown (`src[tx * w]` and
        // `src[tx * w + 33]`), members with more than a sector between them
        // are separate accesses, not one record each lane reads whole
        // (`pos[i]`, `pos[i + 1]`, `pos[i + 2]` of `float4`s still are).
        if stride.is_none() {
            let mut ranges: Vec<(i64, i64)> = members
                .iter()
                .map(|m| (m.k * elem + m.lo, m.k * elem + m.lo + m.len))
                .collect();
            ranges.sort_unstable();
            let mut end = ranges.first().map_or(0, |r| r.1);
            let mut gap = false;
            for (a, b) in ranges.iter().skip(1) {
                gap |= *a - end > 32;
                end = end.max(*b);
            }
            if gap {
                continue;
            }
        }
        let one_element = members.iter().all(|m| m.k == carrier.k);
        let record = if one_element {
            elem
        } else {
            stride.filter(|s| *s > 0).map(|s| s * elem).unwrap_or(elem)
        };
        let (lo, len) = if hi - lo <= record && record - (hi - lo) <= widest {
            if one_element {
                (0, elem)
            } else {
                (lo - base, record)
            }
        } else {
            (lo - base, hi - lo)
        };
        // Every member carries the group's cost (the access facts of each
        // say what the group touches); only the first is reported.
        for m in &members {
            plan.span.insert(m.access, (lo, len, lowest.access));
            if m.access != carrier.access {
                plan.member_of[m.access] = Some(carrier.access);
            }
        }
    }
    plan
}

/// (audit C5) Statements inside the `then` of a condition whose
/// conjuncts include a block-index equality (`blockIdx.y == 0`, or a local
/// holding it) and a thread-index equality (`threadIdx.y == 0`): run by at
/// most one row, column or slice of threads of the blocks selected.
fn once_per_block_guarded(f: &Function) -> BTreeSet<u32> {
    use crate::ir::{BinOp, Builtin, ExprKind, StmtKind};
    let defs = super::reuse::single_defs(f);
    fn builtin(
        f: &Function,
        defs: &std::collections::HashMap<u32, ExprId>,
        e: ExprId,
        depth: u32,
    ) -> Option<Builtin> {
        match &f.expr(e).kind {
            ExprKind::Builtin(b) => Some(*b),
            ExprKind::Cast(_, x) => builtin(f, defs, *x, depth),
            ExprKind::Var(v) if depth < 4 => builtin(f, defs, *defs.get(&v.0)?, depth + 1),
            _ => None,
        }
    }
    let guard = |cond: ExprId| -> bool {
        let (mut block, mut thread) = (false, false);
        let mut stack = vec![cond];
        while let Some(e) = stack.pop() {
            match &f.expr(e).kind {
                ExprKind::Binary(BinOp::LogAnd, l, r) => {
                    stack.push(*l);
                    stack.push(*r);
                }
                ExprKind::Binary(BinOp::Eq, l, r) => {
                    let side = match (&f.expr(*l).kind, &f.expr(*r).kind) {
                        (ExprKind::Int(_), _) => *r,
                        (_, ExprKind::Int(_)) => *l,
                        _ => continue,
                    };
                    match builtin(f, &defs, side, 0) {
                        Some(Builtin::BlockIdx(_)) => block = true,
                        Some(Builtin::ThreadIdx(_)) => thread = true,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        block && thread
    };
    fn walk(
        f: &Function,
        s: crate::ir::StmtId,
        inside: bool,
        guard: &dyn Fn(ExprId) -> bool,
        out: &mut BTreeSet<u32>,
    ) {
        if inside {
            out.insert(s.0);
        }
        if let StmtKind::If { cond, then, els } = &f.stmt(s).kind {
            walk(f, *then, inside || guard(*cond), guard, out);
            if let Some(e) = els {
                walk(f, *e, inside, guard, out);
            }
            return;
        }
        for c in f.child_stmts(s) {
            walk(f, c, inside, guard, out);
        }
    }
    let mut out = BTreeSet::new();
    if let Some(b) = f.body {
        walk(f, b, false, &guard, &mut out);
    }
    out
}

/// The loop fills each lane's chunk (audit C1c).
enum Chunk {
    /// Chunks of this many elements: the form counts chunks.
    Sized(Affine, i64),
    /// Chunks of a symbolic size (`f128::size`, `C`): its text.
    Symbolic(String),
}

/// Counted loops `for (k = 0; k < S; ++k)` (`k++`, `k += 1`): for each
/// statement inside one, the loops' counters and bounds, innermost last.
fn chunk_loops(f: &Function) -> std::collections::HashMap<u32, Vec<(crate::ir::VarId, ExprId)>> {
    use crate::ir::{BinOp, ExprKind, StmtKind};
    fn counted(f: &Function, s: crate::ir::StmtId) -> Option<(crate::ir::VarId, ExprId)> {
        let StmtKind::For {
            init: Some(init),
            cond: Some(cond),
            step: Some(step),
            ..
        } = &f.stmt(s).kind
        else {
            return None;
        };
        let zero = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Int(0));
        let var = match &f.stmt(*init).kind {
            StmtKind::Decl { var, init: Some(e) } if zero(*e) => *var,
            StmtKind::Expr(e) => match &f.expr(*e).kind {
                ExprKind::Assign { op: None, lhs, rhs } if zero(*rhs) => match f.expr(*lhs).kind {
                    ExprKind::Var(v) => v,
                    _ => return None,
                },
                _ => return None,
            },
            _ => return None,
        };
        let is_var = |e: ExprId| matches!(f.expr(e).kind, ExprKind::Var(v) if v == var);
        let bound = match &f.expr(*cond).kind {
            ExprKind::Binary(BinOp::Lt, l, r) if is_var(*l) => *r,
            _ => return None,
        };
        let unit = match &f.expr(*step).kind {
            ExprKind::IncDec {
                target,
                increment: true,
                ..
            } => is_var(*target),
            ExprKind::Assign {
                op: Some(BinOp::Add),
                lhs,
                rhs,
            } => is_var(*lhs) && matches!(f.expr(*rhs).kind, ExprKind::Int(1)),
            _ => false,
        };
        unit.then_some((var, bound))
    }
    fn walk(
        f: &Function,
        s: crate::ir::StmtId,
        stack: &mut Vec<(crate::ir::VarId, ExprId)>,
        out: &mut std::collections::HashMap<u32, Vec<(crate::ir::VarId, ExprId)>>,
    ) {
        if !stack.is_empty() {
            out.insert(s.0, stack.clone());
        }
        let c = counted(f, s);
        if let Some(c) = c {
            stack.push(c);
        }
        for ch in f.child_stmts(s) {
            walk(f, ch, stack, out);
        }
        if c.is_some() {
            stack.pop();
        }
    }
    let mut out = std::collections::HashMap::new();
    if let Some(b) = f.body {
        walk(f, b, &mut Vec::new(), &mut out);
    }
    out
}

/// (audit C1c) When `a`'s last subscript is `E + k` with `k` the counter
/// of an enclosing counted loop whose bound `S` equals the lanes' stride
/// (`S * tid + k`, `idx + k` with `idx = tid * S`): the loop touches each
/// lane's whole chunk of `S` elements. A constant chunk of at most a line
/// (the loop unrolled, its later iterations L1 hits) is costed as one
/// access of the chunk; a longer or symbolic one (a thread per row of `C`
/// elements) keeps its per-iteration cost, the symbolic one with a note.
fn chunk_form(
    f: &Function,
    defs: &std::collections::HashMap<u32, ExprId>,
    loops: &std::collections::HashMap<u32, Vec<(crate::ir::VarId, ExprId)>>,
    a: &Access,
    form: &Affine,
) -> Option<Chunk> {
    use crate::ir::{BinOp, ExprKind};
    let enclosing = loops.get(&a.stmt.0)?;
    let last = *a.indices.last()?;
    let mut addends = Vec::new();
    // (session 7) A local holding a sum (`e = i * 4 + k; out[e]`) adds
    // its addends (single definitions, a few levels deep).
    let mut stack = vec![(last, 0u32)];
    while let Some((e, depth)) = stack.pop() {
        match &f.expr(e).kind {
            ExprKind::Binary(BinOp::Add, l, r) => {
                stack.push((*l, depth));
                stack.push((*r, depth));
            }
            ExprKind::Var(v)
                if depth < 3
                    && !enclosing.iter().any(|(c, _)| c == v)
                    && defs.get(&v.0).is_some_and(|d| {
                        matches!(f.expr(*d).kind, ExprKind::Binary(BinOp::Add, _, _))
                    }) =>
            {
                if let Some(d) = defs.get(&v.0) {
                    stack.push((*d, depth + 1));
                }
            }
            _ => addends.push(e),
        }
    }
    let norm = |s: &str| s.split_whitespace().collect::<String>();
    for (var, bound) in enclosing.iter().rev() {
        let hits = addends
            .iter()
            .filter(|e| matches!(f.expr(**e).kind, ExprKind::Var(v) if v == *var))
            .count();
        if hits != 1 {
            continue;
        }
        let lane = (0..3).find(|d| !matches!(form.coef[*d], Coef::Int(0)))?;
        return match (&form.coef[lane], &f.expr(*bound).kind) {
            (Coef::Int(c), ExprKind::Int(s)) if *s > 1 && c.abs() == *s => {
                let mut g = form.clone();
                for d in 0..3 {
                    match g.coef[d] {
                        Coef::Int(x) if x % s == 0 => g.coef[d] = Coef::Int(x / s),
                        Coef::Int(_) => return None,
                        _ => {}
                    }
                }
                g.offset = None;
                Some(Chunk::Sized(g, *s))
            }
            (Coef::Sym(name), _) if norm(name) == norm(&f.expr_text(*bound)) => {
                Some(Chunk::Symbolic(name.clone()))
            }
            _ => None,
        };
    }
    None
}

/// The cost of one global access for one warp's (active) lanes.
fn lane_cost(
    i: usize,
    form: Affine,
    elem: i64,
    k: i64,
    field: i64,
    lanes: &[(i64, i64)],
    cost: &CostModel,
) -> GlobalAccessCost {
    let sector = i64::from(cost.sector_bytes.max(1));
    let line = i64::from(cost.line_bytes.max(1));
    // A symbolic stride whose values are known: the worst over them.
    if let Some(d) =
        (0..3).find(|d| matches!(form.coef[*d], Coef::Sym(_)) && form.coef_values[*d].is_some())
    {
        let values = form.coef_values[d].clone().unwrap_or_default();
        let name = match &form.coef[d] {
            Coef::Sym(s) => s.clone(),
            _ => String::new(),
        };
        let mut worst: Option<GlobalAccessCost> = None;
        for v in &values {
            let mut g = form.clone();
            g.coef[d] = Coef::Int(*v);
            g.coef_values[d] = None;
            let c = lane_cost(i, g, elem, k, field, lanes, cost);
            if worst
                .as_ref()
                .is_none_or(|w| c.sectors.upper_bound() > w.sectors.upper_bound())
            {
                worst = Some(c);
            }
        }
        if let Some(mut w) = worst {
            let n = w.sectors.upper_bound();
            if n != u32::MAX {
                w.sectors = Sectors::UpTo(
                    n,
                    format!(
                        "stride `{name}` elements, `{name}` ∈ {}",
                        super::banks::describe_values(&values)
                    ),
                );
            }
            w.form = form;
            return w;
        }
    }
    let n_lanes = lanes.len() as i64;
    // Whether the lanes differ in x (d = 0) or y (d = 1); z never varies
    // within a modelled warp.
    let first = lanes.first().copied().unwrap_or((0, 0));
    let varying = |d: usize| -> bool {
        match d {
            0 => lanes.iter().any(|l| l.0 != first.0),
            1 => lanes.iter().any(|l| l.1 != first.1),
            _ => false,
        }
    };
    let mut ints = [0i64; 3];
    let mut bound: Option<String> = None;
    // A symbolic stride between the rows of a warp (blockDim.x < 32):
    // each row is its own run; counted row by row below.
    let mut symbolic_rows = false;
    let mut unknown = false;
    for (d, slot) in ints.iter_mut().enumerate() {
        if !varying(d) {
            continue;
        }
        match &form.coef[d] {
            Coef::Int(c) => *slot = *c,
            Coef::Sym(_) if d == 1 => symbolic_rows = true,
            Coef::Sym(s) => bound = Some(format!("stride `{s}` elements")),
            Coef::Unknown => unknown = true,
        }
    }
    if unknown {
        return GlobalAccessCost {
            access: i,
            sectors: Sectors::Unknown,
            min_sectors: 1,
            form,
            misaligned_rows: None,
            fields: None,
            grouped: false,
            row_runs: None,
            halo: false,
            gather: Vec::new(),
            share_permille: None,
            repeated_by: None,
            sparse: None,
            narrow_rows: None,
        };
    }
    // Elements are naturally aligned: one no wider than a sector sits in one.
    let per_lane = (k + sector - 1) / sector;
    let bytes: Vec<(i64, i64)> = lanes
        .iter()
        .map(|(lx, ly)| {
            let off = (ints[0] * lx + ints[1] * ly) * elem + field;
            (off, off + k - 1)
        })
        .collect();
    let distinct: BTreeSet<i64> = bytes.iter().flat_map(|(s, e)| *s..=*e).collect();
    let min_sectors = ((distinct.len() as i64 + sector - 1) / sector).max(1) as u32;
    if let Some(cause) = bound {
        // (audit 20261208 #22, gaussian `Fan2` in 4x4 blocks: `a[Size * x +
        // y]`) The lanes that share an x share the symbolic term: their
        // bytes are runs a constant apart, each at worst one sector more
        // than its length needs. Without a y that varies, one lane a run.
        let mut by_x: std::collections::BTreeMap<i64, BTreeSet<i64>> = Default::default();
        for ((lx, ly), _) in lanes.iter().zip(&bytes) {
            let off = ints[1] * ly * elem + field;
            by_x.entry(*lx).or_default().extend(off..off + k);
        }
        // Elements are naturally aligned: a run starts at most `sector -
        // unit` bytes into a sector.
        let gcd = |mut a: i64, mut b: i64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a.abs().max(1)
        };
        let unit = if elem > 0 && field % elem == 0 {
            gcd(elem, sector)
        } else {
            1
        };
        let mut runs_sectors = 0i64;
        for set in by_x.values() {
            let mut run_start: Option<i64> = None;
            let mut prev = i64::MIN;
            for b in set.iter().copied().chain(std::iter::once(i64::MAX)) {
                if run_start.is_some() && b != prev + 1 {
                    let len = prev - run_start.unwrap_or(prev) + 1;
                    runs_sectors += (sector - unit + len - 1) / sector + 1;
                    run_start = None;
                }
                if b != i64::MAX && run_start.is_none() {
                    run_start = Some(b);
                }
                prev = b;
            }
        }
        let up_to = runs_sectors.clamp(1, n_lanes * per_lane);
        let distinct_bytes: i64 = by_x.values().map(|s| s.len() as i64).sum();
        // (issue 8, session 13; audit 20261218 #17, gaussian's `Fan2` in
        // 4 x 4 blocks) Swapping the roles of the indices helps only when
        // a warp's rows are wider than it has rows: in a square tile the
        // runs stay as long. Otherwise the row width is the cause.
        let width = lanes.iter().map(|l| l.0).collect::<BTreeSet<_>>().len();
        let rows = lanes.iter().map(|l| l.1).collect::<BTreeSet<_>>().len();
        let cause = if ints[1] == 1 && by_x.values().any(|s| s.len() as i64 > k) {
            if width > rows {
                format!(
                    "{cause}; the index that steps one element from lane to lane is the y one: \
                     with the roles of threadIdx.x and threadIdx.y swapped, consecutive lanes \
                     would access consecutive elements"
                )
            } else {
                format!(
                    "{cause}; the index that steps one element from lane to lane is the y one, \
                     and the lanes that share a threadIdx.x form runs of only {rows} elements \
                     ({width} × {rows} lanes to a warp): in this shape swapping the indices gains \
                     nothing; longer runs need a block longer along the unit-step index, with \
                     threadIdx.x driving it (32 threads wide)"
                )
            }
        } else {
            cause
        };
        return GlobalAccessCost {
            access: i,
            sectors: Sectors::UpTo(up_to as u32, cause),
            min_sectors: ((distinct_bytes + sector - 1) / sector).max(1) as u32,
            form,
            misaligned_rows: None,
            fields: None,
            grouped: false,
            row_runs: None,
            halo: false,
            gather: Vec::new(),
            share_permille: None,
            repeated_by: None,
            sparse: None,
            narrow_rows: None,
        };
    }
    let count = |base: i64, unit: i64| -> u32 {
        let s: BTreeSet<i64> = bytes
            .iter()
            .flat_map(|(s, e)| (base + s).div_euclid(unit)..=(base + e).div_euclid(unit))
            .collect();
        s.len() as u32
    };
    if symbolic_rows {
        // Rows far apart: sectors add up row by row; each row's start
        // alignment is unknown (at most one extra sector per row).
        let row_ids: BTreeSet<i64> = lanes.iter().map(|l| l.1).collect();
        let rows = row_ids.len() as u32;
        let (mut aligned, mut lines, mut total_bytes, mut widest) = (0u32, 0u32, 0i64, 0i64);
        // (audit #42) The bytes of the whole elements each row reads.
        let mut elem_bytes_total = 0i64;
        for r in &row_ids {
            let row_lanes: Vec<(i64, i64)> = bytes
                .iter()
                .zip(lanes.iter())
                .filter(|(_, l)| l.1 == *r)
                .map(|(b, _)| *b)
                .collect();
            let per_row: BTreeSet<i64> = row_lanes
                .iter()
                .flat_map(|(s, e)| s.div_euclid(sector)..=e.div_euclid(sector))
                .collect();
            let row_bytes = row_lanes
                .iter()
                .flat_map(|(s, e)| *s..=*e)
                .collect::<BTreeSet<_>>()
                .len() as i64;
            aligned += per_row.len() as u32;
            lines += per_row
                .iter()
                .map(|s| (s * sector).div_euclid(line))
                .collect::<BTreeSet<_>>()
                .len() as u32;
            total_bytes += row_bytes;
            widest = widest.max(row_bytes);
            elem_bytes_total += row_lanes
                .iter()
                .flat_map(|(s, _)| {
                    let start = s - field;
                    start..start + elem
                })
                .collect::<BTreeSet<_>>()
                .len() as i64;
        }
        // (audit C4) Every lane of a row reads the same bytes (a halo
        // column broadcast to its row): a column needs one sector per row
        // whatever the mapping, so that is the minimum (rows of at least
        // 8 lanes: a column read by many narrow rows stays a finding).
        let per_instruction = cost.sector_bytes >= cost.line_bytes;
        let min_sectors = if widest <= k && rows * 8 <= n_lanes as u32 && !per_instruction {
            aligned
        } else {
            ((total_bytes + sector - 1) / sector).max(1) as u32
        };
        // (issue 8) Rows holding more than one element whose starts a
        // constant offset moves off sector boundaries (`in[(n + 1) * ty + tx
        // + 1]`): the row stride is symbolic, so each row's alignment is
        // unknown and one warp touches up to one more sector per row.
        let offset_misaligns = form
            .offset
            .is_some_and(|o| (o * elem + field).rem_euclid(sector) != 0);
        if aligned <= min_sectors && widest > k && offset_misaligns {
            return GlobalAccessCost {
                access: i,
                sectors: Sectors::Exact {
                    actual: aligned + rows,
                    aligned,
                    lines,
                    alignment_known: false,
                },
                min_sectors,
                form,
                misaligned_rows: Some(rows),
                fields: None,
                grouped: false,
                row_runs: None,
                halo: false,
                gather: Vec::new(),
                share_permille: None,
                repeated_by: None,
                sparse: None,
                narrow_rows: None,
            };
        }
        // (audit #42) More sectors than the bytes used, but no more than
        // the whole elements read would need laid end to end (`ht[i].y` of
        // `float2`, rows of 8 lanes: 2 sectors per row, 8 in all, as 32
        // consecutive `float2` would take): the rows are not the cause;
        // reading part of each element is. The rows stay separate runs of
        // whole sectors when the row stride keeps their alignment.
        let packed = ((elem_bytes_total + sector - 1) / sector).max(1) as u32;
        // (session 7, audit #45) The same lanes laid out as one run (lane
        // `l` at `l` × the x stride): `(T*)(base + y * pitch) + 4 * x` read
        // by rows of 16 lanes needs as many sectors as one run of 32 lanes
        // of 16-byte records would. The rows are a cause only when they
        // need more than that (runs shorter than a sector).
        let one_run = if ints[0] != 0 {
            let s: BTreeSet<i64> = (0..n_lanes)
                .flat_map(|l| {
                    let off = ints[0] * l * elem + field;
                    off.div_euclid(sector)..=(off + k - 1).div_euclid(sector)
                })
                .collect();
            s.len() as u32
        } else {
            0
        };
        if aligned > min_sectors && aligned <= packed.max(one_run) && !per_instruction {
            let stride = match &form.coef[1] {
                Coef::Sym(s) => s.clone(),
                _ => String::new(),
            };
            let multiple = sector / gcd(sector, elem.max(1));
            let offset_aligned = form
                .offset
                .is_some_and(|o| (o * elem).rem_euclid(sector) == 0);
            let spans_sectors = widest > k;
            return GlobalAccessCost {
                access: i,
                sectors: Sectors::Exact {
                    actual: aligned + if spans_sectors { rows } else { 0 },
                    aligned,
                    lines,
                    alignment_known: false,
                },
                min_sectors,
                form,
                misaligned_rows: None,
                fields: None,
                grouped: false,
                row_runs: Some(RowRuns {
                    rows,
                    lanes_per_row: (n_lanes as u32) / rows.max(1),
                    stride,
                    multiple,
                    offset_aligned,
                    lane_stride_bytes: (aligned > packed).then_some(ints[0].abs() * elem),
                }),
                halo: false,
                gather: Vec::new(),
                share_permille: None,
                repeated_by: None,
                sparse: None,
                narrow_rows: None,
            };
        }
        return GlobalAccessCost {
            access: i,
            sectors: if aligned > min_sectors {
                // A row holding more than one element may also start
                // unaligned: at most one more sector per row.
                let misaligned = if widest > k { rows } else { 0 };
                Sectors::UpTo(
                    aligned + misaligned,
                    format!("{rows} rows of the warp, each a separate run"),
                )
            } else {
                Sectors::Exact {
                    actual: aligned,
                    aligned,
                    lines,
                    alignment_known: false,
                }
            },
            min_sectors,
            form,
            misaligned_rows: None,
            fields: None,
            grouped: false,
            row_runs: None,
            halo: false,
            gather: Vec::new(),
            share_permille: None,
            repeated_by: None,
            sparse: None,
            narrow_rows: None,
        };
    }
    let aligned = count(0, sector);
    let lines = count(0, line);
    // (audit C4) The lanes of each row share one address (x stride 0, the
    // rows apart): one sector per row is the minimum for a column (rows of
    // at least 8 lanes).
    let rows = lanes.iter().map(|l| l.1).collect::<BTreeSet<_>>().len() as i64;
    let min_sectors = if ints[0] == 0
        && varying(1)
        && ints[1] != 0
        && rows * 8 <= n_lanes
        && cost.sector_bytes < cost.line_bytes
    {
        min_sectors.max(aligned)
    } else {
        min_sectors
    };
    let rest_aligned = form.rest_multiple == 0 || (form.rest_multiple as i64 * elem) % sector == 0;
    let (actual, alignment_known) = match form.offset {
        Some(o) if rest_aligned => (count(o * elem, sector), true),
        _ => (aligned, false),
    };
    GlobalAccessCost {
        access: i,
        sectors: Sectors::Exact {
            actual,
            aligned,
            lines,
            alignment_known,
        },
        min_sectors,
        form,
        misaligned_rows: None,
        fields: None,
        grouped: false,
        row_runs: None,
        halo: false,
        gather: Vec::new(),
        share_permille: None,
        repeated_by: None,
        sparse: None,
        narrow_rows: None,
    }
}

/// (audit #14) The outermost sub-expressions of `a`'s index that are loaded
/// from memory (`d_iS[row]` in `d_c[d_iS[row] + d_Nr * col]`), each with
/// the integer lane stride (threadIdx.x coefficient) of its own subscript
/// when it is an array read with an affine subscript.
fn loaded_values(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    a: &Access,
) -> Vec<(String, Option<i64>)> {
    use crate::ir::ExprKind;
    let mut out: Vec<(String, Option<i64>)> = Vec::new();
    let mut stack: Vec<ExprId> = a.indices.iter().rev().copied().collect();
    while let Some(e) = stack.pop() {
        if !from_memory(u, e) {
            continue;
        }
        let stride = match &f.expr(e).kind {
            ExprKind::Index { index, .. } => Some(match cx.form(*index).coef[0] {
                Coef::Int(c) => Some(c),
                _ => None,
            }),
            ExprKind::Var(_)
            | ExprKind::Member { .. }
            | ExprKind::Unary(crate::ir::UnOp::Deref, _)
            | ExprKind::Call { .. } => Some(None),
            _ => None,
        };
        match stride {
            Some(st) => {
                let text = f.expr_text(e);
                if !out.iter().any(|(t, _)| *t == text) {
                    out.push((text, st));
                }
            }
            None => {
                let mut ch = f.child_exprs(e);
                ch.reverse();
                stack.extend(ch);
            }
        }
    }
    out
}

fn from_memory(u: &Uniformity, e: ExprId) -> bool {
    u.expr_from_memory
        .get(e.0 as usize)
        .copied()
        .unwrap_or(false)
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}
