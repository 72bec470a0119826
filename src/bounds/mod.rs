//! Resource bounds (issue 10): the four cost metrics of RaCUDA's lock-step
//! cost semantics, symbolic bound expressions, the AARA/LP stage and the
//! lock-step simulator that serves as the test oracle.
//!
//! Module map:
//! - [`expr`]: bound expressions (render, parse, evaluate);
//! - [`poly`]: uniform integer polynomials over atoms;
//! - [`value`]: per-lane values of the symbolic warp execution;
//! - [`program`]: cost programs (what the LP stage reads);
//! - [`exec`]: the symbolic warp execution that builds a kernel's cost program;
//! - [`kernel`]: per-kernel bounds (`kernel_bounds`), per warp and whole launch;
//! - [`aara`]: the LP stage (potentials found with good_lp/microlp);
//! - [`steps`]: the step costs shared by the simulator and the analysis;
//! - [`simulate`]: the lock-step simulator.

pub mod aara;
pub mod exec;
pub mod expr;
pub mod kernel;
pub mod poly;
pub mod program;
pub mod simulate;
pub mod steps;
pub mod value;

/// One of the four cost metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Global-memory sectors transferred.
    Sectors,
    /// Extra shared-memory wavefronts caused by bank conflicts.
    Conflicts,
    /// Branch or loop tests at which a warp diverges.
    Divwarps,
    /// Operations executed (one per operation, see [`steps`]).
    Steps,
}

impl Metric {
    /// Every metric, in the order of cost arrays.
    pub const ALL: [Metric; 4] = [
        Metric::Sectors,
        Metric::Conflicts,
        Metric::Divwarps,
        Metric::Steps,
    ];
    /// Lower-case name, as in the JSON output and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Sectors => "sectors",
            Metric::Conflicts => "conflicts",
            Metric::Divwarps => "divwarps",
            Metric::Steps => "steps",
        }
    }
}

#[cfg(test)]
mod bound_tests;
#[cfg(test)]
mod sim_tests;
