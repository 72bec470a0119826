//! Per-function facts derived with Datalog (crepe) from the IR.
//!
//! - [`relations`]: the structural glue that turns one function's IR into
//!   input relations (value flow, definitions, control dependence, exits);
//! - [`uniformity`]: which thread dimensions each value depends on;
//! - [`barriers`]: barrier divergence, classified with launch dimensions.

pub mod affine;
pub mod args;
pub mod banks;
pub mod barriers;
pub mod coalescing;
pub mod coop;
pub mod cost;
pub mod dataflow;
pub mod divergence;
pub mod intervals;
pub mod lanes;
pub mod launch;
pub mod loops;
pub mod named_barriers;
pub mod races;
pub mod ranges;
pub mod relations;
pub mod reuse;
pub mod stride;
pub mod uniformity;

#[cfg(test)]
mod tests;

pub use barriers::{BarrierVerdict, LaunchDims};
pub use uniformity::Uniformity;

use crate::ir::Function;

/// Everything derived for one function.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// What the callers said about the parameters (device functions).
    pub params: ParamFacts,
    /// The memory space of each access (`generic` device-function pointers
    /// resolved through `params` where every caller agrees).
    pub access_space: Vec<crate::ir::MemSpace>,
    /// Arguments at each call site, for the callees' [`ParamFacts`].
    pub call_args: Vec<CallArgs>,
    /// Data races on shared and global memory.
    pub races: races::RaceFacts,
    /// Named-barrier (`bar.sync`/`bar.arrive`) verdicts per warp.
    pub named_barriers: named_barriers::NamedBarrierFacts,
    /// The cost model the coalescing and bank facts were computed under.
    pub cost: cost::CostModel,
    /// Loops and their induction variables.
    pub loops: loops::LoopFacts,
}

/// What the callers of a device function tell it about its parameters
/// (index = parameter position): the union of the arguments' thread
/// dependence, the join of their affine forms, and for pointers the memory
/// space they point into and the join of their element offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ParamFacts {
    /// Thread dimensions (bit set of [`relations::DimId`]) of the arguments.
    pub dims: Vec<u8>,
    /// Joined affine forms of integer arguments (`None`: not known).
    pub forms: Vec<Option<affine::Affine>>,
    /// Space of pointer arguments, when every call site agrees.
    pub spaces: Vec<Option<crate::ir::MemSpace>>,
    /// Joined offsets (in the pointee's elements) of pointer arguments from
    /// the start of what they point into (`None`: unknown).
    pub pointer_forms: Vec<Option<affine::Affine>>,
    /// (issue 8, class 3) Lane conditions every call site is under (empty:
    /// none, or the sites differ).
    pub entry_lanes: Vec<lanes::LaneTest>,
    /// (issue 11) Threads of the cooperative-groups tile passed for a
    /// group parameter, when every caller passes a tile of one known size.
    pub groups: Vec<Option<i64>>,
    /// (issue 11) Every caller calls from at most one thread of its block
    /// (`if (threadIdx.x == winner)` with a block-uniform `winner`).
    pub single_thread: bool,
    /// (issue 8, session 6, V5) Every caller calls from at most one lane of
    /// each warp: the function's branches cannot split a warp.
    pub single_lane: bool,
}

/// The arguments of one call site, as a caller sees them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CallArgs {
    /// The callee as written.
    pub callee: String,
    /// Thread dependence (bit set of [`relations::DimId`]) of each argument.
    pub dims: Vec<u8>,
    /// Affine forms of the arguments.
    pub forms: Vec<affine::Affine>,
    /// Memory spaces of pointer arguments, when known.
    pub spaces: Vec<Option<crate::ir::MemSpace>>,
    /// Element offsets of pointer arguments, when known.
    pub pointer_forms: Vec<Option<affine::Affine>>,
    /// The lane conditions enclosing the call (issue 8, class 3).
    #[serde(default)]
    pub lanes: Vec<lanes::LaneTest>,
    /// Threads of the cooperative-groups tile each argument names, when
    /// known (issue 11).
    #[serde(default)]
    pub groups: Vec<Option<i64>>,
    /// The call runs in at most one thread of the block (issue 11).
    #[serde(default)]
    pub single_thread: bool,
    /// (issue 8, session 6, V5) The call runs in at most one lane of each
    /// warp (`if (lane == 0) f();`).
    #[serde(default)]
    pub single_lane: bool,
}

