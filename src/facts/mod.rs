//! Per-function facts derived with Datalog (crepe) from the IR.
//!
//! - [`relations`]: the structural glue that turns one function's IR into
//!   input relations (value flow, definitions, control dependence, exits);
//! - [`uniformity`]: which thread dimensions each value depends on;
//! - [`barriers`]: barrier divergence, classified with launch dimensions.

pub mod affine;
pub mod banks;
pub mod barriers;
pub mod coalescing;
pub mod dataflow;
pub mod divergence;
pub mod intervals;
pub mod lanes;
pub mod launch;
pub mod relations;
pub mod stride;
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
    /// Statements at most one thread of a warp executes (`if (tid == 0)`).
    pub single_thread: std::collections::BTreeSet<u32>,
    /// Coalescing of global accesses outside single-thread regions.
    pub global: Vec<coalescing::GlobalAccessCost>,
    /// Bank conflicts of shared accesses outside single-thread regions.
    pub shared: Vec<banks::SharedAccessCost>,
    /// Every branch, classified.
    pub branches: Vec<divergence::BranchFact>,
    /// Barrier intervals and happens-before between accessing statements.
    pub intervals: intervals::Intervals,
}

/// Summaries of the device functions `f` calls, by name.
pub type Callees = std::collections::BTreeMap<String, CalleeSummary>;

impl Analysis {
    /// Run every program on `f`.
    pub fn compute(f: &Function, launch: LaunchDims, callees: &Callees) -> Analysis {
        let r = relations::build(f, callees);
        let uniformity = Uniformity::compute(&r, f.exprs.len(), f.vars.len());
        let divergent_barriers = barriers::divergent_barriers(f, &r, &uniformity, &launch);
        let cx = stride::AffineCx::new(f, &r, &uniformity, launch, callees);
        let mut single_thread = std::collections::BTreeSet::new();
        if let Some(b) = f.body {
            mark_single_thread(f, &cx, &launch, b, false, &mut single_thread);
        }
        let global = coalescing::global_costs(f, &uniformity, &cx, &launch, &|a| {
            single_thread.contains(&a.stmt.0)
        });
        let active = lanes::ActiveLanes::compute(f, &cx, &launch);
        let shared = banks::shared_costs(f, &uniformity, &cx, &launch, &active, &|a| {
            single_thread.contains(&a.stmt.0)
        });
        let branches = divergence::classify(f, &r, &uniformity, &cx, &launch);
        let intervals = intervals::compute(f);
        Analysis {
            launch,
            uniformity,
            divergent_barriers,
            single_thread,
            global,
            shared,
            branches,
            intervals,
        }
    }
}

/// Mark the statements inside `then` branches of conditions that hold for
/// at most one thread of a warp (`threadIdx.x == 0`, `tid == k && …`).
fn mark_single_thread(
    f: &Function,
    cx: &stride::AffineCx<'_>,
    launch: &LaunchDims,
    s: crate::ir::StmtId,
    inside: bool,
    out: &mut std::collections::BTreeSet<u32>,
) {
    if inside {
        out.insert(s.0);
    }
    if let crate::ir::StmtKind::If { cond, then, els } = &f.stmt(s).kind {
        let single = inside || divergence::single_thread_cond(f, cx, launch, *cond);
        mark_single_thread(f, cx, launch, *then, single, out);
        if let Some(e) = els {
            mark_single_thread(f, cx, launch, *e, inside, out);
        }
        return;
    }
    for c in f.child_stmts(s) {
        mark_single_thread(f, cx, launch, c, inside, out);
    }
}

/// What a device function's callers need to know about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CalleeSummary {
    /// Thread dimensions its return value depends on (with uniform arguments).
    pub dims: u8,
    /// The affine form of its return value, for parameterless functions
    /// (`global_tid()`).
    pub form: Option<affine::Affine>,
}

/// Summarise a device function for its callers.
pub fn summarize_callee(f: &Function) -> CalleeSummary {
    let none = Callees::new();
    let a = Analysis::compute(f, LaunchDims::default(), &none);
    let r = relations::build(f, &none);
    let cx = stride::AffineCx::new(f, &r, &a.uniformity, LaunchDims::default(), &none);
    let mut dims = 0u8;
    let mut form: Option<affine::Affine> = None;
    let mut forms_ok = f.params.is_empty();
    for s in &f.stmts {
        if let crate::ir::StmtKind::Return(Some(e)) = &s.kind {
            dims |= a.uniformity.expr_dims[e.0 as usize];
            let fe = cx.form(*e);
            form = Some(match form {
                None => fe,
                Some(prev) if prev == fe => prev,
                Some(_) => {
                    forms_ok = false;
                    fe
                }
            });
        }
    }
    CalleeSummary {
        dims,
        form: if forms_ok { form } else { None },
    }
}
