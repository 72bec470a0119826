//! Runs and batches. Both go through the same two phases, with the store's
//! writer thread executing the queued jobs while the next chunk is computed:
//!
//! 1. **Files** (in chunks, in parallel): the symbols of every file to
//!    derive anew, its own row and the rows of its functions whose content
//!    changed (functions that only moved are shifted). The symbols are
//!    folded into the name index.
//! 2. **Functions** (in chunks, in parallel): the output of every function
//!    the run is about — all of them in a full run, those the changes can
//!    reach in a batch — and, where its results differ from the store's,
//!    its derived facts and findings.
//!
//! Every decision compares with the indexer's mirror of the store
//! ([`super::Indexer::stored`]), which the queued jobs keep current, so a
//! batch reads nothing back from SQLite. Memos of the heavy per-function
//! queries are evicted after each chunk, which bounds memory on large
//! workspaces.

use super::{FileMeta, FnKey, IndexSummary, Indexer, par_map};
use crate::check::Finding;
use crate::db::{self, FuncRef, FunctionCache, FunctionFacts, SourceFile};
use crate::frontend::SourceDiagnostic;
use crate::ir::FunctionKind;
use crate::store::{
    FileRow, PackedCache, Store, StoreState, StoredFile, StoredFunction, WriteHandle, path_key,
};
use anyhow::Result;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Files per chunk of phase 1.
pub(super) const FILE_CHUNK: usize = 64;
/// Functions per chunk of phase 2.
const FUNCTION_CHUNK: usize = 256;

/// A function's own rows, as phase 1 decides them.
enum FnBase {
    /// New or changed: (re)insert its rows.
    Insert {
        key: String,
        name: String,
        qualified: String,
        start_line: u32,
        start_col: u32,
        facts: Arc<FunctionFacts>,
        replace: bool,
    },
    /// Moved: shift its rows.
    Shift { key: String, delta: i64 },
}

/// What phase 1 computed for one file the store must be brought in line
/// with.
pub(super) struct FileWork {
    path: PathBuf,
    row: FileRow,
    functions: Vec<FnBase>,
    /// Keys the store has that the file no longer defines.
    deleted: Vec<String>,
}

