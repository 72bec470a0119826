//! The salsa query database.
//!
//! Inputs:
//! - one [`SourceFile`] per file: its path, its text, and, when the store
//!   already holds everything derived from exactly this text (same content,
//!   same includes, same configuration and engine), the [`FileCache`] read
//!   back from the store;
//! - one [`Workspace`]: the file map (for `#include` resolution), include
//!   directories, initial scope, default block, and the name index;
//! - one [`NameEntry`] per function name (see [`names`]): the definitions,
//!   launch sites, callers and callees of that name across the workspace,
//!   maintained by the driver (`crate::index`) from the per-file
//!   [`FileSymbols`] that changed — never rebuilt from all files.
//!
//! Per-file queries: [`scan`] (top level: function sites, scope, includes),
//! [`exports`] (a header's exported scope), [`file_items`] (the definitions
//! by key), [`file_symbols`] (what the rest of the workspace needs to know of
//! a file: definitions, launch sites, device-side calls, includes).
//!
//! Per-function queries, keyed by an interned [`FuncRef`] (file + key):
//! [`item_source`] → [`function_ir`] → [`function_facts`] (rows of the
//! function itself), [`function_inputs`] (its cross-function inputs: launch
//! dimensions, callee summaries, what callers pass), [`function_analysis`],
//! [`function_results`] (facts and findings), [`function_summary`] (what
//! callers need), [`function_call_args`] (what it passes its callees) and
//! [`function_output`] (the hashes the store compares).
//!
//! The three `function_summary`/`function_call_args`/`function_output`
//! queries read the [`FileCache`] when the file has one: a cached result
//! is used only when the hash of the function's current cross-function
//! inputs equals the one it was computed with, so a restarted process
//! parses nothing that is unchanged, and a cached function whose inputs did
//! change is re-derived from its text.

use crate::facts::{CallArgs, CalleeSummary, Callees, LaunchDims, ParamFacts};
use crate::frontend::lower::lower_function;
use crate::frontend::scan::scan_source;
use crate::frontend::{FileScan, Scope};
use crate::ir::{Function, FunctionKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub mod cache;
mod facts;
pub mod names;
mod symbols;

pub use cache::{FileCache, FunctionCache};
pub use facts::{BoundRow, FunctionFacts, bound_rows, stable_hash};
pub use names::{DefRef, NameEntry, device_launch_dims, device_summary, launch_dims, param_facts};
pub use symbols::{CallSymbol, DefSymbol, FileSymbols, template_arg_value};

/// Hash of a function's derived facts (for incremental fact writes).
pub fn stable_facts_hash(a: &crate::facts::Analysis) -> String {
    stable_hash(a)
}

/// One source file.
#[salsa::input(debug)]
pub struct SourceFile {
    /// Path relative to the workspace root.
    #[returns(ref)]
    pub path: PathBuf,
    /// Decoded text.
    #[returns(ref)]
    pub text: String,
    /// What the store holds for exactly this text, when it is still valid.
    #[returns(clone)]
    pub cache: Option<Arc<FileCache>>,
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
    /// Grid dimensions assumed for kernels with no launch site (`[launch]
    /// grid`; races owns this field).
    #[returns(copy)]
    pub default_grid: [Option<u32>; 3],
    /// `[launch] warp_lockstep` (races owns this field).
    #[returns(copy)]
    pub warp_lockstep: bool,
    /// The cost model (`[cost]` of `cudalog.toml`; issue 8: the findings
    /// follow it, e.g. `sector_bytes = 128`).
    #[returns(copy)]
    pub cost: crate::facts::cost::CostModel,
    /// The name index: one [`NameEntry`] per function name that is defined,
    /// called or launched anywhere. Replaced only when a name appears or
    /// disappears; the entries themselves change in place.
    #[returns(ref)]
    pub names: Arc<HashMap<String, NameEntry>>,
}

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
            [None; 3],
            false,
            crate::facts::cost::CostModel::default(),
            Arc::new(HashMap::new()),
        );
        db.workspace = Some(ws);
        db
    }
}

/// A path, interned so that include resolution can be a query per path.
#[salsa::interned(debug, revisions = usize::MAX)]
pub struct PathKey<'db> {
    /// Relative path.
    #[returns(ref)]
    pub path: PathBuf,
}

/// A function name (unqualified, or as written at a call), interned.
#[salsa::interned(debug, revisions = usize::MAX)]
pub struct Name<'db> {
    /// The name.
    #[returns(ref)]
    pub text: String,
}

