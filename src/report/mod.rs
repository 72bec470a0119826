//! Rendering findings: human (rustc-like), JSON, SARIF 2.1.0.

use crate::check::{Finding, RULES, Severity};
use std::borrow::Cow;
use std::collections::HashMap;

/// Escape what a terminal would interpret in text taken from the workspace
/// (source lines, paths, names, messages quoting source): C0 controls other
/// than tab, DEL, and C1 controls become `\xHH` / `\u{HHHH}`, so an escape
/// sequence in a file never reaches the user's terminal. A backslash is
/// left as it is (source text is full of them); text without controls is
/// returned unchanged.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
}

fn push_escaped(out: &mut String, c: char) {
    if !needs_escape(c) {
        out.push(c);
    } else if (c as u32) < 0x80 {
        out.push_str(&format!("\\x{:02X}", c as u32));
    } else {
        out.push_str(&format!("\\u{{{:04X}}}", c as u32));
    }
}

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
        ReportFormat::Human => {
            // (issue 8) The human report leads with what matters: errors,
            // then warnings, then notes; among divergent branches of one
            // severity, those whose divergent part loops and accesses
            // memory first. Ties keep the store's (file, line) order.
            let mut ranked = shown;
            ranked.sort_by_key(|f| (std::cmp::Reverse(f.severity), divergence_rank(f)));
            human(&ranked, findings.len() - ranked.len(), sources)
        }
        ReportFormat::Json => {
            serde_json::to_string_pretty(&shown).unwrap_or_else(|_| "[]".into()) + "\n"
        }
        ReportFormat::Sarif => sarif(&shown) + "\n",
    }
}

