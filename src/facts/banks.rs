//! Shared-memory bank conflicts: the conflict degree of one warp's access
//! over the banks of the cost model (32 banks of 4 bytes by default; RaCUDA's
//! Conflicts, exact for affine indices). Lanes reading the same word are a
//! broadcast, not a conflict. A stride with a symbolic factor is not an
//! unknown: when the factor's values are known (a loop variable
//! `s = 1, 2, 4, …`), the degree is the worst over them; otherwise it is
//! "up to" one word per active lane in one bank.

use super::affine::Coef;
use super::barriers::LaunchDims;
use super::coalescing::index_form;
use super::cost::CostModel;
use super::stride::AffineCx;
use super::uniformity::Uniformity;
use crate::ir::{Access, Function, MemSpace};

/// The bank verdict of one shared access.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedAccessCost {
    /// Index into `Function::accesses`.
    pub access: usize,
    /// Most distinct words any bank serves for one warp (`None`: unknown).
    pub degree: Option<u32>,
    /// Words each lane moves (8-byte elements need 2 passes anyway).
    pub words_per_lane: u32,
    /// Word stride between consecutive lanes in x, when an integer.
    pub word_stride: Option<i64>,
    /// Extra wavefronts beyond what the distinct words need (`degree`
    /// minus `ceil(words / banks)`), when known.
    pub conflicts: Option<u32>,
    /// `true` when `degree` is a worst case over values the facts cannot
    /// pin down (a symbolic stride factor without a known value set).
    pub up_to: bool,
    /// The symbolic stride factor (`2 * s`) and, when known, its values.
    pub symbolic: Option<String>,
    /// (session 7) The symbolic factor of unknown value is the stride
    /// between the warp's rows only (`s[ty * pitch + tx]`, blockDim.x <
    /// 32): the most rows of one warp, whose own degrees add up to the
    /// bound `degree` (each row's lanes are exact; only how the rows
    /// overlap on the banks is unknown).
    pub rows: Option<u32>,
    /// (audit 20261203 #11) An earlier read by the same thread of the same
    /// element and bytes, with nothing in between that changes the address
    /// or the data (`reuse::Reuse::reread_of`): the compiler keeps the
    /// value in a register, so this read adds no wavefronts of its own.
    pub reread_of: Option<usize>,
    /// (audit 20261205 #38) As for `rows`, but blockDim.x is not known: the
    /// lanes of a row take consecutive words (no conflict within a row) and
    /// the rows are the symbolic stride apart, so a warp spans
    /// `32 / blockDim.x` rows and the degree is at most that many.
    pub rows_by_width: bool,
}