/// One function definition: its file and its key (`scope::name#ordinal`,
/// unique within the file).
#[salsa::interned(debug, revisions = usize::MAX)]
pub struct FuncRef<'db> {
    /// The file it is defined in.
    #[returns(copy)]
    pub file: SourceFile,
    /// Its key within the file.
    #[returns(ref)]
    pub key: String,
}

/// The workspace file at `path`, if any. A query per path, so that adding
/// or removing a file re-runs only the include resolutions that probed it.
#[salsa::tracked(returns(copy))]
pub fn file_at<'db>(db: &'db dyn Db, path: PathKey<'db>) -> Option<SourceFile> {
    db.workspace().files(db).get(path.path(db)).copied()
}

/// The paths `#include "name"` written in `from` may resolve to, in the
/// order they are tried: the includer's directory, then each include
/// directory, then (session 16; audit 20261233 #30, cuda-samples' FDTD3d,
/// whose `src/FDTD3dGPU.cu` includes `"FDTD3dGPU.h"` from `inc/` through
/// its build's `-I../inc`) the conventional header directories beside and
/// below the includer's: `../inc`, `../include`, `inc`, `include`.
pub fn include_candidates(from: &Path, name: &str, include_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let dir = from.parent().unwrap_or(Path::new(""));
    let mut out = vec![normalize(&dir.join(name))];
    for inc in include_dirs {
        out.push(normalize(&inc.join(name)));
    }
    for conventional in ["../inc", "../include", "inc", "include"] {
        out.push(normalize(&dir.join(conventional).join(name)));
    }
    out
}

/// Resolve `#include "name"` written in `from` to a workspace file.
pub fn resolve_include(db: &dyn Db, from: &Path, name: &str) -> Option<SourceFile> {
    let ws = db.workspace();
    include_candidates(from, name, ws.include_dirs(db))
        .into_iter()
        .find_map(|c| file_at(db, PathKey::new(db, c)))
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
    // (issue 8) A source file `#include`d by another one (Rodinia's
    // `#include "kernel.cu"`) starts in its includer's scope.
    let initial =
        include_context(db, file).unwrap_or_else(|| db.workspace().initial_scope(db).clone());
    // (harden) names #defined anywhere in the workspace stay undecidable in
    // #ifdef; the scan keeps only those its own directives mention.
    let elsewhere = workspace_defines(db);
    // The syntax tree lives only as long as the scan (large files are
    // parsed chunk by chunk): what is kept is the scan and, per function,
    // its lowered IR.
    scan_source(file.text(db), initial, elsewhere, &mut |name, macros| {
        resolve_include(db, &path, name).map(|h| header_exports(db, h, macros))
    })
}

/// (issue 8, session 12; audit 20261213 #48/#63, llm.c's `#define
/// ENABLE_BF16` before `#include "common.h"`) The scope header `h` exports
/// to an includer whose macros are `macros` at the `#include`: the plain
/// [`exports`] when the includer defines none of the names the header's
/// directives test beyond what every file starts with, else the header
/// scanned with those definitions ([`exports_with`]), as the preprocessor
/// would (`typedef __nv_bfloat16 floatX;`, not `float`).
fn header_exports(
    db: &dyn Db,
    h: SourceFile,
    macros: &crate::frontend::preproc::MacroTable,
) -> Arc<Scope> {
    let initial = db.workspace().initial_scope(db).clone();
    let defs: Vec<(String, Option<Vec<String>>, String)> = file_directive_names(db, h)
        .iter()
        .filter(|n| macros.is_defined(n) == Some(true) && macros.get(n) != initial.macros.get(n))
        .filter_map(|n| {
            macros
                .get(n)
                .map(|m| (n.clone(), m.params.clone(), m.body.clone()))
        })
        .collect();
    if defs.is_empty() {
        exports(db, h)
    } else {
        exports_with(db, HeaderInContext::new(db, h, defs))
    }
}

/// Names a file's preprocessor directives mention (lexical; backdated when
/// an edit leaves them equal).
#[salsa::tracked(returns(ref))]
pub fn file_directive_names(db: &dyn Db, file: SourceFile) -> Arc<BTreeSet<String>> {
    Arc::new(crate::frontend::preproc::directive_names(file.text(db)))
}