/// Rank of a finding by the cost of the divergence it reports (0 first):
/// a divergent part that loops and accesses memory, one that loops, one
/// that accesses memory, then the rest; other rules rank with the first.
fn divergence_rank(f: &Finding) -> u8 {
    if f.rule != "divergent-branch" {
        return 0;
    }
    let flag = |k: &str| f.facts[k].as_bool().unwrap_or(false);
    match (flag("loop"), flag("memory")) {
        (true, true) => 0,
        (true, false) => 1,
        (false, true) => 2,
        _ => 3,
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
        out.push_str(&format!(
            "{pad}--> {}:{}:{}\n",
            escape_control(&f.file),
            f.line,
            f.col
        ));
        if let Some(line) = sources
            .get(&f.file)
            .and_then(|t| t.lines().nth(f.line.saturating_sub(1) as usize))
        {
            let width = (f.end_col.saturating_sub(f.col)).max(1) as usize;
            // The caret lines up with the escaped text.
            let mut caret_pad = String::new();
            for c in line.chars().take(f.col.saturating_sub(1) as usize) {
                if c == '\t' {
                    caret_pad.push('\t');
                } else {
                    let mut e = String::new();
                    push_escaped(&mut e, c);
                    caret_pad.push_str(&" ".repeat(e.chars().count()));
                }
            }
            out.push_str(&format!(
                "{pad} |\n{num} | {}\n{pad} | {caret_pad}{}\n",
                escape_control(line),
                "^".repeat(width)
            ));
        }
        out.push_str(&format!("{pad} = {}\n", escape_control(&f.message)));
        out.push_str(&format!("{pad} = in `{}`\n\n", escape_control(&f.function)));
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

fn headline(f: &Finding) -> &str {
    RULES
        .iter()
        .find(|r| r.id == f.rule)
        .map(|r| r.summary)
        .or_else(|| house_rule_summary(f))
        .unwrap_or("finding")
}

/// A house rule's description (first line of its doc comment), carried in
/// its findings' facts by `rules::lint`.
fn house_rule_summary(f: &Finding) -> Option<&str> {
    f.facts["summary"].as_str().and_then(|s| s.lines().next())
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// A workspace-relative, `/`-separated path as a relative URI reference:
/// every byte but RFC 3986 unreserved characters, `/` and sub-delimiters is
/// percent-encoded (spaces, `#`, `%`, `:`, `?`, non-ASCII UTF-8, …).
fn uri_reference(path: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=@".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// SARIF 2.1.0 for GitHub code scanning: rules with descriptions and help,
/// results tied to them by id and index, locations relative to `%SRCROOT%`
/// (the analysed directory).
fn sarif(findings: &[&Finding]) -> String {
    // Built-in rules, then the house rules that have findings.
    let mut descriptors: Vec<(&str, Severity, &str)> = RULES
        .iter()
        .map(|r| (r.id, r.severity, r.summary))
        .collect();
    for f in findings {
        if !descriptors.iter().any(|d| d.0 == f.rule) {
            let summary = house_rule_summary(f).unwrap_or("house rule");
            descriptors.push((&f.rule, f.severity, summary.trim_end_matches('.')));
        }
    }
    let rules: Vec<serde_json::Value> = descriptors
        .iter()
        .map(|&(id, severity, summary)| {
            let r = SarifRule {
                id,
                severity,
                summary,
            };
            let level = sarif_level(r.severity);
            let suppress = format!("`// cudalog-ignore: {}`", r.id);
            serde_json::json!({
                "id": r.id,
                "name": r.id,
                "shortDescription": { "text": r.summary },
                "fullDescription": {
                    "text": format!("cudalog rule {}: {} (default level: {level}).", r.id, r.summary),
                },
                "help": {
                    "text": format!(
                        "{}. Suppress one finding with {suppress} at the end of its line or on the line above.",
                        r.summary
                    ),
                    "markdown": format!(
                        "**{}**: {}.\n\nSuppress one finding with {suppress} at the end of its line \
                         or on the line above.",
                        r.id, r.summary
                    ),
                },
                "defaultConfiguration": { "level": level },
            })
        })
        .collect();
    let results: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let mut result = serde_json::json!({
                "ruleId": f.rule,
                "ruleIndex": descriptors.iter().position(|d| d.0 == f.rule).unwrap_or(0),
                "level": sarif_level(f.severity),
                "message": { "text": f.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {
                            "uri": uri_reference(&f.file),
                            "uriBaseId": "%SRCROOT%",
                        },
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.col,
                            "endColumn": f.end_col.max(f.col + 1),
                        }
                    },
                    "logicalLocations": [{ "name": f.function, "kind": "function" }]
                }],
                "properties": { "facts": f.facts },
            });
            // The second access of a race, as a related location.
            if let (Some(l), Some(c)) = (
                f.facts.get("related_line").and_then(|v| v.as_u64()),
                f.facts.get("related_col").and_then(|v| v.as_u64()),
            ) {
                result["relatedLocations"] = serde_json::json!([{
                    "id": 1,
                    "message": { "text": "the other access" },
                    "physicalLocation": {
                        "artifactLocation": {
                            "uri": uri_reference(&f.file),
                            "uriBaseId": "%SRCROOT%",
                        },
                        "region": { "startLine": l, "startColumn": c.max(1) },
                    },
                }]);
            }
            result
        })
        .collect();
    let mut driver = serde_json::json!({
        "name": "cudalog",
        "version": env!("CARGO_PKG_VERSION"),
        "rules": rules,
    });
    // The package's repository (else homepage), once Cargo.toml names one.
    let info = [env!("CARGO_PKG_REPOSITORY"), env!("CARGO_PKG_HOMEPAGE")]
        .into_iter()
        .find(|u| !u.is_empty());
    if let Some(uri) = info {
        driver["informationUri"] = uri.into();
    }
    let doc = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": driver },
            "results": results,
        }]
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// A rule as SARIF describes it.
struct SarifRule<'a> {
    id: &'a str,
    severity: Severity,
    summary: &'a str,
}

#[cfg(test)]
mod tests {
    use super::{Cow, escape_control, uri_reference};

    #[test]
    fn uri_reference_percent_encodes_what_a_uri_path_cannot_hold() {
        assert_eq!(uri_reference("src/k.cu"), "src/k.cu");
        assert_eq!(
            uri_reference("src dir/kernél #1 50%.cu"),
            "src%20dir/kern%C3%A9l%20%231%2050%25.cu"
        );
        assert_eq!(uri_reference("a:b?.cu"), "a%3Ab%3F.cu");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_control("a\tb"), "a\tb");
        assert_eq!(
            escape_control("x\x1b[31my\u{9b}z\r"),
            "x\\x1B[31my\\u{009B}z\\x0D"
        );
        assert!(matches!(escape_control("plain \\n"), Cow::Borrowed(_)));
    }
}
