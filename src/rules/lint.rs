//! Lint tuples → findings shaped like the built-in ones.

use super::compile::{Lint, Program};
use super::eval::{Evaluation, Symbols, Value};
use crate::check::Finding;
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where a function is: file, name, key.
#[derive(Clone)]
struct FunctionSite {
    file: String,
    name: String,
    key: String,
}

/// Looks up functions in the store and source lines on disk (for
/// suppression comments and caret columns), with caches.
pub struct Locator<'c> {
    conn: &'c Connection,
    root: PathBuf,
    functions: HashMap<i64, Option<FunctionSite>>,
    sources: HashMap<String, Option<Vec<String>>>,
}

impl<'c> Locator<'c> {
    /// Locate through the store behind `conn`; source paths are relative to `root`.
    pub fn new(conn: &'c Connection, root: &Path) -> Locator<'c> {
        Locator {
            conn,
            root: root.to_path_buf(),
            functions: HashMap::new(),
            sources: HashMap::new(),
        }
    }

    fn function(&mut self, id: i64) -> Option<FunctionSite> {
        if let Some(f) = self.functions.get(&id) {
            return f.clone();
        }
        let site = self
            .conn
            .query_row(
                "SELECT f.path, fn.name, fn.key FROM functions fn JOIN files f ON f.id = fn.file_id \
                 WHERE fn.id = ?1",
                [id],
                |r| {
                    Ok(FunctionSite {
                        file: r.get(0)?,
                        name: r.get(1)?,
                        key: r.get(2)?,
                    })
                },
            )
            .optional()
            .unwrap_or(None);
        self.functions.insert(id, site.clone());
        site
    }

    fn lines(&mut self, file: &str) -> Option<&Vec<String>> {
        if !self.sources.contains_key(file) {
            let text = std::fs::read(self.root.join(file))
                .ok()
                .map(|b| crate::workspace::decode(&b).text);
            let lines = text.map(|t| t.lines().map(str::to_string).collect());
            self.sources.insert(file.to_string(), lines);
        }
        self.sources.get(file).and_then(|l| l.as_ref())
    }
}

/// The findings of the lint relations of an evaluated program. Tuples
/// whose function id is not in the store are skipped (logged).
pub fn lint_findings(
    prog: &Program,
    ev: &Evaluation,
    symbols: &Symbols,
    disabled: &[String],
    loc: &mut Locator<'_>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for lint in &prog.lints {
        if disabled.contains(&lint.name) {
            continue;
        }
        for t in ev.rels[lint.rel].iter() {
            match finding(prog, lint, t, symbols, loc) {
                Some(f) => out.push(f),
                None => tracing::warn!(
                    "{}: lint {} has a tuple without a known function and line: {:?}",
                    prog.source.path,
                    lint.name,
                    t.iter().map(|v| symbols.show(*v)).collect::<Vec<_>>()
                ),
            }
        }
    }
    out.sort_by(|a, b| {
        (&a.file, a.line, a.col, &a.rule, &a.message)
            .cmp(&(&b.file, b.line, b.col, &b.rule, &b.message))
    });
    out.dedup_by(|a, b| {
        (&a.file, a.line, a.col, &a.rule, &a.message)
            == (&b.file, b.line, b.col, &b.rule, &b.message)
    });
    out
}

fn finding(
    prog: &Program,
    lint: &Lint,
    t: &[Value],
    symbols: &Symbols,
    loc: &mut Locator<'_>,
) -> Option<Finding> {
    let Value::Num(fid) = t[lint.function_col] else {
        return None;
    };
    let Value::Num(line) = t[lint.line_col] else {
        return None;
    };
    let line = u32::try_from(line).ok().filter(|&l| l > 0)?;
    let site = loc.function(fid)?;
    let cols = &prog.rels[lint.rel].columns;
    let message = substitute(&lint.message, |name| {
        cols.iter()
            .position(|(c, _)| c == name)
            .map(|i| symbols.show(t[i]))
    });
    let given_col = lint.col_col.and_then(|c| match t[c] {
        Value::Num(n) => u32::try_from(n).ok().filter(|&n| n > 0),
        _ => None,
    });
    let lines = loc.lines(&site.file);
    let text = lines
        .and_then(|l| l.get(line as usize - 1))
        .map(String::as_str)
        .unwrap_or("");
    let chars: Vec<char> = text.chars().collect();
    let (col, end_col) = match given_col {
        Some(c) => {
            // The caret covers the word starting there.
            let mut e = c as usize;
            while e <= chars.len()
                && chars
                    .get(e - 1)
                    .is_some_and(|ch| ch.is_alphanumeric() || *ch == '_')
            {
                e += 1;
            }
            (c, (e as u32).max(c + 1))
        }
        None => {
            // The line's text, without leading and trailing blanks.
            let first = chars.iter().position(|c| !c.is_whitespace());
            let last = chars.iter().rposition(|c| !c.is_whitespace());
            match (first, last) {
                (Some(a), Some(b)) => (a as u32 + 1, b as u32 + 2),
                _ => (1, 2),
            }
        }
    };
    let suppressed = lines
        .map(|l| {
            let refs: Vec<&str> = l.iter().map(String::as_str).collect();
            crate::check::suppressed(&refs, line, &lint.name)
        })
        .unwrap_or(false);
    // Store row ids are not facts: they differ between two databases of
    // the same tree (a fresh check and a watched one); the function is
    // named by file and key already.
    let tuple: serde_json::Map<String, serde_json::Value> = cols
        .iter()
        .zip(t)
        .filter(|((c, _), _)| {
            !matches!(
                c.as_str(),
                "id" | "function_id" | "file_id" | "caller_function_id"
            )
        })
        .map(|((c, _), v)| (c.clone(), symbols.json(*v)))
        .collect();
    // A `severity` column overrides the declared severity per tuple; a
    // value that is not a severity keeps the declared one.
    let severity = lint
        .severity_col
        .and_then(|c| symbols.show(t[c]).parse().ok())
        .unwrap_or(lint.severity);
    Some(Finding {
        rule: lint.name.clone(),
        severity,
        file: site.file,
        line,
        col,
        end_col,
        function: site.name,
        function_key: site.key,
        message,
        facts: serde_json::json!({
            "summary": lint.summary,
            "house_rule": {
                "file": prog.source.path,
                "origin": prog.source.origin.as_str(),
            },
            "tuple": tuple,
        }),
        suppressed,
    })
}

/// Replace `{name}` by `value(name)` (unknown names stay as written);
/// `{{` and `}}` are literal braces.
pub fn substitute(template: &str, mut value: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push(tail.as_bytes()[0] as char);
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('{')
            && let Some(j) = tail.find('}')
        {
            let name = tail[1..j].trim();
            match value(name) {
                Some(v) => out.push_str(&v),
                None => out.push_str(&tail[..=j]),
            }
            rest = &tail[j + 1..];
            continue;
        }
        out.push(tail.as_bytes()[0] as char);
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_substituted_and_braces_escaped() {
        let v = |n: &str| (n == "x").then(|| "42".to_string());
        assert_eq!(substitute("a {x} b {{x}} {y} }", v), "a 42 b {x} {y} }");
    }
}
