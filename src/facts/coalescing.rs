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
}

/// Lane coordinates (x, y) of the `warp` lanes of a full warp: consecutive
/// `threadIdx.x`, wrapping into the next row when blockDim.x < warp (unknown
/// blockDim.x counts as a full row).
pub fn lanes(launch: &LaunchDims, warp: u32) -> Vec<(i64, i64)> {
    let w = i64::from(warp.max(1));
    let bx = launch.block[0].map(|b| b as i64).unwrap_or(w).max(1);
    (0..w)
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
    let regions = read_regions(f);
    let groups = field_groups(f, &regions);
    for (i, a) in f.accesses.iter().enumerate() {
        if spaces.get(i).copied().unwrap_or(a.space) != MemSpace::Global || single_thread(a) {
            continue;
        }
        let (Some(elem), Some(k)) = (a.elem_bytes, a.access_bytes) else {
            continue;
        };
        let group = groups.get(&group_key(i, a, &regions)).copied();
        let (field, k) = match group {
            Some(g) => (g.lo, g.len),
            None => (a.field_offset.unwrap_or(0) as i64, k.max(1) as i64),
        };
        let grouped = group.is_some_and(|g| g.first != i);
        let elem = elem as i64;
        if a.indices.iter().any(|e| from_memory(u, *e)) {
            out.push(GlobalAccessCost {
                access: i,
                sectors: Sectors::DataDependent,
                min_sectors: 1,
                form: Affine::unknown_form(),
                misaligned_rows: None,
                fields: None,
                grouped: false,
            });
            continue;
        }
        let Some(form) = index_form(cx, a) else {
            continue;
        };
        let worst = match active.warps(a.stmt) {
            Some(warps) if !warps.is_empty() => warps
                .iter()
                .map(|w| lane_cost(i, form.clone(), elem, k, field, w, cost))
                .max_by_key(|c| c.sectors.upper_bound())
                .unwrap_or_else(|| lane_cost(i, form, elem, k, field, &lanes, cost)),
            _ => lane_cost(i, form, elem, k, field, &lanes, cost),
        };
        out.push(GlobalAccessCost {
            fields: group.map(|g| (g.lo, g.len)),
            grouped,
            ..worst
        });
    }
    out
}

/// Accesses of one statement (or, for reads, one run of straight-line
/// statements) to the same element: same region, array, subscripts,
/// direction and element size.
type GroupKey = ((u32, u32, u32), String, String, bool, Option<u64>);

fn group_key(i: usize, a: &Access, regions: &[(u32, u32, u32)]) -> GroupKey {
    (
        regions.get(i).copied().unwrap_or((a.stmt.0, 0, 0)),
        a.array.clone(),
        a.index_text.clone(),
        a.is_write,
        a.elem_bytes,
    )
}

/// (issue 8 audit C1) For each access (by position): the region whose
/// accesses to one element are costed together. A write's region is its
/// statement. A read's region is the run of straight-line statements
/// (declarations and expression statements, consecutive in one block) that
/// holds it, cut after any statement that writes the same array, passes
/// its pointer to a call, or assigns a variable some access index reads:
/// `p[i].x` in one statement and `p[i].y` in the next are one fetch of the
/// element (the second read hits the sectors the first brought into L1).
/// The triple is (first statement of the run, array epoch, index epoch).
fn read_regions(f: &Function) -> Vec<(u32, u32, u32)> {
    use crate::ir::{ExprKind, StmtKind, UnOp, VarId};
    let mut out: Vec<(u32, u32, u32)> = f.accesses.iter().map(|a| (a.stmt.0, 0, 0)).collect();
    let mut by_stmt: std::collections::HashMap<u32, Vec<usize>> = std::collections::HashMap::new();
    for (i, a) in f.accesses.iter().enumerate() {
        by_stmt.entry(a.stmt.0).or_default().push(i);
    }
    // Variables some access index reads.
    let mut index_vars: BTreeSet<u32> = BTreeSet::new();
    for a in &f.accesses {
        let mut stack: Vec<crate::ir::ExprId> = a.indices.clone();
        while let Some(e) = stack.pop() {
            if let ExprKind::Var(v) = f.expr(e).kind {
                index_vars.insert(v.0);
            }
            stack.extend(f.child_exprs(e));
        }
    }
    // Whether `e` passes the pointer `v` itself (not a value read through it).
    fn passes_pointer(f: &Function, e: crate::ir::ExprId, v: VarId) -> bool {
        match &f.expr(e).kind {
            ExprKind::Var(x) => *x == v,
            ExprKind::Index { .. } | ExprKind::Member { .. } | ExprKind::Unary(UnOp::Deref, _) => {
                false
            }
            _ => f
                .child_exprs(e)
                .into_iter()
                .any(|c| passes_pointer(f, c, v)),
        }
    }
    for st in &f.stmts {
        let StmtKind::Block(children) = &st.kind else {
            continue;
        };
        let mut run_start: Option<u32> = None;
        let mut array_epoch: std::collections::HashMap<&str, u32> =
            std::collections::HashMap::new();
        let mut var_epoch = 0u32;
        for c in children {
            let roots: Vec<crate::ir::ExprId> = match &f.stmt(*c).kind {
                StmtKind::Decl { init, .. } => init.iter().copied().collect(),
                StmtKind::Expr(e) => vec![*e],
                _ => {
                    run_start = None;
                    array_epoch.clear();
                    var_epoch = 0;
                    continue;
                }
            };
            let start = *run_start.get_or_insert(c.0);
            let here = by_stmt.get(&c.0).cloned().unwrap_or_default();
            for &i in &here {
                let a = &f.accesses[i];
                if !a.is_write {
                    let ep = array_epoch.get(a.array.as_str()).copied().unwrap_or(0);
                    out[i] = (start, ep, var_epoch);
                }
            }
            // What this statement changes cuts the following reads off.
            for &i in &here {
                let a = &f.accesses[i];
                if a.is_write {
                    *array_epoch.entry(a.array.as_str()).or_insert(0) += 1;
                }
            }
            let mut stack = roots;
            while let Some(e) = stack.pop() {
                match &f.expr(e).kind {
                    ExprKind::Assign { lhs, .. } => {
                        if let ExprKind::Var(v) = f.expr(*lhs).kind
                            && index_vars.contains(&v.0)
                        {
                            var_epoch += 1;
                        }
                    }
                    ExprKind::IncDec { target, .. } => {
                        if let ExprKind::Var(v) = f.expr(*target).kind
                            && index_vars.contains(&v.0)
                        {
                            var_epoch += 1;
                        }
                    }
                    ExprKind::Call { args, .. } => {
                        for a in f.accesses.iter() {
                            if let Some(v) = a.var
                                && args.iter().any(|x| passes_pointer(f, *x, v))
                            {
                                *array_epoch.entry(a.array.as_str()).or_insert(0) += 1;
                            }
                        }
                    }
                    _ => {}
                }
                stack.extend(f.child_exprs(e));
            }
        }
    }
    out
}

