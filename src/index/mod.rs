//! The pipeline driver: workspace files → salsa inputs → per-file symbols →
//! name index → per-function results → store rows. One [`Indexer`] serves a
//! whole run of `index`/`check` ([`Indexer::run_full`]) and every batch of
//! `watch` ([`Indexer::update`]).
//!
//! A full run reads every file, attaches the store's cache to the files
//! whose content and includes are unchanged, computes (in parallel) the
//! symbols of every indexed file and the output of every function — cached
//! ones cost a hash comparison, the rest are parsed and analysed — and
//! writes only what differs from the store, in one transaction that holds
//! the write lock from the start (a second process waits, then finds
//! nothing to do).
//!
//! A batch of changes re-derives the symbols of the changed files (and of
//! the files that include them or whose include resolution changed), folds
//! the differences into the name index, and demands only the functions of
//! those files plus the functions the changed names can reach through the
//! call graph (callers for callee summaries, callees for call arguments and
//! launch dimensions). Its cost follows what changed, not the size of the
//! workspace.

pub mod includes;
pub mod names;

use crate::config::Config;
use crate::db::{
    self, Database, ExecutionLog, FileCache, FileSymbols, FuncRef, FunctionCache, SourceFile,
};
use crate::frontend::preproc::MacroTable;
use crate::frontend::{Scope, SourceDiagnostic};
use crate::ir::FunctionKind;
use crate::store::{FileRow, Store, StoreState, StoreTx, StoredFile, path_key};
use crate::workspace;
use anyhow::Result;
use rayon::prelude::*;
use salsa::Setter;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// A workspace loaded into a salsa database.
pub struct Indexer {
    db: Database,
    root: PathBuf,
    config: Config,
    engine: String,
    files: BTreeMap<PathBuf, SourceFile>,
    meta: HashMap<PathBuf, FileMeta>,
    names: names::NameIndex,
    graph: includes::IncludeGraph,
    /// The symbols folded into the name index, per indexed file.
    folded: HashMap<PathBuf, Arc<FileSymbols>>,
    /// Indexed files: sources plus the headers they include.
    indexed: BTreeSet<PathBuf>,
    /// Files changed since the last run or update.
    pending: BTreeSet<PathBuf>,
    /// Files created or removed since the last run or update.
    pending_presence: BTreeSet<PathBuf>,
}

#[derive(Clone, Debug)]
struct FileMeta {
    content_hash: String,
    bytes: u64,
    not_utf8_at: Option<(u32, u32)>,
    /// Why the file could not be read (it is indexed as empty).
    read_error: Option<String>,
}

/// Totals reported after a run or a batch.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct IndexSummary {
    /// Indexed files (sources plus included headers).
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Function definitions.
    pub functions: usize,
    /// Kernels.
    pub kernels: usize,
    /// Memory accesses.
    pub accesses: usize,
    /// Parse-error diagnostics.
    pub parse_errors: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Files whose rows were written (changed, new or re-derived).
    pub files_written: usize,
    /// Files deleted from the store.
    pub files_deleted: usize,
    /// Functions looked at (all of them in a full run; in a batch, those
    /// the change can reach).
    pub functions_checked: usize,
    /// Functions whose own rows were (re)written.
    pub functions_written: usize,
    /// Functions whose derived facts and findings were (re)written.
    pub results_written: usize,
    /// Functions whose rows were only shifted.
    pub functions_moved: usize,
    /// Functions whose rows were kept as they were.
    pub functions_unchanged: usize,
    /// Functions deleted.
    pub functions_deleted: usize,
    /// Findings added to the store.
    pub findings_added: usize,
    /// Findings removed from the store.
    pub findings_removed: usize,
}

fn initial_scope(config: &Config) -> Arc<Scope> {
    let mut macros = MacroTable::predefined();
    for (k, v) in &config.preprocessor.defines {
        macros.define(k, None, v);
    }
    for k in &config.preprocessor.undefs {
        macros.undef(k);
    }
    Arc::new(Scope {
        macros,
        ..Scope::default()
    })
}

