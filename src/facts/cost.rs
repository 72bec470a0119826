//! The hardware parameters of the cost model (`[cost]` in `cudalog.toml`):
//! warp width, global-memory sector and line sizes, shared-memory banks.
//! Coalescing, bank conflicts, the findings' messages and the resource
//! bounds all read them from here; the default is today's NVIDIA model
//! (32 threads, 32-byte sectors, 128-byte lines, 32 banks of 4 bytes).

use std::collections::{BTreeMap, BTreeSet};

/// Cost-model parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CostModel {
    /// Threads per warp (1..=64).
    pub warp: u32,
    /// Global-memory sector size in bytes.
    pub sector_bytes: u32,
    /// Global-memory cache line size in bytes.
    pub line_bytes: u32,
    /// Number of shared-memory banks.
    pub banks: u32,
    /// Width of one bank in bytes.
    pub bank_bytes: u32,
    /// (issue 8) Divergent parts of fewer operations than this (see
    /// [`super::divergence::Work`]) under a data-dependent condition (or
    /// in a `?:`/`&&`/`||`) are not reported: the CUDA C++
    /// Programming Guide's "Branch Predication" lets the compiler predicate
    /// instead of branch when a condition controls at most 7 instructions
    /// (likely divergent), so no divergent path exists, and a few
    /// instructions with idle lanes are not worth a reader's time.
    pub divergent_min_ops: u32,
    /// (issue 8, coalescing) An uncoalesced access whose share of its
    /// kernel's estimated global traffic is at most this many percent
    /// (an upper bound, see `coalescing::traffic_shares`) is a note that
    /// states the share, not a warning (0: never demote).
    pub small_access_percent: u32,
}

/// Default of `[cost] divergent_min_ops`: the predication threshold (7
/// instructions) plus one.
pub const DEFAULT_DIVERGENT_MIN_OPS: u32 = 8;

/// Default of `[cost] small_access_percent` (issue 8 audit #43, #46).
pub const DEFAULT_SMALL_ACCESS_PERCENT: u32 = 5;

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            warp: 32,
            sector_bytes: 32,
            line_bytes: 128,
            banks: 32,
            bank_bytes: 4,
            divergent_min_ops: DEFAULT_DIVERGENT_MIN_OPS,
            small_access_percent: DEFAULT_SMALL_ACCESS_PERCENT,
        }
    }
}

/// Why a set of cost-model parameters is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostModelError {
    /// A parameter out of its range.
    #[error("[cost] {key} = {value}: {why}")]
    OutOfRange {
        /// The key.
        key: &'static str,
        /// Its value.
        value: u32,
        /// The accepted range.
        why: &'static str,
    },
}

impl CostModel {
    /// Check the parameters: warp in 1..=64, every size at least 1, a line a
    /// whole number of sectors.
    pub fn validate(&self) -> Result<(), CostModelError> {
        let check = |key, value: u32, ok: bool, why| {
            if ok {
                Ok(())
            } else {
                Err(CostModelError::OutOfRange { key, value, why })
            }
        };
        check(
            "warp",
            self.warp,
            (1..=64).contains(&self.warp),
            "must be in 1..=64",
        )?;
        check(
            "sector_bytes",
            self.sector_bytes,
            (1..=4096).contains(&self.sector_bytes),
            "must be in 1..=4096",
        )?;
        check(
            "line_bytes",
            self.line_bytes,
            self.line_bytes >= self.sector_bytes
                && self.line_bytes <= 65536
                && self.line_bytes.is_multiple_of(self.sector_bytes),
            "must be a multiple of sector_bytes (at most 65536)",
        )?;
        check(
            "banks",
            self.banks,
            (1..=1024).contains(&self.banks),
            "must be in 1..=1024",
        )?;
        check(
            "bank_bytes",
            self.bank_bytes,
            (1..=64).contains(&self.bank_bytes),
            "must be in 1..=64",
        )?;
        check(
            "small_access_percent",
            self.small_access_percent,
            self.small_access_percent <= 100,
            "must be in 0..=100",
        )
    }

    /// Distinct sectors touched by byte ranges `[start, start + len)`.
    pub fn sectors<I: IntoIterator<Item = (i64, i64)>>(&self, ranges: I) -> u32 {
        distinct_units(ranges, self.sector_bytes as i64)
    }

