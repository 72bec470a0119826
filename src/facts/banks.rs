//! Shared-memory bank conflicts: the conflict degree of one warp's access
//! over 32 banks of 4 bytes (RaCUDA's Conflicts, exact for affine indices).
//! Lanes reading the same word are a broadcast, not a conflict.

use super::affine::Coef;
use super::barriers::LaunchDims;
use super::coalescing::index_form;
use super::stride::AffineCx;
use super::uniformity::Uniformity;
use crate::ir::{Access, Function, MemSpace};
use std::collections::{BTreeMap, BTreeSet};

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
}

/// Bank costs of every shared access outside single-thread regions.
pub fn shared_costs(
    f: &Function,
    u: &Uniformity,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    active: &super::lanes::ActiveLanes,
    spaces: &[MemSpace],
    single_thread: &dyn Fn(&Access) -> bool,
) -> Vec<SharedAccessCost> {
    let lanes = super::coalescing::lanes(launch);
    let mut out = Vec::new();
    for (i, a) in f.accesses.iter().enumerate() {
        if spaces.get(i).copied().unwrap_or(a.space) != MemSpace::Shared || single_thread(a) {
            continue;
        }
        let Some(k) = a.access_bytes else { continue };
        let words_per_lane = k.div_ceil(4).max(1) as u32;
        let unknown = SharedAccessCost {
            access: i,
            degree: None,
            words_per_lane,
            word_stride: None,
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
        let coef = |d: usize| match &form.coef[d] {
            Coef::Int(c) => Some(*c),
            _ => None,
        };
        let Some(cxk) = coef(0) else {
            out.push(unknown);
            continue;
        };
        let field = a.field_offset.unwrap_or(0) as i64;
        // The degree for one warp's active lanes (None: a y coefficient is
        // needed and unknown).
        let warp_degree = |lanes: &[(i64, i64)]| -> Option<u32> {
            let cy = match coef(1) {
                Some(c) => c,
                None if lanes.iter().all(|l| l.1 == lanes[0].1) => 0,
                None => return None,
            };
            let mut banks: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
            for (lx, ly) in lanes {
                let byte = (cxk * lx + cy * ly) * elem as i64 + field;
                for w in 0..words_per_lane as i64 {
                    let word = byte.div_euclid(4) + w;
                    banks.entry(word.rem_euclid(32)).or_default().insert(word);
                }
            }
            Some(banks.values().map(|s| s.len() as u32).max().unwrap_or(1))
        };
        let degree = match active.warps(a.stmt) {
            Some(warps) => warps
                .iter()
                .map(|w| warp_degree(w))
                .try_fold(1u32, |m, d| d.map(|d| m.max(d))),
            None => warp_degree(&lanes),
        };
        let Some(degree) = degree else {
            out.push(unknown);
            continue;
        };
        out.push(SharedAccessCost {
            access: i,
            degree: Some(degree),
            words_per_lane,
            word_stride: Some(cxk * elem as i64 / 4),
        });
    }
    out
}