/// The work of phase 1 for one file: `None` when the store already holds
/// exactly what the file gives (a cached file).
pub(super) fn file_work(
    db: &db::Database,
    meta: &HashMap<PathBuf, FileMeta>,
    stored: &StoreState,
    p: &Path,
    f: SourceFile,
    symbols: &db::FileSymbols,
) -> Option<FileWork> {
    let key = path_key(p);
    let st = stored.files.get(&key);
    if f.cache(db).is_some() && st.is_some() {
        return None;
    }
    let m = meta.get(p);
    let scan = db::scan(db, f);
    let mut diagnostics = scan.diagnostics.clone();
    if let Some((line, col)) = m.and_then(|m| m.not_utf8_at) {
        diagnostics.push(SourceDiagnostic {
            line,
            col,
            severity: "warning",
            code: "encoding",
            message: "file is not valid UTF-8; decoded as Latin-1".into(),
        });
    }
    if let Some(e) = m.and_then(|m| m.read_error.as_ref()) {
        diagnostics.push(SourceDiagnostic {
            line: 1,
            col: 1,
            severity: "error",
            code: "unreadable",
            message: format!("cannot read the file: {e}"),
        });
    }
    let mut parse_errors = diagnostics
        .iter()
        .filter(|d| d.code == "parse-error")
        .count() as u64;
    let mut functions = Vec::new();
    for d in &symbols.defs {
        let fref = FuncRef::new(db, f, d.key.clone());
        let facts = db::function_facts(db, fref);
        parse_errors += facts.function.parse_error_count() as u64;
        let line = i64::from(d.start_line) + 1;
        match st.and_then(|s| s.functions.get(&d.key)) {
            Some(sf) if sf.content_hash == facts.content_hash => {
                if sf.line != line {
                    functions.push(FnBase::Shift {
                        key: d.key.clone(),
                        delta: line - sf.line,
                    });
                }
            }
            other => {
                let qualified = if d.scope_path.is_empty() {
                    d.name.clone()
                } else {
                    format!("{}::{}", d.scope_path, d.name)
                };
                functions.push(FnBase::Insert {
                    key: d.key.clone(),
                    name: d.name.clone(),
                    qualified,
                    start_line: d.start_line,
                    start_col: db::item_source(db, fref).map(|s| s.start_col).unwrap_or(0),
                    facts,
                    replace: other.is_some(),
                });
            }
        }
    }
    let keys: HashSet<&str> = symbols.defs.iter().map(|d| d.key.as_str()).collect();
    let deleted = st
        .map(|s| {
            s.functions
                .keys()
                .filter(|k| !keys.contains(k.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    Some(FileWork {
        path: p.to_path_buf(),
        row: FileRow {
            path: key,
            content_hash: m.map(|m| m.content_hash.clone()).unwrap_or_default(),
            bytes: m.map(|m| m.bytes).unwrap_or(0),
            parse_errors,
            diagnostics,
        },
        functions,
        deleted,
    })
}

/// Counts the writer thread keeps.
#[derive(Default)]
struct WriterCounts {
    findings_added: usize,
    findings_removed: usize,
}

/// The state of one run or batch while it queues jobs.
pub(super) struct Emit<'a> {
    w: &'a WriteHandle,
    counts: Arc<Mutex<WriterCounts>>,
    summary: IndexSummary,
    /// Functions whose own rows were (re)inserted: their results must be
    /// written too.
    fresh: HashSet<FnKey>,
    /// Functions that only moved: their findings name absolute lines.
    moved: HashSet<FnKey>,
    /// Files whose rows were written (their cache rows follow phase 1).
    written: BTreeSet<PathBuf>,
}

fn count(counts: &Arc<Mutex<WriterCounts>>, f: impl FnOnce(&mut WriterCounts)) {
    f(&mut counts.lock().unwrap_or_else(|e| e.into_inner()));
}

/// The id of a function, for a job that needs it (the function exists:
/// phase 1 queued its insertion before).
fn fid(tx: &crate::store::StoreTx<'_>, path: &str, key: &str) -> Result<i64> {
    tx.function_id(path, key)?
        .ok_or_else(|| anyhow::anyhow!("internal: no row for function {key} of {path}"))
}

impl<'a> Emit<'a> {
    fn new(w: &'a WriteHandle) -> Self {
        Emit {
            w,
            counts: Arc::default(),
            summary: IndexSummary::default(),
            fresh: HashSet::new(),
            moved: HashSet::new(),
            written: BTreeSet::new(),
        }
    }

    /// Queue the jobs of one file of phase 1 and mirror them in `stored`.
    pub(super) fn file(&mut self, stored: &mut StoreState, work: FileWork) {
        let FileWork {
            path,
            row,
            functions,
            deleted,
        } = work;
        let key = row.path.clone();
        let mirror = stored.files.entry(key.clone()).or_default();
        mirror.content_hash = row.content_hash.clone();
        mirror.deps_hash = None;
        mirror.symbols = None;
        self.w.exec(move |tx| {
            tx.upsert_file(&row)?;
            Ok(())
        });
        self.summary.files_written += 1;
        for k in deleted {
            mirror.functions.remove(&k);
            let (p, counts) = (key.clone(), self.counts.clone());
            self.w.exec(move |tx| {
                if let Some(id) = tx.function_id(&p, &k)? {
                    let n = tx.findings_of(id)?;
                    count(&counts, |c| c.findings_removed += n);
                    tx.delete_function(id)?;
                }
                Ok(())
            });
            self.summary.functions_deleted += 1;
        }
        for f in functions {
            match f {
                FnBase::Insert {
                    key: k,
                    name,
                    qualified,
                    start_line,
                    start_col,
                    facts,
                    replace,
                } => {
                    mirror.functions.insert(
                        k.clone(),
                        StoredFunction {
                            content_hash: facts.content_hash.clone(),
                            line: i64::from(start_line) + 1,
                            cache: None,
                            results_hash: None,
                            cache_digest: None,
                        },
                    );
                    self.fresh.insert(FnKey {
                        path: path.clone(),
                        key: k.clone(),
                    });
                    let (p, counts) = (key.clone(), self.counts.clone());
                    self.w.exec(move |tx| {
                        if replace && let Some(id) = tx.function_id(&p, &k)? {
                            let n = tx.findings_of(id)?;
                            count(&counts, |c| c.findings_removed += n);
                            tx.delete_function(id)?;
                        }
                        let file_id = tx
                            .file_id(&p)?
                            .ok_or_else(|| anyhow::anyhow!("internal: no row for file {p}"))?;
                        tx.insert_function(
                            file_id, &k, &name, &qualified, start_line, start_col, &facts,
                        )?;
                        Ok(())
                    });
                    self.summary.functions_written += 1;
                }
                FnBase::Shift { key: k, delta } => {
                    if let Some(m) = mirror.functions.get_mut(&k) {
                        m.line += delta;
                    }
                    self.moved.insert(FnKey {
                        path: path.clone(),
                        key: k.clone(),
                    });
                    let p = key.clone();
                    self.w
                        .exec(move |tx| tx.shift_function(fid(tx, &p, &k)?, delta));
                    self.summary.functions_moved += 1;
                }
            }
        }
        self.written.insert(path);
    }
}

/// What phase 2 computed for one function.
struct FnWork {
    key: FnKey,
    /// New results to write: IR, results, placed findings.
    results: Option<(
        Arc<crate::ir::Function>,
        Arc<db::FunctionResults>,
        Vec<Finding>,
    )>,
    /// Findings to re-place (the function moved, its results did not
    /// change).
    placed: Option<Vec<Finding>>,
    /// Its cache row, when it differs from the store's.
    cache: Option<PackedCache>,
}

impl Indexer {
    /// A full run: (re)index everything into `store`, reusing what it
    /// holds; the whole run is one transaction.
    pub fn run_full(&mut self, store: &mut Store) -> Result<IndexSummary> {
        let start = Instant::now();
        store
            .with_writer(|w| {
                self.stored = w.call(|tx| tx.load_state())?;
                self.stored_loaded = true;
                tracing::info!("store state loaded: {:.3}s", start.elapsed().as_secs_f64());
                let mut emit = Emit::new(w);
                self.publish_file_map();
                let stored = std::mem::take(&mut self.stored);
                self.attach_cache(&stored);
                let mut stored = stored;
                stored.forget_cache_rows();
                self.stored = stored;
                let all: BTreeSet<PathBuf> = self.files.keys().cloned().collect();
                self.indexed.clear();
                let touched: BTreeSet<PathBuf> =
                    self.refold(&all, Some(&mut emit)).into_keys().collect();
                let ws = db::Db::workspace(&self.db);
                self.names.flush(&mut self.db, ws);
                self.pending.clear();
                self.pending_presence.clear();
                tracing::info!(
                    "phase 1 ({} files): {:.3}s",
                    self.indexed.len(),
                    start.elapsed().as_secs_f64()
                );
                let stale: Vec<String> = {
                    let live: HashSet<String> = self.indexed.iter().map(|p| path_key(p)).collect();
                    self.stored
                        .files
                        .keys()
                        .filter(|k| !live.contains(*k))
                        .cloned()
                        .collect()
                };
                self.finish_files(&mut emit, stale, &touched);
                let functions = self.functions_of(&self.indexed.clone());
                self.phase2(&mut emit, &functions);
                tracing::info!("phase 2: {:.3}s", start.elapsed().as_secs_f64());
                let engine = self.engine.clone();
                w.exec(move |tx| tx.set_meta("engine", &engine));
                let mut summary = self.finish(emit);
                w.call(move |tx| {
                    super::totals(tx, &mut summary)?;
                    Ok(summary)
                })
            })
            .map(|mut s| {
                s.seconds = start.elapsed().as_secs_f64();
                tracing::info!("committed: {:.3}s", s.seconds);
                s
            })
    }

    /// Apply the pending file changes ([`Indexer::set_file_bytes`],
    /// [`Indexer::remove_file`]) to `store`: re-derive what they can reach
    /// and write what differs, in one transaction. Without a full run
    /// before, this is a full run.
    pub fn update(&mut self, store: &mut Store) -> Result<IndexSummary> {
        if !self.stored_loaded {
            return self.run_full(store);
        }
        let start = Instant::now();
        store
            .with_writer(|w| {
                let mut emit = Emit::new(w);
                let plan = self.prepare_update(Some(&mut emit));
                tracing::debug!(
                    "batch: symbols of {} files, {} functions to check: {:.1} ms",
                    plan.touched.len(),
                    plan.functions.len(),
                    start.elapsed().as_secs_f64() * 1e3
                );
                let stale: Vec<String> = plan
                    .touched
                    .iter()
                    .filter(|p| !self.indexed.contains(*p))
                    .map(|p| path_key(p))
                    .filter(|k| self.stored.files.contains_key(k))
                    .collect();
                self.finish_files(&mut emit, stale, &plan.touched);
                self.phase2(&mut emit, &plan.functions);
                tracing::debug!(
                    "batch: functions: {:.1} ms",
                    start.elapsed().as_secs_f64() * 1e3
                );
                let mut summary = self.finish(emit);
                summary.functions_checked = plan.functions.len();
                Ok(summary)
            })
            .map(|mut s| {
                s.seconds = start.elapsed().as_secs_f64();
                tracing::debug!("batch: committed: {:.1} ms", s.seconds * 1e3);
                s
            })
    }

    pub(super) fn prepare_full(&mut self) -> super::Plan {
        self.publish_file_map();
        let all: BTreeSet<PathBuf> = self.files.keys().cloned().collect();
        self.indexed.clear();
        let touched: BTreeSet<PathBuf> = self.refold(&all, None).into_keys().collect();
        let ws = db::Db::workspace(&self.db);
        self.names.flush(&mut self.db, ws);
        self.pending.clear();
        self.pending_presence.clear();
        let functions = self.functions_of(&self.indexed.clone());
        super::Plan { touched, functions }
    }

    pub(super) fn prepare_update(&mut self, emit: Option<&mut Emit<'_>>) -> super::Plan {
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
                salsa::Setter::to(f.set_cache(&mut self.db), None);
            }
        }
        self.pending_presence = presence;
        let refolded = self.refold(&dirty, emit);
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
        super::Plan {
            touched,
            functions: wanted.into_iter().collect(),
        }
    }

    /// After phase 1: delete the `stale` stored files, and write the cache
    /// rows of the files written (their deps hash needs the whole include
    /// graph).
    fn finish_files(
        &mut self,
        emit: &mut Emit<'_>,
        stale: Vec<String>,
        touched: &BTreeSet<PathBuf>,
    ) {
        for k in stale {
            self.stored.files.remove(&k);
            let counts = emit.counts.clone();
            emit.w.exec(move |tx| {
                if let Some(id) = tx.file_id(&k)? {
                    let n: i64 = tx.connection().query_row(
                        "SELECT count(*) FROM findings WHERE function_id IN \
                         (SELECT id FROM functions WHERE file_id = ?1)",
                        [id],
                        |r| r.get(0),
                    )?;
                    count(&counts, |c| c.findings_removed += n as usize);
                    tx.delete_file(id)?;
                }
                Ok(())
            });
            emit.summary.files_deleted += 1;
        }
        let written: Vec<PathBuf> = emit
            .written
            .iter()
            .chain(touched.iter())
            .filter(|p| self.indexed.contains(*p))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for p in written {
            let Some(symbols) = self.folded.get(&p).cloned() else {
                continue;
            };
            let key = path_key(&p);
            let deps = self.deps_hash(&self.graph, &p);
            let Some(mirror) = self.stored.files.get_mut(&key) else {
                continue;
            };
            if mirror.deps_hash.as_deref() == Some(deps.as_str())
                && mirror.symbols.as_deref() == Some(&*symbols)
            {
                continue;
            }
            mirror.deps_hash = Some(deps.clone());
            mirror.symbols = Some(symbols.clone());
            emit.w.exec(move |tx| {
                let json = serde_json::to_string(&*symbols)?;
                let id = tx
                    .file_id(&key)?
                    .ok_or_else(|| anyhow::anyhow!("internal: no row for file {key}"))?;
                tx.set_file_cache(id, &deps, &json)
            });
        }
    }

    /// Phase 2: the outputs of `functions`, and their results where the
    /// store's differ.
    fn phase2(&mut self, emit: &mut Emit<'_>, functions: &[FnKey]) {
        emit.summary.functions_checked = functions.len();
        for chunk in functions.chunks(FUNCTION_CHUNK) {
            let refs: Vec<(FnKey, SourceFile, db::DefSymbol)> = chunk
                .iter()
                .filter_map(|k| {
                    let f = *self.files.get(&k.path)?;
                    let d = self.folded.get(&k.path)?.def(&k.key)?.clone();
                    Some((k.clone(), f, d))
                })
                .collect();
            let (stored, fresh, moved) = (&self.stored, &emit.fresh, &emit.moved);
            let works = par_map(&self.db, &refs, |db, (k, f, d)| {
                function_work(db, stored, fresh, moved, k, *f, d)
            });
            for w in works.into_iter().flatten() {
                self.emit_function(emit, w);
            }
            salsa::Database::trigger_lru_eviction(&mut self.db);
        }
    }

    fn emit_function(&mut self, emit: &mut Emit<'_>, w: FnWork) {
        let key = path_key(&w.key.path);
        let mirror = self
            .stored
            .files
            .get_mut(&key)
            .and_then(|f| f.functions.get_mut(&w.key.key));
        if let Some((ir, r, findings)) = w.results {
            emit.summary.results_written += 1;
            let (p, k, counts) = (key.clone(), w.key.key.clone(), emit.counts.clone());
            let start_line = self
                .folded
                .get(&w.key.path)
                .and_then(|s| s.def(&w.key.key))
                .map(|d| d.start_line)
                .unwrap_or(0);
            emit.w.exec(move |tx| {
                let id = fid(tx, &p, &k)?;
                let old = tx.findings_of(id)?;
                count(&counts, |c| {
                    c.findings_removed += old;
                    c.findings_added += findings.len();
                });
                tx.write_results(
                    id,
                    start_line,
                    &ir,
                    &r.analysis,
                    &findings,
                    &r.hash,
                    &r.bounds,
                )
            });
        } else if let Some(findings) = w.placed {
            let (p, k) = (key.clone(), w.key.key.clone());
            emit.w
                .exec(move |tx| tx.replace_findings(fid(tx, &p, &k)?, &findings));
        }
        if let Some(cache) = w.cache {
            if let Some(m) = mirror {
                m.cache = None;
                m.results_hash = cache.results_hash.clone();
                m.cache_digest = Some(cache.digest);
            }
            let (p, k) = (key, w.key.key.clone());
            emit.w
                .exec(move |tx| tx.upsert_function_cache(fid(tx, &p, &k)?, &cache));
        }
    }

    /// Turn the counts of a run into its summary.
    fn finish(&self, emit: Emit<'_>) -> IndexSummary {
        let Emit {
            w, counts, summary, ..
        } = emit;
        // Wait for the writer: its counts are final once every job ran.
        let _ = w.call(|_| Ok(()));
        let c = counts.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = summary;
        s.findings_added = c.findings_added;
        s.findings_removed = c.findings_removed;
        s.functions_unchanged = s
            .functions_checked
            .saturating_sub(s.functions_written + s.functions_moved);
        s
    }
}

/// The work of phase 2 for one function.
fn function_work(
    db: &db::Database,
    stored: &StoreState,
    fresh: &HashSet<FnKey>,
    moved: &HashSet<FnKey>,
    k: &FnKey,
    f: SourceFile,
    d: &db::DefSymbol,
) -> Option<FnWork> {
    if d.kind == FunctionKind::Host {
        return None;
    }
    let fref = FuncRef::new(db, f, k.key.clone());
    let out = db::function_output(db, fref);
    let path = path_key(&k.path);
    let st: Option<&StoredFunction> = stored
        .files
        .get(&path)
        .and_then(|s: &StoredFile| s.functions.get(&k.key));
    let stored_results = st.and_then(|s| s.results_hash.as_ref());
    let stored_digest = st.and_then(|s| s.cache_digest);
    let place = |r: &db::FunctionResults| -> Vec<Finding> {
        r.findings
            .iter()
            .cloned()
            .map(|mut x| {
                x.place(&path, &k.key, d.start_line);
                x
            })
            .collect()
    };
    let is_fresh = fresh.contains(k);
    let mut work = FnWork {
        key: k.clone(),
        results: None,
        placed: None,
        cache: None,
    };
    if is_fresh || stored_results != out.results_hash.as_ref() {
        let r = db::function_results(db, fref);
        let findings = place(&r);
        work.results = Some((db::function_ir(db, fref), r, findings));
    } else if moved.contains(k) {
        work.placed = Some(place(&db::function_results(db, fref)));
    }
    let cache = FunctionCache {
        inputs_hash: out.inputs_hash.clone(),
        results_hash: out.results_hash.clone(),
        summary_inputs_hash: out.summary_inputs_hash.clone(),
        summary: out.summary.clone(),
        call_args: (*out.call_args).clone(),
    };
    // A row that cannot be serialised is not cached (the next run derives
    // the function again).
    match PackedCache::new(&cache) {
        Ok(p) if is_fresh || stored_digest != Some(p.digest) => work.cache = Some(p),
        Ok(_) => {}
        Err(e) => tracing::warn!("cannot serialise the cache row of {}: {e:#}", k.key),
    }
    Some(work)
}
