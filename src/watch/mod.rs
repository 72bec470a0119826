//! `cudalog watch`: keep the database equal to a fresh `check` of a
//! directory while its files change.
//!
//! A [`Session`] holds the loaded workspace ([`crate::index::Indexer`]) and
//! the open store. Each batch of changed paths ([`Changes`], from file
//! events or from a test) is turned into salsa input changes by
//! [`Session::apply`]: files read anew, created, removed (a directory's
//! files with it), or everything re-listed for storms and ignore-file
//! edits; then one [`crate::index::Indexer::update`] re-derives what the
//! changes can reach and writes the rows that differ in one transaction.
//! A change of `cudalog.toml` reloads the configuration and rebuilds.
//!
//! The event loop (notify, debounced; Ctrl-C) is in [`events`].

pub mod events;

use crate::config::{CONFIG_FILE, Config};
use crate::index::{IndexOptions, IndexSummary, Indexer, index_and_keep};
use crate::store::Store;
use crate::workspace;
use anyhow::Result;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

/// More changed paths than this in one batch are handled as a rescan of
/// the whole tree (a `git checkout`, an unpacked archive).
pub const STORM_PATHS: usize = 512;

/// One batch of changes.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    /// Paths reported changed (files or directories; created, modified,
    /// removed or renamed, either side of a rename), absolute or relative
    /// to the workspace root.
    pub paths: BTreeSet<PathBuf>,
    /// Re-list the whole tree (the event source lost events).
    pub rescan: bool,
}

/// What one batch did, as printed by `watch`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct BatchReport {
    /// Files whose contents changed, created or removed.
    pub files_changed: usize,
    /// Functions whose derived facts and findings were re-derived and
    /// rewritten.
    pub functions_rederived: usize,
    /// Functions the changes could reach (looked at).
    pub functions_checked: usize,
    /// Findings added to the store.
    pub findings_added: usize,
    /// Findings removed from the store.
    pub findings_removed: usize,
    /// Wall-clock milliseconds for the batch (both parts below and the
    /// reading of the changed files).
    pub ms: f64,
    /// Milliseconds until the facts, built-in findings and bounds of the
    /// batch were committed.
    pub index_ms: f64,
    /// Milliseconds of the house-rule pass that follows (it re-evaluates
    /// the rules over the whole store, so it grows with the workspace).
    pub rules_ms: f64,
    /// The house-rule pass was left to a later batch (more events were
    /// already queued).
    pub rules_deferred: bool,
    /// The whole tree was re-listed.
    pub rescan: bool,
    /// The configuration was reloaded and everything rebuilt.
    pub rebuilt: bool,
    /// Problems met (unreadable files, an invalid configuration), one line
    /// each.
    pub diagnostics: Vec<String>,
}

/// A watched workspace: the loaded indexer and the open store.
pub struct Session {
    indexer: Indexer,
    store: Store,
    root: PathBuf,
    db_path: PathBuf,
    /// `-D` defines given on the command line (kept across config reloads).
    defines: Vec<String>,
    /// The configuration text last loaded (`None`: no file).
    config_text: Option<String>,
    /// The house rules' last pass.
    rules: crate::rules::RuleState,
    /// Leave the house-rule pass of a batch to [`Session::catch_up_rules`]
    /// (the watch loop sets it so that a burst of batches runs the
    /// whole-store rule pass once, after the last of them).
    pub defer_rules: bool,
    /// A rule pass was deferred and has not run yet.
    rules_owed: bool,
}

