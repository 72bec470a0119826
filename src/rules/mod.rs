//! House rules: lint checks teams write in Datalog (Soufflé's syntax) over
//! the store's tables.
//!
//! Flow: rule files ([`RuleFiles::discover`]: the shipped `rules/`,
//! `DIR/.cudalog/rules/*.dl`, `[rules] paths` of `cudalog.toml`) →
//! [`compile`] (parse with spans, resolve relations against the store's
//! schema read at run time, named columns, arity, types, bound variables,
//! stratification) → [`eval`] (in-memory semi-naive evaluation over store
//! rows loaded once per run) → [`lint`] (`.lint` tuples → [`Finding`]s).
//! A broken file yields [`RuleError`]s and is skipped; the others still run.
//! Rules only read the store (one read transaction, rolled back).
//!
//! Entry points: [`RuleState::run`] after each index run (`check`) or
//! watch batch (evaluates, writes the lint findings, reports what
//! changed); [`RuleState::rules_changed`] to re-run only the rules when
//! rule files change; [`workspace_findings`] evaluates without writing;
//! [`run_file`] for `rules run`.

pub mod ast;
pub mod compile;
pub mod error;
pub mod eval;
pub mod facts;
pub mod lint;
mod parse;
pub mod schema;
pub mod shipped;
pub mod source;

pub use compile::Program;
pub use error::{ErrorKind, RuleError};
pub use source::{Origin, RuleSource};

use crate::check::Finding;
use crate::config::Config;
use rusqlite::Connection;
use schema::StoreSchema;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Folder of a workspace's own rules, relative to its root.
pub const WORKSPACE_RULES_DIR: &str = ".cudalog/rules";

/// The rule files in effect for a workspace, in evaluation order.
#[derive(Clone, Debug, Default)]
pub struct RuleFiles {
    /// The files (shipped first, then the workspace's, then configured paths).
    pub files: Vec<RuleSource>,
    /// Configured paths that could not be read.
    pub errors: Vec<RuleError>,
    /// Lint names turned off by `[rules] disable`.
    pub disabled: Vec<String>,
}

impl RuleFiles {
    /// The shipped rules, `root/.cudalog/rules/*.dl` and the paths of
    /// `[rules] paths` (files, or folders whose `*.dl` are taken).
    pub fn discover(root: &Path, config: &Config) -> RuleFiles {
        let mut disabled = config.rules.disable.clone();
        for name in shipped::OPT_IN {
            if !config.rules.enable.iter().any(|e| e == name) && !disabled.iter().any(|d| d == name)
            {
                disabled.push(name.to_string());
            }
        }
        let mut out = RuleFiles {
            disabled,
            ..RuleFiles::default()
        };
        for (path, text) in shipped::SHIPPED {
            out.files
                .push(RuleSource::new(*path, Origin::Shipped, *text));
        }
        let mut seen: Vec<PathBuf> = Vec::new();
        let ws = root.join(WORKSPACE_RULES_DIR);
        if ws.is_dir() {
            for p in dl_files(&ws) {
                out.add(root, &p, Origin::Workspace, &mut seen);
            }
        }
        for p in &config.rules.paths {
            let full = root.join(p);
            if full.is_dir() {
                for f in dl_files(&full) {
                    out.add(root, &f, Origin::Config, &mut seen);
                }
            } else if full.is_file() {
                out.add(root, &full, Origin::Config, &mut seen);
            } else {
                out.errors.push(config_path_error(root, p));
            }
        }
        out
    }

    /// Only the given files (for `cudalog rules check|run FILE.dl`).
    pub fn from_paths(paths: &[PathBuf]) -> RuleFiles {
        let mut out = RuleFiles::default();
        for p in paths {
            match std::fs::read(p) {
                Ok(b) => out.files.push(RuleSource::new(
                    p.display().to_string(),
                    Origin::CommandLine,
                    crate::workspace::decode(&b).text,
                )),
                Err(e) => out.errors.push(RuleError::file(
                    &p.display().to_string(),
                    ErrorKind::Io,
                    format!("cannot read this rule file: {e}"),
                )),
            }
        }
        out
    }

    fn add(&mut self, root: &Path, p: &Path, origin: Origin, seen: &mut Vec<PathBuf>) {
        let canon = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if seen.contains(&canon) {
            return;
        }
        seen.push(canon);
        let shown = p
            .strip_prefix(root)
            .map(crate::workspace::display_path)
            .unwrap_or_else(|_| p.display().to_string());
        match std::fs::read(p) {
            Ok(b) => self.files.push(RuleSource::new(
                shown,
                origin,
                crate::workspace::decode(&b).text,
            )),
            Err(e) => self.errors.push(RuleError::file(
                &shown,
                ErrorKind::Io,
                format!("cannot read this rule file: {e}"),
            )),
        }
    }