impl ParamFacts {
    /// Merge the arguments of one more call site.
    pub fn merge(&mut self, c: &CallArgs, first: bool) {
        if first {
            self.dims = c.dims.clone();
            self.forms = c.forms.iter().cloned().map(Some).collect();
            self.spaces = c.spaces.clone();
            self.pointer_forms = c.pointer_forms.clone();
            self.entry_lanes = c.lanes.clone();
            self.groups = c.groups.clone();
            self.single_thread = c.single_thread;
            self.single_lane = c.single_lane;
            return;
        }
        if self.entry_lanes != c.lanes {
            self.entry_lanes.clear();
        }
        self.single_thread &= c.single_thread;
        self.single_lane &= c.single_lane;
        // A site with fewer arguments uses default values there: nothing
        // thread-dependent from it, but no known form, space or offset.
        let n = c.dims.len().max(self.dims.len());
        self.dims.resize(n, 0);
        self.forms.resize(n, None);
        self.spaces.resize(n, None);
        self.pointer_forms.resize(n, None);
        self.groups.resize(n, None);
        for i in 0..n {
            if self.groups[i] != c.groups.get(i).copied().flatten() {
                self.groups[i] = None;
            }
            self.dims[i] |= c.dims.get(i).copied().unwrap_or(0);
            self.forms[i] = match (&self.forms[i], c.forms.get(i)) {
                (Some(a), Some(b)) => Some(a.join(b)),
                _ => None,
            };
            if self.spaces[i] != c.spaces.get(i).copied().flatten() {
                self.spaces[i] = None;
            }
            self.pointer_forms[i] = match (&self.pointer_forms[i], c.pointer_forms.get(i)) {
                (Some(a), Some(Some(b))) => Some(a.join(b)),
                _ => None,
            };
        }
    }
}

/// Summaries of the device functions `f` calls, by name.
pub type Callees = std::collections::BTreeMap<String, CalleeSummary>;

impl Analysis {
    /// Run every program on `f`, its parameters thread-invariant.
    pub fn compute(f: &Function, launch: LaunchDims, callees: &Callees) -> Analysis {
        Analysis::compute_with(f, launch, callees, &ParamFacts::default())
    }

    /// Run every program on `f`, with what its callers say of its parameters,
    /// under the default cost model.
    pub fn compute_with(
        f: &Function,
        launch: LaunchDims,
        callees: &Callees,
        params: &ParamFacts,
    ) -> Analysis {
        Analysis::compute_with_cost(f, launch, callees, params, &cost::CostModel::default())
    }

    /// Run every program on `f`, with what its callers say of its
    /// parameters, under the cost model `cost` (`[cost]` of `cudalog.toml`).
    pub fn compute_with_cost(
        f: &Function,
        launch: LaunchDims,
        callees: &Callees,
        params: &ParamFacts,
        cost: &cost::CostModel,
    ) -> Analysis {
        Analysis::compute_with_race_ir(f, f, launch, callees, params, cost)
    }