impl Session {
    /// Index `root` into the store at `db_path` (reusing what it holds) and
    /// keep both for batches.
    pub fn start(
        root: &Path,
        db_path: &Path,
        defines: &[String],
        opts: &IndexOptions,
    ) -> Result<(Session, IndexSummary)> {
        let root = root.canonicalize()?;
        let config_text = read_config_text(&root);
        let mut config = Config::load(&root)?;
        config.add_defines(defines)?; // (harden) -D names are validated
        let run = index_and_keep(&root, db_path, config, opts)?;
        let mut rules = crate::rules::RuleState::default();
        let pass = rules.run(run.store.connection(), &root, run.indexer.config())?;
        for e in &pass.errors {
            eprint!("{}", e.render());
        }
        Ok((
            Session {
                indexer: run.indexer,
                store: run.store,
                root,
                db_path: db_path.to_path_buf(),
                defines: defines.to_vec(),
                config_text,
                rules,
                defer_rules: false,
                rules_owed: false,
            },
            run.summary,
        ))
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The open store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The loaded workspace.
    pub fn indexer(&self) -> &Indexer {
        &self.indexer
    }

    /// Apply one batch: bring the loaded workspace in line with the files
    /// on disk at the changed paths, re-derive and write what differs.
    /// Returns `None` when nothing that is indexed changed (an ignored
    /// file, a save with the same contents).
    pub fn apply(&mut self, changes: &Changes) -> Result<Option<BatchReport>> {
        let start = Instant::now();
        let mut report = BatchReport::default();
        let all: Vec<PathBuf> = changes
            .paths
            .iter()
            .filter_map(|p| self.relative(p))
            .collect();
        // A house-rule file (`.cudalog/rules/`, `[rules] paths`) changed:
        // the rules re-run even when no source changed.
        let rules_changed = all.iter().any(|r| r.extension().is_some_and(|e| e == "dl"))
            && self.rules.rules_changed(&self.root, self.indexer.config());
        let rels: BTreeSet<PathBuf> = all
            .into_iter()
            .filter(|r| !is_own(r, &self.root, &self.db_path))
            .collect();
        if rels.iter().any(|r| r == Path::new(CONFIG_FILE)) {
            let text = read_config_text(&self.root);
            if text != self.config_text {
                match self.reload() {
                    Ok(summary) => {
                        self.config_text = text;
                        report.rebuilt = true;
                        fill(&mut report, &summary);
                        report.files_changed = summary.files_written + summary.files_deleted;
                        report.index_ms = ms(start);
                        self.run_rules(&mut report)?;
                        report.ms = ms(start);
                        return Ok(Some(report));
                    }
                    Err(e) => {
                        // Keep working with the configuration in force.
                        report.diagnostics.push(format!(
                            "{}: {e:#} (keeping the previous configuration)",
                            CONFIG_FILE
                        ));
                    }
                }
            }
        }
        let rescan =
            changes.rescan || rels.len() > STORM_PATHS || rels.iter().any(|r| is_ignore_file(r));
        report.rescan = rescan;
        let mut lister = Lister::new(&self.root, &self.indexer.config().index.exclude);

        if rescan {
            self.rescan(&mut report)?;
        } else {
            for rel in &rels {
                self.refresh(rel, &mut lister, &mut report)?;
            }
        }
        report.files_changed = self.indexer.pending().len();
        if report.files_changed == 0 && !rules_changed {
            return Ok((!report.diagnostics.is_empty()).then(|| {
                report.ms = ms(start);
                report
            }));
        }
        if report.files_changed > 0 {
            match self.indexer.update(&mut self.store) {
                Ok(summary) => fill(&mut report, &summary),
                Err(e) => {
                    // The transaction was rolled back: the store is as it
                    // was before the batch. Re-read it at the next batch.
                    self.indexer.resync_with_store();
                    return Err(e);
                }
            }
        }
        report.index_ms = ms(start);
        self.run_rules(&mut report)?;
        report.ms = ms(start);
        Ok(Some(report))
    }

    /// Re-run the house rules over the store (the rules read facts of every
    /// function, so any batch may change their findings); rule files that
    /// cannot run become diagnostics.
    fn run_rules(&mut self, report: &mut BatchReport) -> Result<()> {
        if self.defer_rules {
            self.rules_owed = true;
            report.rules_deferred = true;
            return Ok(());
        }
        self.rules_owed = false;
        let started = std::time::Instant::now();
        let pass = self
            .rules
            .run(self.store.connection(), &self.root, self.indexer.config())?;
        report.findings_added += pass.added.len();
        report.findings_removed += pass.removed.len();
        report.diagnostics.extend(
            pass.errors
                .iter()
                .map(|e| e.render().trim_end().to_string()),
        );
        report.rules_ms = ms(started);
        Ok(())
    }

    /// Whether a deferred house-rule pass has not run yet.
    pub fn rules_owed(&self) -> bool {
        self.rules_owed
    }

    /// Run the house-rule pass that batches applied with `defer_rules`
    /// left owed, adding its changes and time to `report`. Does nothing
    /// when none is owed.
    pub fn catch_up_rules(&mut self, report: &mut BatchReport) -> Result<()> {
        if !self.rules_owed {
            return Ok(());
        }
        let defer = std::mem::replace(&mut self.defer_rules, false);
        let started = Instant::now();
        let r = self.run_rules(report);
        self.defer_rules = defer;
        report.rules_deferred = false;
        report.ms += ms(started);
        r
    }

    /// `p` relative to the root, when it is inside it.
    fn relative(&self, p: &Path) -> Option<PathBuf> {
        let rel = if p.is_absolute() {
            p.strip_prefix(&self.root).ok()?.to_path_buf()
        } else {
            p.to_path_buf()
        };
        // Only plain relative paths (no `..`).
        rel.components()
            .all(|c| matches!(c, Component::Normal(_)))
            .then_some(rel)
            .filter(|r| !r.as_os_str().is_empty())
    }

    /// Re-read one changed path: a file (indexed, or no longer present or
    /// admitted), or a directory (everything under it).
    fn refresh(&mut self, rel: &Path, lister: &mut Lister, report: &mut BatchReport) -> Result<()> {
        let abs = self.root.join(rel);
        let meta = std::fs::symlink_metadata(&abs).ok();
        let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
        // Loaded files at or under `rel` that may be gone.
        let below: Vec<PathBuf> = self.indexer.paths_under(rel).cloned().collect();
        let mut present: BTreeSet<PathBuf> = BTreeSet::new();
        if is_dir {
            if lister.dir_admitted(rel)? {
                present.extend(workspace::discover_in(
                    &self.root,
                    rel,
                    &self.indexer.config().index.exclude,
                    true,
                )?);
            }
        } else if meta.is_some() && lister.file_admitted(rel)? {
            present.insert(rel.to_path_buf());
        }
        for p in below {
            if !present.contains(&p) {
                self.indexer.remove_file(&p);
            }
        }
        for p in present {
            self.read(&p, report);
        }
        Ok(())
    }

    /// Re-list the whole tree: files gone are removed, every present file
    /// is read (unchanged contents cost a hash).
    fn rescan(&mut self, report: &mut BatchReport) -> Result<()> {
        let present: BTreeSet<PathBuf> =
            workspace::discover(&self.root, &self.indexer.config().index.exclude)?
                .into_iter()
                .collect();
        let gone: Vec<PathBuf> = self
            .indexer
            .paths()
            .filter(|p| !present.contains(*p))
            .cloned()
            .collect();
        for p in gone {
            self.indexer.remove_file(&p);
        }
        for p in present {
            self.read(&p, report);
        }
        Ok(())
    }

    /// Read one file into the workspace; a file that cannot be read is
    /// indexed as empty with a diagnostic (nothing else is lost).
    fn read(&mut self, rel: &Path, report: &mut BatchReport) {
        match std::fs::read(self.root.join(rel)) {
            Ok(bytes) => self.indexer.set_file_bytes(rel, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Removed between the listing and the read (its own event
                // follows).
                self.indexer.remove_file(rel);
            }
            Err(e) => {
                report.diagnostics.push(format!(
                    "{}: cannot read: {e}",
                    workspace::display_path(rel)
                ));
                self.indexer.set_unreadable(rel, &e);
            }
        }
    }

    /// Reload the configuration and rebuild everything under it.
    fn reload(&mut self) -> Result<IndexSummary> {
        let mut config = Config::load(&self.root)?;
        config.add_defines(&self.defines)?; // (harden) -D names are validated
        let mut ix = Indexer::new(&self.root, config, None);
        ix.load_all()?;
        let summary = ix.run_full(&mut self.store)?;
        let old = std::mem::replace(&mut self.indexer, ix);
        drop(old);
        Ok(summary)
    }
}

/// The text of the configuration file, if there is one.
fn read_config_text(root: &Path) -> Option<String> {
    std::fs::read_to_string(root.join(CONFIG_FILE)).ok()
}

/// Whether `rel` is under `.cudalog/` or the database's own directory.
fn is_own(rel: &Path, root: &Path, db_path: &Path) -> bool {
    if rel.starts_with(".cudalog") {
        return true;
    }
    let db = db_path
        .canonicalize()
        .unwrap_or_else(|_| db_path.to_path_buf());
    db.parent()
        .and_then(|d| d.strip_prefix(root).ok())
        .is_some_and(|d| !d.as_os_str().is_empty() && rel.starts_with(d))
}

/// Whether `rel` is an ignore file (its edit can change what is indexed
/// anywhere below it).
fn is_ignore_file(rel: &Path) -> bool {
    matches!(
        rel.file_name().and_then(|n| n.to_str()),
        Some(".gitignore" | ".ignore")
    )
}

fn fill(report: &mut BatchReport, s: &IndexSummary) {
    report.functions_rederived = s.results_written;
    report.functions_checked = s.functions_checked;
    report.findings_added = s.findings_added;
    report.findings_removed = s.findings_removed;
}

fn ms(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 1000.0 * 10.0).round() / 10.0
}

/// Which paths a walk from the root admits, asked one directory at a time
/// (memoised for one batch).
struct Lister {
    root: PathBuf,
    exclude: Vec<String>,
    /// Admitted entries of each listed directory: path → is a directory.
    listed: HashMap<PathBuf, HashMap<PathBuf, bool>>,
}

impl Lister {
    fn new(root: &Path, exclude: &[String]) -> Self {
        Lister {
            root: root.to_path_buf(),
            exclude: exclude.to_vec(),
            listed: HashMap::new(),
        }
    }

    fn entries(&mut self, dir: &Path) -> Result<&HashMap<PathBuf, bool>> {
        if !self.listed.contains_key(dir) {
            let e = workspace::list_dir(&self.root, dir, &self.exclude)?
                .into_iter()
                .collect();
            self.listed.insert(dir.to_path_buf(), e);
        }
        Ok(&self.listed[dir])
    }

    /// Whether a walk from the root enters directory `rel`.
    fn dir_admitted(&mut self, rel: &Path) -> Result<bool> {
        let Some(parent) = rel.parent() else {
            return Ok(true);
        };
        if rel.as_os_str().is_empty() {
            return Ok(true);
        }
        if !self.dir_admitted(parent)? {
            return Ok(false);
        }
        Ok(self.entries(parent)?.get(rel) == Some(&true))
    }

    /// Whether a walk from the root yields file `rel` as a source or header.
    fn file_admitted(&mut self, rel: &Path) -> Result<bool> {
        if !(workspace::is_source(rel) || workspace::is_header(rel)) {
            return Ok(false);
        }
        let parent = rel.parent().unwrap_or(Path::new(""));
        if !self.dir_admitted(parent)? {
            return Ok(false);
        }
        Ok(self.entries(parent)?.get(rel) == Some(&false))
    }
}
