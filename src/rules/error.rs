//! Errors in rule files: located (`file:line:col`), one sentence, a caret line.

use super::source::{RuleSource, Span};

/// The classes of rule errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The text does not fit the grammar.
    Parse,
    /// An atom names a relation that is neither declared nor a store table.
    UnknownRelation,
    /// A named argument names no column of its relation.
    UnknownColumn,
    /// An atom has the wrong number of arguments.
    Arity,
    /// Values of different types meet (column, variable, operator).
    Type,
    /// A variable in a head, negation or comparison is not bound by a positive atom.
    Unbound,
    /// Negation or aggregation inside a recursive cycle.
    Unstratifiable,
    /// Other misuse of a declaration or directive (duplicate declaration,
    /// deriving into a store table, a bad `.lint`).
    Declaration,
    /// The rule file or a configured rule path cannot be read.
    Io,
    /// The store could not be read while evaluating.
    Store,
}

/// A located error in a rule file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RuleError {
    /// What kind of error.
    pub kind: ErrorKind,
    /// The rule file as shown to the user.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// Caret width (characters, at least 1).
    pub width: u32,
    /// One sentence.
    pub message: String,
    /// The source line the caret points into.
    pub source_line: String,
}

impl RuleError {
    /// An error at `span` of `src`.
    pub fn at(src: &RuleSource, span: Span, kind: ErrorKind, message: impl Into<String>) -> Self {
        let (line, col) = src.line_col(span.start);
        let (end_line, end_col) = src.line_col(span.end.max(span.start));
        let source_line = src.line_text(line).to_string();
        let width = if end_line == line && end_col > col {
            end_col - col
        } else {
            (source_line.chars().count() as u32 + 1)
                .saturating_sub(col)
                .max(1)
        };
        RuleError {
            kind,
            file: src.path.clone(),
            line,
            col,
            width: width.max(1),
            message: message.into(),
            source_line,
        }
    }

    /// An error about a whole file (line 1, column 1), e.g. it cannot be read.
    pub fn file(path: &str, kind: ErrorKind, message: impl Into<String>) -> Self {
        RuleError {
            kind,
            file: path.to_string(),
            line: 1,
            col: 1,
            width: 1,
            message: message.into(),
            source_line: String::new(),
        }
    }

    /// `file:line:col: error: sentence`, the source line and a caret line.
    pub fn render(&self) -> String {
        let num = self.line.to_string();
        let pad = " ".repeat(num.len());
        let mut out = format!(
            "{}:{}:{}: error: {}\n",
            self.file, self.line, self.col, self.message
        );
        if !self.source_line.is_empty() {
            let lead: String = self
                .source_line
                .chars()
                .take(self.col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            out.push_str(&format!(
                " {num} | {}\n {pad} | {lead}{}\n",
                self.source_line,
                "^".repeat(self.width as usize)
            ));
        }
        out
    }
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

impl std::error::Error for RuleError {}

/// The nearest of `candidates` to `name` (Damerau-Levenshtein), when it is
/// close enough to be a likely typo.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = strsim::damerau_levenshtein(name, c);
        let close = d <= 2.max(name.chars().count() / 3)
            || c.contains(name) && name.len() >= 3
            || name.contains(c) && c.len() >= 3;
        if close && best.is_none_or(|(bd, bc)| (d, c) < (bd, bc)) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// "; did you mean `x`?" or nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(name, candidates)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::source::Origin;

    #[test]
    fn renders_location_line_and_caret() {
        let src = RuleSource::new("x.dl", Origin::CommandLine, "a(X) :-\n  acesses(X).\n");
        let e = RuleError::at(
            &src,
            Span::new(10, 17),
            ErrorKind::UnknownRelation,
            "unknown",
        );
        assert_eq!(
            e.render(),
            "x.dl:2:3: error: unknown\n 2 |   acesses(X).\n   |   ^^^^^^^\n"
        );
    }

    #[test]
    fn suggestions_are_close_names_only() {
        let names = ["accesses", "functions", "calls"];
        assert_eq!(nearest("acesses", names), Some("accesses"));
        assert_eq!(nearest("function", names), Some("functions"));
        assert_eq!(nearest("zzz", names), None);
    }
}