/// A header and the macro definitions its includer has at the `#include`
/// (only names the header's directives test; see [`header_exports`]).
#[salsa::interned(debug)]
pub struct HeaderInContext<'db> {
    /// The header.
    #[returns(copy)]
    pub file: SourceFile,
    /// (name, parameters, replacement) of each definition.
    #[returns(ref)]
    pub defs: Vec<(String, Option<Vec<String>>, String)>,
}

fn exports_with_in_cycle<'db>(
    _db: &'db dyn Db,
    _id: salsa::Id,
    _h: HeaderInContext<'db>,
) -> Arc<Scope> {
    Arc::new(Scope::default())
}

/// The scope a header exports when its includer has the definitions of
/// `h` (see [`header_exports`]).
#[salsa::tracked(returns(clone), cycle_result = exports_with_in_cycle)]
pub fn exports_with<'db>(db: &'db dyn Db, h: HeaderInContext<'db>) -> Arc<Scope> {
    let file = h.file(db);
    let path = file.path(db).clone();
    let mut initial = db.workspace().initial_scope(db).clone();
    let table = &mut Arc::make_mut(&mut initial).macros;
    for (n, params, body) in h.defs(db) {
        table.define(n, params.clone(), body);
    }
    let elsewhere = workspace_defines(db);
    scan_source(file.text(db), initial, elsewhere, &mut |name, macros| {
        resolve_include(db, &path, name).map(|h| header_exports(db, h, macros))
    })
    .exports
}

/// Whether `path` names a source file (as opposed to a header): only those
/// take their includer's scope ([`include_context`]).
pub fn is_included_source(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("cu" | "c" | "cc" | "cpp" | "cxx")
    )
}

/// (issue 8) The `#include "…"` directives of one file, lexically: (0-based
/// line, name). Backdated when an edit leaves them equal.
#[salsa::tracked(returns(ref))]
pub fn file_include_names(db: &dyn Db, file: SourceFile) -> Arc<Vec<(usize, String)>> {
    let mut out = Vec::new();
    for (i, line) in file.text(db).lines().enumerate() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix('"')
            && let Some(end) = r.find('"')
        {
            out.push((i, r[..end].to_string()));
        }
    }
    Arc::new(out)
}

fn include_context_in_cycle(_db: &dyn Db, _id: salsa::Id, _file: SourceFile) -> Option<Arc<Scope>> {
    None
}

/// (issue 7) The first includer (by path, then line) of every source file
/// that some `#include "…"` resolves to. One pass over the memoized include
/// lists, shared by every [`include_context`]: after an edit it is
/// re-verified against those lists (re-run only when one of them changed),
/// instead of each file resolving every include of the workspace.
#[salsa::tracked(returns(ref))]
pub fn source_includers(db: &dyn Db) -> Arc<HashMap<SourceFile, (SourceFile, usize)>> {
    let mut out: HashMap<SourceFile, (SourceFile, usize)> = HashMap::new();
    for (p, f) in db.workspace().files(db).iter() {
        for (line, name) in file_include_names(db, *f).iter() {
            // The target has the name's extension: headers never need a
            // context, so they are not even resolved.
            if !is_included_source(Path::new(name)) {
                continue;
            }
            if let Some(t) = resolve_include(db, p, name)
                && t != *f
            {
                out.entry(t).or_insert((*f, *line));
            }
        }
    }
    Arc::new(out)
}

/// (issue 8) The scope a source file that another file `#include`s starts
/// in: what its includer (the first by path) sees just before the
/// `#include` line (the includer's own context, its macros, types and
/// headers up to there). `None` for headers and for files nobody includes.
/// Reads [`source_includers`] and the includer's text; the index's deps
/// hash and dirty sets follow the same relation
/// (`IncludeGraph::context_reach`).
#[salsa::tracked(returns(clone), cycle_result = include_context_in_cycle)]
pub fn include_context(db: &dyn Db, file: SourceFile) -> Option<Arc<Scope>> {
    if !is_included_source(file.path(db)) {
        return None;
    }
    let ws = db.workspace();
    let &(f, line) = source_includers(db).get(&file)?;
    let p = f.path(db).clone();
    let text = f.text(db);
    let prefix: String = text.split_inclusive('\n').take(line).collect::<String>();
    let initial = include_context(db, f).unwrap_or_else(|| ws.initial_scope(db).clone());
    let elsewhere = workspace_defines(db);
    let scan = scan_source(&prefix, initial, elsewhere, &mut |name, macros| {
        resolve_include(db, &p, name).map(|h| header_exports(db, h, macros))
    });
    Some(scan.exports)
}