    /// [`Analysis::compute_with_cost`], with the race check run on
    /// `race_f`: `f` before its launch-constant parameters were substituted
    /// (same statements and expression ids). (issue 8, session 12) With an
    /// unknown grid, a constant row width makes `y * width + x` affine, and
    /// the solver then finds "races" between threads of blocks past the
    /// domain the launch covers, which the symbolic product never allowed.
    pub fn compute_with_race_ir(
        f: &Function,
        race_f: &Function,
        launch: LaunchDims,
        callees: &Callees,
        params: &ParamFacts,
        cost: &cost::CostModel,
    ) -> Analysis {
        let r = relations::build_with(f, callees, &params.dims);
        let uniformity = Uniformity::compute(&r, f.exprs.len(), f.vars.len());
        let divergent_barriers = barriers::divergent_barriers(f, &r, &uniformity, &launch, callees);
        let loops = loops::LoopFacts::compute(f, &r, &uniformity, &launch);
        let cx = stride::AffineCx::with_loops(f, &r, &uniformity, launch, callees, params, &loops);
        let access_space = args::access_spaces(f, params);
        let mut single_thread = std::collections::BTreeSet::new();
        if let Some(b) = f.body {
            mark_single_thread(f, &cx, &launch, b, false, &mut single_thread);
        }
        let in_single = |a: &crate::ir::Access| single_thread.contains(&a.stmt.0);
        let active =
            lanes::ActiveLanes::compute_with_entry(f, &cx, &launch, cost.warp, &params.entry_lanes);
        let mut global = coalescing::global_costs(
            f,
            &uniformity,
            &cx,
            &launch,
            &access_space,
            &active,
            &in_single,
            cost,
        );
        coalescing::traffic_shares(f, &launch, &active, &loops, cost, &mut global);
        let shared = banks::shared_costs(
            f,
            &uniformity,
            &cx,
            &launch,
            &active,
            &access_space,
            &in_single,
            cost,
        );
        let call_args = args::call_args(f, &uniformity, &cx, params, &active, &launch);
        let branches = divergence::classify(f, &r, &uniformity, &cx, &launch, &loops, callees)
            .into_iter()
            .map(|b| {
                // (session 15, audit 20261226 #33: cdpAdvancedQuicksort's
                // branch inside `if (lane_id == 0)`) A branch inside a
                // region one lane per warp runs has nothing to split.
                let one =
                    params.single_lane || params.single_thread || single_thread.contains(&b.stmt.0);
                let mut b = divergence::in_single_lane(b, one);
                b.reach = reaching_warps(f, &active, &launch, cost.warp, &b);
                b
            })
            .collect();
        let intervals = intervals::compute(f);
        let races = if std::ptr::eq(f, race_f) {
            races::races(f, &uniformity, &launch, &intervals, &access_space, params)
        } else {
            // Shared-memory races from `f` (no block index involved), the
            // global ones from `race_f`; each run sees only its space.
            let only = |keep: crate::ir::MemSpace| -> Vec<crate::ir::MemSpace> {
                access_space
                    .iter()
                    .map(|s| {
                        if *s == keep {
                            *s
                        } else {
                            crate::ir::MemSpace::Local
                        }
                    })
                    .collect()
            };
            let shared_only = only(crate::ir::MemSpace::Shared);
            let global_only = only(crate::ir::MemSpace::Global);
            let a = races::races(f, &uniformity, &launch, &intervals, &shared_only, params);
            let b = races::races(
                race_f,
                &uniformity,
                &launch,
                &intervals,
                &global_only,
                params,
            );
            let mut out = races::RaceFacts {
                races: a
                    .races
                    .into_iter()
                    .filter(|r| r.space == crate::ir::MemSpace::Shared)
                    .chain(
                        b.races
                            .into_iter()
                            .filter(|r| r.space != crate::ir::MemSpace::Shared),
                    )
                    .collect(),
                incomplete: a.incomplete.or(b.incomplete),
            };
            out.races.sort_by_key(|r| (r.first.stmt, r.second.stmt));
            out
        };
        let named_barriers = named_barriers::analyse(f, &cx, &launch);
        Analysis {
            launch,
            uniformity,
            divergent_barriers,
            single_thread,
            global,
            shared,
            branches,
            intervals,
            params: params.clone(),
            access_space,
            call_args,
            races,
            named_barriers,
            cost: *cost,
            loops,
        }
    }
}

