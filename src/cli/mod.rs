//! Command-line interface (clap). Thin: parses arguments and calls the library.

pub mod bounds;
mod rules;

use crate::check::Severity;
use crate::config::Config;
use crate::index::index_and_keep;
use crate::index::{IndexOptions, index_directory};
use crate::report::{ReportFormat, render};
use crate::store;
use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// cudalog: an incremental static-analysis database for CUDA code bases.
#[derive(Parser, Debug)]
#[command(name = "cudalog", version, about)]
pub struct Cli {
    /// Log more (repeat for debug output); logs go to stderr.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Index a directory of CUDA sources into the fact database.
    Index {
        /// Workspace root (default: current directory).
        dir: Option<PathBuf>,
        /// Database path (default: DIR/.cudalog/cudalog.db).
        #[arg(long)]
        db: Option<PathBuf>,
        /// Define a macro, `-D NAME` or `-D NAME=VALUE` (repeatable).
        #[arg(short = 'D', value_name = "NAME[=VALUE]")]
        define: Vec<String>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Index incrementally, run the analyses and print their findings.
    Check {
        /// Workspace root (default: current directory).
        dir: Option<PathBuf>,
        /// Database path (default: DIR/.cudalog/cudalog.db).
        #[arg(long)]
        db: Option<PathBuf>,
        /// Define a macro, `-D NAME` or `-D NAME=VALUE` (repeatable).
        #[arg(short = 'D', value_name = "NAME[=VALUE]")]
        define: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
        format: ReportFormat,
        /// Exit with status 1 when a finding is at or above this severity.
        #[arg(long, default_value = "error", value_parser = parse_severity)]
        fail_on: Severity,
    },
    /// Check once, then keep the database up to date as files change
    /// (until Ctrl-C).
    Watch {
        /// Workspace root (default: current directory).
        dir: Option<PathBuf>,
        /// Database path (default: DIR/.cudalog/cudalog.db).
        #[arg(long)]
        db: Option<PathBuf>,
        /// Define a macro, `-D NAME` or `-D NAME=VALUE` (repeatable).
        #[arg(short = 'D', value_name = "NAME[=VALUE]")]
        define: Vec<String>,
        /// `human`: one line per batch on stderr; `json`: one JSON object
        /// per batch on stdout.
        #[arg(long, value_enum, default_value_t = WatchFormat::Human)]
        format: WatchFormat,
        /// Quiet period (milliseconds) that closes a batch of file events.
        #[arg(long, default_value_t = 100)]
        debounce_ms: u64,
    },
    /// Run one kernel under the lock-step cost semantics and count sectors,
    /// bank conflicts, divergent warps and steps.
    Simulate(bounds::SimulateArgs),
    /// Symbolic upper bounds of sectors, bank conflicts, divergent warps and
    /// steps per kernel (per warp and for the whole launch).
    Bounds(bounds::BoundsArgs),
    /// Run a read-only SQL query against the fact database.
    Query {
        /// The SQL statement.
        sql: String,
        /// Database path (default: `.cudalog/cudalog.db` in the current
        /// directory or its nearest ancestor that has one).
        #[arg(long)]
        db: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Print at most N rows (rows are streamed as SQLite produces them).
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// Interrupt the statement after SECS seconds (fractions allowed).
        #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
        timeout: Option<std::time::Duration>,
    },
    /// House rules (Datalog): list, check or run rule files.
    Rules {
        /// The rules subcommand.
        #[command(subcommand)]
        command: rules::RulesCommand,
    },
}

fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(std::time::Duration::from_secs_f64(v)),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

fn parse_severity(s: &str) -> Result<Severity, String> {
    s.parse()
}

/// Output formats of `query`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Aligned text table.
    Table,
    /// CSV with a header row.
    Csv,
    /// JSON array of objects.
    Json,
}

/// Output formats of `watch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WatchFormat {
    /// One line per batch on stderr.
    Human,
    /// One JSON object per batch on stdout.
    Json,
}

/// Default database location for a workspace root.
pub fn default_db(root: &Path) -> PathBuf {
    root.join(".cudalog").join("cudalog.db")
}

