//! The name index: one [`NameEntry`] input per function name, and the
//! cross-function queries that read it.
//!
//! Functions are matched by unqualified name (calls as `Function::calls`
//! names them, without `ns::`), as the analyses always did. The driver
//! (`crate::index::names`) keeps every entry equal to the fold of all
//! indexed files' [`super::FileSymbols`], updating only the entries a
//! changed file contributes to. Each query below reads the entries of the
//! names it is about (and of the names it walks to), so an edit re-runs
//! only the queries whose entries changed.

use super::{Db, FuncRef, Name, SourceFile, function_call_args, function_summary};
use crate::facts::barriers::MAX_TEMPLATE_VALUES;
use crate::facts::launch::agree;
use crate::facts::{CalleeSummary, LaunchDims, ParamFacts};
use crate::ir::FunctionKind;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A definition of a name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DefRef {
    /// Its file.
    pub file: SourceFile,
    /// Its key in the file.
    pub key: String,
    /// Kernel, device or host.
    pub kind: FunctionKind,
    /// For kernels, see [`super::DefSymbol::template_slots`].
    pub template_slots: [bool; MAX_TEMPLATE_VALUES],
}

/// Everything the workspace says about one name.
#[salsa::input(debug)]
pub struct NameEntry {
    /// Its definitions, sorted.
    #[returns(ref)]
    pub defs: Vec<DefRef>,
    /// What each launch site of a kernel of this name fixes, sorted (one
    /// element per site).
    #[returns(ref)]
    pub launches: Vec<LaunchDims>,
    /// Device-side callers: (caller name, whether it is a kernel), sorted
    /// and distinct.
    #[returns(ref)]
    pub callers: Vec<(String, bool)>,
    /// What functions of this name call (without `ns::`), sorted and
    /// distinct.
    #[returns(ref)]
    pub callees: Vec<String>,
}

/// The entry of a name, if anything in the workspace defines, calls or
/// launches it.
#[salsa::tracked(returns(copy))]
pub fn entry<'db>(db: &'db dyn Db, name: Name<'db>) -> Option<NameEntry> {
    db.workspace().names(db).get(name.text(db)).copied()
}

/// Launch dimensions of kernel `name` from all its launch sites across the
/// workspace.
///
/// - `block`: a dimension is known when every launch site that names the
///   kernel gives it the same constant value. With no launch site at all, the
///   configured default (`[launch] block`) applies.
/// - `template_values`: the value of the kernel's non-type template parameter
///   at each position (of `Function::template_params`) when every launch site
///   writes a template argument there that evaluates to the same integer in
///   the launching function (see [`super::template_arg_value`]); `None` for
///   type parameters, positions after a pack or an unnamed parameter,
///   defaulted or deduced arguments, arguments that are not constant, sites
///   that disagree, and kernels with no launch site or no definition in the
///   workspace.
#[salsa::tracked(returns(copy))]
pub fn launch_dims<'db>(db: &'db dyn Db, name: Name<'db>) -> LaunchDims {
    let default = || {
        let mut d = LaunchDims::with_block(db.workspace().default_block(db).map(Some));
        d.grid = db.workspace().default_grid(db);
        d.warp_lockstep = db.workspace().warp_lockstep(db);
        d
    };
    let Some(e) = entry(db, name) else {
        return default();
    };
    // No recorded launch, and the name appears nowhere in the defining
    // files but its definitions: a launch the front end does not record
    // (`k << < g, b >> >`, a function pointer `&k`) names it.
    let kernel_defs: Vec<&DefRef> = e
        .defs(db)
        .iter()
        .filter(|d| d.kind == FunctionKind::Kernel)
        .collect();
    if e.launches(db).is_empty()
        && !kernel_defs.is_empty()
        && kernel_defs
            .iter()
            .all(|d| word_count(d.file.text(db), name.text(db)) <= kernel_defs.len())
    {
        return LaunchDims {
            unlaunched: true,
            ..default()
        };
    }
    let mut seen: Option<LaunchDims> = None;
    for dims in e.launches(db) {
        seen = Some(match seen {
            None => *dims,
            Some(prev) => LaunchDims {
                block: agree(prev.block, dims.block),
                grid: agree(prev.grid, dims.grid),
                warp_lockstep: false,
                template_values: agree(prev.template_values, dims.template_values),
                param_block_dims: agree(prev.param_block_dims, dims.param_block_dims),
                unlaunched: false,
                param_values: agree(prev.param_values, dims.param_values),
                template_block_dims: agree(prev.template_block_dims, dims.template_block_dims),
                name_block_dims: agree(prev.name_block_dims, dims.name_block_dims),
            },
        });
    }
    let Some(mut dims) = seen else {
        return default();
    };
    dims.warp_lockstep = db.workspace().warp_lockstep(db);
    // Positions whose argument gives a tracked non-type parameter, agreed
    // by every definition of the kernel.
    let mut slots: Option<[bool; MAX_TEMPLATE_VALUES]> = None;
    for d in e.defs(db).iter().filter(|d| d.kind == FunctionKind::Kernel) {
        slots = Some(match slots {
            None => d.template_slots,
            Some(prev) => std::array::from_fn(|i| prev[i] && d.template_slots[i]),
        });
    }
    let slots = slots.unwrap_or([false; MAX_TEMPLATE_VALUES]);
    for (v, keep) in dims.template_values.iter_mut().zip(slots) {
        if !keep {
            *v = None;
        }
    }
    for (v, keep) in dims.template_block_dims.iter_mut().zip(slots) {
        if !keep {
            *v = None;
        }
    }
    dims
}

