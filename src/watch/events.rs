//! The watch loop: file events from notify (debounced) become batches for
//! [`super::Session::apply`]; Ctrl-C ends the loop between batches, so the
//! store is always left at a committed batch.

use super::{BatchReport, Changes, Session};
use crate::index::IndexSummary;
use anyhow::{Context, Result};
use notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

/// How batches are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// One line per batch on stderr.
    Human,
    /// One JSON object per batch on stdout (for editors).
    Json,
}

/// Options of the watch loop.
#[derive(Clone, Debug)]
pub struct LoopOptions {
    /// How batches are printed.
    pub output: Output,
    /// Quiet period that closes a batch of events.
    pub debounce: Duration,
}

enum Msg {
    Events(DebounceEventResult),
    Stop,
}

/// Watch the session's root until Ctrl-C (or the event source ends),
/// applying each batch of file events.
pub fn run(mut session: Session, initial: &IndexSummary, opts: &LoopOptions) -> Result<()> {
    let (tx, rx) = mpsc::channel::<Msg>();
    let stop_tx = tx.clone();
    ctrlc::set_handler(move || {
        let _ = stop_tx.send(Msg::Stop);
    })
    .context("cannot install the Ctrl-C handler")?;
    let mut debouncer = new_debouncer(opts.debounce, None, move |r: DebounceEventResult| {
        let _ = tx.send(Msg::Events(r));
    })
    .context("cannot start the file watcher")?;
    debouncer
        .watch(session.root(), RecursiveMode::Recursive)
        .with_context(|| format!("cannot watch {}", session.root().display()))?;
    print_ready(&session, initial, opts.output)?;
    session.defer_rules = true;
    let mut queued: Option<Msg> = None;
    'outer: loop {
        let msg = match queued.take() {
            Some(m) => m,
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => break 'outer,
            },
        };
        let mut changes = Changes::default();
        let mut stop = false;
        let mut next = Some(msg);
        // Merge everything already queued into one batch.
        while let Some(m) = next {
            match m {
                Msg::Stop => stop = true,
                Msg::Events(r) => collect(r, &mut changes),
            }
            next = rx.try_recv().ok();
        }
        if stop {
            break 'outer;
        }
        if changes.paths.is_empty() && !changes.rescan {
            continue;
        }
        match session.apply(&changes) {
            Ok(mut report) => {
                // The whole-store house-rule pass runs once a burst is over:
                // when more events are already queued, the next batch owes it.
                queued = rx.try_recv().ok();
                if queued.is_none() && session.rules_owed() {
                    session.catch_up_rules(report.get_or_insert_with(BatchReport::default))?;
                }
                if let Some(report) = report {
                    print_batch(&report, opts.output)?;
                }
            }
            Err(e) => {
                // The batch's transaction was rolled back; the next batch
                // re-reads the store. Say so and keep watching.
                tracing::error!("batch failed: {e:#}");
                print_error(&format!("{e:#}"), opts.output)?;
            }
        }
    }
    debouncer.stop();
    // A burst cut short by Ctrl-C still gets its house-rule pass.
    let mut last = BatchReport::default();
    session.catch_up_rules(&mut last)?;
    eprintln!("watch: stopped; the database is at the last committed batch");
    Ok(())
}

/// Add a debouncer result to the batch.
fn collect(r: DebounceEventResult, changes: &mut Changes) {
    match r {
        Ok(events) => {
            for e in events {
                if e.need_rescan() {
                    changes.rescan = true;
                }
                // Reads (ours included: listing a directory opens it) change
                // nothing; attending to them would feed back into batches.
                if matches!(e.event.kind, EventKind::Access(_)) {
                    continue;
                }
                tracing::debug!("event {:?} {:?}", e.event.kind, e.event.paths);
                changes.paths.extend(e.event.paths.iter().cloned());
            }
        }
        Err(errors) => {
            for e in errors {
                tracing::warn!("file watcher: {e}");
                changes.paths.extend(e.paths.iter().cloned());
            }
            // Events may have been lost.
            changes.rescan = true;
        }
    }
}

fn print_ready(session: &Session, s: &IndexSummary, output: Output) -> Result<()> {
    let findings: i64 = session.store().connection().query_row(
        "SELECT COUNT(*) FROM findings WHERE NOT suppressed",
        [],
        |r| r.get(0),
    )?;
    match output {
        Output::Human => eprintln!(
            "watch: {} files, {} functions ({} kernels), {} findings in {:.2}s; watching {} (Ctrl-C to stop)",
            s.files,
            s.functions,
            s.kernels,
            findings,
            s.seconds,
            session.root().display()
        ),
        Output::Json => json_line(&serde_json::json!({
            "event": "ready",
            "files": s.files,
            "functions": s.functions,
            "kernels": s.kernels,
            "findings": findings,
            "ms": (s.seconds * 1000.0).round(),
        }))?,
    }
    Ok(())
}

/// The human line of one batch.
pub fn batch_line(r: &BatchReport) -> String {
    let mut line = format!(
        "watch: {} file{} changed, {} function{} re-derived, +{} -{} findings, {} ms (committed at {} ms, house rules {} ms)",
        r.files_changed,
        if r.files_changed == 1 { "" } else { "s" },
        r.functions_rederived,
        if r.functions_rederived == 1 { "" } else { "s" },
        r.findings_added,
        r.findings_removed,
        r.ms.round(),
        r.index_ms.round(),
        r.rules_ms.round()
    );
    if r.rescan {
        line.push_str(" (rescan)");
    }
    if r.rebuilt {
        line.push_str(" (configuration reloaded)");
    }
    if r.rules_deferred {
        line.push_str(" (house rules after the next batch)");
    }
    for d in &r.diagnostics {
        line.push_str("\n  ");
        line.push_str(d);
    }
    line
}

fn print_batch(r: &BatchReport, output: Output) -> Result<()> {
    match output {
        Output::Human => eprintln!("{}", batch_line(r)),
        Output::Json => {
            let mut v = serde_json::to_value(r)?;
            v["event"] = "batch".into();
            json_line(&v)?;
        }
    }
    Ok(())
}

fn print_error(msg: &str, output: Output) -> Result<()> {
    match output {
        Output::Human => eprintln!("watch: batch failed, nothing written: {msg}"),
        Output::Json => json_line(&serde_json::json!({"event": "error", "message": msg}))?,
    }
    Ok(())
}

fn json_line(v: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{v}")?;
    out.flush()?;
    Ok(())
}
