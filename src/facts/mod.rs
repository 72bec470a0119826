//! Per-function facts derived with Datalog (crepe) from the IR.
//!
//! - [`relations`]: the structural glue that turns one function's IR into
//!   input relations (value flow, definitions, control dependence, exits);
//! - [`uniformity`]: which thread dimensions each value depends on;
//! - [`barriers`]: barrier divergence, classified with launch dimensions.

pub mod barriers;
pub mod relations;
pub mod uniformity;

#[cfg(test)]
mod tests;

pub use barriers::{BarrierVerdict, LaunchDims};
pub use uniformity::Uniformity;
