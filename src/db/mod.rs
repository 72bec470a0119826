//! The salsa query database.
//!
//! Inputs: one [`SourceFile`] per file (path + text) and one [`Workspace`]
//! (the file map, used to resolve `#include "…"`, and the initial scope built
//! from the configuration). Tracked queries, from coarse to fine:
//!
//! - [`parse`]: file → tree-sitter tree (never equal across edits);
//! - [`scan`]: file → [`FileScan`] (function sites with their text and scope);
//! - [`exports`]: header → the scope it exports to includers;
//! - [`items`]: file → one [`FunctionItem`] tracked struct per definition,
//!   identified by file + qualified name + ordinal, whose fields (text, scope,
//!   position) are tracked one by one;
//! - [`function_ir`]: item → lowered [`Function`] (reads only the item's text,
//!   kind and scope, so editing another function never re-runs it);
//! - [`function_facts`]: item → [`FunctionFacts`], the per-function summary
//!   written to the store;
//! - [`launch_dims`]: kernel name → block dimensions and template argument
//!   values agreed by all its launch sites;
//! - [`file_launches`], [`file_calls`]: one file's launch sites and
//!   device-side calls (per file, so edits re-read only the edited file);
//! - [`call_graph`]: callee name → calling kernels and device functions;
//! - [`device_launch_dims`]: device function name → the block dimensions the
//!   kernels that reach it agree on;
//! - [`param_facts`]: device function name → what its callers pass;
//! - [`device_summary`]: device function name → its summary for callers;
//! - [`function_analysis`]: item → the `facts` of one function.

use crate::facts::LaunchDims;
use crate::facts::barriers::MAX_TEMPLATE_VALUES;
use crate::facts::launch::agree;
use crate::frontend::lower::lower_function;
use crate::frontend::scan::{scan_file_with, scan_source};
use crate::frontend::{FileScan, Scope};
use crate::ir::{Function, FunctionKind};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod facts;
pub use facts::{FunctionFacts, stable_hash};

/// Hash of a function's derived facts (for incremental fact writes).
pub fn stable_facts_hash(a: &crate::facts::Analysis) -> String {
    stable_hash(&format!("{a:?}"))
}

/// One source file.
#[salsa::input(debug)]
pub struct SourceFile {
    /// Path relative to the workspace root (forward slashes).
    #[returns(ref)]
    pub path: PathBuf,
    /// Decoded text.
    #[returns(ref)]
    pub text: String,
}

/// The workspace singleton.
#[salsa::input(debug)]
pub struct Workspace {
    /// All files by relative path.
    #[returns(ref)]
    pub files: BTreeMap<PathBuf, SourceFile>,
    /// Include directories (relative to the root) searched after the
    /// including file's own directory.
    #[returns(ref)]
    pub include_dirs: Vec<PathBuf>,
    /// Predefined and configured macros.
    #[returns(ref)]
    pub initial_scope: Arc<Scope>,
    /// Block dimensions assumed for kernels with no launch site.
    #[returns(copy)]
    pub default_block: [u32; 3],
}

/// A parsed tree (shared; never compared).
#[derive(Clone)]
pub struct Parsed(pub Arc<tree_sitter::Tree>);

/// The database trait all queries take.
#[salsa::db]
pub trait Db: salsa::Database {
    /// The workspace input.
    fn workspace(&self) -> Workspace;
}

/// Records which queries executed (for tests and `--verbose` statistics).
#[derive(Clone, Default)]
pub struct ExecutionLog(Arc<Mutex<Vec<String>>>);