/// (harden) Names `#define`d anywhere in one file (a lexical scan of its
/// text, so it never depends on other files); backdated when an edit leaves
/// them equal.
#[salsa::tracked(returns(ref))]
pub fn file_defines(db: &dyn Db, file: SourceFile) -> Arc<BTreeSet<String>> {
    Arc::new(crate::frontend::preproc::defined_names(file.text(db)))
}

/// (harden) Names `#define`d anywhere in the workspace: the union of
/// [`file_defines`]. Re-run when the file map or some file's set changes (a
/// fold over memoized per-file sets); the scans that read it re-run only
/// when the union itself changes.
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
#[salsa::tracked(returns(ref), lru = 512)]
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

/// What lowering one definition reads: everything but its line (moving a
/// function re-runs nothing).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ItemSource {
    /// Unqualified name.
    pub name: String,
    /// Enclosing namespaces/classes.
    pub scope_path: String,
    /// Kernel, device or host.
    pub kind: FunctionKind,
    /// Text of the definition.
    pub text: Arc<str>,
    /// Scope visible at the definition.
    pub scope: Arc<Scope>,
    /// 0-based first column.
    pub start_col: u32,
    /// The line just above the definition (a `cudalog-ignore` comment there
    /// covers findings on the definition's first line).
    pub line_before: String,
}

/// The definitions of a file: key → source, plus the keys in source order
/// with their 0-based start lines.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FileItems {
    /// By key.
    pub by_key: HashMap<String, Arc<ItemSource>>,
    /// Keys in source order, with start lines.
    pub order: Vec<(String, u32)>,
}

/// The key of a definition: `scope::name#ordinal`.
pub fn item_key(scope_path: &str, name: &str, ordinal: u32) -> String {
    if scope_path.is_empty() {
        format!("{name}#{ordinal}")
    } else {
        format!("{scope_path}::{name}#{ordinal}")
    }
}

/// The function definitions of a file.
#[salsa::tracked(returns(clone))]
pub fn file_items(db: &dyn Db, file: SourceFile) -> Arc<FileItems> {
    let scan = scan(db, file);
    let text = file.text(db);
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line = |n: u32| -> String {
        let Some(&s) = line_starts.get(n as usize) else {
            return String::new();
        };
        let e = line_starts
            .get(n as usize + 1)
            .map(|e| e - 1)
            .unwrap_or(text.len());
        text[s..e].trim_end_matches('\r').to_string()
    };
    let mut out = FileItems::default();
    for s in &scan.functions {
        let key = item_key(&s.scope_path, &s.name, s.ordinal);
        out.order.push((key.clone(), s.start_line));
        out.by_key.insert(
            key,
            Arc::new(ItemSource {
                name: s.name.clone(),
                scope_path: s.scope_path.clone(),
                kind: s.kind,
                text: s.text.clone(),
                scope: s.scope.clone(),
                start_col: s.start_col,
                line_before: s.start_line.checked_sub(1).map(line).unwrap_or_default(),
            }),
        );
    }
    Arc::new(out)
}

/// The source of one definition (`None` when the file no longer has it).
#[salsa::tracked(returns(clone))]
pub fn item_source<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Option<Arc<ItemSource>> {
    file_items(db, f.file(db)).by_key.get(f.key(db)).cloned()
}

/// Lower one function to IR.
#[salsa::tracked(returns(clone), lru = 256)]
pub fn function_ir<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Arc<Function> {
    match item_source(db, f) {
        Some(s) => Arc::new(lower_function(
            &s.text,
            s.start_col,
            &s.name,
            &s.scope_path,
            s.kind,
            &s.scope,
        )),
        None => Arc::new(Function::placeholder(f.key(db))),
    }
}

/// The rows of the function itself (IR-derived), with its content hash.
#[salsa::tracked(returns(clone), lru = 256)]
pub fn function_facts<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Arc<FunctionFacts> {
    let src = item_source(db, f);
    let start_col = src.as_ref().map(|s| s.start_col).unwrap_or(0);
    let text = src.as_ref().map(|s| &*s.text).unwrap_or("");
    Arc::new(FunctionFacts::compute(&function_ir(db, f), start_col, text))
}

/// What the workspace needs to know of one file (see [`FileSymbols`]):
/// read from the cache when the file has one, else derived from its
/// definitions.
#[salsa::tracked(returns(clone))]
pub fn file_symbols(db: &dyn Db, file: SourceFile) -> Arc<FileSymbols> {
    if let Some(c) = file.cache(db) {
        return c.symbols.clone();
    }
    symbols::compute(db, file)
}

