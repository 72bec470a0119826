//! Rule files: where they come from, their text, and byte offset → line/column.

use std::sync::Arc;

/// Where a rule file comes from (shown by `cudalog rules list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// Shipped with cudalog (the repository's `rules/`, embedded in the binary).
    Shipped,
    /// The workspace's `.cudalog/rules/*.dl`.
    Workspace,
    /// A path listed in `[rules] paths` of `cudalog.toml`.
    Config,
    /// Named on the command line (`cudalog rules check|run FILE.dl`).
    CommandLine,
}

impl Origin {
    /// Short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Shipped => "shipped",
            Origin::Workspace => "workspace",
            Origin::Config => "cudalog.toml",
            Origin::CommandLine => "command line",
        }
    }
}

/// One rule file's text with a line index.
#[derive(Clone, Debug)]
pub struct RuleSource {
    /// Path as shown in messages (workspace-relative where possible).
    pub path: String,
    /// Origin.
    pub origin: Origin,
    /// The text.
    pub text: Arc<str>,
    line_starts: Arc<[usize]>,
}

impl RuleSource {
    /// A rule source from its display path, origin and text.
    pub fn new(path: impl Into<String>, origin: Origin, text: impl Into<Arc<str>>) -> RuleSource {
        let text: Arc<str> = text.into();
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        RuleSource {
            path: path.into(),
            origin,
            text,
            line_starts: starts.into(),
        }
    }

    /// 1-based line and column (in characters) of byte offset `off`.
    pub fn line_col(&self, off: usize) -> (u32, u32) {
        let off = off.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= off) - 1;
        let start = self.line_starts[line];
        let col = self.text[start..floor_char(&self.text, off)]
            .chars()
            .count()
            + 1;
        (line as u32 + 1, col as u32)
    }

    /// The text of 1-based line `line` (without its newline).
    pub fn line_text(&self, line: u32) -> &str {
        let i = (line as usize).saturating_sub(1);
        let Some(&start) = self.line_starts.get(i) else {
            return "";
        };
        let end = self
            .line_starts
            .get(i + 1)
            .map(|&e| e - 1)
            .unwrap_or(self.text.len());
        self.text[start..end.max(start)].trim_end_matches('\r')
    }

    /// blake3 of the path and text (for change detection in watch mode).
    pub fn hash(&self) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        h.update(self.path.as_bytes());
        h.update(&[0]);
        h.update(self.text.as_bytes());
        h.finalize()
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A byte range in one rule source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_columns_are_one_based_and_count_characters() {
        let s = RuleSource::new("a.dl", Origin::CommandLine, "ab\ncé d\n\nx");
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(3), (2, 1));
        assert_eq!(s.line_col(7), (2, 4)); // after the two-byte é
        assert_eq!(s.line_col(9), (3, 1));
        assert_eq!(s.line_col(10), (4, 1));
        assert_eq!(s.line_col(99), (4, 2));
        assert_eq!(s.line_text(2), "cé d");
        assert_eq!(s.line_text(3), "");
        assert_eq!(s.line_text(9), "");
    }
}