impl ExecutionLog {
    /// Take the recorded query names (e.g. `function_ir(Id(402))`).
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The concrete database.
#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    workspace: Option<Workspace>,
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl Db for Database {
    fn workspace(&self) -> Workspace {
        self.workspace
            .expect("Database::set_workspace is called before any query")
    }
}

impl Default for Database {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Database {
    /// A database; with `log`, every query execution is recorded.
    pub fn new(log: Option<ExecutionLog>) -> Self {
        let callback: Option<Box<dyn Fn(salsa::Event) + Send + Sync>> = log.map(|log| {
            Box::new(move |event: salsa::Event| {
                if let salsa::EventKind::WillExecute { database_key } = event.kind {
                    let name = format!("{database_key:?}");
                    log.0.lock().unwrap_or_else(|e| e.into_inner()).push(name);
                }
            }) as Box<dyn Fn(salsa::Event) + Send + Sync>
        });
        let mut db = Database {
            storage: salsa::Storage::new(callback),
            workspace: None,
        };
        let ws = Workspace::new(
            &db,
            BTreeMap::new(),
            Vec::new(),
            Arc::new(Scope::default()),
            [256, 1, 1],
        );
        db.workspace = Some(ws);
        db
    }
}

/// Parse a file.
#[salsa::tracked(returns(clone), no_eq)]
pub fn parse(db: &dyn Db, file: SourceFile) -> Parsed {
    Parsed(Arc::new(crate::frontend::syntax::parse(file.text(db))))
}

/// Resolve `#include "name"` written in `from` to a workspace file.
pub fn resolve_include(db: &dyn Db, from: &Path, name: &str) -> Option<SourceFile> {
    let ws = db.workspace();
    let files = ws.files(db);
    let dir = from.parent().unwrap_or(Path::new(""));
    let mut candidates = vec![normalize(&dir.join(name))];
    for inc in ws.include_dirs(db) {
        candidates.push(normalize(&inc.join(name)));
    }
    candidates.into_iter().find_map(|c| files.get(&c).copied())
}

/// Lexically normalise `a/./b/../c` to `a/c`.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out: Vec<std::path::Component<'_>> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if matches!(out.last(), Some(std::path::Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out.iter().collect()
}

fn scan_with_includes(db: &dyn Db, file: SourceFile) -> FileScan {
    let path = file.path(db).clone();
    let initial = db.workspace().initial_scope(db).clone();
    // (harden) names #defined anywhere in the workspace stay undecidable in
    // #ifdef; the scan keeps only those its own directives mention.
    let elsewhere = workspace_defines(db);
    let mut include = |name: &str| resolve_include(db, &path, name).map(|h| exports(db, h));
    let text = file.text(db);
    // (harden) large files are parsed chunk by chunk, without keeping a tree.
    if crate::frontend::scan::needs_chunks(text) {
        return scan_source(text, initial, elsewhere, &mut include);
    }
    let tree = parse(db, file);
    scan_file_with(text, &tree.0, initial, elsewhere, &mut include)
}

/// (harden) Names `#define`d anywhere in one file (a lexical scan of its
/// text, so it never depends on other files); backdated when an edit leaves
/// them equal.
#[salsa::tracked(returns(ref))]
pub fn file_defines(db: &dyn Db, file: SourceFile) -> Arc<BTreeSet<String>> {
    Arc::new(crate::frontend::preproc::defined_names(file.text(db)))
}

/// (harden) Names `#define`d anywhere in the workspace: the union of
/// [`file_defines`]. Re-run only when some file's set changes.
#[salsa::tracked(returns(ref))]
pub fn workspace_defines(db: &dyn Db) -> Arc<BTreeSet<String>> {
    let mut all = BTreeSet::new();
    for f in db.workspace().files(db).values() {
        for n in file_defines(db, *f).iter() {
            if !all.contains(n) {
                all.insert(n.clone());
            }
        }
    }
    Arc::new(all)
}

/// Scan a file's top level.
#[salsa::tracked(returns(ref))]
pub fn scan(db: &dyn Db, file: SourceFile) -> Arc<FileScan> {
    Arc::new(scan_with_includes(db, file))
}

fn exports_in_cycle(_db: &dyn Db, _id: salsa::Id, _file: SourceFile) -> Arc<Scope> {
    Arc::new(Scope::default())
}

/// The scope a header exports to files that include it. Mutually including
/// headers see an empty scope from each other (instead of a query cycle).
#[salsa::tracked(returns(clone), cycle_result = exports_in_cycle)]
pub fn exports(db: &dyn Db, file: SourceFile) -> Arc<Scope> {
    scan_with_includes(db, file).exports
}

/// One function definition; identity = file + key, other fields tracked.
#[salsa::tracked(debug)]
pub struct FunctionItem<'db> {
    /// The file it is defined in.
    pub file: SourceFile,
    /// `scope::name#ordinal`, unique within the file.
    #[returns(ref)]
    pub key: String,
    /// Unqualified name.
    #[tracked]
    #[returns(ref)]
    pub name: String,
    /// Enclosing namespaces/classes.
    #[tracked]
    #[returns(ref)]
    pub scope_path: String,
    /// Kernel, device or host.
    #[tracked]
    #[returns(copy)]
    pub kind: FunctionKind,
    /// Text of the definition.
    #[tracked]
    #[returns(ref)]
    pub text: String,
    /// Scope visible at the definition.
    #[tracked]
    #[returns(ref)]
    pub scope: Arc<Scope>,
    /// 0-based first line in the file (read by the store only).
    #[tracked]
    #[returns(copy)]
    pub start_line: u32,
    /// 0-based first column.
    #[tracked]
    #[returns(copy)]
    pub start_col: u32,
}