/// A fingerprint of what every cached result depends on besides the
/// sources: this build of cudalog (the bytes of its executable) and the
/// configuration.
fn engine_fingerprint(config: &Config) -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::read(p).ok())
        .map(|b| blake3::hash(&b).to_hex().to_string())
        // Without a readable executable, never reuse a cache.
        .unwrap_or_else(|| format!("{:?}", Instant::now()));
    db::stable_hash(&(exe, format!("{config:?}"), crate::store::SCHEMA_VERSION))
}

/// Run `f` on every item on all cores, each worker with its own database
/// handle.
fn par_map<T: Sync, R: Send>(
    db: &Database,
    items: &[T],
    f: impl Fn(&Database, &T) -> R + Sync + Send,
) -> Vec<R> {
    items
        .par_iter()
        .map_with(db.clone(), |db, x| f(db, x))
        .collect()
}

/// What a run or batch writes: the files derived anew (or gone) and the
/// functions to compare with the store.
struct Plan {
    touched: BTreeSet<PathBuf>,
    functions: Vec<FnKey>,
}

/// One function to look at: its file and key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct FnKey {
    path: PathBuf,
    key: String,
}

impl Indexer {
    /// An empty indexer for `root`; with `log`, query executions are recorded.
    pub fn new(root: &Path, config: Config, log: Option<ExecutionLog>) -> Indexer {
        let db = Database::new(log);
        let ws = db::Db::workspace(&db);
        let engine = engine_fingerprint(&config);
        let mut ix = Indexer {
            db,
            root: root.to_path_buf(),
            config,
            engine,
            files: BTreeMap::new(),
            meta: HashMap::new(),
            names: names::NameIndex::default(),
            graph: includes::IncludeGraph::default(),
            folded: HashMap::new(),
            indexed: BTreeSet::new(),
            pending: BTreeSet::new(),
            pending_presence: BTreeSet::new(),
        };
        let scope = initial_scope(&ix.config);
        let dirs = ix.config.preprocessor.include_dirs.clone();
        ws.set_initial_scope(&mut ix.db).to(scope);
        ws.set_include_dirs(&mut ix.db).to(dirs);
        let block = ix.config.launch.block;
        ws.set_default_block(&mut ix.db).to(block);
        ix
    }

    /// The salsa database.
    pub fn db(&self) -> &Database {
        &self.db
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The text of a loaded file, by relative path.
    pub fn text(&self, rel: &Path) -> Option<&str> {
        self.files.get(rel).map(|f| f.text(&self.db).as_str())
    }

    /// The loaded files (sources and headers), by relative path.
    pub fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.files.keys()
    }

    /// The indexed files: sources plus the headers they include.
    pub fn indexed(&self) -> &BTreeSet<PathBuf> {
        &self.indexed
    }

    /// Read every source and header under the root into the database (in
    /// parallel). A file that cannot be read is indexed as empty, with a
    /// diagnostic.
    pub fn load_all(&mut self) -> Result<()> {
        let paths = workspace::discover(&self.root, &self.config.index.exclude)?;
        let root = self.root.clone();
        let read: Vec<(PathBuf, std::io::Result<Vec<u8>>)> = paths
            .into_par_iter()
            .map(|rel| {
                let r = std::fs::read(root.join(&rel));
                (rel, r)
            })
            .collect();
        for (rel, r) in read {
            match r {
                Ok(bytes) => self.set_file_bytes(&rel, &bytes),
                Err(e) => self.set_unreadable(&rel, &e),
            }
        }
        Ok(())
    }

    /// Set (or replace) a file's contents.
    pub fn set_file_bytes(&mut self, rel: &Path, bytes: &[u8]) {
        let d = workspace::decode(bytes);
        self.set_file(
            rel,
            d.text,
            FileMeta {
                content_hash: d.content_hash,
                bytes: d.bytes,
                not_utf8_at: d.not_utf8_at,
                read_error: None,
            },
        );
    }

    /// Record a file that exists but cannot be read: it is indexed as
    /// empty, with a diagnostic, so that nothing else is lost.
    pub fn set_unreadable(&mut self, rel: &Path, err: &std::io::Error) {
        self.set_file(
            rel,
            String::new(),
            FileMeta {
                content_hash: format!("unreadable:{}", err.kind()),
                bytes: 0,
                not_utf8_at: None,
                read_error: Some(err.to_string()),
            },
        );
    }