/// Bank costs of every shared access outside single-thread regions.
#[allow(clippy::too_many_arguments)]
pub fn shared_costs(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    active: &super::lanes::ActiveLanes,
    spaces: &[MemSpace],
    single_thread: &dyn Fn(&Access) -> bool,
    cost: &CostModel,
) -> Vec<SharedAccessCost> {
    let lanes = super::coalescing::lanes(launch, cost.warp);
    let bank_bytes = u64::from(cost.bank_bytes.max(1));
    let mut out = Vec::new();
    let (wide, merged) = adjacent_pairs(f, cx);
    let rereads = super::reuse::compute(f).reread_of;
    for (i, a) in f.accesses.iter().enumerate() {
        if spaces.get(i).copied().unwrap_or(a.space) != MemSpace::Shared || single_thread(a) {
            continue;
        }
        // (audit B2) The other half of a wide access costed on its first
        // element.
        if merged.contains(&i) {
            continue;
        }
        let Some(k) = wide.get(&i).copied().or(a.access_bytes) else {
            continue;
        };
        let words_per_lane = k.div_ceil(bank_bytes).max(1) as u32;
        let unknown = SharedAccessCost {
            access: i,
            degree: None,
            words_per_lane,
            word_stride: None,
            conflicts: None,
            up_to: false,
            symbolic: None,
            rows: None,
            reread_of: rereads.get(i).copied().flatten(),
            rows_by_width: false,
        };
        if a.indices.iter().any(|e| {
            u.expr_from_memory
                .get(e.0 as usize)
                .copied()
                .unwrap_or(false)
        }) {
            out.push(unknown);
            continue;
        }
        let (Some(form), Some(elem)) = (index_form(cx, a), a.elem_bytes) else {
            out.push(unknown);
            continue;
        };
        // The integer values each lane coefficient can take; `None` for a
        // symbolic factor whose values are not known.
        let mut symbolic = None;
        let mut up_to = false;
        // Whether the unknown factor is in the y coefficient only.
        let mut up_to_rows_only = true;
        let mut choices: [Option<Vec<i64>>; 2] = [None, None];
        let mut bad = false;
        // (session 16; audit 20261232 #40, imageDenoising's
        // `threadIdx.y * BLOCKDIM_X + threadIdx.x` launched with
        // `BLOCKDIM_X` threads a row) A y coefficient of `c·blockDim.x` over
        // an x coefficient of `c`, with blockDim.x unknown: `c` times the
        // linear thread index, consecutive across each warp's lanes (which
        // are one row of the warp's size here).
        let linear = launch.block[0].is_none()
            && form.coef[2].is_zero()
            && match (&form.coef[0], &form.coef[1]) {
                (Coef::Int(1), Coef::Sym(s)) => s == "blockDim.x",
                (Coef::Int(c), Coef::Sym(s)) => *s == format!("{c}·blockDim.x"),
                _ => false,
            };
        for (d, slot) in choices.iter_mut().enumerate() {
            if linear && d == 1 {
                *slot = Some(vec![0]);
                continue;
            }
            match &form.coef[d] {
                Coef::Int(c) => *slot = Some(vec![*c]),
                Coef::Sym(s) => match &form.coef_values[d] {
                    Some(v) => {
                        symbolic = Some(format!("`{s}` ∈ {}", describe_values(v)));
                        *slot = Some(v.clone());
                    }
                    None => {
                        symbolic = Some(format!("`{s}`"));
                        up_to = true;
                        up_to_rows_only &= d == 1;
                    }
                },
                Coef::Unknown => bad = true,
            }
        }
        if bad && choices[0].is_none() {
            out.push(unknown);
            continue;
        }
        let field = a.field_offset.unwrap_or(0) as i64;
        let ranges = |cxk: i64, cy: i64, lanes: &[(i64, i64)]| -> Vec<(i64, i64)> {
            lanes
                .iter()
                .map(|(lx, ly)| ((cxk * lx + cy * ly) * elem as i64 + field, k as i64))
                .collect()
        };
        // The (degree, conflicts) for one warp's active lanes (None: a y
        // coefficient is needed and unknown).
        let warp_cost = |lanes: &[(i64, i64)]| -> Option<(u32, u32)> {
            if lanes.is_empty() {
                return Some((1, 0));
            }
            let one_row = lanes.iter().all(|l| l.1 == lanes[0].1);
            // (session 7) Only the row stride is unknown: each row's lanes
            // are exact (y fixed), and a bank serves at most the sum of
            // what each row puts on it.
            // With blockDim.x unknown the rows' width is unknown too (a
            // row may be a single lane): the plain bound below.
            if up_to
                && up_to_rows_only
                && launch.block[0].is_some()
                && let Some(xs) = &choices[0]
            {
                let row_ids: std::collections::BTreeSet<i64> = lanes.iter().map(|l| l.1).collect();
                let mut d = 0u32;
                for r in &row_ids {
                    let row: Vec<(i64, i64)> =
                        lanes.iter().copied().filter(|l| l.1 == *r).collect();
                    let worst = xs
                        .iter()
                        .map(|cxk| cost.bank_wavefronts(ranges(*cxk, 0, &row)).0)
                        .max()
                        .unwrap_or(1);
                    d = d.saturating_add(worst);
                }
                let ideal = (lanes.len() as u32 * words_per_lane).div_ceil(cost.banks.max(1));
                return Some((d, d.saturating_sub(ideal)));
            }
            if up_to {
                // A symbolic factor of unknown value: every active lane may
                // hit the same bank with its own words.
                let d = lanes.len() as u32 * words_per_lane;
                let ideal = (lanes.len() as u32 * words_per_lane).div_ceil(cost.banks.max(1));
                return Some((d, d.saturating_sub(ideal)));
            }
            let xs = choices[0].clone()?;
            let ys = match &choices[1] {
                Some(v) => v.clone(),
                None if one_row => vec![0],
                None => return None,
            };
            let mut worst = (1, 0);
            for cxk in &xs {
                for cy in &ys {
                    let (d, ideal) = cost.bank_wavefronts(ranges(*cxk, *cy, lanes));
                    worst = (worst.0.max(d), worst.1.max(d.saturating_sub(ideal)));
                }
            }
            Some(worst)
        };
        let per_warp: Option<(u32, u32)> = match active.warps(a.stmt) {
            Some(warps) => warps
                .iter()
                .map(|w| warp_cost(w))
                .try_fold((1u32, 0u32), |m, d| d.map(|d| (m.0.max(d.0), m.1.max(d.1)))),
            None => warp_cost(&lanes),
        };
        let Some((degree, conflicts)) = per_warp else {
            out.push(unknown);
            continue;
        };
        let word_stride = match &form.coef[0] {
            Coef::Int(c) => Some(c * elem as i64 / bank_bytes as i64),
            _ => None,
        };
        out.push(SharedAccessCost {
            access: i,
            degree: Some(degree),
            words_per_lane,
            word_stride,
            conflicts: Some(conflicts),
            up_to,
            symbolic,
            reread_of: unknown.reread_of,
            rows_by_width: up_to
                && up_to_rows_only
                && launch.block[0].is_none()
                && choices[0].as_ref().is_some_and(|xs| {
                    xs.iter()
                        .all(|c| c.unsigned_abs() * elem <= bank_bytes && *c != 0)
                }),
            rows: (up_to && up_to_rows_only && launch.block[0].is_some() && choices[0].is_some())
                .then(|| {
                    let rows = |w: &[(i64, i64)]| {
                        w.iter()
                            .map(|l| l.1)
                            .collect::<std::collections::BTreeSet<_>>()
                            .len() as u32
                    };
                    match active.warps(a.stmt) {
                        Some(warps) => warps.iter().map(|w| rows(w)).max().unwrap_or(1),
                        None => rows(&lanes),
                    }
                }),
        });
    }
    out
}