/// The function definitions of a file.
#[salsa::tracked(returns(ref))]
pub fn items(db: &dyn Db, file: SourceFile) -> Vec<FunctionItem<'_>> {
    scan(db, file)
        .functions
        .iter()
        .map(|s| {
            let key = if s.scope_path.is_empty() {
                format!("{}#{}", s.name, s.ordinal)
            } else {
                format!("{}::{}#{}", s.scope_path, s.name, s.ordinal)
            };
            FunctionItem::new(
                db,
                file,
                key,
                s.name.clone(),
                s.scope_path.clone(),
                s.kind,
                s.text.to_string(),
                s.scope.clone(),
                s.start_line,
                s.start_col,
            )
        })
        .collect()
}

/// Lower one function to IR.
#[salsa::tracked(returns(clone))]
pub fn function_ir<'db>(db: &'db dyn Db, item: FunctionItem<'db>) -> Arc<Function> {
    Arc::new(lower_function(
        item.text(db),
        item.start_col(db),
        item.name(db),
        item.scope_path(db),
        item.kind(db),
        item.scope(db),
    ))
}

/// The per-function facts written to the store.
#[salsa::tracked(returns(clone))]
pub fn function_facts<'db>(db: &'db dyn Db, item: FunctionItem<'db>) -> Arc<FunctionFacts> {
    Arc::new(FunctionFacts::compute(
        &function_ir(db, item),
        item.start_col(db),
    ))
}

/// A kernel name, interned so that queries can be keyed by it.
#[salsa::interned(debug)]
pub struct KernelName<'db> {
    /// The unqualified kernel name.
    #[returns(ref)]
    pub name: String,
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
///   the launching function (see [`template_arg_value`]); `None` for type
///   parameters, positions after a pack or an unnamed parameter, defaulted or
///   deduced arguments, arguments that are not constant, sites that disagree,
///   and kernels with no launch site or no definition in the workspace.
#[salsa::tracked(returns(copy))]
pub fn launch_dims<'db>(db: &'db dyn Db, name: KernelName<'db>) -> LaunchDims {
    let kernel = name.name(db);
    let ws = db.workspace();
    let mut seen: Option<LaunchDims> = None;
    // Positions whose argument gives a tracked non-type parameter, agreed by
    // every definition of the kernel (`None`: no definition seen yet).
    let mut slots: Option<[bool; MAX_TEMPLATE_VALUES]> = None;
    for file in ws.files(db).values() {
        for item in items(db, *file) {
            if item.kind(db) != FunctionKind::Kernel || item.name(db) != kernel {
                continue;
            }
            let f = function_ir(db, *item);
            let s = crate::facts::launch::template_value_slots(item.text(db), &f.template_params);
            slots = Some(match slots {
                None => s,
                Some(prev) => std::array::from_fn(|i| prev[i] && s[i]),
            });
        }
        for (k, dims) in file_launches(db, *file).iter() {
            if k != kernel {
                continue;
            }
            seen = Some(match seen {
                None => *dims,
                Some(prev) => LaunchDims {
                    block: agree(prev.block, dims.block),
                    template_values: agree(prev.template_values, dims.template_values),
                },
            });
        }
    }
    match seen {
        Some(mut dims) => {
            let slots = slots.unwrap_or([false; MAX_TEMPLATE_VALUES]);
            for (v, keep) in dims.template_values.iter_mut().zip(slots) {
                if !keep {
                    *v = None;
                }
            }
            dims
        }
        None => LaunchDims::with_block(ws.default_block(db).map(Some)),
    }
}