    fn set_file(&mut self, rel: &Path, text: String, meta: FileMeta) {
        let same = self.meta.get(rel).is_some_and(|m| {
            m.content_hash == meta.content_hash && m.read_error == meta.read_error
        });
        self.meta.insert(rel.to_path_buf(), meta);
        match self.files.get(rel) {
            Some(f) => {
                if same {
                    return;
                }
                if f.text(&self.db) != &text {
                    f.set_text(&mut self.db).to(text);
                }
                if f.cache(&self.db).is_some() {
                    f.set_cache(&mut self.db).to(None);
                }
                self.pending.insert(rel.to_path_buf());
            }
            None => {
                let f = SourceFile::new(&self.db, rel.to_path_buf(), text, None);
                self.files.insert(rel.to_path_buf(), f);
                self.pending.insert(rel.to_path_buf());
                self.pending_presence.insert(rel.to_path_buf());
            }
        }
    }

    /// Forget a file.
    pub fn remove_file(&mut self, rel: &Path) {
        if self.files.remove(rel).is_some() {
            self.meta.remove(rel);
            self.pending.insert(rel.to_path_buf());
            self.pending_presence.insert(rel.to_path_buf());
        }
    }

    fn publish_file_map(&mut self) {
        let ws = db::Db::workspace(&self.db);
        if ws.files(&self.db) != &self.files {
            ws.set_files(&mut self.db).to(self.files.clone());
        }
    }

    /// The deps hash of `file`: its content and, for everything it
    /// includes (transitively), path, content and resolved includes; and
    /// the engine. Equal deps hashes mean the file's scan reads the same.
    fn deps_hash(&self, graph: &includes::IncludeGraph, file: &Path) -> String {
        let reach = graph.reach(file);
        let parts: Vec<(String, &str, Vec<String>)> = reach
            .iter()
            .map(|p| {
                (
                    path_key(p),
                    self.meta
                        .get(p)
                        .map(|m| m.content_hash.as_str())
                        .unwrap_or(""),
                    graph.targets(p).iter().map(|t| path_key(t)).collect(),
                )
            })
            .collect();
        db::stable_hash(&(&self.engine, path_key(file), parts))
    }