/// How often `word` occurs in `text` as a whole identifier.
fn word_count(text: &str, word: &str) -> usize {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + word.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
        .count()
}

/// Every name reachable from `start` by repeatedly following `next`
/// (a worklist; `start` included, cycles visited once).
fn reachable(start: &str, next: impl Fn(&str) -> Vec<String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::from([start.to_string()]);
    let mut work = vec![start.to_string()];
    while let Some(n) = work.pop() {
        for m in next(&n) {
            if seen.insert(m.clone()) {
                work.push(m);
            }
        }
    }
    seen
}

/// The callers of a name, from its entry.
fn callers_of(db: &dyn Db, name: &str) -> Vec<(String, bool)> {
    entry(db, Name::new(db, name.to_string()))
        .map(|e| e.callers(db).clone())
        .unwrap_or_default()
}

/// Launch dimensions of the device function(s) named `name`: the agreement
/// (element-wise equal, else unknown) of the block dimensions of every kernel
/// that calls it, directly or through other device functions (recursion and
/// cycles among device functions are visited once). With no calling kernel
/// in the workspace the configured default block applies, as for a kernel
/// without launch sites. Template values are never known for device
/// functions.
#[salsa::tracked(returns(copy))]
pub fn device_launch_dims<'db>(db: &'db dyn Db, name: Name<'db>) -> LaunchDims {
    // Device functions that reach `name` (itself included), then the kernels
    // that call any of them.
    let devices = reachable(name.text(db), |n| {
        callers_of(db, n)
            .into_iter()
            .filter(|(_, k)| !k)
            .map(|(c, _)| c)
            .collect()
    });
    let kernels: BTreeSet<String> = devices
        .iter()
        .flat_map(|n| callers_of(db, n))
        .filter(|(_, k)| *k)
        .map(|(c, _)| c)
        .collect();
    let mut block: Option<[Option<u32>; 3]> = None;
    let mut all_unlaunched = !kernels.is_empty();
    for k in kernels {
        let l = launch_dims(db, Name::new(db, k));
        all_unlaunched &= l.unlaunched;
        block = Some(match block {
            None => l.block,
            Some(prev) => agree(prev, l.block),
        });
    }
    let mut dims =
        LaunchDims::with_block(block.unwrap_or_else(|| db.workspace().default_block(db).map(Some)));
    dims.unlaunched = all_unlaunched;
    dims.grid = db.workspace().default_grid(db);
    dims.warp_lockstep = db.workspace().warp_lockstep(db);
    dims
}

fn device_summary_in_cycle<'db>(
    _db: &'db dyn Db,
    _id: salsa::Id,
    _name: Name<'db>,
) -> Option<CalleeSummary> {
    None
}

/// Summary of the workspace's device function(s) named `name` (see
/// [`function_summary`]), merged over its definitions, or `None` when there
/// is none. In a cycle of calls (recursion) the functions see no summary of
/// each other.
#[salsa::tracked(returns(clone), cycle_result = device_summary_in_cycle)]
pub fn device_summary<'db>(db: &'db dyn Db, name: Name<'db>) -> Option<CalleeSummary> {
    let e = entry(db, name)?;
    let mut out: Option<CalleeSummary> = None;
    for d in e.defs(db).iter().filter(|d| d.kind == FunctionKind::Device) {
        let Some(s) = function_summary(db, FuncRef::new(db, d.file, d.key.clone())) else {
            continue;
        };
        out = Some(match out {
            None => s,
            Some(prev) => CalleeSummary {
                dims: prev.dims | s.dims,
                form: if prev.form == s.form { prev.form } else { None },
                block_barrier: prev.block_barrier || s.block_barrier,
                ref_writes: prev.ref_writes | s.ref_writes,
                // (session 7, divergence helper) the larger body estimate.
                ops: prev.ops.zip(s.ops).map(|(a, b)| a.max(b)),
                memory: prev.memory.max(s.memory),
            },
        });
    }
    out
}

/// What the callers of the device function(s) named `name` pass for their
/// parameters: the merge of the arguments at every call site in the
/// workspace ([`ParamFacts`]). Callers that `name` itself reaches through
/// calls (recursion) would make this query depend on itself; when there are
/// any, nothing is assumed beyond thread-invariant parameters, as with no
/// callers at all.
#[salsa::tracked(returns(clone))]
pub fn param_facts<'db>(db: &'db dyn Db, name: Name<'db>) -> Arc<ParamFacts> {
    let wanted = name.text(db).as_str();
    let callers: BTreeSet<String> = callers_of(db, wanted).into_iter().map(|(c, _)| c).collect();
    if callers.is_empty() {
        return Arc::new(ParamFacts::default());
    }
    let reach = reachable(wanted, |n| {
        entry(db, Name::new(db, n.to_string()))
            .map(|e| e.callees(db).clone())
            .unwrap_or_default()
    });
    if callers.iter().any(|c| reach.contains(c)) {
        return Arc::new(ParamFacts::default());
    }
    let mut out = ParamFacts::default();
    let mut first = true;
    for caller in &callers {
        let Some(e) = entry(db, Name::new(db, caller.clone())) else {
            continue;
        };
        for d in e.defs(db).iter().filter(|d| d.kind != FunctionKind::Host) {
            let args = function_call_args(db, FuncRef::new(db, d.file, d.key.clone()));
            for ca in args.iter() {
                let callee = ca.callee.rsplit("::").next().unwrap_or(&ca.callee);
                if callee == wanted {
                    out.merge(ca, first);
                    first = false;
                }
            }
        }
    }
    Arc::new(out)
}