/// (session 15) `(n, m)` when the thread-index conditions enclosing branch
/// `b` (and, session 16, its own conjuncts) let only `n` of the block's `m`
/// warps reach it; `m` = 0 where the block's width is not known.
fn reaching_warps(
    f: &Function,
    active: &lanes::ActiveLanes,
    launch: &LaunchDims,
    warp: u32,
    b: &divergence::BranchFact,
) -> Option<(u32, u32)> {
    // (session 16, audit 20261232 #25: shfl_scan's `warp_id == 0 &&
    // lane_id < n`) An `if`'s own conjuncts that thread indices decide
    // keep out the warps none of whose threads can pass them: those take
    // the same side throughout.
    let own = matches!(f.stmt(b.stmt).kind, crate::ir::StmtKind::If { cond, .. } if cond == b.cond)
        && !b.in_expression;
    if let Some((n, m)) =
        active.count_warps(b.stmt, |t| !own || lanes::may_pass(f, b.cond, launch, t))
    {
        return (n > 0 && n < m).then_some((n as u32, m as u32));
    }
    // A 1-D block of unknown width: the conditions of the `if` itself and
    // of the enclosing `if`s it is on the `then` side of that thread
    // indices decide (`warp_id == 0`), tried on every block up to 1024
    // threads; `m` = 0 (the block's warps not known).
    if launch.block[0].is_some() || launch.block[1] != Some(1) || launch.block[2] != Some(1) {
        return None;
    }
    let parents = divergence::stmt_parents(f);
    let mut conds: Vec<crate::ir::ExprId> = Vec::new();
    if own {
        conds.push(b.cond);
    }
    let mut at = b.stmt;
    while let Some(p) = parents.get(at.0 as usize).copied().flatten() {
        if let crate::ir::StmtKind::If { cond, then, .. } = &f.stmt(p).kind
            && *then == at
        {
            conds.push(*cond);
        }
        at = p;
    }
    if conds.is_empty() {
        return None;
    }
    let ws = i64::from(warp.max(1));
    let n = (0..1024 / ws)
        .filter(|w| {
            (w * ws..(w + 1) * ws).any(|x| {
                conds
                    .iter()
                    .all(|c| lanes::may_pass(f, *c, launch, [x, 0, 0]))
            })
        })
        .count();
    (n > 0 && (n as i64) < 1024 / ws).then_some((n as u32, 0))
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CalleeSummary {
    /// Thread dimensions its return value depends on (with uniform arguments).
    pub dims: u8,
    /// The affine form of its return value, for parameterless functions
    /// (`global_tid()`).
    pub form: Option<affine::Affine>,
    /// Whether it contains a block-wide barrier (`__syncthreads()` and
    /// variants, a block-wide cooperative-groups sync, a named barrier
    /// without a thread count): a call to it is a barrier for the caller.
    pub block_barrier: bool,
    /// (issue 8, class 3) Bit `i` set: parameter `i` is a reference the
    /// function assigns, so the caller's variable passed there is
    /// redefined by the call.
    pub ref_writes: u64,
    /// (issue 8, session 7) The operations its body runs when it is
    /// straight-line code (no loop, barrier, jump out or call of unknown
    /// work; [`divergence::body_ops`]), for the cost of a caller's
    /// divergent part; `None` otherwise.
    #[serde(default)]
    pub ops: Option<u32>,
    /// (issue 8, session 11, audit 20261209 #31) The memory accesses among
    /// those operations: a caller's divergent part that calls it is not
    /// "register arithmetic only".
    #[serde(default)]
    pub memory: u32,
}

/// Summarise a device function for its callers.
pub fn summarize_callee(f: &Function, callees: &Callees) -> CalleeSummary {
    let returns: Vec<crate::ir::ExprId> = f
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            crate::ir::StmtKind::Return(Some(e)) => Some(*e),
            _ => None,
        })
        .collect();
    let mut dims = 0u8;
    let mut form: Option<affine::Affine> = None;
    let mut forms_ok = f.params.is_empty();
    if !returns.is_empty() {
        // Only the uniformity and stride programs matter for what is
        // returned (with thread-invariant parameters and no launch dims).
        let r = relations::build(f, callees);
        let uniformity = Uniformity::compute(&r, f.exprs.len(), f.vars.len());
        let cx = stride::AffineCx::new(f, &r, &uniformity, LaunchDims::default(), callees);
        for e in returns {
            dims |= uniformity.expr_dims[e.0 as usize];
            let fe = cx.form(e);
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
    let mut ref_writes = 0u64;
    for e in &f.exprs {
        let target = match &e.kind {
            crate::ir::ExprKind::Assign { lhs, .. } => *lhs,
            crate::ir::ExprKind::IncDec { target, .. } => *target,
            _ => continue,
        };
        if let crate::ir::ExprKind::Var(v) = f.expr(target).kind
            && let Some(var) = f.vars.get(v.0 as usize)
            && var.by_ref
            && let Some(p) = var.param_position.filter(|p| *p < 64)
        {
            ref_writes |= 1 << p;
        }
    }
    let body = divergence::body_ops(f, callees);
    CalleeSummary {
        ops: body.map(|(ops, _)| ops),
        memory: body.map(|(_, m)| m).unwrap_or(0),
        ref_writes,
        dims,
        form: if forms_ok { form } else { None },
        block_barrier: f
            .calls
            .iter()
            .any(|c| callees.get(&c.callee).is_some_and(|s| s.block_barrier))
            || f.barriers.iter().any(|b| {
                use crate::ir::BarrierKind as K;
                match b.kind {
                    K::SyncThreads | K::SyncThreadsReduce | K::CgBlockSync | K::CgGridSync => true,
                    K::BarSync | K::BarArrive | K::BarRed => {
                        b.thread_count.is_none() && b.thread_count_text.is_none()
                    }
                    K::SyncWarp | K::CgTileSync => false,
                }
            }),
    }
}
