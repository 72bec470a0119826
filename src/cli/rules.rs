//! `cudalog rules list|check|run`: house rules from the command line.

use super::{Format, default_db, find_db};
use crate::config::Config;
use crate::rules::schema::StoreSchema;
use crate::rules::{RuleError, RuleFiles, compile_all, run_files};
use crate::store::{self, QueryResult};
use anyhow::Result;
use clap::Subcommand;
use std::path::{Path, PathBuf};

/// `cudalog rules …`
#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// List the rule files and lints in effect for a workspace, with their origin.
    List {
        /// Workspace root (default: current directory).
        dir: Option<PathBuf>,
        /// Also list the input relations (the store's tables and columns).
        #[arg(long)]
        tables: bool,
    },
    /// Check rule files without running them (exit status 2 on errors).
    Check {
        /// The rule files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Database whose tables the rules read (default: the nearest
        /// `.cudalog/cudalog.db`, else the tables of a new store).
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Evaluate rule files over the fact database; print their `.output`
    /// relations and lint findings.
    Run {
        /// The rule files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Database path (default: the nearest `.cudalog/cudalog.db`).
        #[arg(long)]
        db: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

fn print_errors(errors: &[RuleError]) {
    for e in errors {
        eprint!("{}", e.render());
    }
    if !errors.is_empty() {
        eprintln!("{} error(s) in rule files", errors.len());
    }
}

/// The workspace root a database belongs to (`ROOT/.cudalog/cudalog.db`),
/// else the current directory.
fn root_of(db: &Path) -> PathBuf {
    match db.parent() {
        Some(p) if p.file_name().is_some_and(|n| n == ".cudalog") => p
            .parent()
            .map(|r| {
                if r.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    r.to_path_buf()
                }
            })
            .unwrap_or_else(|| PathBuf::from(".")),
        _ => PathBuf::from("."),
    }
}

/// Run a `rules` subcommand; returns the exit code.
pub fn run(cmd: RulesCommand) -> Result<i32> {
    match cmd {
        RulesCommand::List { dir, tables } => {
            let root = dir.unwrap_or_else(|| PathBuf::from("."));
            if !root.is_dir() {
                anyhow::bail!("{}: no such directory", root.display());
            }
            let config = Config::load(&root)?;
            let db = default_db(&root);
            let schema = if db.exists() {
                StoreSchema::read(&store::open_read_only(&db)?)?
            } else {
                StoreSchema::current()?
            };
            let files = RuleFiles::discover(&root, &config);
            let (programs, errors) = compile_all(&schema, &files);
            let mut rows = Vec::new();
            for p in &programs {
                for l in &p.lints {
                    let disabled = files.disabled.contains(&l.name);
                    rows.push(vec![
                        l.name.clone().into(),
                        l.severity.as_str().into(),
                        p.source.origin.as_str().into(),
                        p.source.path.clone().into(),
                        if disabled { "disabled" } else { "on" }.into(),
                        l.summary.lines().next().unwrap_or("").to_string().into(),
                    ]);
                }
            }
            let table = QueryResult {
                columns: ["lint", "severity", "origin", "file", "state", "summary"]
                    .map(String::from)
                    .to_vec(),
                rows,
            };
            print!("{}", table.to_table());
            if tables {
                println!();
                for t in &schema.tables {
                    let cols: Vec<String> = t
                        .columns
                        .iter()
                        .map(|c| format!("{}: {}", c.name, c.ty.as_str()))
                        .collect();
                    println!("{}({})", t.name, cols.join(", "));
                }
            }
            print_errors(&errors);
            Ok(if errors.is_empty() { 0 } else { 2 })
        }
        RulesCommand::Check { files, db } => {
            let db = match db {
                Some(p) => Some(p),
                None => std::env::current_dir().ok().and_then(|d| find_db(&d).ok()),
            };
            let schema = match &db {
                Some(p) => StoreSchema::read(&store::open_read_only(p)?)?,
                None => StoreSchema::current()?,
            };
            let rf = RuleFiles::from_paths(&files);
            let (programs, errors) = compile_all(&schema, &rf);
            if !errors.is_empty() {
                print_errors(&errors);
                return Ok(2);
            }
            for p in &programs {
                let lints: Vec<&str> = p.lints.iter().map(|l| l.name.as_str()).collect();
                let outputs: Vec<&str> =
                    p.outputs.iter().map(|&r| p.rels[r].name.as_str()).collect();
                println!(
                    "{}: ok ({} rule(s), {} strata; lints: {}; outputs: {})",
                    p.source.path,
                    p.rule_count(),
                    p.strata.len(),
                    if lints.is_empty() {
                        "none".into()
                    } else {
                        lints.join(", ")
                    },
                    if outputs.is_empty() {
                        "none".into()
                    } else {
                        outputs.join(", ")
                    },
                );
            }
            Ok(0)
        }
        RulesCommand::Run { files, db, format } => {
            let db = match db {
                Some(p) => p,
                None => find_db(&std::env::current_dir()?)?,
            };
            let conn = store::open_read_only(&db)?;
            let root = root_of(&db);
            let rf = RuleFiles::from_paths(&files);
            if !rf.errors.is_empty() {
                print_errors(&rf.errors);
                return Ok(2);
            }
            let started = std::time::Instant::now();
            let outs = match run_files(&conn, &root, &rf) {
                Ok(o) => o,
                Err(errors) => {
                    print_errors(&errors);
                    return Ok(2);
                }
            };
            tracing::info!("rules run: {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
            match format {
                Format::Json => {
                    let v = if outs.len() == 1 {
                        serde_json::to_value(&outs[0])?
                    } else {
                        serde_json::to_value(&outs)?
                    };
                    println!("{}", serde_json::to_string_pretty(&v)?);
                }
                Format::Table | Format::Csv => {
                    let mut first = true;
                    for o in &outs {
                        let mut sections: Vec<(String, QueryResult)> = o
                            .outputs
                            .iter()
                            .map(|r| {
                                (
                                    format!("{} ({} row(s))", r.name, r.rows.len()),
                                    QueryResult {
                                        columns: r.columns.clone(),
                                        rows: r.rows.clone(),
                                    },
                                )
                            })
                            .collect();
                        if !o.lints.is_empty() || o.outputs.is_empty() {
                            sections.push((
                                format!("lint findings ({})", o.lints.len()),
                                QueryResult {
                                    columns: [
                                        "rule",
                                        "severity",
                                        "file",
                                        "line",
                                        "col",
                                        "function",
                                        "message",
                                        "suppressed",
                                    ]
                                    .map(String::from)
                                    .to_vec(),
                                    rows: o
                                        .lints
                                        .iter()
                                        .map(|f| {
                                            vec![
                                                f.rule.clone().into(),
                                                f.severity.as_str().into(),
                                                f.file.clone().into(),
                                                f.line.into(),
                                                f.col.into(),
                                                f.function.clone().into(),
                                                f.message.clone().into(),
                                                f.suppressed.into(),
                                            ]
                                        })
                                        .collect(),
                                },
                            ));
                        }
                        for (title, q) in sections {
                            if !first {
                                println!();
                            }
                            first = false;
                            if matches!(format, Format::Csv) {
                                println!("# {}: {title}", o.file);
                                print!("{}", q.to_csv());
                            } else {
                                println!("{}: {title}", o.file);
                                print!("{}", q.to_table());
                            }
                        }
                    }
                }
            }
            Ok(0)
        }
    }
}