/// The launch sites of one source file (headers launch nothing here): for
/// each, the launched kernel and the block dimensions and template argument
/// values written there (template values by argument position, before they
/// are matched to the kernel's parameters). A per-file query, so that an edit
/// re-reads only the edited file's launches; its result is unchanged (and
/// [`launch_dims`] is not re-run) unless a launch changed.
#[salsa::tracked(returns(clone))]
pub fn file_launches(db: &dyn Db, file: SourceFile) -> Arc<Vec<(String, LaunchDims)>> {
    let mut out = Vec::new();
    if !crate::workspace::is_source(file.path(db)) {
        return Arc::new(out);
    }
    for item in items(db, file) {
        let f = function_ir(db, *item);
        for l in &f.launches {
            let block = l
                .block
                .map(|b| crate::facts::launch::block_dims(&f, b))
                .unwrap_or([None; 3]);
            let template_values = std::array::from_fn(|i| {
                l.template_args
                    .get(i)
                    .and_then(|a| template_arg_value(a, &f, item.scope(db)))
            });
            out.push((
                l.kernel.clone(),
                LaunchDims {
                    block,
                    template_values,
                },
            ));
        }
    }
    Arc::new(out)
}

/// The integer value of a template argument `arg` (its text as written at a
/// launch site) in the launching function `f`, whose definition sees
/// `scope`: object-like macros are expanded first (as the preprocessor
/// would), then each remaining name is replaced by its value — a local of
/// `f` defined once by a constant expression (`const int BS = 128;`), else a
/// file-scope `const`/`constexpr` integer or enumerator — and the result is
/// evaluated as a constant integer expression (literals with suffixes and
/// bases, `true`/`false`, arithmetic, comparisons, `?:`). A name that is a
/// parameter, template parameter or non-constant local of `f` makes the
/// value unknown, as does anything else that is not an integer constant
/// (types, `sizeof`, casts, function calls, qualified names).
pub fn template_arg_value(arg: &str, f: &Function, scope: &Scope) -> Option<i64> {
    use crate::facts::launch::{LocalName, local_name};
    let expanded = scope.macros.expand_text(arg);
    let mut out = String::with_capacity(expanded.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| -> Option<()> {
        if word.is_empty() {
            return Some(());
        }
        let starts_ident = word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if starts_ident && word != "true" && word != "false" {
            match local_name(f, word) {
                LocalName::Const(v) => out.push_str(&format!("({v})")),
                LocalName::Unknown => return None,
                LocalName::NotLocal => match scope.constants.get(word.as_str()) {
                    Some(v) => out.push_str(&format!("({v})")),
                    None => out.push_str(word),
                },
            }
        } else {
            out.push_str(word);
        }
        word.clear();
        Some(())
    };
    for c in expanded.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out)?;
            out.push(c);
        }
    }
    flush(&mut word, &mut out)?;
    scope.macros.eval_int(&out)
}