/// The nearest `.cudalog/cudalog.db` at or above `start`.
pub fn find_db(start: &Path) -> Result<PathBuf> {
    for dir in start.ancestors() {
        let candidate = default_db(dir);
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    anyhow::bail!(
        "no .cudalog/cudalog.db in {} or its parents (run `cudalog index` first, or pass --db)",
        start.display()
    )
}

/// The workspace root, its configuration (with `-D` defines) and the
/// database path from the common `[DIR] [--db] [-D…]` arguments.
fn workspace_args(
    dir: Option<PathBuf>,
    db: Option<PathBuf>,
    define: &[String],
) -> Result<(PathBuf, Config, PathBuf)> {
    let root = dir.unwrap_or_else(|| PathBuf::from("."));
    if !root.is_dir() {
        anyhow::bail!("{}: no such directory", root.display());
    }
    let mut config = Config::load(&root)?;
    config.add_defines(define)?;
    let db_path = db.unwrap_or_else(|| default_db(&root));
    Ok((root, config, db_path))
}

/// The text of every file that has a finding, by stored path (for the
/// source snippets of the report).
fn finding_sources(
    ix: &crate::index::Indexer,
    found: &[crate::check::Finding],
) -> std::collections::HashMap<String, String> {
    let wanted: std::collections::HashSet<&str> = found.iter().map(|f| f.file.as_str()).collect();
    ix.indexed()
        .iter()
        .filter_map(|p| {
            let key = store::path_key(p);
            if wanted.contains(key.as_str()) {
                ix.text(p).map(|t| (key, t.to_string()))
            } else {
                None
            }
        })
        .collect()
}

/// Run the CLI; returns the process exit code.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Index {
            dir,
            db,
            define,
            json,
        } => {
            let (root, config, db_path) = workspace_args(dir, db, &define)?;
            let progress = std::io::stderr().is_terminal() && !json;
            let s = index_directory(&root, &db_path, config, &IndexOptions { progress })?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                println!(
                    "indexed {} files ({:.1} KiB) in {:.2}s: {} functions ({} kernels), {} accesses, {} parse errors",
                    s.files,
                    s.bytes as f64 / 1024.0,
                    s.seconds,
                    s.functions,
                    s.kernels,
                    s.accesses,
                    s.parse_errors
                );
                println!(
                    "store {}: {} functions written, {} moved, {} unchanged, {} deleted",
                    db_path.display(),
                    s.functions_written,
                    s.functions_moved,
                    s.functions_unchanged,
                    s.functions_deleted
                );
            }
            Ok(0)
        }
        Command::Check {
            dir,
            db,
            define,
            format,
            fail_on,
        } => {
            let (root, config, db_path) = workspace_args(dir, db, &define)?;
            let progress = std::io::stderr().is_terminal() && format == ReportFormat::Human;
            let run = index_and_keep(&root, &db_path, config.clone(), &IndexOptions { progress })?;
            // House rules over this run's store; their findings join `findings`.
            let rules =
                crate::rules::RuleState::default().run(run.store.connection(), &root, &config)?;
            let found = store::load_findings(run.store.connection())?;
            let sources = finding_sources(&run.indexer, &found);
            print!("{}", render(&found, format, &sources));
            rules.errors.iter().for_each(|e| eprint!("{}", e.render()));
            let rule_errors = rules.errors;
            // The process ends here: close the database, skip freeing the
            // analysis database piece by piece.
            drop(run.store);
            std::mem::forget(run.indexer);
            let failing = found.iter().any(|f| !f.suppressed && f.severity >= fail_on);
            Ok(if !rule_errors.is_empty() {
                2
            } else if failing {
                1
            } else {
                0
            })
        }
        Command::Watch {
            dir,
            db,
            define,
            format,
            debounce_ms,
        } => {
            let (root, _config, db_path) = workspace_args(dir, db, &define)?;
            let progress = std::io::stderr().is_terminal() && format == WatchFormat::Human;
            let (session, summary) =
                crate::watch::Session::start(&root, &db_path, &define, &IndexOptions { progress })?;
            let output = match format {
                WatchFormat::Human => crate::watch::events::Output::Human,
                WatchFormat::Json => crate::watch::events::Output::Json,
            };
            crate::watch::events::run(
                session,
                &summary,
                &crate::watch::events::LoopOptions {
                    output,
                    debounce: std::time::Duration::from_millis(debounce_ms),
                },
            )?;
            Ok(0)
        }
        Command::Simulate(args) => bounds::run_simulate(args),
        Command::Bounds(args) => bounds::run_bounds(args),
        Command::Query {
            sql,
            db,
            format,
            limit,
            timeout,
        } => {
            let db_path = match db {
                Some(p) => p,
                None => find_db(&std::env::current_dir()?)?,
            };
            let conn = store::open_read_only(&db_path)?;
            let format = match format {
                Format::Table => store::QueryFormat::Table,
                Format::Csv => store::QueryFormat::Csv,
                Format::Json => store::QueryFormat::Json,
            };
            let bounds = store::QueryBounds { limit, timeout };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            store::stream_query(&conn, &sql, format, bounds, &mut out).context("query failed")?;
            Ok(0)
        }
        Command::Rules { command } => rules::run(command),
    }
}