    /// A hash of every file's path and text and of the disabled list:
    /// equal fingerprints mean the rules in effect did not change.
    pub fn fingerprint(&self) -> String {
        let mut h = blake3::Hasher::new();
        for f in &self.files {
            h.update(f.hash().as_bytes());
        }
        for d in &self.disabled {
            h.update(d.as_bytes());
            h.update(&[0]);
        }
        for e in &self.errors {
            h.update(e.message.as_bytes());
        }
        h.finalize().to_hex()[..32].to_string()
    }

    /// The paths on disk a watcher should follow (workspace and configured
    /// files; the folders `DIR/.cudalog/rules` and configured folders are
    /// watched for new files by the caller).
    pub fn watched_paths(&self, root: &Path) -> Vec<PathBuf> {
        self.files
            .iter()
            .filter(|f| matches!(f.origin, Origin::Workspace | Origin::Config))
            .map(|f| root.join(&f.path))
            .collect()
    }
}

fn dl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "dl"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// "cudalog.toml:L:C: the rule path `x` does not exist", pointing at the
/// path in the configuration text when it can be found.
fn config_path_error(root: &Path, p: &Path) -> RuleError {
    let shown = p.display().to_string();
    let msg = format!("the rule path `{shown}` in [rules] paths does not exist");
    let cfg = root.join(crate::config::CONFIG_FILE);
    if let Ok(text) = std::fs::read_to_string(&cfg) {
        let src = RuleSource::new(crate::config::CONFIG_FILE, Origin::Config, text.as_str());
        if let Some(i) = text.find(&format!("\"{shown}\"")) {
            return RuleError::at(
                &src,
                source::Span::new(i, i + shown.len() + 2),
                ErrorKind::Io,
                msg,
            );
        }
    }
    RuleError::file(crate::config::CONFIG_FILE, ErrorKind::Io, msg)
}

/// What evaluating rule files produced.
#[derive(Debug, Default)]
pub struct RulesOutcome {
    /// Lint findings, sorted by file, line, column.
    pub findings: Vec<Finding>,
    /// Errors of files that were skipped (and unreadable paths).
    pub errors: Vec<RuleError>,
    /// Files evaluated.
    pub files_evaluated: usize,
    /// Rows read from the store.
    pub rows_loaded: usize,
}