/// Callers of each function name, from the `calls` of every kernel and
/// device function in the workspace: callee name (unqualified, as
/// `Function::calls` names it without `ns::`) → (caller name, whether the
/// caller is a kernel). Host callers are left out: they do not run on the
/// device. Calls are matched by name only, so overloads and same-named
/// methods count as callers too (more callers only make the agreement of
/// their launch dimensions more conservative).
#[salsa::tracked(returns(clone))]
pub fn call_graph(db: &dyn Db) -> Arc<BTreeMap<String, BTreeSet<(String, bool)>>> {
    let mut out: BTreeMap<String, BTreeSet<(String, bool)>> = BTreeMap::new();
    for file in db.workspace().files(db).values() {
        for (callee, caller, is_kernel) in file_calls(db, *file).iter() {
            out.entry(callee.clone())
                .or_default()
                .insert((caller.clone(), *is_kernel));
        }
    }
    Arc::new(out)
}

/// The device-side calls of one file: (callee without `ns::`, caller, whether
/// the caller is a kernel). Per file, so that an edit re-lowers nothing
/// outside the edited file and [`call_graph`] only merges memoised lists.
#[salsa::tracked(returns(clone))]
pub fn file_calls(db: &dyn Db, file: SourceFile) -> Arc<Vec<(String, String, bool)>> {
    let mut out = Vec::new();
    for item in items(db, file) {
        let kind = item.kind(db);
        if kind == FunctionKind::Host {
            continue;
        }
        let f = function_ir(db, *item);
        for c in &f.calls {
            let callee = c.callee.rsplit("::").next().unwrap_or(&c.callee);
            out.push((
                callee.to_string(),
                item.name(db).clone(),
                kind == FunctionKind::Kernel,
            ));
        }
    }
    out.sort();
    out.dedup();
    Arc::new(out)
}

/// Every name reachable from `start` by repeatedly following `next`
/// (a worklist; `start` included, cycles visited once).
fn reachable<'a, I>(start: &'a str, next: impl Fn(&'a str) -> I) -> BTreeSet<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut seen = BTreeSet::from([start]);
    let mut work = vec![start];
    while let Some(n) = work.pop() {
        for m in next(n) {
            if seen.insert(m) {
                work.push(m);
            }
        }
    }
    seen
}

/// Launch dimensions of the device function(s) named `name`: the agreement
/// (element-wise equal, else unknown) of the block dimensions of every kernel
/// that calls it, directly or through other device functions. Callers are
/// collected by a worklist over [`call_graph`] (recursion and cycles among
/// device functions are visited once). With no calling kernel in the
/// workspace the configured default block applies, as for a kernel without
/// launch sites. Template values are never known for device functions.
#[salsa::tracked(returns(copy))]
pub fn device_launch_dims<'db>(db: &'db dyn Db, name: KernelName<'db>) -> LaunchDims {
    let graph = call_graph(db);
    // Device functions that reach `name` (itself included), then the kernels
    // that call any of them.
    let devices = reachable(name.name(db).as_str(), |n| {
        graph
            .get(n)
            .into_iter()
            .flatten()
            .filter(|(_, is_kernel)| !is_kernel)
            .map(|(c, _)| c.as_str())
    });
    let kernels: BTreeSet<&str> = devices
        .iter()
        .flat_map(|n| graph.get(*n).into_iter().flatten())
        .filter(|(_, is_kernel)| *is_kernel)
        .map(|(c, _)| c.as_str())
        .collect();
    let mut block: Option<[Option<u32>; 3]> = None;
    for k in kernels {
        let b = launch_dims(db, KernelName::new(db, k.to_string())).block;
        block = Some(match block {
            None => b,
            Some(prev) => agree(prev, b),
        });
    }
    LaunchDims::with_block(block.unwrap_or_else(|| db.workspace().default_block(db).map(Some)))
}

/// Facts and verdicts of one function: uniformity and divergent barriers.
/// Kernels are analysed with [`launch_dims`], device functions with
/// [`device_launch_dims`].
#[salsa::tracked(returns(clone))]
pub fn function_analysis<'db>(
    db: &'db dyn Db,
    item: FunctionItem<'db>,
) -> Arc<crate::facts::Analysis> {
    let f = function_ir(db, item);
    let launch = match item.kind(db) {
        FunctionKind::Kernel => launch_dims(db, KernelName::new(db, item.name(db).clone())),
        FunctionKind::Device => device_launch_dims(db, KernelName::new(db, item.name(db).clone())),
        FunctionKind::Host => LaunchDims::default(),
    };
    let mut callees = crate::facts::Callees::new();
    for c in &f.calls {
        if let Some(s) = device_summary(db, KernelName::new(db, c.callee.clone())) {
            callees.insert(c.callee.clone(), s);
        }
    }
    let params = match item.kind(db) {
        FunctionKind::Device => param_facts(db, KernelName::new(db, item.name(db).clone())),
        _ => Arc::new(crate::facts::ParamFacts::default()),
    };
    Arc::new(crate::facts::Analysis::compute_with(
        &f, launch, &callees, &params,
    ))
}

