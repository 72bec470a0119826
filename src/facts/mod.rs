//! Per-function facts derived with Datalog (crepe) from the IR.
//!
//! - [`relations`]: the structural glue that turns one function's IR into
//!   input relations (value flow, definitions, control dependence, exits);
//! - [`uniformity`]: which thread dimensions each value depends on;
//! - [`barriers`]: barrier divergence, classified with launch dimensions.

pub mod barriers;
pub mod dataflow;
pub mod launch;
pub mod relations;
pub mod uniformity;

#[cfg(test)]
mod tests;

pub use barriers::{BarrierVerdict, LaunchDims};
pub use uniformity::Uniformity;

use crate::ir::Function;

/// Everything derived for one function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// The launch dimensions assumed.
    pub launch: LaunchDims,
    /// Thread dependence of expressions and variables.
    pub uniformity: Uniformity,
    /// Barriers some threads can miss.
    pub divergent_barriers: Vec<BarrierVerdict>,
}

impl Analysis {
    /// Run every program on `f`.
    pub fn compute(f: &Function, launch: LaunchDims) -> Analysis {
        let r = relations::build(f);
        let uniformity = Uniformity::compute(&r, f.exprs.len(), f.vars.len());
        let divergent_barriers = barriers::divergent_barriers(f, &r, &uniformity, &launch);
        Analysis {
            launch,
            uniformity,
            divergent_barriers,
        }
    }
}
