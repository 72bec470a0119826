//! The indexing pipeline: workspace files → salsa inputs → per-function facts
//! → store rows. Used by `cudalog index` (and later by `check` and `watch`).

use crate::config::Config;
use crate::db::{self, Database, ExecutionLog, SourceFile};
use crate::frontend::{Scope, SourceDiagnostic};
use crate::store::{FileRecord, FunctionRecord, Store, SyncStats};
use crate::workspace::{self, display_path};
use anyhow::Result;
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
    files: BTreeMap<PathBuf, SourceFile>,
    meta: HashMap<PathBuf, FileMeta>,
}

#[derive(Clone)]
struct FileMeta {
    content_hash: String,
    bytes: u64,
    not_utf8_at: Option<(u32, u32)>,
}

/// Totals reported after an index run.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct IndexSummary {
    /// Files indexed (sources plus included headers).
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
    /// Functions whose rows were (re)written this run.
    pub functions_written: usize,
    /// Functions whose rows were only shifted.
    pub functions_moved: usize,
    /// Functions whose rows were kept.
    pub functions_unchanged: usize,
}

fn initial_scope(config: &Config) -> Arc<Scope> {
    Arc::new(Scope {
        macros: config.initial_macros(),
        ..Scope::default()
    })
}

impl Indexer {
    /// An empty indexer for `root`; with `log`, query executions are recorded.
    pub fn new(root: &Path, config: Config, log: Option<ExecutionLog>) -> Indexer {
        let db = Database::new(log);
        let ws = db::Db::workspace(&db);
        let mut ix = Indexer {
            db,
            root: root.to_path_buf(),
            config,
            files: BTreeMap::new(),
            meta: HashMap::new(),
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

    /// Read every source and header under the root into the database.
    pub fn load_all(&mut self) -> Result<()> {
        let paths = workspace::discover(&self.root, &self.config.index.exclude)?;
        let mut unreadable = Vec::new();
        for rel in paths {
            match std::fs::read(self.root.join(&rel)) {
                Ok(bytes) => self.set_file_bytes(&rel, &bytes),
                Err(e) => unreadable.push((rel, e)),
            }
        }
        if let Some((rel, e)) = unreadable.first() {
            anyhow::bail!(
                "cannot read {}: {e}{}",
                self.root.join(rel).display(),
                if unreadable.len() > 1 {
                    format!(" (and {} more unreadable files)", unreadable.len() - 1)
                } else {
                    String::new()
                }
            );
        }
        self.publish_file_map();
        Ok(())
    }

    /// Set (or replace) a file's contents. Call [`Indexer::publish_file_map`]
    /// after adding new files.
    pub fn set_file_bytes(&mut self, rel: &Path, bytes: &[u8]) {
        let d = workspace::decode(bytes);
        self.meta.insert(
            rel.to_path_buf(),
            FileMeta {
                content_hash: d.content_hash,
                bytes: d.bytes,
                not_utf8_at: d.not_utf8_at,
            },
        );
        match self.files.get(rel) {
            Some(f) => {
                if f.text(&self.db) != &d.text {
                    f.set_text(&mut self.db).to(d.text);
                }
            }
            None => {
                let f = SourceFile::new(&self.db, rel.to_path_buf(), d.text);
                self.files.insert(rel.to_path_buf(), f);
            }
        }
    }

    /// Forget a file.
    pub fn remove_file(&mut self, rel: &Path) {
        self.files.remove(rel);
        self.meta.remove(rel);
    }

    /// Make the current file set visible to include resolution.
    pub fn publish_file_map(&mut self) {
        let ws = db::Db::workspace(&self.db);
        if ws.files(&self.db) != &self.files {
            ws.set_files(&mut self.db).to(self.files.clone());
        }
    }

    /// Files to index: every `.cu`/`.cuh`, plus headers they include
    /// (transitively).
    pub fn indexed_files(&self) -> Vec<SourceFile> {
        let mut chosen: BTreeSet<PathBuf> = BTreeSet::new();
        let mut stack: Vec<SourceFile> = self
            .files
            .iter()
            .filter(|(p, _)| workspace::is_source(p))
            .map(|(_, f)| *f)
            .collect();
        while let Some(f) = stack.pop() {
            let path = f.path(&self.db).clone();
            if !chosen.insert(path.clone()) {
                continue;
            }
            for inc in &db::scan(&self.db, f).includes {
                if let Some(h) = db::resolve_include(&self.db, &path, inc) {
                    stack.push(h);
                }
            }
        }
        chosen
            .iter()
            .filter_map(|p| self.files.get(p).copied())
            .collect()
    }

    /// Compute the store records of the given files (runs the queries).
    pub fn records(&self, files: &[SourceFile]) -> Vec<FileRecord> {
        files.iter().map(|f| self.record(*f)).collect()
    }

    fn record(&self, file: SourceFile) -> FileRecord {
        let db = &self.db;
        let path = file.path(db);
        let meta = self.meta.get(path).cloned().unwrap_or(FileMeta {
            content_hash: String::new(),
            bytes: file.text(db).len() as u64,
            not_utf8_at: None,
        });
        let scan = db::scan(db, file);
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
        let functions = db::items(db, file)
            .iter()
            .map(|item| {
                let facts = db::function_facts(db, *item);
                let scope_path = item.scope_path(db);
                let name = item.name(db).clone();
                FunctionRecord {
                    key: item.key(db).clone(),
                    qualified_name: if scope_path.is_empty() {
                        name.clone()
                    } else {
                        format!("{scope_path}::{name}")
                    },
                    name,
                    start_line: item.start_line(db),
                    start_col: item.start_col(db),
                    facts,
                }
            })
            .collect();
        FileRecord {
            path: display_path(path),
            content_hash: meta.content_hash,
            bytes: meta.bytes,
            diagnostics,
            functions,
        }
    }
}

/// Options of one index run.
pub struct IndexOptions {
    /// Show a progress bar.
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

/// The result of an index run, with the loaded database kept for the
/// analyses that follow (`check`).
pub struct IndexRun {
    /// The loaded workspace.
    pub indexer: Indexer,
    /// The files indexed.
    pub files: Vec<SourceFile>,
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
    let start = Instant::now();
    let mut ix = Indexer::new(root, config, None);
    ix.load_all()?;
    let files = ix.indexed_files();
    let bar = if opts.progress {
        let b = indicatif::ProgressBar::new(files.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} indexing [{bar:30}] {pos}/{len} {wide_msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        Some(b)
    } else {
        None
    };
    let mut records = Vec::with_capacity(files.len());
    for f in &files {
        if let Some(b) = &bar {
            b.set_message(display_path(f.path(ix.db())));
        }
        records.push(ix.record(*f));
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut store = Store::open(db_path)?;
    let stats = store.sync(&records, true, &[])?;
    let summary = summarize(&records, stats, start.elapsed().as_secs_f64());
    Ok(IndexRun {
        indexer: ix,
        files,
        store,
        summary,
    })
}

/// Totals over a set of file records.
pub fn summarize(records: &[FileRecord], stats: SyncStats, seconds: f64) -> IndexSummary {
    let mut s = IndexSummary {
        files: records.len(),
        seconds,
        functions_written: stats.functions_written,
        functions_moved: stats.functions_moved,
        functions_unchanged: stats.functions_unchanged,
        ..IndexSummary::default()
    };
    for r in records {
        s.bytes += r.bytes;
        s.parse_errors += r
            .diagnostics
            .iter()
            .filter(|d| d.code == "parse-error")
            .count();
        for f in &r.functions {
            let func = &f.facts.function;
            s.functions += 1;
            if func.kind == crate::ir::FunctionKind::Kernel {
                s.kernels += 1;
            }
            s.accesses += func.accesses.len();
            s.parse_errors += func.parse_error_count();
        }
    }
    s
}