/// The bytes of each element that a statement's accesses to several of its
/// fields use together.
#[derive(Clone, Copy, Debug)]
struct FieldGroup {
    /// First byte used (offset in the element).
    lo: i64,
    /// Bytes from `lo` to the end of the last field used.
    len: i64,
    /// The access that carries the group's cost.
    first: usize,
}

/// (issue 8, class 5) Fields of one element read (or written) by the same
/// statement (`p[i].x + p[i].y`, `uchar4` `.x/.y/.z`) are fetched together:
/// each group is costed once, over the bytes from its first to its last
/// field. When what is left of the element is no larger than the widest
/// field used (padding, or the one component a statement skips), the whole
/// element counts as used: that is not waste a layout change would remove.
fn field_groups(
    f: &Function,
    regions: &[(u32, u32, u32)],
) -> std::collections::HashMap<GroupKey, FieldGroup> {
    let mut spans: std::collections::HashMap<GroupKey, (BTreeSet<(i64, i64)>, usize)> =
        std::collections::HashMap::new();
    for (i, a) in f.accesses.iter().enumerate() {
        let (Some(e), Some(k), Some(off)) = (a.elem_bytes, a.access_bytes, a.field_offset) else {
            continue;
        };
        if k >= e {
            continue;
        }
        let entry = spans
            .entry(group_key(i, a, regions))
            .or_insert_with(|| (BTreeSet::new(), i));
        entry.0.insert((off as i64, k as i64));
    }
    let mut out = std::collections::HashMap::new();
    for (key, (fields, first)) in spans {
        if fields.len() < 2 {
            continue;
        }
        let elem = key.4.unwrap_or(0) as i64;
        let lo = fields.iter().map(|(o, _)| *o).min().unwrap_or(0);
        let hi = fields.iter().map(|(o, k)| o + k).max().unwrap_or(0);
        let widest = fields.iter().map(|(_, k)| *k).max().unwrap_or(0);
        let (lo, len) = if elem - (hi - lo) <= widest {
            (0, elem)
        } else {
            (lo, hi - lo)
        };
        out.insert(key, FieldGroup { lo, len, first });
    }
    out
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
        return GlobalAccessCost {
            access: i,
            sectors: Sectors::UpTo((n_lanes * per_lane) as u32, cause),
            min_sectors: ((n_lanes * k + sector - 1) / sector) as u32,
            form,
            misaligned_rows: None,
            fields: None,
            grouped: false,
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
        }
        let min_sectors = ((total_bytes + sector - 1) / sector).max(1) as u32;
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
        };
    }
    let aligned = count(0, sector);
    let lines = count(0, line);
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
    }
}

fn from_memory(u: &Uniformity, e: ExprId) -> bool {
    u.expr_from_memory
        .get(e.0 as usize)
        .copied()
        .unwrap_or(false)
}
