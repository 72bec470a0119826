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
mod run;

use crate::config::Config;
use crate::db::{self, Database, ExecutionLog, FileCache, FileSymbols, FuncRef, SourceFile};
use crate::frontend::Scope;
use crate::ir::FunctionKind;
use crate::store::{Store, StoreState, StoreTx, StoredFile, path_key};
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
    /// What the store holds, as of the last run or batch (a mirror kept
    /// current by every write this indexer queues).
    stored: StoreState,
    /// Whether `stored` was read from a store (by a full run).
    stored_loaded: bool,
    /// Whether `files` gained or lost an entry since it was last published
    /// to the workspace input.
    file_map_dirty: bool,
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
    Arc::new(Scope {
        macros: config.initial_macros(),
        ..Scope::default()
    })
}

/// A fingerprint of what every cached result depends on besides the
/// sources: this build of cudalog (the bytes of its executable) and the
/// configuration.
fn engine_fingerprint(config: &Config) -> String {
    // Streamed: the executable is tens of MB, not worth holding at once.
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::File::open(p).ok())
        .and_then(|f| {
            let mut h = blake3::Hasher::new();
            h.update_reader(f).ok()?;
            Some(h.finalize().to_hex().to_string())
        })
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
            stored: StoreState::default(),
            stored_loaded: false,
            file_map_dirty: true,
        };
        let scope = initial_scope(&ix.config);
        let dirs = ix.config.preprocessor.include_dirs.clone();
        ws.set_initial_scope(&mut ix.db).to(scope);
        ws.set_include_dirs(&mut ix.db).to(dirs);
        let block = ix.config.launch.block;
        ws.set_default_block(&mut ix.db).to(block);
        let grid = ix
            .config
            .launch
            .grid
            .map(|g| g.map(Some))
            .unwrap_or([None; 3]);
        ws.set_default_grid(&mut ix.db).to(grid);
        let lockstep = ix.config.launch.warp_lockstep;
        ws.set_warp_lockstep(&mut ix.db).to(lockstep);
        let cost = crate::facts::cost::CostModel::from(&ix.config.cost);
        ws.set_cost(&mut ix.db).to(cost);
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

    /// Files changed, created or removed since the last run or batch.
    pub fn pending(&self) -> &BTreeSet<PathBuf> {
        &self.pending
    }

    /// The loaded files at or under `rel` (a file, or a directory's files).
    pub fn paths_under<'a>(&'a self, rel: &'a Path) -> impl Iterator<Item = &'a PathBuf> + 'a {
        // Paths order component-wise: everything under `rel` follows it.
        self.files
            .range::<Path, _>((std::ops::Bound::Included(rel), std::ops::Bound::Unbounded))
            .map(|(p, _)| p)
            .take_while(move |p| p.starts_with(rel))
    }

    /// Whether `rel` is loaded.
    pub fn has_file(&self, rel: &Path) -> bool {
        self.files.contains_key(rel)
    }

    /// Make the next [`Indexer::update`] a full run, which reads the
    /// store's state afresh (after a batch that failed to commit, the
    /// mirror of the store cannot be trusted).
    pub fn resync_with_store(&mut self) {
        self.stored_loaded = false;
    }

    /// Read every source and header under the root into the database (in
    /// parallel). A file that cannot be read is indexed as empty, with a
    /// diagnostic.
    pub fn load_all(&mut self) -> Result<()> {
        // (harden) the walk follows symbolic links and returns, per path,
        // either nothing wrong or why it cannot be read (unreadable file or
        // directory, broken link, link loop); files over `[index]
        // max_file_bytes` are not read. Each problem is recorded as the
        // path's `read_error` (an `unreadable` diagnostic) instead of being
        // skipped; an unreadable directory has no file row to carry it, so
        // it is logged.
        let paths = workspace::walk_checked(&self.root, &self.config.index.exclude)?;
        let root = self.root.clone();
        let max = self.config.index.max_file_bytes;
        let read: Vec<(PathBuf, Result<Vec<u8>, workspace::LoadError>)> = paths
            .into_par_iter()
            .map(|(rel, problem)| {
                let r = match problem {
                    Some(e) => Err(e),
                    None => workspace::read_checked(&root.join(&rel), max, &|p| std::fs::read(p)),
                };
                (rel, r)
            })
            .collect();
        for (rel, r) in read {
            match r {
                Ok(bytes) => self.set_file_bytes(&rel, &bytes),
                Err(workspace::LoadError::UnreadableDir(e)) => {
                    tracing::warn!("{}: cannot read this directory: {e}", rel.display());
                }
                Err(e) => self.set_load_error(&rel, &e),
            }
        }
        Ok(())
    }

    /// (harden) Record a path that cannot be read, with why, like
    /// [`Indexer::set_unreadable`].
    fn set_load_error(&mut self, rel: &Path, err: &workspace::LoadError) {
        self.set_file(
            rel,
            String::new(),
            FileMeta {
                content_hash: format!("unreadable:{}", err.code()),
                bytes: 0,
                not_utf8_at: None,
                read_error: Some(err.to_string()),
            },
        );
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
                self.file_map_dirty = true;
                self.pending.insert(rel.to_path_buf());
                self.pending_presence.insert(rel.to_path_buf());
            }
        }
    }

    /// Forget a file.
    pub fn remove_file(&mut self, rel: &Path) {
        if self.files.remove(rel).is_some() {
            self.file_map_dirty = true;
            self.meta.remove(rel);
            self.pending.insert(rel.to_path_buf());
            self.pending_presence.insert(rel.to_path_buf());
        }
    }

    fn publish_file_map(&mut self) {
        if !self.file_map_dirty {
            return;
        }
        self.file_map_dirty = false;
        let ws = db::Db::workspace(&self.db);
        if ws.files(&self.db) != &self.files {
            ws.set_files(&mut self.db).to(self.files.clone());
        }
    }

    /// The deps hash of `file`: its content and, for everything it
    /// includes (transitively), path, content and resolved includes; and
    /// the engine. Equal deps hashes mean the file's scan reads the same.
    fn deps_hash(&self, graph: &includes::IncludeGraph, file: &Path) -> String {
        let reach = graph.context_reach(file);
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
    /// that become indexed in and files that stop being indexed out. With
    /// `emit`, the rows of every file derived anew are queued for the store
    /// as soon as its chunk is done (and the chunk's memos may be evicted).
    /// Returns the files whose symbols were folded in or out, each with its
    /// symbols before.
    fn refold(
        &mut self,
        dirty: &BTreeSet<PathBuf>,
        mut emit: Option<&mut run::Emit<'_>>,
    ) -> BTreeMap<PathBuf, Option<Arc<FileSymbols>>> {
        let dirs = self.config.preprocessor.include_dirs.clone();
        let mut touched = BTreeMap::new();
        let mut graph_changed = false;
        let mut indexed_changed = false;
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
            for chunk in todo.chunks(run::FILE_CHUNK) {
                let files: Vec<(PathBuf, SourceFile)> = chunk
                    .iter()
                    .filter_map(|p| self.files.get(p).map(|f| (p.clone(), *f)))
                    .collect();
                let emitting = emit.is_some();
                let (meta, stored) = (&self.meta, &self.stored);
                let done = par_map(&self.db, &files, |db, (p, f)| {
                    let s = db::file_symbols(db, *f);
                    let work = emitting.then(|| run::file_work(db, meta, stored, p, *f, &s));
                    (p.clone(), s, work)
                });
                for (p, s, work) in done {
                    let exists = |q: &Path| self.files.contains_key(q);
                    graph_changed |= self.graph.set(&p, &s.includes, &dirs, &exists);
                    if let (Some(e), Some(Some(w))) = (emit.as_deref_mut(), work) {
                        e.file(&mut self.stored, w);
                    }
                    new_symbols.insert(p, s);
                }
                if emitting {
                    salsa::Database::trigger_lru_eviction(&mut self.db);
                }
            }
            // The indexed set changes only with the include graph or the
            // set of files; otherwise every indexed file is folded already
            // and nothing leaves (this keeps a batch O(changed files)).
            if !(graph_changed || !self.pending_presence.is_empty() || self.indexed.is_empty()) {
                break;
            }
            indexed_changed = true;
            let indexed = self.compute_indexed();
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
        let gone: Vec<PathBuf> = if indexed_changed {
            self.folded
                .keys()
                .filter(|p| !self.indexed.contains(*p))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
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

    /// Bring the name index and the salsa inputs up to date with the loaded
    /// files (a full fold the first time, then the pending changes), without
    /// writing anything: what tests and tools that query the database
    /// directly call before asking for a function's facts.
    pub fn sync(&mut self) {
        if self.folded.is_empty() && self.indexed.is_empty() {
            self.prepare_full();
        } else {
            self.prepare_update(None);
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
}

/// Fill in the totals of the indexed workspace (from the store).
fn totals(tx: &StoreTx<'_>, s: &mut IndexSummary) -> Result<()> {
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
    let run = index_and_keep(root, db_path, config, opts)?;
    // Freeing the analysis database piece by piece is wasted work here.
    std::mem::forget(run.indexer);
    Ok(run.summary)
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