/// Compile every file against the store's schema (no evaluation).
pub fn compile_all(schema: &StoreSchema, files: &RuleFiles) -> (Vec<Program>, Vec<RuleError>) {
    let mut programs = Vec::new();
    let mut errors = files.errors.clone();
    let mut lint_owner: HashMap<String, String> = HashMap::new();
    for src in &files.files {
        match compile::compile(src, schema) {
            Ok(p) => {
                let dup = p
                    .lints
                    .iter()
                    .find_map(|l| lint_owner.get(&l.name).map(|other| (l, other.clone())));
                if let Some((l, other)) = dup {
                    errors.push(RuleError::at(
                        src,
                        l.span,
                        ErrorKind::Declaration,
                        format!("the lint `{}` is already defined in {other}; lint names must be unique", l.name),
                    ));
                    continue;
                }
                for l in &p.lints {
                    lint_owner.insert(l.name.clone(), src.path.clone());
                }
                programs.push(p);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    (programs, errors)
}

/// Evaluate the lints of `files` over the store behind `conn`; sources for
/// suppression comments are read under `root`. A file with errors is
/// reported and skipped; the others run. Re-evaluation entry point for
/// watch mode.
pub fn evaluate_lints(conn: &Connection, root: &Path, files: &RuleFiles) -> RulesOutcome {
    let mut out = RulesOutcome::default();
    let schema = match StoreSchema::read(conn) {
        Ok(s) => s,
        Err(e) => {
            out.errors.push(RuleError::file(
                "(store)",
                ErrorKind::Store,
                format!("cannot read the store's schema: {e:#}"),
            ));
            return out;
        }
    };
    let (programs, errors) = compile_all(&schema, files);
    out.errors = errors;
    let mut session = eval::Session::new(conn);
    let mut loc = lint::Locator::new(conn, root);
    for p in &programs {
        if p.lints.iter().all(|l| files.disabled.contains(&l.name)) {
            continue;
        }
        let started = std::time::Instant::now();
        match session.evaluate(p) {
            Ok(ev) => {
                out.files_evaluated += 1;
                out.findings.extend(lint::lint_findings(
                    p,
                    &ev,
                    &session.symbols,
                    &files.disabled,
                    &mut loc,
                ));
                tracing::info!(
                    "rules: {} evaluated in {:.1} ms",
                    p.source.path,
                    started.elapsed().as_secs_f64() * 1e3
                );
            }
            Err(e) => out.errors.push(RuleError::file(
                &p.source.path,
                ErrorKind::Store,
                format!("reading the store failed: {e:#}"),
            )),
        }
    }
    out.rows_loaded = session.rows_loaded;
    out.findings
        .sort_by(|a, b| (&a.file, a.line, a.col, &a.rule).cmp(&(&b.file, b.line, b.col, &b.rule)));
    out
}

/// The house-rule findings of a workspace for `check`: every rule file in
/// effect (shipped, `DIR/.cudalog/rules`, `[rules] paths`) evaluated over
/// the store, and the errors of the files that could not run. Rules see
/// the store as it is when called; its `findings` relation holds the
/// built-in findings only.
pub fn workspace_findings(
    conn: &Connection,
    root: &Path,
    config: &Config,
) -> (Vec<Finding>, Vec<RuleError>) {
    let files = RuleFiles::discover(root, config);
    let out = evaluate_lints(conn, root, &files);
    (out.findings, out.errors)
}

/// Rewrite the house-rule rows of the `findings` table (every row whose
/// rule is not a built-in one) with `findings`, in one transaction.
pub fn replace_lint_findings(conn: &Connection, findings: &[Finding]) -> anyhow::Result<()> {
    let builtin: Vec<String> = crate::check::RULES
        .iter()
        .map(|r| format!("'{}'", r.id))
        .collect();
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        &format!(
            "DELETE FROM findings WHERE rule NOT IN ({})",
            builtin.join(", ")
        ),
        [],
    )?;
    {
        let mut ins = tx.prepare_cached(
            "INSERT INTO findings(rule, severity, file, line, col, function_id, message, suppressed, end_col, facts) \
             VALUES (?1, ?2, ?3, ?4, ?5, \
               (SELECT fn.id FROM functions fn JOIN files f ON f.id = fn.file_id WHERE f.path = ?3 AND fn.key = ?6), \
               ?7, ?8, ?9, ?10)",
        )?;
        for f in findings {
            ins.execute(rusqlite::params![
                f.rule,
                f.severity.as_str(),
                f.file,
                f.line,
                f.col,
                f.function_key,
                f.message,
                f.suppressed,
                f.end_col,
                f.facts.to_string(),
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// What one house-rule pass did ([`RuleState::run`]).
#[derive(Debug, Default)]
pub struct RulesPass {
    /// Every lint finding of the rules in effect (also in `findings`).
    pub findings: Vec<Finding>,
    /// Errors of rule files that were skipped (report them; exit status 2
    /// for `check`).
    pub errors: Vec<RuleError>,
    /// Lint findings that are new since the previous pass of this state.
    pub added: Vec<Finding>,
    /// Lint findings of the previous pass that are gone.
    pub removed: Vec<Finding>,
    /// Whether the rule files (paths, texts, `[rules]`) differ from the
    /// previous pass's (always true on the first pass).
    pub rules_changed: bool,
    /// Wall time of the pass (discovery, evaluation, writing), ms.
    pub elapsed_ms: f64,
}

/// House-rule state a process keeps between passes (`check` uses a fresh
/// one; `watch` keeps one for its lifetime).
#[derive(Debug, Default)]
pub struct RuleState {
    fingerprint: Option<String>,
    last: Vec<Finding>,
}

type FindingKey = (String, String, u32, u32, String, bool);

fn finding_key(f: &Finding) -> FindingKey {
    (
        f.rule.clone(),
        f.file.clone(),
        f.line,
        f.col,
        f.message.clone(),
        f.suppressed,
    )
}

impl RuleState {
    /// Whether the rule files in effect for `root` differ from those of the
    /// previous pass (reads the rule files; evaluates nothing). A watcher
    /// may call it on any event under `.cudalog/rules`, a `[rules] paths`
    /// entry or `cudalog.toml` to decide whether to run a pass.
    pub fn rules_changed(&self, root: &Path, config: &Config) -> bool {
        self.fingerprint.as_deref() != Some(&RuleFiles::discover(root, config).fingerprint())
    }

    /// One pass: discover the rule files of `root` (shipped,
    /// `.cudalog/rules/*.dl`, `[rules] paths`), evaluate them over the store
    /// behind `conn` as it is now (its `findings` relation holds the
    /// built-in findings only), replace the house-rule rows of `findings`
    /// with the result in one transaction, and report what changed since
    /// the previous pass. Call it after each index run or watch batch (the
    /// rules read facts of every function, so a batch may change lint
    /// findings anywhere), and when [`RuleState::rules_changed`] says the
    /// rule files changed (then only the rules re-run; nothing is
    /// re-indexed). A broken rule file is reported in `errors` and
    /// skipped; the built-in findings are never touched.
    pub fn run(
        &mut self,
        conn: &Connection,
        root: &Path,
        config: &Config,
    ) -> anyhow::Result<RulesPass> {
        let started = std::time::Instant::now();
        let files = RuleFiles::discover(root, config);
        let fingerprint = files.fingerprint();
        let out = evaluate_lints(conn, root, &files);
        replace_lint_findings(conn, &out.findings)?;
        let old: std::collections::HashSet<FindingKey> =
            self.last.iter().map(finding_key).collect();
        let new: std::collections::HashSet<FindingKey> =
            out.findings.iter().map(finding_key).collect();
        let added = out
            .findings
            .iter()
            .filter(|f| !old.contains(&finding_key(f)))
            .cloned()
            .collect();
        let removed = self
            .last
            .iter()
            .filter(|f| !new.contains(&finding_key(f)))
            .cloned()
            .collect();
        let rules_changed = self.fingerprint.as_deref() != Some(&fingerprint);
        self.fingerprint = Some(fingerprint);
        self.last = out.findings.clone();
        Ok(RulesPass {
            findings: out.findings,
            errors: out.errors,
            added,
            removed,
            rules_changed,
            elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
        })
    }
}

/// One `.output` relation's rows.
#[derive(Debug, serde::Serialize)]
pub struct OutputRelation {
    /// Relation name.
    pub name: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows (sorted).
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// What `cudalog rules run` prints for one file.
#[derive(Debug, serde::Serialize)]
pub struct RunOutput {
    /// The file.
    pub file: String,
    /// `.output` relations.
    pub outputs: Vec<OutputRelation>,
    /// Lint findings.
    pub lints: Vec<Finding>,
}

/// Evaluate rule files over the store behind `conn` and collect their
/// outputs and lints (files are checked first; any error stops the run).
pub fn run_files(
    conn: &Connection,
    root: &Path,
    files: &RuleFiles,
) -> Result<Vec<RunOutput>, Vec<RuleError>> {
    let schema = StoreSchema::read(conn).map_err(|e| {
        vec![RuleError::file(
            "(store)",
            ErrorKind::Store,
            format!("cannot read the store's schema: {e:#}"),
        )]
    })?;
    let (programs, errors) = compile_all(&schema, files);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut session = eval::Session::new(conn);
    let mut loc = lint::Locator::new(conn, root);
    let mut out = Vec::new();
    for p in &programs {
        let ev = session.evaluate(p).map_err(|e| {
            vec![RuleError::file(
                &p.source.path,
                ErrorKind::Store,
                format!("reading the store failed: {e:#}"),
            )]
        })?;
        let mut outputs = Vec::new();
        for &r in &p.outputs {
            let info = &p.rels[r];
            let rel: Vec<&[eval::Value]> = if info.input.is_some() {
                Vec::new()
            } else {
                ev.rels[r].iter().collect()
            };
            let mut rows: Vec<Vec<serde_json::Value>> = rel
                .iter()
                .map(|t| t.iter().map(|v| session.symbols.json(*v)).collect())
                .collect();
            rows.sort_by_key(|r| serde_json::to_string(r).unwrap_or_default());
            outputs.push(OutputRelation {
                name: info.name.clone(),
                columns: info.columns.iter().map(|c| c.0.clone()).collect(),
                rows,
            });
        }
        let lints = lint::lint_findings(p, &ev, &session.symbols, &[], &mut loc);
        out.push(RunOutput {
            file: p.source.path.clone(),
            outputs,
            lints,
        });
    }
    Ok(out)
}

/// Evaluate one rule file (see [`run_files`]).
pub fn run_file(
    conn: &Connection,
    root: &Path,
    src: RuleSource,
) -> Result<RunOutput, Vec<RuleError>> {
    let files = RuleFiles {
        files: vec![src],
        ..RuleFiles::default()
    };
    run_files(conn, root, &files).map(|mut v| v.remove(0))
}