    /// Distinct cache lines touched by byte ranges `[start, start + len)`.
    pub fn lines<I: IntoIterator<Item = (i64, i64)>>(&self, ranges: I) -> u32 {
        distinct_units(ranges, self.line_bytes as i64)
    }

    /// Shared-memory wavefronts of one warp access: the most distinct bank
    /// words any bank serves (lanes reading the same word are a broadcast),
    /// and the fewest wavefronts the same distinct words could take
    /// (`ceil(words / banks)`). Conflicts are the difference.
    pub fn bank_wavefronts<I: IntoIterator<Item = (i64, i64)>>(&self, ranges: I) -> (u32, u32) {
        let bb = self.bank_bytes.max(1) as i64;
        let nb = self.banks.max(1) as i64;
        let mut per_bank: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
        let mut words = 0u32;
        for (start, len) in ranges {
            if len <= 0 {
                continue;
            }
            for w in start.div_euclid(bb)..=(start + len - 1).div_euclid(bb) {
                if per_bank.entry(w.rem_euclid(nb)).or_default().insert(w) {
                    words += 1;
                }
            }
        }
        let degree = per_bank.values().map(|s| s.len() as u32).max().unwrap_or(0);
        (degree, words.div_ceil(self.banks.max(1)))
    }

    /// Extra wavefronts (bank conflicts) of one warp's shared access.
    pub fn bank_conflicts<I: IntoIterator<Item = (i64, i64)>>(&self, ranges: I) -> u32 {
        let (degree, ideal) = self.bank_wavefronts(ranges);
        degree.saturating_sub(ideal)
    }
}

fn distinct_units<I: IntoIterator<Item = (i64, i64)>>(ranges: I, unit: i64) -> u32 {
    let unit = unit.max(1);
    let mut set = BTreeSet::new();
    for (start, len) in ranges {
        if len <= 0 {
            continue;
        }
        for u in start.div_euclid(unit)..=(start + len - 1).div_euclid(unit) {
            set.insert(u);
        }
    }
    set.len() as u32
}

impl From<&crate::config::CostConfig> for CostModel {
    /// The model of a `[cost]` table (check it with [`CostModel::validate`]).
    fn from(c: &crate::config::CostConfig) -> Self {
        CostModel {
            warp: c.warp,
            sector_bytes: c.sector_bytes,
            line_bytes: c.line_bytes,
            banks: c.banks,
            bank_bytes: c.bank_bytes,
            divergent_min_ops: c.divergent_min_ops,
            small_access_percent: c.small_access_percent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_and_banks_follow_the_parameters() {
        let d = CostModel::default();
        let unit: Vec<(i64, i64)> = (0..32).map(|l| (l * 4, 4)).collect();
        assert_eq!(d.sectors(unit.clone()), 4);
        assert_eq!(d.lines(unit.clone()), 1);
        let big = CostModel {
            sector_bytes: 128,
            ..d
        };
        assert_eq!(big.sectors(unit.clone()), 1);
        // Stride 2 words: 2-way; stride 32 words over 8 lanes: 8-way.
        let s2: Vec<(i64, i64)> = (0..32).map(|l| (l * 8, 4)).collect();
        assert_eq!(d.bank_conflicts(s2.clone()), 1);
        let s32: Vec<(i64, i64)> = (0..8).map(|l| (l * 128, 4)).collect();
        assert_eq!(d.bank_conflicts(s32), 7);
        // 16 banks: stride 2 is a 4-way... no: 32 words over 16 banks, even banks only.
        let b16 = CostModel { banks: 16, ..d };
        assert_eq!(b16.bank_wavefronts(s2), (4, 2));
        // Doubles at unit stride need two wavefronts: no conflict.
        let dbl: Vec<(i64, i64)> = (0..32).map(|l| (l * 8, 8)).collect();
        assert_eq!(d.bank_conflicts(dbl), 0);
        assert!(CostModel { warp: 0, ..d }.validate().is_err());
        assert!(
            CostModel {
                line_bytes: 100,
                ..d
            }
            .validate()
            .is_err()
        );
    }
}