    fn exists(&self) -> impl Fn(&Path) -> bool + '_ {
        |p: &Path| self.files.contains_key(p)
    }

    /// Attach the store's cache to every file whose content, includes,
    /// configuration and engine are what the store saw.
    fn attach_cache(&mut self, state: &StoreState) {
        let engine_ok = state.meta.get("engine") == Some(&self.engine);
        let mut candidates: HashMap<PathBuf, &StoredFile> = HashMap::new();
        if engine_ok {
            for (rel, m) in &self.meta {
                if let Some(s) = state.files.get(&path_key(rel))
                    && s.content_hash == m.content_hash
                    && s.symbols.is_some()
                    && m.read_error.is_none()
                {
                    candidates.insert(rel.clone(), s);
                }
            }
        }
        let mut graph = includes::IncludeGraph::default();
        let dirs = self.config.preprocessor.include_dirs.clone();
        for (rel, s) in &candidates {
            if let Some(sym) = &s.symbols {
                graph.set(rel, &sym.includes, &dirs, &self.exists());
            }
        }
        let mut attach: Vec<(SourceFile, Arc<FileCache>)> = Vec::new();
        for (rel, s) in &candidates {
            let Some(symbols) = s.symbols.clone() else {
                continue;
            };
            if s.deps_hash.as_deref() != Some(self.deps_hash(&graph, rel).as_str()) {
                continue;
            }
            // Every function of the file must have its rows and cache.
            let mut functions = HashMap::new();
            let mut complete = true;
            for d in &symbols.defs {
                match s.functions.get(&d.key) {
                    Some(f) if f.content_hash == d.content_hash => {
                        functions.insert(d.key.clone(), f.cache.clone().unwrap_or_default());
                        complete &= f.cache.is_some() || d.kind == FunctionKind::Host;
                    }
                    _ => complete = false,
                }
            }
            if !complete {
                continue;
            }
            if let Some(&file) = self.files.get(rel) {
                attach.push((file, Arc::new(FileCache { symbols, functions })));
            }
        }
        for (file, cache) in attach {
            file.set_cache(&mut self.db).to(Some(cache));
        }
    }

    /// The symbols of `paths`, computed in parallel.
    fn symbols_of(&self, paths: &[PathBuf]) -> Vec<(PathBuf, Arc<FileSymbols>)> {
        let files: Vec<(PathBuf, SourceFile)> = paths
            .iter()
            .filter_map(|p| self.files.get(p).map(|f| (p.clone(), *f)))
            .collect();
        par_map(&self.db, &files, |db, (p, f)| {
            (p.clone(), db::file_symbols(db, *f))
        })
    }

    /// Recompute the indexed set from the sources and the include graph.
    fn compute_indexed(&self) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        for p in self.files.keys().filter(|p| workspace::is_source(p)) {
            out.extend(self.graph.reach(p));
        }
        out.retain(|p| self.files.contains_key(p));
        out
    }

    /// Make `folded`, `graph` and `indexed` agree with the current symbols
    /// of `dirty` (files whose symbols may have changed), folding headers
    /// that become indexed in and files that stop being indexed out.
    /// Returns the files whose symbols were folded in or out, each with its
    /// symbols before.
    fn refold(&mut self, dirty: &BTreeSet<PathBuf>) -> BTreeMap<PathBuf, Option<Arc<FileSymbols>>> {
        let dirs = self.config.preprocessor.include_dirs.clone();
        let mut touched = BTreeMap::new();
        let mut graph_changed = false;
        // Removed files leave the graph.
        for p in dirty {
            if !self.files.contains_key(p) && self.graph.remove(p).is_some() {
                graph_changed = true;
            }
        }
        // Files to (re)derive: dirty ones that are indexed or sources.
        let mut todo: Vec<PathBuf> = dirty
            .iter()
            .filter(|p| {
                self.files.contains_key(*p)
                    && (self.indexed.contains(*p) || workspace::is_source(p))
            })
            .cloned()
            .collect();
        let mut new_symbols: HashMap<PathBuf, Arc<FileSymbols>> = HashMap::new();
        loop {
            for (p, s) in self.symbols_of(&todo) {
                let exists = |q: &Path| self.files.contains_key(q);
                graph_changed |= self.graph.set(&p, &s.includes, &dirs, &exists);
                new_symbols.insert(p, s);
            }
            let indexed = if graph_changed || !self.pending_presence.is_empty() {
                self.compute_indexed()
            } else {
                self.indexed.clone()
            };
            // Headers that just became indexed need their symbols too.
            todo = indexed
                .iter()
                .filter(|p| !self.folded.contains_key(*p) && !new_symbols.contains_key(*p))
                .cloned()
                .collect();
            if todo.is_empty() {
                self.indexed = indexed;
                break;
            }
        }
        // Fold out what left, then replace what changed or arrived.
        let gone: Vec<PathBuf> = self
            .folded
            .keys()
            .filter(|p| !self.indexed.contains(*p))
            .cloned()
            .collect();
        for p in gone {
            if let Some(old) = self.folded.remove(&p) {
                self.names.remove(&p, &old);
                touched.insert(p.clone(), Some(old));
            }
            if !self.files.contains_key(&p) {
                self.graph.remove(&p);
            }
        }
        for (p, s) in new_symbols {
            if !self.indexed.contains(&p) {
                continue;
            }
            let Some(&file) = self.files.get(&p) else {
                continue;
            };
            let old = self.folded.get(&p).cloned();
            if let Some(old) = &old {
                if Arc::ptr_eq(old, &s) || **old == *s {
                    continue;
                }
                self.names.remove(&p, old);
            }
            self.names.add(file, &p, &s);
            self.folded.insert(p.clone(), s);
            touched.insert(p, old);
        }
        touched
    }

    /// A full run: (re)index everything into `store`, reusing what it holds.
    pub fn run_full(&mut self, store: &mut Store) -> Result<IndexSummary> {
        let start = Instant::now();
        let tx = store.transaction()?;
        let state = tx.load_state()?;
        let plan = self.prepare_full(Some(&state));
        let mut summary = self.write(&tx, &state, &plan.touched, &plan.functions, true)?;
        tx.set_meta("engine", &self.engine)?;
        tx.commit()?;
        summary.seconds = start.elapsed().as_secs_f64();
        Ok(summary)
    }

    /// Apply the pending file changes ([`Indexer::set_file_bytes`],
    /// [`Indexer::remove_file`]) to `store`: re-derive what they can reach
    /// and write what differs, in one transaction.
    pub fn update(&mut self, store: &mut Store) -> Result<IndexSummary> {
        let start = Instant::now();
        let plan = self.prepare_update();
        let mut involved: BTreeSet<PathBuf> = plan.touched.clone();
        involved.extend(plan.functions.iter().map(|f| f.path.clone()));
        let tx = store.transaction()?;
        let state = tx.load_files(involved.iter().map(|p| path_key(p)))?;
        let mut summary = self.write(&tx, &state, &plan.touched, &plan.functions, false)?;
        tx.commit()?;
        summary.seconds = start.elapsed().as_secs_f64();
        Ok(summary)
    }

    /// Bring the name index and the salsa inputs up to date with the loaded
    /// files (a full fold the first time, then the pending changes), without
    /// writing anything: what tests and tools that query the database
    /// directly call before asking for a function's facts.
    pub fn sync(&mut self) {
        if self.folded.is_empty() && self.indexed.is_empty() {
            self.prepare_full(None);
        } else {
            self.prepare_update();
        }
    }

    /// The first definition (by path, then key) of a function named `name`.
    pub fn find(&self, name: &str) -> Option<FuncRef<'_>> {
        let (p, k) = self.names.defs(name).next()?;
        let file = *self.files.get(p)?;
        Some(FuncRef::new(&self.db, file, k.clone()))
    }

    /// Every indexed function: its reference and definition symbol.
    pub fn functions(&self) -> Vec<(FuncRef<'_>, db::DefSymbol)> {
        let mut out = Vec::new();
        for p in &self.indexed {
            let (Some(s), Some(&file)) = (self.folded.get(p), self.files.get(p)) else {
                continue;
            };
            for d in &s.defs {
                out.push((FuncRef::new(&self.db, file, d.key.clone()), d.clone()));
            }
        }
        out
    }

    fn prepare_full(&mut self, state: Option<&StoreState>) -> Plan {
        self.publish_file_map();
        if let Some(state) = state {
            self.attach_cache(state);
        }
        let all: BTreeSet<PathBuf> = self.files.keys().cloned().collect();
        self.indexed.clear();
        let touched: BTreeSet<PathBuf> = self.refold(&all).into_keys().collect();
        let ws = db::Db::workspace(&self.db);
        self.names.flush(&mut self.db, ws);
        self.pending.clear();
        self.pending_presence.clear();
        let functions = self.functions_of(&self.indexed.clone());
        Plan { touched, functions }
    }

    fn prepare_update(&mut self) -> Plan {
        self.publish_file_map();
        let pending = std::mem::take(&mut self.pending);
        let presence = std::mem::take(&mut self.pending_presence);
        // Files whose scan may read something else now: the changed ones,
        // those whose include resolution tried a created or removed path,
        // and everything that includes any of them.
        let mut dirty = pending.clone();
        for p in &presence {
            dirty.extend(self.graph.probers(p).cloned());
        }
        let dirty = self.graph.with_includers(&dirty);
        for p in &dirty {
            if let Some(&f) = self.files.get(p)
                && f.cache(&self.db).is_some()
            {
                f.set_cache(&mut self.db).to(None);
            }
        }
        self.pending_presence = presence;
        let refolded = self.refold(&dirty);
        self.pending_presence.clear();
        let ws = db::Db::workspace(&self.db);
        let changed_names = self.names.flush(&mut self.db, ws);
        // Names whose functions' results can change: those whose entries
        // changed, and every name defined in a file derived anew; then
        // their callers (callee summaries flow up) and everything those
        // reach (call arguments and launch dimensions flow down).
        let mut seeds: BTreeSet<String> = changed_names;
        for (p, old) in &refolded {
            for s in [old.as_ref(), self.folded.get(p)].into_iter().flatten() {
                seeds.extend(s.defs.iter().map(|d| d.name.clone()));
            }
        }
        for p in &dirty {
            if let Some(s) = self.folded.get(p) {
                seeds.extend(s.defs.iter().map(|d| d.name.clone()));
            }
        }
        let back = self.names.closure(&seeds, true);
        let reach = self.names.closure(&back, false);
        let mut wanted: BTreeSet<FnKey> = self
            .functions_of(
                &dirty
                    .iter()
                    .filter(|p| self.indexed.contains(*p))
                    .cloned()
                    .collect(),
            )
            .into_iter()
            .collect();
        for n in &reach {
            for (p, k) in self.names.defs(n) {
                wanted.insert(FnKey {
                    path: p.clone(),
                    key: k.clone(),
                });
            }
        }
        let mut touched: BTreeSet<PathBuf> = refolded.into_keys().collect();
        touched.extend(dirty);
        Plan {
            touched,
            functions: wanted.into_iter().collect(),
        }
    }

    /// Every function of `files` (indexed ones), from the folded symbols.
    fn functions_of(&self, files: &BTreeSet<PathBuf>) -> Vec<FnKey> {
        let mut out = Vec::new();
        for p in files {
            if let Some(s) = self.folded.get(p) {
                for d in &s.defs {
                    out.push(FnKey {
                        path: p.clone(),
                        key: d.key.clone(),
                    });
                }
            }
        }
        out
    }

    /// Compare the outputs of `functions` and the rows of the `touched`
    /// files with `state` and write the differences. With `complete`,
    /// stored files that are no longer indexed are deleted.
    fn write(
        &self,
        tx: &StoreTx<'_>,
        state: &StoreState,
        touched: &BTreeSet<PathBuf>,
        functions: &[FnKey],
        complete: bool,
    ) -> Result<IndexSummary> {
        let mut summary = IndexSummary {
            functions_checked: functions.len(),
            ..IndexSummary::default()
        };
        // Outputs of every function looked at, in parallel.
        let refs: Vec<(FnKey, SourceFile)> = functions
            .iter()
            .filter_map(|k| self.files.get(&k.path).map(|f| (k.clone(), *f)))
            .collect();
        let outputs = par_map(&self.db, &refs, |db, (k, f)| {
            db::function_output(db, FuncRef::new(db, *f, k.key.clone()))
        });
        let outputs: HashMap<&FnKey, Arc<db::FunctionOutput>> =
            refs.iter().map(|(k, _)| k).zip(outputs).collect();

        // Files: deleted, and (re)written where derived anew.
        let indexed_keys: HashMap<String, &PathBuf> =
            self.indexed.iter().map(|p| (path_key(p), p)).collect();
        let mut file_ids: HashMap<PathBuf, i64> = HashMap::new();
        for (key, s) in &state.files {
            match indexed_keys.get(key) {
                Some(p) => {
                    file_ids.insert((*p).clone(), s.id);
                }
                None => {
                    // A batch loads only the files it is about: any of them
                    // that is not indexed any more goes.
                    tx.delete_file(s.id)?;
                    summary.files_deleted += 1;
                }
            }
        }
        let candidates: Vec<&PathBuf> = if complete {
            self.indexed.iter().collect()
        } else {
            touched
                .iter()
                .filter(|p| self.indexed.contains(*p))
                .collect()
        };
        for p in candidates {
            let Some(&file) = self.files.get(p) else {
                continue;
            };
            let key = path_key(p);
            let stored = state.files.get(&key);
            let needs = stored.is_none() || file.cache(&self.db).is_none();
            if !needs {
                continue;
            }
            let id = self.write_file(tx, p, file)?;
            summary.files_written += 1;
            file_ids.insert(p.clone(), id);
        }

        // Functions.
        let empty = HashMap::new();
        for k in functions {
            let Some(&file) = self.files.get(&k.path) else {
                continue;
            };
            let Some(sym) = self.folded.get(&k.path).and_then(|s| s.def(&k.key)) else {
                continue;
            };
            let Some(out) = outputs.get(k) else { continue };
            let Some(&file_id) = file_ids.get(&k.path) else {
                continue;
            };
            let stored_fns = state
                .files
                .get(&path_key(&k.path))
                .map(|s| &s.functions)
                .unwrap_or(&empty);
            let stored = stored_fns.get(&k.key);
            let fref = || FuncRef::new(&self.db, file, k.key.clone());
            let path_text = path_key(&k.path);
            let placed = |r: &db::FunctionResults| -> Vec<crate::check::Finding> {
                r.findings
                    .iter()
                    .cloned()
                    .map(|mut f| {
                        f.place(&path_text, &k.key, sym.start_line);
                        f
                    })
                    .collect()
            };
            let analysed = sym.kind != FunctionKind::Host;
            let line = i64::from(sym.start_line) + 1;
            let (fid, fresh) = match stored {
                Some(s) if s.content_hash == out.content_hash => {
                    if s.line != line {
                        tx.shift_function(s.id, line - s.line)?;
                        summary.functions_moved += 1;
                        if analysed
                            && s.cache.as_ref().and_then(|c| c.results_hash.as_ref())
                                == out.results_hash.as_ref()
                        {
                            let r = db::function_results(&self.db, fref());
                            tx.replace_findings(s.id, &placed(&r))?;
                        }
                    } else {
                        summary.functions_unchanged += 1;
                    }
                    (s.id, false)
                }
                other => {
                    if let Some(s) = other {
                        let old = tx.findings_of(s.id)?;
                        summary.findings_removed += old;
                        tx.delete_function(s.id)?;
                    }
                    let facts = db::function_facts(&self.db, fref());
                    let qualified = if sym.scope_path.is_empty() {
                        sym.name.clone()
                    } else {
                        format!("{}::{}", sym.scope_path, sym.name)
                    };
                    let start_col = facts_start_col(&self.db, fref());
                    let id = tx.insert_function(
                        file_id,
                        &k.key,
                        &sym.name,
                        &qualified,
                        sym.start_line,
                        start_col,
                        &facts,
                    )?;
                    summary.functions_written += 1;
                    (id, true)
                }
            };
            if !analysed {
                continue;
            }
            let stored_cache = if fresh {
                None
            } else {
                stored.and_then(|s| s.cache.clone())
            };
            if fresh
                || stored_cache.as_ref().and_then(|c| c.results_hash.as_ref())
                    != out.results_hash.as_ref()
            {
                let r = db::function_results(&self.db, fref());
                let ir = db::function_ir(&self.db, fref());
                let findings = placed(&r);
                if !fresh {
                    summary.findings_removed += tx.findings_of(fid)?;
                }
                summary.findings_added += findings.len();
                tx.write_results(fid, sym.start_line, &ir, &r.analysis, &findings, &r.hash)?;
                summary.results_written += 1;
            }
            let cache = FunctionCache {
                inputs_hash: out.inputs_hash.clone(),
                results_hash: out.results_hash.clone(),
                summary_inputs_hash: out.summary_inputs_hash.clone(),
                summary: out.summary.clone(),
                call_args: (*out.call_args).clone(),
            };
            if stored_cache.as_ref() != Some(&cache) {
                tx.upsert_function_cache(fid, &cache)?;
            }
        }
        // Functions that disappeared from the files this run is about.
        for p in touched.iter().filter(|p| self.indexed.contains(*p)) {
            let Some(s) = state.files.get(&path_key(p)) else {
                continue;
            };
            let keys: BTreeSet<&str> = self
                .folded
                .get(p)
                .map(|s| s.defs.iter().map(|d| d.key.as_str()).collect())
                .unwrap_or_default();
            for (key, f) in &s.functions {
                if !keys.contains(key.as_str()) {
                    summary.findings_removed += tx.findings_of(f.id)?;
                    tx.delete_function(f.id)?;
                    summary.functions_deleted += 1;
                }
            }
        }
        if complete {
            self.totals(tx, &mut summary)?;
        }
        Ok(summary)
    }

    /// Write one file's own row (and cache row); returns its id.
    fn write_file(&self, tx: &StoreTx<'_>, p: &Path, file: SourceFile) -> Result<i64> {
        let meta = self.meta.get(p).cloned().unwrap_or(FileMeta {
            content_hash: String::new(),
            bytes: 0,
            not_utf8_at: None,
            read_error: None,
        });
        let scan = db::scan(&self.db, file);
        let mut diagnostics = scan.diagnostics.clone();
        if let Some((line, col)) = meta.not_utf8_at {
            diagnostics.push(SourceDiagnostic {
                line,
                col,
                severity: "warning",
                code: "encoding",
                message: "file is not valid UTF-8; decoded as Latin-1".into(),
            });
        }
        if let Some(e) = &meta.read_error {
            diagnostics.push(SourceDiagnostic {
                line: 1,
                col: 1,
                severity: "error",
                code: "unreadable",
                message: format!("cannot read the file: {e}"),
            });
        }
        let symbols = db::file_symbols(&self.db, file);
        let mut parse_errors = diagnostics
            .iter()
            .filter(|d| d.code == "parse-error")
            .count() as u64;
        for d in &symbols.defs {
            let f = db::function_ir(&self.db, FuncRef::new(&self.db, file, d.key.clone()));
            parse_errors += f.syntax_errors.len() as u64;
        }
        let key = path_key(p);
        let symbols_json = serde_json::to_string(&*symbols)?;
        tx.upsert_file(&FileRow {
            path: &key,
            content_hash: &meta.content_hash,
            bytes: meta.bytes,
            parse_errors,
            diagnostics: &diagnostics,
            deps_hash: &self.deps_hash(&self.graph, p),
            symbols_json: &symbols_json,
        })
    }

    /// Fill in the totals of the indexed workspace (from the store).
    fn totals(&self, tx: &StoreTx<'_>, s: &mut IndexSummary) -> Result<()> {
        let c = tx.connection();
        let (files, bytes, file_errors): (i64, i64, i64) = c.query_row(
            "SELECT count(*), IFNULL(sum(bytes), 0), IFNULL(sum(parse_errors), 0) FROM files",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let (functions, kernels): (i64, i64) = c.query_row(
            "SELECT count(*), IFNULL(sum(kind = 'kernel'), 0) FROM functions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let accesses: i64 = c.query_row("SELECT count(*) FROM accesses", [], |r| r.get(0))?;
        s.files = files as usize;
        s.bytes = bytes as u64;
        s.parse_errors = file_errors as usize;
        s.functions = functions as usize;
        s.kernels = kernels as usize;
        s.accesses = accesses as usize;
        Ok(())
    }
}

fn facts_start_col(db: &Database, f: FuncRef<'_>) -> u32 {
    db::item_source(db, f).map(|s| s.start_col).unwrap_or(0)
}

/// Options of one index run.
pub struct IndexOptions {
    /// Show a progress indicator.
    pub progress: bool,
}

/// Index `root` into the store at `db_path`: a full, incremental run.
pub fn index_directory(
    root: &Path,
    db_path: &Path,
    config: Config,
    opts: &IndexOptions,
) -> Result<IndexSummary> {
    Ok(index_and_keep(root, db_path, config, opts)?.summary)
}

/// The result of a full run, with the loaded indexer and the open store
/// kept (for `check` and `watch`).
pub struct IndexRun {
    /// The loaded workspace.
    pub indexer: Indexer,
    /// The open store.
    pub store: Store,
    /// Totals.
    pub summary: IndexSummary,
}

/// Like [`index_directory`], keeping the indexer and store.
pub fn index_and_keep(
    root: &Path,
    db_path: &Path,
    config: Config,
    opts: &IndexOptions,
) -> Result<IndexRun> {
    let spinner = opts.progress.then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_message(format!("indexing {}", root.display()));
        b.enable_steady_tick(std::time::Duration::from_millis(120));
        b
    });
    let mut store = Store::open(db_path)?;
    let mut ix = Indexer::new(root, config, None);
    ix.load_all()?;
    let summary = ix.run_full(&mut store)?;
    if let Some(b) = spinner {
        b.finish_and_clear();
    }
    Ok(IndexRun {
        indexer: ix,
        store,
        summary,
    })
}