/// What the callers of the device function(s) named `name` pass for their
/// parameters: the merge of the arguments at every call site in the
/// workspace ([`crate::facts::ParamFacts`]). Callers that `name` itself
/// reaches through calls (recursion) would make this query depend on
/// itself; when there are any, nothing is assumed beyond thread-invariant
/// parameters, as with no callers at all.
#[salsa::tracked(returns(clone))]
pub fn param_facts<'db>(db: &'db dyn Db, name: KernelName<'db>) -> Arc<crate::facts::ParamFacts> {
    let graph = call_graph(db);
    let wanted = name.name(db).as_str();
    let mut forward: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (callee, callers) in graph.iter() {
        for (caller, _) in callers {
            forward
                .entry(caller.as_str())
                .or_default()
                .push(callee.as_str());
        }
    }
    let reach = reachable(wanted, |n| forward.get(n).into_iter().flatten().copied());
    let callers: BTreeSet<&str> = graph
        .get(wanted)
        .into_iter()
        .flatten()
        .map(|(c, _)| c.as_str())
        .collect();
    if callers.is_empty() || callers.iter().any(|c| reach.contains(c)) {
        return Arc::new(crate::facts::ParamFacts::default());
    }
    let mut out = crate::facts::ParamFacts::default();
    let mut first = true;
    // Items are found by their tracked name and kind (not by file text), so
    // editing a body does not re-run this query unless a caller's call
    // arguments changed.
    for file in db.workspace().files(db).values() {
        for item in items(db, *file) {
            if item.kind(db) == FunctionKind::Host || !callers.contains(item.name(db).as_str()) {
                continue;
            }
            let a = function_analysis(db, *item);
            for ca in &a.call_args {
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

fn device_summary_in_cycle<'db>(
    _db: &'db dyn Db,
    _id: salsa::Id,
    _name: KernelName<'db>,
) -> Option<crate::facts::CalleeSummary> {
    None
}

/// Summary of the workspace's device function(s) named `name` (their return
/// values' thread dependence and affine form, whether they reach a
/// block-wide barrier), or `None` when there is none. Summaries include the
/// summaries of the functions they call; in a cycle of calls (recursion) the
/// functions see no summary of each other.
#[salsa::tracked(returns(clone), cycle_result = device_summary_in_cycle)]
pub fn device_summary<'db>(
    db: &'db dyn Db,
    name: KernelName<'db>,
) -> Option<crate::facts::CalleeSummary> {
    let wanted = name.name(db);
    let mut out: Option<crate::facts::CalleeSummary> = None;
    for file in db.workspace().files(db).values() {
        for item in items(db, *file) {
            if item.kind(db) != FunctionKind::Device || item.name(db) != wanted {
                continue;
            }
            let f = function_ir(db, *item);
            let mut callees = crate::facts::Callees::new();
            for c in &f.calls {
                if &c.callee == wanted {
                    continue;
                }
                if let Some(s) = device_summary(db, KernelName::new(db, c.callee.clone())) {
                    callees.insert(c.callee.clone(), s);
                }
            }
            let s = crate::facts::summarize_callee(&f, &callees);
            out = Some(match out {
                None => s,
                Some(prev) => crate::facts::CalleeSummary {
                    dims: prev.dims | s.dims,
                    form: if prev.form == s.form { prev.form } else { None },
                    block_barrier: prev.block_barrier || s.block_barrier,
                },
            });
        }
    }
    out
}