/// (audit B2) Elements `s[c·i]`, `s[c·i + 1]`, …, `s[c·i + c - 1]` read (or
/// written) by one statement, with a lane stride `c` of the elements and
/// at most 16 bytes together: one `c`-element-wide access per lane (a
/// `float2` in two halves), costed once on the lowest element. Returns
/// (carrier → bytes per lane, the other members).
fn adjacent_pairs(
    f: &Function,
    cx: &AffineCx<'_>,
) -> (
    std::collections::HashMap<usize, u64>,
    std::collections::BTreeSet<usize>,
) {
    let mut wide = std::collections::HashMap::new();
    let mut merged = std::collections::BTreeSet::new();
    for g in super::reuse::compute(f).groups {
        // Members of one statement, whole elements only.
        let mut by_stmt: std::collections::BTreeMap<u32, Vec<super::reuse::Member>> =
            std::collections::BTreeMap::new();
        for m in &g.members {
            let a = &f.accesses[m.access];
            if a.space == MemSpace::Shared && m.lo == 0 && m.len == g.elem {
                by_stmt.entry(a.stmt.0).or_default().push(*m);
            }
        }
        for (_, mut ms) in by_stmt {
            ms.sort_by_key(|m| m.k);
            ms.dedup_by_key(|m| m.k);
            let n = ms.len() as i64;
            if n < 2 || ms[ms.len() - 1].k - ms[0].k + 1 != n || n * g.elem > 16 {
                continue;
            }
            let carrier = ms[0].access;
            let stride = index_form(cx, &f.accesses[carrier]).and_then(|fm| match fm.coef[0] {
                Coef::Int(c) => Some(c),
                _ => None,
            });
            if stride != Some(n) {
                continue;
            }
            wide.insert(carrier, (n * g.elem) as u64);
            merged.extend(ms[1..].iter().map(|m| m.access));
        }
    }
    (wide, merged)
}

/// `{1, 2, 4, …, 128}` for long sets, every value for short ones.
pub fn describe_values(v: &[i64]) -> String {
    if v.len() <= 6 {
        let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        return format!("{{{}}}", parts.join(", "));
    }
    format!("{{{}, {}, {}, …, {}}}", v[0], v[1], v[2], v[v.len() - 1])
}