/// The cached state of one function, when its file has a cache.
fn cached_fn<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Option<FunctionCache> {
    f.file(db)
        .cache(db)
        .and_then(|c| c.functions.get(f.key(db)).cloned())
}

/// The definition symbol of a function (from [`file_symbols`]).
pub fn def_symbol<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Option<DefSymbol> {
    file_symbols(db, f.file(db)).def(f.key(db)).cloned()
}

/// Everything a function's analysis reads besides its own text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct FunctionInputs {
    /// Launch dimensions (kernels: from their launch sites; device
    /// functions: agreed by the kernels that reach them).
    pub launch: LaunchDims,
    /// Summaries of the device functions it calls, by callee as written.
    pub callees: Callees,
    /// What its callers pass (device functions).
    pub params: Arc<ParamFacts>,
}

impl FunctionInputs {
    /// A stable hash of the inputs (the cache key of derived results).
    pub fn hash(&self) -> String {
        stable_hash(&(
            &self.launch,
            &self.callees,
            &*self.params,
            crate::store::SCHEMA_VERSION,
        ))
    }
}

/// The callee summaries a function sees: every distinct callee as written,
/// except itself, that names a device function of the workspace.
fn callee_summaries(db: &dyn Db, sym: &DefSymbol, skip_self: bool) -> Callees {
    let mut out = Callees::new();
    for c in &sym.callees {
        if skip_self && c == &sym.name {
            continue;
        }
        if let Some(s) = device_summary(db, Name::new(db, c.clone())) {
            out.insert(c.clone(), s);
        }
    }
    out
}

/// The cross-function inputs of a function.
#[salsa::tracked(returns(clone))]
pub fn function_inputs<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Arc<FunctionInputs> {
    let Some(sym) = def_symbol(db, f) else {
        return Arc::new(FunctionInputs::default());
    };
    let name = Name::new(db, sym.name.clone());
    let launch = match sym.kind {
        FunctionKind::Kernel => launch_dims(db, name),
        FunctionKind::Device => device_launch_dims(db, name),
        FunctionKind::Host => LaunchDims::default(),
    };
    let params = match sym.kind {
        FunctionKind::Device => param_facts(db, name),
        _ => Arc::new(ParamFacts::default()),
    };
    Arc::new(FunctionInputs {
        launch,
        callees: callee_summaries(db, &sym, false),
        params,
    })
}

/// Facts and verdicts of one function (kernels and device functions), with
/// its cross-function inputs.
#[salsa::tracked(returns(clone), lru = 2048)]
pub fn function_analysis<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Arc<crate::facts::Analysis> {
    let ir = function_ir(db, f);
    let inputs = function_inputs(db, f);
    let subst = crate::facts::launch::with_block_dim_params(&ir, &inputs.launch).map(Arc::new);
    // Global races see the launch's constant parameters only when the grid
    // is known too (see `Analysis::compute_with_race_ir`).
    let known_grid = inputs.launch.grid.iter().all(Option::is_some);
    let race_ir = match &subst {
        Some(_) if !known_grid && inputs.launch.param_values.iter().any(Option::is_some) => {
            let no_values = crate::facts::LaunchDims {
                param_values: [None; crate::facts::barriers::MAX_PARAM_DIMS],
                ..inputs.launch
            };
            crate::facts::launch::with_block_dim_params(&ir, &no_values)
                .map(Arc::new)
                .unwrap_or_else(|| ir.clone())
        }
        Some(s) => s.clone(),
        None => ir.clone(),
    };
    let ir = subst.unwrap_or(ir);
    let cost = db.workspace().cost(db);
    Arc::new(crate::facts::Analysis::compute_with_race_ir(
        &ir,
        &race_ir,
        inputs.launch,
        &inputs.callees,
        &inputs.params,
        &cost,
    ))
}

/// The derived results of a function that the store keeps: its analysis and
/// findings (lines relative to the function start, file unset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionResults {
    /// The analysis.
    pub analysis: Arc<crate::facts::Analysis>,
    /// Findings, lines relative to the function (0 = its first line).
    pub findings: Vec<crate::check::Finding>,
    /// Hash of the facts rows and findings.
    pub hash: String,
    /// Resource bounds (kernels; the `bounds` table).
    pub bounds: Arc<Vec<facts::BoundRow>>,
}

