//! Rendering findings: human (rustc-like), JSON, SARIF 2.1.0.

use crate::check::{Finding, RULES, Severity};
use std::collections::HashMap;

/// Output formats of `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// rustc-like text with source snippets.
    Human,
    /// One JSON object per finding, in an array.
    Json,
    /// SARIF 2.1.0 (GitHub code scanning).
    Sarif,
}

/// Render `findings` (unsuppressed ones) in `format`; `sources` maps a file
/// path to its text for snippets.
pub fn render(
    findings: &[Finding],
    format: ReportFormat,
    sources: &HashMap<String, String>,
) -> String {
    let shown: Vec<&Finding> = findings.iter().filter(|f| !f.suppressed).collect();
    match format {
        ReportFormat::Human => human(&shown, findings.len() - shown.len(), sources),
        ReportFormat::Json => {
            serde_json::to_string_pretty(&shown).unwrap_or_else(|_| "[]".into()) + "\n"
        }
        ReportFormat::Sarif => sarif(&shown) + "\n",
    }
}

fn human(findings: &[&Finding], suppressed: usize, sources: &HashMap<String, String>) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!(
            "{}[{}]: {}\n",
            f.severity.as_str(),
            f.rule,
            headline(f)
        ));
        let num = f.line.to_string();
        let pad = " ".repeat(num.len());
        out.push_str(&format!("{pad}--> {}:{}:{}\n", f.file, f.line, f.col));
        if let Some(line) = sources
            .get(&f.file)
            .and_then(|t| t.lines().nth(f.line.saturating_sub(1) as usize))
        {
            let width = (f.end_col.saturating_sub(f.col)).max(1) as usize;
            let caret_pad: String = line
                .chars()
                .take(f.col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            out.push_str(&format!(
                "{pad} |\n{num} | {line}\n{pad} | {caret_pad}{}\n",
                "^".repeat(width)
            ));
        }
        out.push_str(&format!("{pad} = {}\n", f.message));
        out.push_str(&format!("{pad} = in `{}`\n\n", f.function));
    }
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    out.push_str(&format!(
        "{} error(s), {} warning(s), {} note(s){}\n",
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Note),
        if suppressed > 0 {
            format!(", {suppressed} suppressed")
        } else {
            String::new()
        }
    ));
    out
}

fn headline(f: &Finding) -> &'static str {
    RULES
        .iter()
        .find(|r| r.id == f.rule)
        .map(|r| r.summary)
        .unwrap_or("finding")
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn sarif(findings: &[&Finding]) -> String {
    let rules: Vec<serde_json::Value> = RULES
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "name": r.id,
                "shortDescription": { "text": r.summary },
                "defaultConfiguration": { "level": sarif_level(r.severity) },
            })
        })
        .collect();
    let results: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            serde_json::json!({
                "ruleId": f.rule,
                "ruleIndex": RULES.iter().position(|r| r.id == f.rule).unwrap_or(0),
                "level": sarif_level(f.severity),
                "message": { "text": f.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": f.file },
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.col,
                            "endColumn": f.end_col.max(f.col + 1),
                        }
                    },
                    "logicalLocations": [{ "name": f.function, "kind": "function" }]
                }],
                "properties": { "facts": f.facts },
            })
        })
        .collect();
    let doc = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "cudalog",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }]
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}