/// Analysis and findings of a kernel or device function.
#[salsa::tracked(returns(clone), lru = 2048)]
pub fn function_results<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Arc<FunctionResults> {
    let ir = function_ir(db, f);
    let analysis = function_analysis(db, f);
    let src = item_source(db, f);
    let findings = match &src {
        Some(s) => crate::check::function_findings(&ir, &analysis, &s.text, &s.line_before),
        None => Vec::new(),
    };
    let facts_hash = stable_facts_hash(&analysis);
    let hash = stable_hash(&(&facts_hash, format!("{findings:?}")));
    let bounds = Arc::new(facts::bound_rows(&ir, &analysis));
    Arc::new(FunctionResults {
        analysis,
        findings,
        hash,
        bounds,
    })
}

fn summary_in_cycle<'db>(
    _db: &'db dyn Db,
    _id: salsa::Id,
    _f: FuncRef<'db>,
) -> Option<CalleeSummary> {
    None
}

/// What the callers of a device function need to know about it: the
/// thread dependence and affine form of its return value, and whether it
/// reaches a block-wide barrier (through its own callees too). `None` for
/// kernels and host functions, and in a cycle of calls.
#[salsa::tracked(returns(clone), cycle_result = summary_in_cycle)]
pub fn function_summary<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Option<CalleeSummary> {
    let sym = def_symbol(db, f)?;
    if sym.kind != FunctionKind::Device {
        return None;
    }
    let callees = callee_summaries(db, &sym, true);
    let key = stable_hash(&callees);
    if let Some(c) = cached_fn(db, f)
        && c.summary_inputs_hash.as_deref() == Some(key.as_str())
    {
        return c.summary;
    }
    Some(crate::facts::summarize_callee(
        &function_ir(db, f),
        &callees,
    ))
}

/// The arguments a function passes at each of its call sites.
#[salsa::tracked(returns(clone))]
pub fn function_call_args<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Arc<Vec<CallArgs>> {
    if let Some(c) = cached_fn(db, f)
        && c.inputs_hash.as_deref() == Some(function_inputs(db, f).hash().as_str())
    {
        return Arc::new(c.call_args);
    }
    Arc::new(function_analysis(db, f).call_args.clone())
}

/// The hashes the store compares for one function, and what the cache
/// needs to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionOutput {
    /// Hash of the lowered function (its own rows).
    pub content_hash: String,
    /// Hash of its cross-function inputs (`None` for host functions).
    pub inputs_hash: Option<String>,
    /// Hash of its facts rows and findings (`None` for host functions).
    pub results_hash: Option<String>,
    /// Hash of the callee summaries its summary was computed with.
    pub summary_inputs_hash: Option<String>,
    /// Its summary (device functions).
    pub summary: Option<CalleeSummary>,
    /// What it passes its callees.
    pub call_args: Arc<Vec<CallArgs>>,
}

/// The hashes of a function: from the cache when its inputs are unchanged,
/// else computed.
#[salsa::tracked(returns(clone))]
pub fn function_output<'db>(db: &'db dyn Db, f: FuncRef<'db>) -> Arc<FunctionOutput> {
    let cached = cached_fn(db, f);
    let Some(sym) = def_symbol(db, f) else {
        return Arc::new(FunctionOutput {
            content_hash: String::new(),
            inputs_hash: None,
            results_hash: None,
            summary_inputs_hash: None,
            summary: None,
            call_args: Arc::new(Vec::new()),
        });
    };
    let content_hash = sym.content_hash.clone();
    if sym.kind == FunctionKind::Host {
        return Arc::new(FunctionOutput {
            content_hash,
            inputs_hash: None,
            results_hash: None,
            summary_inputs_hash: None,
            summary: None,
            call_args: Arc::new(Vec::new()),
        });
    }
    let inputs_hash = function_inputs(db, f).hash();
    let results_hash = match &cached {
        Some(c) if c.inputs_hash.as_deref() == Some(inputs_hash.as_str()) => c.results_hash.clone(),
        _ => Some(function_results(db, f).hash.clone()),
    };
    let summary_inputs_hash =
        (sym.kind == FunctionKind::Device).then(|| stable_hash(&callee_summaries(db, &sym, true)));
    Arc::new(FunctionOutput {
        content_hash,
        inputs_hash: Some(inputs_hash),
        results_hash,
        summary_inputs_hash,
        summary: function_summary(db, f),
        call_args: function_call_args(db, f),
    })
}
