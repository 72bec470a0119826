//! Top-level scan of one file: macros, includes, types, globals, `#if`, and
//! the function definitions with the scope visible at each.

use super::preproc::{self, MacroTable};
use super::syntax::{children, describe_error, field, named_children, text};
use super::types::{apply_declarator, base_type, record_layout, type_from_words};
use crate::ir::{FunctionKind, MemSpace, Type};
use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tree_sitter::{Node, Tree};

/// A file-scope variable visible to device code.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GlobalVar {
    /// Declared type.
    pub ty: Type,
    /// `__device__` → global, `__constant__` → constant, `__shared__` → shared.
    pub space: MemSpace,
}

/// Everything the lowering needs to know about names declared outside a
/// function: macros, types, file-scope variables and integer constants.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    /// Preprocessor state.
    pub macros: MacroTable,
    /// Typedefs, structs and aliases by name.
    pub types: BTreeMap<String, Type>,
    /// File-scope variables by name.
    pub globals: BTreeMap<String, GlobalVar>,
    /// Enumerators and `const`/`constexpr` integers by name (a class's
    /// static members as `Class::member`).
    pub constants: BTreeMap<String, i64>,
    /// (issue 8, session 11) The `static constexpr` integer members of
    /// class templates, by template name: the template's parameters and
    /// each member's initialiser as written, evaluated when a typedef or
    /// alias names an instance (`typedef Packed128<float> f128;` makes
    /// `f128::size` a constant).
    pub static_members: BTreeMap<String, StaticMembers>,
    /// (issue 8, session 12; audit 20261212 #28, cuda-samples'
    /// `SharedMemory<T>`) Classes with a conversion operator whose body
    /// names `__shared__` memory: `T *p = SharedMemory<T>();` points into
    /// shared memory.
    pub shared_views: std::collections::BTreeSet<String>,
}

/// A class template's parameters and its static members' initialisers, as
/// written (see [`Scope::static_members`]).
pub type StaticMembers = (Vec<String>, Vec<(String, String)>);

impl Scope {
    /// Merge `other` into `self` (entries of `other` win).
    pub fn extend(&mut self, other: &Scope) {
        self.macros.extend(&other.macros);
        self.types
            .extend(other.types.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.globals
            .extend(other.globals.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.constants
            .extend(other.constants.iter().map(|(k, v)| (k.clone(), *v)));
        self.static_members.extend(
            other
                .static_members
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        self.shared_views.extend(other.shared_views.iter().cloned());
    }
}

/// One function definition found in a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionSite {
    /// Unqualified name.
    pub name: String,
    /// Enclosing namespaces/classes joined with `::`.
    pub scope_path: String,
    /// Kernel, device or host (from the qualifiers before the declarator).
    pub kind: FunctionKind,
    /// Which definition of this `scope_path::name` in the file (0 for the first):
    /// distinguishes overloads and `#if`/`#else` alternatives.
    pub ordinal: u32,
    /// Text of the definition, including a `template <...>` prefix.
    pub text: Arc<str>,
    /// 0-based line of the first character of `text` in the file.
    pub start_line: u32,
    /// 0-based column of the first character of `text`.
    pub start_col: u32,
    /// Scope visible at the definition.
    pub scope: Arc<Scope>,
}

/// A problem found while scanning a file (outside function bodies).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceDiagnostic {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// `error`, `warning` or `note`.
    pub severity: &'static str,
    /// Short code, e.g. `parse-error`.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// Result of scanning one file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FileScan {
    /// Function definitions in source order.
    pub functions: Vec<FunctionSite>,
    /// The scope at the end of the file (what an includer sees).
    pub exports: Arc<Scope>,
    /// Diagnostics outside function definitions.
    pub diagnostics: Vec<SourceDiagnostic>,
    /// Local includes as written (`#include "x.cuh"`).
    pub includes: Vec<String>,
}

/// Scan a parsed file. `initial` holds the predefined and configured macros;
/// `include` resolves a local include (as written, e.g. `"common.cuh"`) to the
/// scope that header exports, or `None` when it is not in the workspace.
/// Same as [`scan_file_with`] with no names defined elsewhere.
pub fn scan_file(
    text_src: &str,
    tree: &Tree,
    initial: Arc<Scope>,
    include: &mut dyn FnMut(&str, &MacroTable) -> Option<Arc<Scope>>,
) -> FileScan {
    scan_file_with(text_src, tree, initial, &BTreeSet::new(), include)
}

/// Scan a parsed file whose workspace `#define`s the names `elsewhere`
/// (anywhere, in any file: see [`preproc::defined_names`]). Such a name
/// stays undecidable in this file's `#ifdef`s while no `#define`/`#undef` of
/// it is visible, since the file may be included after it is defined; only
/// the names this file's directives mention are kept in its scopes
/// ([`preproc::directive_names`]), so that an unrelated new macro elsewhere
/// leaves them equal. Macro expansion shares one budget for the whole file;
/// exceeding it leaves a `macro-budget` diagnostic.
pub fn scan_file_with(
    text_src: &str,
    tree: &Tree,
    initial: Arc<Scope>,
    elsewhere: &BTreeSet<String>,
    include: &mut dyn FnMut(&str, &MacroTable) -> Option<Arc<Scope>>,
) -> FileScan {
    let _unit = preproc::enter_unit();
    let initial = with_elsewhere(text_src, initial, elsewhere);
    let mut s = Scanner {
        src: text_src.as_bytes(),
        scope: initial,
        out: FileScan::default(),
        include,
        ordinals: BTreeMap::new(),
        path: Vec::new(),
        line_offset: 0,
        depth: 0,
        nest: 0,
        newlines: OnceCell::new(),
        tparams: Vec::new(),
    };
    s.items(tree.root_node());
    s.out.exports = s.scope.clone();
    s.out
}

/// Files up to this size are parsed whole (the `db` layer's `parse`
/// query); larger ones are parsed chunk by chunk ([`scan_source`]).
pub const CHUNK_THRESHOLD: usize = 64 << 10;
/// Target size of one chunk of a large file.
const CHUNK_TARGET: usize = 8 << 10;

/// Whether [`scan_source`] parses `text` in chunks (rather than whole).
pub fn needs_chunks(text: &str) -> bool {
    text.len() > CHUNK_THRESHOLD
}

/// Time allowed to parse `bytes` of text: tree-sitter-cuda parses a few MB
/// per second; its error recovery can go quadratic (many errors after many
/// comments), which chunking keeps local and this budget bounds.
fn parse_budget(bytes: usize) -> std::time::Duration {
    std::time::Duration::from_millis(2000 + (bytes as u64 >> 20) * 1000)
}

/// Scan a file from its text, like [`scan_file_with`], parsing it whole
/// when small and otherwise in chunks of about 32 KB cut between top-level
/// items (bracket and `#if` depth 0, after a `;`, `}` or directive), or,
/// where brackets never close for long, before a column-0 line that starts a
/// definition. Each chunk's tree is dropped once scanned, so memory stays
/// flat, and each parse has a time budget (`parse-budget` diagnostic).
pub fn scan_source(
    text_src: &str,
    initial: Arc<Scope>,
    elsewhere: &BTreeSet<String>,
    include: &mut dyn FnMut(&str, &MacroTable) -> Option<Arc<Scope>>,
) -> FileScan {
    if !needs_chunks(text_src) {
        let tree = super::syntax::parse(text_src);
        return scan_file_with(text_src, &tree, initial, elsewhere, include);
    }
    let _unit = preproc::enter_unit();
    let mut s = Scanner {
        src: text_src.as_bytes(),
        scope: with_elsewhere(text_src, initial, elsewhere),
        out: FileScan::default(),
        include,
        ordinals: BTreeMap::new(),
        path: Vec::new(),
        line_offset: 0,
        depth: 0,
        nest: 0,
        newlines: OnceCell::new(),
        tparams: Vec::new(),
    };
    let mut bounds = chunk_starts(text_src.as_bytes(), CHUNK_TARGET);
    bounds.insert(0, 0);
    bounds.push(text_src.len());
    for w in bounds.windows(2) {
        s.scan_region(w[0], w[1], false);
    }
    s.out.exports = s.scope.clone();
    s.out
}

/// Byte offsets (line starts) where a large file is cut into chunks of
/// about `target` bytes: see [`scan_source`].
fn chunk_starts(src: &[u8], target: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut last = 0usize;
    let mut depth = 0i64;
    let mut pp_depth = 0i64;
    let mut in_comment = false;
    // Whether the last significant token ended a top-level item.
    let mut ended = true;
    let mut i = 0usize;
    while i < src.len() {
        // `i` is a line start.
        let line_end = src[i..]
            .iter()
            .position(|c| *c == b'\n')
            .map_or(src.len(), |p| i + p + 1);
        if !in_comment && pp_depth == 0 && i - last >= target {
            let clean = depth == 0 && ended;
            let forced = i - last >= 2 * target && starts_definition_lexically(&src[i..line_end]);
            if clean || forced {
                out.push(i);
                last = i;
                depth = 0;
            }
        }
        let line = &src[i..line_end];
        let t = line.trim_ascii_start();
        if !in_comment && t.first() == Some(&b'#') {
            // A directive, with its continuation lines.
            let mut end = line_end;
            let mut cur = line;
            while cur.trim_ascii_end().ends_with(b"\\") && end < src.len() {
                let next_end = src[end..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .map_or(src.len(), |p| end + p + 1);
                cur = &src[end..next_end];
                end = next_end;
            }
            let word: Vec<u8> = t[1..]
                .trim_ascii_start()
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .copied()
                .collect();
            match word.as_slice() {
                b"if" | b"ifdef" | b"ifndef" => pp_depth += 1,
                b"endif" => pp_depth = (pp_depth - 1).max(0),
                _ => {}
            }
            // A block comment may start on a directive line and go on.
            in_comment = opens_comment(&src[i..end]);
            ended = true;
            i = end;
            continue;
        }
        // Brackets and the last significant character of the line.
        let mut j = 0;
        while j < line.len() {
            let c = line[j];
            if in_comment {
                if c == b'*' && line.get(j + 1) == Some(&b'/') {
                    in_comment = false;
                    j += 2;
                } else {
                    j += 1;
                }
                continue;
            }
            match c {
                b'/' if line.get(j + 1) == Some(&b'/') => break,
                b'/' if line.get(j + 1) == Some(&b'*') => {
                    in_comment = true;
                    j += 2;
                    continue;
                }
                b'"' | b'\'' => {
                    j += 1;
                    while j < line.len() && line[j] != c && line[j] != b'\n' {
                        j += if line[j] == b'\\' { 2 } else { 1 };
                    }
                    j += 1;
                    ended = false;
                    continue;
                }
                b'{' | b'(' | b'[' => depth += 1,
                b'}' | b')' | b']' => depth = (depth - 1).max(0),
                _ => {}
            }
            if !c.is_ascii_whitespace() {
                ended = matches!(c, b';' | b'}');
            }
            j += 1;
        }
        i = line_end;
    }
    out
}

/// Whether `text` (outside any comment at its start) ends inside a block
/// comment.
fn opens_comment(text: &[u8]) -> bool {
    let mut open = false;
    let mut j = 0;
    while j < text.len() {
        if open {
            if text[j] == b'*' && text.get(j + 1) == Some(&b'/') {
                open = false;
                j += 1;
            }
        } else if text[j] == b'/' && text.get(j + 1) == Some(&b'/') {
            while j < text.len() && text[j] != b'\n' {
                j += 1;
            }
        } else if text[j] == b'/' && text.get(j + 1) == Some(&b'*') {
            open = true;
            j += 1;
        } else if text[j] == b'"' {
            j += 1;
            while j < text.len() && text[j] != b'"' && text[j] != b'\n' {
                j += if text[j] == b'\\' { 2 } else { 1 };
            }
        }
        j += 1;
    }
    open
}

/// Whether `line` starts, at column 0, with a word that starts a definition
/// (without macro knowledge).
fn starts_definition_lexically(line: &[u8]) -> bool {
    let end = line
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(line.len());
    matches!(
        &line[..end],
        b"__global__" | b"__device__" | b"__host__" | b"template" | b"__forceinline__"
    )
}

/// `initial` with the names of `elsewhere` that `text`'s directives mention
/// kept undecidable (see [`scan_file_with`]).
fn with_elsewhere(text: &str, initial: Arc<Scope>, elsewhere: &BTreeSet<String>) -> Arc<Scope> {
    let mut initial = initial;
    if elsewhere.is_empty() {
        return initial;
    }
    let mentioned = preproc::directive_names(text);
    let (small, large) = if mentioned.len() <= elsewhere.len() {
        (&mentioned, elsewhere)
    } else {
        (elsewhere, &mentioned)
    };
    let maybe: Vec<&String> = small.iter().filter(|n| large.contains(*n)).collect();
    if !maybe.is_empty() {
        let macros = &mut Arc::make_mut(&mut initial).macros;
        for n in maybe {
            macros.mark_unknown(n);
        }
    }
    initial
}

/// The names of a template's parameters (`template<class T, int N>`: T, N).
fn template_param_names(list: Node<'_>, src: &[u8]) -> Vec<String> {
    named_children(list)
        .into_iter()
        .filter_map(|p| {
            let t = text(p, src);
            let head = t.split('=').next().unwrap_or(t);
            head.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .rfind(|w| !w.is_empty())
                .map(str::to_string)
        })
        .collect()
}

/// The value of a static member's initialiser `init`, with the template's
/// parameters `tparams` replaced by `args` (word for word) and `sizeof(T)`
/// by the size of `T`.
fn eval_member(init: &str, tparams: &[String], args: &[String], scope: &Scope) -> Option<i64> {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match tparams.iter().position(|p| p == word) {
            Some(i) => out.push_str(&args[i]),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in init.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    // `sizeof(T)` by the size of T.
    let mut text = String::new();
    let mut rest = out.as_str();
    while let Some(at) = rest.find("sizeof") {
        text.push_str(&rest[..at]);
        let after = rest[at + 6..].trim_start();
        let inner = after.strip_prefix('(')?;
        let close = inner.find(')')?;
        let ty = super::types::type_from_words(&inner[..close], scope, &[]);
        text.push_str(&ty.bytes()?.to_string());
        rest = &inner[close + 1..];
    }
    text.push_str(rest);
    let t = super::types::substitute_consts(&text, scope, &|_| None);
    scope.macros.eval_int(&t)
}

/// How deep error recovery may re-parse nested regions.
const MAX_RECOVERY_DEPTH: u32 = 4;

struct Scanner<'a> {
    src: &'a [u8],
    scope: Arc<Scope>,
    out: FileScan,
    include: &'a mut dyn FnMut(&str, &MacroTable) -> Option<Arc<Scope>>,
    ordinals: BTreeMap<String, u32>,
    path: Vec<String>,
    /// Line offset of `src` in the file (non-zero while re-parsing a region).
    line_offset: u32,
    /// Recovery nesting depth.
    depth: u32,
    /// Item nesting depth (namespaces, `#if`).
    nest: u32,
    /// Byte offsets of the newlines of `src`, built on first use.
    newlines: OnceCell<Vec<usize>>,
    /// The type parameters of the template being scanned (its class).
    tparams: Vec<String>,
}

/// The closers (`)`, `]`, `}`, innermost first) of the brackets that `src`
/// leaves open, skipping comments, string and character literals and
/// preprocessor lines; `None` when everything is closed (or the nesting is
/// absurdly deep).
fn unclosed(src: &[u8]) -> Option<String> {
    let mut stack: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < src.len() {
        let c = src[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if line_start => {
                // A directive, with its continuation lines.
                while i < src.len() && src[i] != b'\n' {
                    if src[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            b'/' if src.get(i + 1) == Some(&b'/') => {
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if src.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < src.len() && !(src[i] == b'*' && src[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < src.len() && src[i] != c && src[i] != b'\n' {
                    i += if src[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'{' | b'(' | b'[' => {
                stack.push(match c {
                    b'{' => b'}',
                    b'(' => b')',
                    _ => b']',
                });
                i += 1;
            }
            b'}' | b')' | b']' => {
                // Close up to the matching opener; a stray closer is ignored.
                if let Some(p) = stack.iter().rposition(|x| *x == c) {
                    stack.truncate(p);
                }
                i += 1;
            }
            _ => i += 1,
        }
        line_start = false;
    }
    if stack.is_empty() || stack.len() > 512 {
        return None;
    }
    Some(stack.iter().rev().map(|c| *c as char).collect())
}

impl Scanner<'_> {
    /// Scan a sequence of top-level items. A run of items with syntax errors
    /// is handed to [`Scanner::recover`], because tree-sitter's recovery can
    /// swallow the definitions that follow a broken declaration.
    fn items(&mut self, node: Node<'_>) {
        if node.is_error() {
            // Tree-sitter gave up on the whole region (e.g. a definition
            // followed by many unclosed brackets): recover it as one run.
            self.recover(&[node]);
            return;
        }
        let kids = named_children(node);
        let mut i = 0;
        while i < kids.len() {
            if !kids[i].has_error() && !kids[i].is_missing() {
                self.item(kids[i]);
                i += 1;
                continue;
            }
            let mut j = i;
            while j + 1 < kids.len() && (kids[j + 1].has_error() || kids[j + 1].is_error()) {
                j += 1;
            }
            self.recover(&kids[i..=j]);
            i = j + 1;
        }
    }

    /// Whether the line `rest` starts with, at column 0, what looks like a
    /// function definition.
    fn starts_definition(&self, rest: &[u8]) -> bool {
        let word_end = rest
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
            .unwrap_or(rest.len());
        let word = std::str::from_utf8(&rest[..word_end]).unwrap_or("");
        matches!(
            word,
            "__global__" | "__device__" | "__host__" | "template" | "__forceinline__"
        ) || (word == "extern" && rest.starts_with(b"extern \"C\""))
            || (!word.is_empty()
                && self.scope.macros.get(word).is_some_and(|m| {
                    m.params.is_none()
                        && (m.body.contains("__global__") || m.body.contains("__device__"))
                }))
    }

    /// 0-based line of byte `at` of `src` (binary search in a newline index
    /// built once per scanner, so that many error regions stay linear).
    fn line_of(&self, at: usize) -> u32 {
        let nl = self.newlines.get_or_init(|| {
            self.src
                .iter()
                .enumerate()
                .filter(|(_, c)| **c == b'\n')
                .map(|(i, _)| i)
                .collect()
        });
        nl.partition_point(|p| *p < at) as u32
    }

    /// Byte offsets (relative to `start`) of lines in `src[start..end]` that
    /// start, at column 0, what looks like a function definition.
    fn definition_starts(&self, start: usize, end: usize) -> Vec<usize> {
        let region = &self.src[start..end];
        let mut out = Vec::new();
        let mut line_start = 0usize;
        loop {
            if line_start > 0 && self.starts_definition(&region[line_start..]) {
                out.push(line_start);
            }
            match region[line_start..].iter().position(|c| *c == b'\n') {
                Some(p) => line_start += p + 1,
                None => break,
            }
            if line_start >= region.len() {
                break;
            }
        }
        out
    }

    /// Handle a run of top-level nodes containing syntax errors: report the
    /// first error of each, then either scan them as they are (a definition
    /// whose body has an error is still a definition) or, when the run
    /// swallowed further definitions, re-parse it piecewise from each line
    /// that starts a definition.
    fn recover(&mut self, nodes: &[Node<'_>]) {
        let start = nodes[0].start_byte();
        let end = nodes[nodes.len() - 1].end_byte();
        let mut splits = if self.depth < MAX_RECOVERY_DEPTH {
            self.definition_starts(start, end)
        } else {
            Vec::new()
        };
        // A lone definition with an error inside its own body: keep it whole.
        if nodes.len() == 1
            && matches!(
                nodes[0].kind(),
                "function_definition" | "template_declaration"
            )
        {
            let body_start = field(nodes[0], "body")
                .or_else(|| {
                    named_children(nodes[0])
                        .into_iter()
                        .find(|c| c.kind() == "function_definition")
                        .and_then(|f| field(f, "body"))
                })
                .map(|b| b.start_byte());
            if let Some(bs) = body_start {
                splits.retain(|off| start + off > bs);
                if splits.is_empty() {
                    // Errors in a body the lowering parses are reported there.
                    let before = self.out.functions.len();
                    self.item(nodes[0]);
                    let lowered = self.out.functions[before..]
                        .iter()
                        .all(|f| super::lower::lowers_body(f.kind, &f.text));
                    if !lowered || self.out.functions.len() == before {
                        self.push_first_error(nodes[0]);
                    }
                    return;
                }
            }
        }
        for n in nodes {
            self.push_first_error(*n);
        }
        // A definition at the start of the region that leaves brackets open
        // (a half-saved file): re-parse it with them closed.
        let first_end = splits.first().map(|o| start + o).unwrap_or(end);
        let at_line_start = start == 0 || self.src[start - 1] == b'\n';
        // Likewise when tree-sitter's nodes straddle the first split: what
        // it made of the part before it (one ERROR) holds no definition,
        // though the part may be whole (a kernel before the half-saved one).
        let straddles = !splits.is_empty()
            && nodes
                .iter()
                .any(|n| n.start_byte() < first_end && n.end_byte() > first_end);
        if self.depth < MAX_RECOVERY_DEPTH
            && at_line_start
            && self.starts_definition(&self.src[start..end])
            && (straddles || unclosed(&self.src[start..first_end]).is_some())
        {
            splits.insert(0, 0);
        }
        if splits.is_empty() {
            for n in nodes {
                self.item_quiet(*n);
            }
            return;
        }
        // The part before the first split keeps whatever tree-sitter made of it.
        let first = start + splits[0];
        for n in nodes {
            if n.end_byte() <= first {
                self.item_quiet(*n);
            }
        }
        let mut bounds: Vec<usize> = splits.iter().map(|o| start + o).collect();
        bounds.push(end);
        for w in bounds.windows(2) {
            self.reparse_region(w[0], w[1]);
        }
    }

    /// Re-parse `src[from..to]` on its own (closing the brackets it leaves
    /// open, so that a definition cut short is still one) and scan it.
    fn reparse_region(&mut self, from: usize, to: usize) {
        self.scan_region(from, to, true);
    }

    /// Parse `src[from..to]` on its own and scan it with the current scope.
    /// A recovery region (`recovery`) has its brackets closed, is scanned
    /// one level deeper and keeps only diagnostics other than parse errors
    /// (those were reported for the enclosing run); a chunk of a large file
    /// keeps everything. A parse that runs past its time budget leaves a
    /// `parse-budget` diagnostic instead of items.
    fn scan_region(&mut self, from: usize, to: usize, recovery: bool) {
        let Ok(chunk) = std::str::from_utf8(&self.src[from..to]) else {
            return;
        };
        let closed;
        let chunk = match unclosed(chunk.as_bytes()).filter(|_| recovery) {
            Some(closers) => {
                // On the region's last line (where the text stops), unless
                // that line is a comment or a directive.
                let body = chunk.trim_end();
                let last = body.rsplit('\n').next().unwrap_or("");
                let sep = if last.contains("//") || last.trim_start().starts_with('#') {
                    "\n"
                } else {
                    " "
                };
                closed = format!("{body}{sep}{closers}\n");
                closed.as_str()
            }
            None => chunk,
        };
        let line_offset = self.line_offset + self.line_of(from);
        let budget = parse_budget(chunk.len());
        let Some(tree) = super::syntax::parse_with_budget(chunk, budget) else {
            let end_line = self.line_offset + self.line_of(to.saturating_sub(1)) + 1;
            self.out.diagnostics.push(SourceDiagnostic {
                line: line_offset + 1,
                col: 1,
                severity: "warning",
                code: "parse-budget",
                message: format!(
                    "parsing lines {}-{end_line} took more than {:.1} s; their \
                     definitions are not indexed",
                    line_offset + 1,
                    budget.as_secs_f64()
                ),
            });
            return;
        };
        let mut sub = Scanner {
            src: chunk.as_bytes(),
            scope: self.scope.clone(),
            out: FileScan::default(),
            include: &mut *self.include,
            ordinals: std::mem::take(&mut self.ordinals),
            path: self.path.clone(),
            line_offset,
            depth: self.depth + u32::from(recovery),
            nest: self.nest,
            newlines: OnceCell::new(),
            tparams: self.tparams.clone(),
        };
        sub.items(tree.root_node());
        drop(tree);
        let (scope, out, ordinals) = (sub.scope, sub.out, sub.ordinals);
        self.scope = scope;
        self.ordinals = ordinals;
        self.out.functions.extend(out.functions);
        self.out.includes.extend(out.includes);
        // Errors inside a recovery region were reported once already;
        // others (macro budgets) were not.
        self.out.diagnostics.extend(
            out.diagnostics
                .into_iter()
                .filter(|d| !recovery || d.code != "parse-error"),
        );
    }

    /// `item` without reporting errors again.
    fn item_quiet(&mut self, n: Node<'_>) {
        if n.is_error() {
            for ch in named_children(n) {
                if matches!(
                    ch.kind(),
                    "function_definition"
                        | "template_declaration"
                        | "preproc_def"
                        | "preproc_function_def"
                        | "struct_specifier"
                        | "declaration"
                ) {
                    self.item(ch);
                }
            }
        } else if !n.is_missing() {
            self.item(n);
        }
    }

    fn push_first_error(&mut self, n: Node<'_>) {
        if let Some(e) = super::syntax::first_error(n) {
            self.push_error(e);
        }
    }

    fn push_error(&mut self, e: Node<'_>) {
        let p = e.start_position();
        self.out.diagnostics.push(SourceDiagnostic {
            line: self.line_offset + p.row as u32 + 1,
            col: p.column as u32 + 1,
            severity: "error",
            code: "parse-error",
            message: describe_error(e, self.src),
        });
    }

    fn scope_mut(&mut self) -> &mut Scope {
        Arc::make_mut(&mut self.scope)
    }

    fn item(&mut self, n: Node<'_>) {
        // Namespaces and `#if`s nest; pathological depth is not followed.
        if self.nest >= 128 {
            return;
        }
        self.nest += 1;
        self.item_inner(n);
        self.nest -= 1;
        self.budget_diagnostics(n);
    }

    /// Turn the macro-expansion budget events of the items scanned so far
    /// into diagnostics at `n`.
    fn budget_diagnostics(&mut self, n: Node<'_>) {
        for ev in preproc::take_budget_events() {
            let p = n.start_position();
            self.out.diagnostics.push(SourceDiagnostic {
                line: self.line_offset + p.row as u32 + 1,
                col: p.column as u32 + 1,
                severity: "warning",
                code: "macro-budget",
                message: ev.message("file"),
            });
        }
    }

    fn item_inner(&mut self, n: Node<'_>) {
        match n.kind() {
            "preproc_def" => {
                if let Some(name) = field(n, "name") {
                    let body = field(n, "value").map(|v| text(v, self.src)).unwrap_or("");
                    let name = text(name, self.src).to_string();
                    self.scope_mut().macros.define(&name, None, body);
                }
            }
            "preproc_function_def" => {
                if let Some(name) = field(n, "name") {
                    let params = field(n, "parameters")
                        .map(|p| {
                            named_children(p)
                                .into_iter()
                                .map(|x| text(x, self.src).to_string())
                                .collect()
                        })
                        .unwrap_or_default();
                    let body = field(n, "value").map(|v| text(v, self.src)).unwrap_or("");
                    let name = text(name, self.src).to_string();
                    self.scope_mut().macros.define(&name, Some(params), body);
                }
            }
            "preproc_call" => {
                let dir = field(n, "directive")
                    .map(|d| text(d, self.src))
                    .unwrap_or("");
                if dir == "#undef"
                    && let Some(arg) = field(n, "argument")
                {
                    let name = text(arg, self.src).trim().to_string();
                    self.scope_mut().macros.undef(&name);
                }
            }
            "preproc_include" => {
                if let Some(p) = field(n, "path")
                    && p.kind() == "string_literal"
                {
                    let raw = text(p, self.src).trim_matches('"').to_string();
                    self.out.includes.push(raw.clone());
                    if let Some(exported) = (self.include)(&raw, &self.scope.macros) {
                        self.scope_mut().extend(&exported);
                    }
                }
            }
            "preproc_if" | "preproc_ifdef" | "preproc_elif" | "preproc_elifdef" => {
                self.conditional(n)
            }
            "preproc_else" => self.items(n),
            "function_definition" => self.function(n, n),
            "template_declaration" => {
                let params = field(n, "parameters")
                    .map(|p| template_param_names(p, self.src))
                    .unwrap_or_default();
                let outer = std::mem::replace(&mut self.tparams, params);
                for ch in named_children(n) {
                    match ch.kind() {
                        "function_definition" => self.function(ch, n),
                        "declaration" | "struct_specifier" | "class_specifier" => self.item(ch),
                        _ => {}
                    }
                }
                self.tparams = outer;
            }
            "namespace_definition" => {
                let name = field(n, "name")
                    .map(|x| text(x, self.src).to_string())
                    .unwrap_or_default();
                self.path.push(name);
                if let Some(body) = field(n, "body") {
                    self.items(body);
                }
                self.path.pop();
            }
            "linkage_specification" => {
                if let Some(body) = field(n, "body") {
                    if body.kind() == "declaration_list" {
                        self.items(body);
                    } else {
                        self.item(body);
                    }
                }
            }
            "declaration_list" => self.items(n),
            "struct_specifier" | "class_specifier" | "union_specifier" => self.record(n),
            "type_definition" => self.typedef(n),
            "alias_declaration" => {
                if let (Some(name), Some(ty)) = (field(n, "name"), field(n, "type")) {
                    let t = type_from_words(text(ty, self.src), &self.scope, &[]);
                    let name = text(name, self.src).to_string();
                    self.instance_constants(&name, text(ty, self.src));
                    self.scope_mut().types.insert(name, t);
                }
            }
            "declaration" => self.declaration(n),
            "enum_specifier" => self.enumeration(n),
            "expression_statement" if n.has_error() => self.error_node(n),
            "ERROR" => self.error_node(n),
            _ => {
                if n.is_missing() {
                    self.error_node(n);
                }
            }
        }
    }

    fn error_node(&mut self, n: Node<'_>) {
        self.push_error(n);
        // Tree-sitter sometimes wraps intact definitions in an ERROR node:
        // keep scanning inside it so they are not lost.
        for ch in named_children(n) {
            if matches!(
                ch.kind(),
                "function_definition"
                    | "template_declaration"
                    | "preproc_def"
                    | "preproc_function_def"
                    | "struct_specifier"
                    | "declaration"
                    | "namespace_definition"
                    | "linkage_specification"
                    | "preproc_if"
                    | "preproc_ifdef"
            ) {
                self.item(ch);
            }
        }
    }

    /// `#if`/`#ifdef`/`#elif`: scan the branch the condition selects, or
    /// every branch when the condition is undecidable.
    fn conditional(&mut self, n: Node<'_>) {
        let cond = match n.kind() {
            "preproc_ifdef" | "preproc_elifdef" => {
                let negate = children(n)
                    .first()
                    .map(|t| text(*t, self.src).contains("ndef"))
                    .unwrap_or(false);
                field(n, "name").and_then(|name| {
                    let d = self.scope.macros.is_defined(text(name, self.src).trim());
                    d.map(|d| d != negate)
                })
            }
            _ => field(n, "condition")
                .and_then(|c| self.scope.macros.eval_condition(text(c, self.src))),
        };
        self.budget_diagnostics(n);
        let alternative = field(n, "alternative");
        let body: Vec<Node<'_>> = {
            let mut c = n.walk();
            n.children(&mut c)
                .enumerate()
                .filter(|(i, ch)| {
                    ch.is_named()
                        && !matches!(
                            n.field_name_for_child(*i as u32),
                            Some("condition" | "name" | "alternative")
                        )
                })
                .map(|(_, ch)| ch)
                .collect()
        };
        if cond != Some(false) {
            for ch in &body {
                self.item(*ch);
            }
        }
        if cond != Some(true)
            && let Some(alt) = alternative
        {
            self.item(alt);
        }
    }

    fn function(&mut self, def: Node<'_>, outer: Node<'_>) {
        let Some(declarator) = field(def, "declarator") else {
            return;
        };
        let Some((name, qual)) = function_name(declarator, self.src) else {
            return;
        };
        let kind = self.function_kind(def, declarator);
        let mut scope_path = self.path.join("::");
        if let Some(q) = qual {
            if !scope_path.is_empty() {
                scope_path.push_str("::");
            }
            scope_path.push_str(&q);
        }
        let key = format!("{scope_path}::{name}");
        let ordinal = {
            let o = self.ordinals.entry(key).or_insert(0);
            *o += 1;
            *o - 1
        };
        let start = outer.start_position();
        let t = std::str::from_utf8(&self.src[outer.byte_range()]).unwrap_or("");
        self.out.functions.push(FunctionSite {
            name,
            scope_path,
            kind,
            ordinal,
            text: Arc::from(t),
            start_line: self.line_offset + start.row as u32,
            start_col: start.column as u32,
            scope: self.scope.clone(),
        });
    }

    /// Kernel if `__global__` (or a macro for it) precedes the declarator,
    /// device if `__device__` does, host otherwise.
    fn function_kind(&self, def: Node<'_>, declarator: Node<'_>) -> FunctionKind {
        let prefix =
            std::str::from_utf8(&self.src[def.start_byte()..declarator.start_byte()]).unwrap_or("");
        let mut device = false;
        for word in prefix.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.is_empty() {
                continue;
            }
            let expanded = match self.scope.macros.get(word) {
                Some(m) if m.params.is_none() => self.scope.macros.expand_text(word),
                _ => word.to_string(),
            };
            if expanded.contains("__global__") {
                return FunctionKind::Kernel;
            }
            if expanded.contains("__device__") {
                device = true;
            }
        }
        if device {
            FunctionKind::Device
        } else {
            FunctionKind::Host
        }
    }

    fn record(&mut self, n: Node<'_>) {
        let (Some(name), Some(body)) = (field(n, "name"), field(n, "body")) else {
            return;
        };
        let name = text(name, self.src).to_string();
        let ty = record_layout(&name, body, self.src, &self.scope, &[]);
        self.scope_mut().types.insert(name.clone(), ty);
        self.static_members(&name, body);
        if named_children(body).into_iter().any(|m| {
            let t = text(m, self.src);
            m.kind() == "function_definition" && t.contains("operator") && t.contains("__shared__")
        }) {
            let base = name.split('<').next().unwrap_or(&name).trim().to_string();
            self.scope_mut().shared_views.insert(base);
        }
        // Member functions defined in the class body.
        self.path.push(name);
        for ch in named_children(body) {
            match ch.kind() {
                "function_definition" => self.function(ch, ch),
                "template_declaration" => self.item(ch),
                _ => {}
            }
        }
        self.path.pop();
    }

    fn typedef(&mut self, n: Node<'_>) {
        let Some(tn) = field(n, "type") else { return };
        let base = if matches!(
            tn.kind(),
            "struct_specifier" | "union_specifier" | "class_specifier"
        ) {
            if field(tn, "name").is_some() {
                self.record(tn);
            }
            match field(tn, "body") {
                Some(body) => {
                    let decl_name = field(n, "declarator")
                        .map(|d| text(d, self.src).to_string())
                        .unwrap_or_default();
                    record_layout(&decl_name, body, self.src, &self.scope, &[])
                }
                None => base_type(tn, self.src, &self.scope, &[]),
            }
        } else {
            base_type(tn, self.src, &self.scope, &[])
        };
        for (i, ch) in children(n).into_iter().enumerate() {
            if n.field_name_for_child(i as u32) != Some("declarator") {
                continue;
            }
            let (name, ty) = apply_declarator(ch, base.clone(), self.src, &self.scope, &|_| None);
            if let Some(name) = name {
                let name = text(name, self.src).to_string();
                self.instance_constants(&name, text(tn, self.src));
                self.scope_mut().types.insert(name, ty);
            }
        }
    }

    /// (issue 8, session 11) The `static constexpr`/`static const` integer
    /// members of class `name` with an initialiser: a constant
    /// `name::member` now for a plain class, kept with the template's
    /// parameters for a class template.
    fn static_members(&mut self, name: &str, body: Node<'_>) {
        let mut items = Vec::new();
        for fd in named_children(body) {
            if fd.kind() != "field_declaration" {
                continue;
            }
            let Some(v) = field(fd, "default_value") else {
                continue;
            };
            let head = text(fd, self.src);
            let words: Vec<&str> = head
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .collect();
            if !words.contains(&"static")
                || !(words.contains(&"constexpr") || words.contains(&"const"))
            {
                continue;
            }
            let Some(d) = field(fd, "declarator") else {
                continue;
            };
            let member = text(d, self.src).trim().to_string();
            if !member
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                continue;
            }
            items.push((member, text(v, self.src).to_string()));
        }
        if items.is_empty() {
            return;
        }
        if self.tparams.is_empty() {
            for (m, init) in &items {
                if let Some(v) = eval_member(init, &[], &[], &self.scope) {
                    self.scope_mut().constants.insert(format!("{name}::{m}"), v);
                }
            }
        } else {
            let tparams = self.tparams.clone();
            self.scope_mut()
                .static_members
                .insert(name.to_string(), (tparams, items));
        }
    }

    /// For `typedef T<args> name;` (or `using name = T<args>;`) with `T` a
    /// class template whose static members are known: each member as the
    /// constant `name::member`.
    fn instance_constants(&mut self, name: &str, type_text: &str) {
        let Some((template, args)) = type_text.split_once('<') else {
            return;
        };
        let Some(args) = args.trim().strip_suffix('>') else {
            return;
        };
        let Some((tparams, items)) = self.scope.static_members.get(template.trim()).cloned() else {
            return;
        };
        let args: Vec<String> = args.split(',').map(|a| a.trim().to_string()).collect();
        if args.len() != tparams.len() {
            return;
        }
        // Also under the instance's own spelling (`Packed128<floatX>::size`),
        // the type of a variable declared through the typedef.
        let spelled: String = type_text.chars().filter(|c| !c.is_whitespace()).collect();
        for (m, init) in &items {
            if let Some(v) = eval_member(init, &tparams, &args, &self.scope) {
                self.scope_mut().constants.insert(format!("{name}::{m}"), v);
                self.scope_mut()
                    .constants
                    .insert(format!("{spelled}::{m}"), v);
            }
        }
    }

    fn enumeration(&mut self, n: Node<'_>) {
        let Some(body) = field(n, "body") else { return };
        let mut next = 0i64;
        for e in named_children(body) {
            if e.kind() != "enumerator" {
                continue;
            }
            let Some(name) = field(e, "name") else {
                continue;
            };
            if let Some(v) = field(e, "value") {
                let t = super::types::substitute_consts(text(v, self.src), &self.scope, &|_| None);
                match self.scope.macros.eval_int(&t) {
                    Some(v) => next = v,
                    None => continue,
                }
            }
            let name = text(name, self.src).to_string();
            self.scope_mut().constants.insert(name, next);
            next += 1;
        }
    }

    fn declaration(&mut self, n: Node<'_>) {
        let Some(tn) = field(n, "type") else { return };
        if tn.kind() == "enum_specifier" {
            self.enumeration(tn);
        }
        if matches!(tn.kind(), "struct_specifier" | "class_specifier")
            && field(tn, "body").is_some()
        {
            self.record(tn);
        }
        let prefix = std::str::from_utf8(&self.src[n.start_byte()..tn.start_byte()]).unwrap_or("");
        let words: Vec<&str> = prefix.split_whitespace().collect();
        let space = if words.contains(&"__constant__") {
            Some(MemSpace::Constant)
        } else if words.contains(&"__shared__") {
            Some(MemSpace::Shared)
        } else if words.contains(&"__device__") || words.contains(&"__managed__") {
            Some(MemSpace::Global)
        } else {
            None
        };
        let is_const = words.contains(&"const") || words.contains(&"constexpr");
        let base = base_type(tn, self.src, &self.scope, &[]);
        for (i, ch) in children(n).into_iter().enumerate() {
            if n.field_name_for_child(i as u32) != Some("declarator") {
                continue;
            }
            if ch.kind() == "function_declarator" {
                continue;
            }
            let (name, ty) = apply_declarator(ch, base.clone(), self.src, &self.scope, &|_| None);
            let Some(name) = name else { continue };
            let name = text(name, self.src).to_string();
            if let Some(space) = space {
                self.scope_mut().globals.insert(
                    name.clone(),
                    GlobalVar {
                        ty: ty.clone(),
                        space,
                    },
                );
            }
            if is_const
                && ch.kind() == "init_declarator"
                && matches!(ty, Type::Scalar(s) if s.is_integral())
                && let Some(v) = field(ch, "value")
            {
                let t = super::types::substitute_consts(text(v, self.src), &self.scope, &|_| None);
                if let Some(val) = self.scope.macros.eval_int(&t) {
                    self.scope_mut().constants.insert(name, val);
                }
            }
        }
    }
}

/// The name of a function declarator (descending through pointer/reference
/// declarators), and its qualifier for out-of-class definitions (`A::f`).
fn function_name(mut d: Node<'_>, src: &[u8]) -> Option<(String, Option<String>)> {
    loop {
        match d.kind() {
            "function_declarator" => {
                let inner = field(d, "declarator")?;
                return Some(split_qualified(inner, src));
            }
            "pointer_declarator"
            | "reference_declarator"
            | "parenthesized_declarator"
            | "attributed_declarator" => {
                d = field(d, "declarator").or_else(|| named_children(d).into_iter().last())?;
            }
            _ => return None,
        }
    }
}

fn split_qualified(n: Node<'_>, src: &[u8]) -> (String, Option<String>) {
    let t = text(n, src);
    let base = match n.kind() {
        "template_function" => field(n, "name").map(|x| text(x, src)).unwrap_or(t),
        _ => t,
    };
    match base.rfind("::") {
        Some(i) => (base[i + 2..].to_string(), Some(base[..i].to_string())),
        None => (base.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::syntax::parse;

    fn scan(src: &str) -> FileScan {
        let tree = parse(src);
        let init = Arc::new(Scope {
            macros: MacroTable::predefined(),
            ..Scope::default()
        });
        scan_file(src, &tree, init, &mut |_, _| None)
    }

    /// (issue 8, session 11) llm.c's `Packed128<T>::size` through its
    /// typedefs: `sizeof(int4) / sizeof(T)`.
    #[test]
    fn static_members_of_template_instances_are_constants() {
        let f = scan(
            "typedef __nv_bfloat16 floatX;\n\
             template<class ElementType>\n\
             struct alignas(16) Packed128 {\n\
                 static constexpr const size_t size = sizeof(int4) / sizeof(ElementType);\n\
                 ElementType payload[size];\n\
             };\n\
             typedef Packed128<float> f128;\n\
             typedef Packed128<floatX> x128;\n\
             struct Tile { static const int W = 8 * 4; };\n",
        );
        let c = &f.exports.constants;
        assert_eq!(
            c.get("f128::size"),
            Some(&4),
            "{c:?} {:?}",
            f.exports.static_members
        );
        assert_eq!(c.get("x128::size"), Some(&8), "{c:?}");
        assert_eq!(c.get("Tile::W"), Some(&32), "{c:?}");
    }

    #[test]
    fn finds_kernels_device_and_host_functions() {
        let f = scan(
            "#define N 4\n__global__ void k(float* a) { a[0] = N; }\n\
             __device__ __forceinline__ float sq(float x) { return x * x; }\n\
             template <int B> __global__ void t(int* p) { p[B] = 1; }\n\
             int main() { return 0; }\n\
             namespace ns { __host__ __device__ int both() { return 1; } }\n",
        );
        let names: Vec<_> = f
            .functions
            .iter()
            .map(|s| (s.scope_path.as_str(), s.name.as_str(), s.kind))
            .collect();
        assert_eq!(
            names,
            vec![
                ("", "k", FunctionKind::Kernel),
                ("", "sq", FunctionKind::Device),
                ("", "t", FunctionKind::Kernel),
                ("", "main", FunctionKind::Host),
                ("ns", "both", FunctionKind::Device),
            ]
        );
        assert!(f.functions[2].text.starts_with("template <int B>"));
        assert_eq!(f.functions[2].start_line, 3);
    }

    #[test]
    fn preprocessor_branches() {
        let f = scan(
            "#if 0\n__global__ void dead() {}\n#else\n__global__ void live() {}\n#endif\n\
             #ifdef SOME_BUILD_FLAG\n__global__ void a() {}\n#else\n__global__ void b() {}\n#endif\n\
             #ifndef _WIN32\n__global__ void linux_only() {}\n#endif\n",
        );
        let names: Vec<_> = f.functions.iter().map(|s| s.name.as_str()).collect();
        // Nothing defines SOME_BUILD_FLAG: as nvcc sees it, undefined.
        assert_eq!(names, vec!["live", "b", "linux_only"]);
    }

    fn scan_with(src: &str, elsewhere: &[&str]) -> FileScan {
        let tree = parse(src);
        let init = Arc::new(Scope {
            macros: MacroTable::predefined(),
            ..Scope::default()
        });
        let set: BTreeSet<String> = elsewhere.iter().map(|s| s.to_string()).collect();
        scan_file_with(src, &tree, init, &set, &mut |_, _| None)
    }

    fn names(f: &FileScan) -> Vec<&str> {
        f.functions.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn macros_defined_elsewhere_stay_undecidable() {
        let src = "#ifdef USE_TEX\n__global__ void tex() {}\n#else\n__global__ void plain() {}\n#endif\n\
                   #if defined(__CUDA_ARCH__)\n__global__ void arch() {}\n#endif\n\
                   #define USE_TEX\n#ifdef USE_TEX\n__global__ void after() {}\n#endif\n";
        // Nothing else defines USE_TEX: before this file's own #define it
        // is undefined... but this file defines it, so the workspace set
        // holds it, and a file may be included after it is defined.
        assert_eq!(
            names(&scan_with(src, &["USE_TEX"])),
            ["tex", "plain", "arch", "after"]
        );
        // Without the workspace set (no file defines it anywhere).
        let src2 =
            "#ifdef USE_TEX\n__global__ void tex() {}\n#else\n__global__ void plain() {}\n#endif\n";
        assert_eq!(names(&scan_with(src2, &[])), ["plain"]);
        // A name defined elsewhere but never tested here does not enter the
        // scopes (so an unrelated macro leaves this file's items equal).
        let f = scan_with(src2, &["UNRELATED"]);
        assert_eq!(
            f.functions[0].scope,
            scan_with(src2, &[]).functions[0].scope
        );
        let f = scan_with(src2, &["USE_TEX", "UNRELATED"]);
        assert_eq!(names(&f), ["tex", "plain"]);
        assert_eq!(
            f.functions[0].scope.macros.is_defined("UNRELATED"),
            Some(false)
        );
        assert_eq!(f.functions[0].scope.macros.is_defined("USE_TEX"), None);
    }

    #[test]
    fn half_saved_definitions_are_indexed_or_diagnosed() {
        for n in [0usize, 1, 3, 6, 8, 40] {
            let src = format!(
                "__global__ void k(float *a) {{ a[threadIdx.x] = 1;\n{}\n",
                "{(".repeat(n)
            );
            let f = scan(&src);
            assert_eq!(names(&f), ["k"], "n = {n}");
            let lowered = crate::frontend::lower::lower_function(
                &f.functions[0].text,
                0,
                "k",
                "",
                FunctionKind::Kernel,
                &f.functions[0].scope,
            );
            assert!(
                !f.diagnostics.is_empty() || !lowered.syntax_errors.is_empty(),
                "n = {n}: no diagnostic"
            );
            assert_eq!(lowered.accesses.len(), 1, "n = {n}");
            assert!(f.functions[0].text.starts_with("__global__ void k"));
        }
        // A whole kernel and host function before a half-saved kernel: the
        // error run starts at the first one; all three are kept.
        let f = scan(
            "__global__ void k(float *a) {\n  a[0] = 1;\n}\nvoid h(float *d) { k<<<1, 32>>>(d); }\n\
             __global__ void late(float *a) { a[0] = 1; {({({({({({({({(",
        );
        assert_eq!(names(&f), ["k", "h", "late"]);
        assert!(!f.diagnostics.is_empty());
        // Closed, then unclosed brackets after it: the kernel is intact.
        let f = scan("__global__ void k(float *a) { a[0] = 1; }\n{({({({({({(\n");
        assert_eq!(names(&f), ["k"]);
        assert!(!f.diagnostics.is_empty());
        // A definition cut short before another one.
        let f = scan(
            "__global__ void k(float *a) { if (a[0]) { a[1] = 2;\n\
             __global__ void j(float *b) { b[threadIdx.x] = 0; }\n",
        );
        assert_eq!(names(&f), ["k", "j"]);
    }

    #[test]
    fn many_error_regions_scan_in_linear_time() {
        // Each broken initializer swallows the kernel after it, so every
        // region is re-parsed; line numbers must not be recounted from the
        // start of the file each time (that was quadratic).
        let mut src = String::new();
        for i in 0..20000 {
            src.push_str(&format!(
                "static int t{i}[] = {{ 1, 2,\n__global__ void k{i}(float *a) {{ a[threadIdx.x] = {i}; }}\n"
            ));
        }
        let start = std::time::Instant::now();
        let f = scan(&src);
        let took = start.elapsed();
        assert_eq!(f.functions.len(), 20000);
        assert_eq!(f.functions[19999].start_line, 39999);
        // The quadratic version took minutes on such inputs.
        // The bound leaves room for a loaded CI machine (12.6 s measured at
        // load 14 on 2 cores).
        assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    }

    #[test]
    fn expansion_budget_leaves_a_diagnostic() {
        let mut src = String::from("#define M0 1\n");
        for i in 1..=13 {
            let p = format!("M{}", i - 1);
            src.push_str(&format!("#define M{i} ({p}+{p}+{p}+{p})\n"));
        }
        src.push_str(
            "#define X X X X\n__device__ float big[M13];\n__device__ float x[X];\n\
                      #if M13 > 2\n__global__ void k() {}\n#endif\n",
        );
        let start = std::time::Instant::now();
        let f = scan(&src);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        let d: Vec<_> = f
            .diagnostics
            .iter()
            .filter(|d| d.code == "macro-budget")
            .collect();
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].line, 16);
        assert!(d[0].message.contains("M13"));
        // Unknown extents, and the undecidable #if keeps its kernel.
        assert_eq!(f.exports.globals["big"].ty.bytes(), None);
        assert_eq!(f.exports.globals["x"].ty.bytes(), None);
        assert_eq!(names(&f), ["k"]);
    }

    #[test]
    fn macro_qualified_kernels_and_overload_ordinals() {
        let f = scan(
            "#define KERNEL __global__\nKERNEL void k(int *p) { p[0] = 0; }\n\
             __device__ int f(int x) { return x; }\n__device__ float f(float x) { return x; }\n",
        );
        assert_eq!(f.functions[0].kind, FunctionKind::Kernel);
        assert_eq!(f.functions[1].ordinal, 0);
        assert_eq!(f.functions[2].ordinal, 1);
    }

    #[test]
    fn records_structs_globals_constants() {
        let f = scan(
            "struct P { float x, y, z, w; };\ntypedef struct { double a; int b; } Q;\n\
             __constant__ float coeffs[16];\n__device__ int counter;\n\
             enum { A = 2, B, C = A * 8 };\nconst int W = 64;\n",
        );
        let s = &f.exports;
        assert_eq!(s.types["P"].bytes(), Some(16));
        assert_eq!(s.types["Q"].bytes(), Some(16));
        assert_eq!(s.types["P"].field("z"), Some((8, 4)));
        assert_eq!(s.globals["coeffs"].space, MemSpace::Constant);
        assert_eq!(s.globals["counter"].space, MemSpace::Global);
        assert_eq!(s.constants["B"], 3);
        assert_eq!(s.constants["C"], 16);
        assert_eq!(s.constants["W"], 64);
    }

    #[test]
    fn syntax_errors_outside_functions_are_diagnostics() {
        let f = scan("int x = ;\n@@@ garbage\n__global__ void ok(int* p) { p[0] = 1; }\n");
        assert!(!f.diagnostics.is_empty());
        assert!(f.diagnostics.iter().all(|d| d.code == "parse-error"));
        assert!(f.functions.iter().any(|s| s.name == "ok"));
    }

    fn chunked(src: &str) -> FileScan {
        let init = Arc::new(Scope {
            macros: MacroTable::predefined(),
            ..Scope::default()
        });
        scan_source(src, init, &BTreeSet::new(), &mut |_, _| None)
    }

    fn summary(f: &FileScan) -> Vec<(String, String, u32, u32, FunctionKind, usize)> {
        f.functions
            .iter()
            .map(|s| {
                (
                    s.scope_path.clone(),
                    s.name.clone(),
                    s.start_line,
                    s.start_col,
                    s.kind,
                    s.text.len(),
                )
            })
            .collect()
    }

    #[test]
    fn large_files_are_scanned_in_chunks_with_the_same_result() {
        let mut src = String::from("// header\n#define N 4\n");
        for i in 0..600 {
            src.push_str(&format!(
                "/* block {i}\n   #define NOT_A_MACRO {{ */\n\
                 #define W{i} /* a comment that goes\n   on */ {i}\n\
                 #if N > 2\nstruct S{i} {{ float a[N]; int b; }};\n#else\nstruct S{i} {{ int c; }};\n#endif\n\
                 namespace ns{i} {{\n__device__ int f{i}(int x) {{ return x + W{i}; }}\n}}\n\
                 template <int B>\n__global__ void k{i}(S{i} *p) {{\n  p[threadIdx.x].b = \"}}{{\"[0] + '{{';\n}}\n\
                 int table{i}[] = {{\n  1, 2,\n  3 }};\n"
            ));
        }
        assert!(needs_chunks(&src));
        let whole = scan(&src);
        let parts = chunked(&src);
        assert_eq!(summary(&parts), summary(&whole));
        assert_eq!(parts.functions.len(), 1200);
        assert_eq!(parts.exports, whole.exports);
        assert_eq!(parts.diagnostics, whole.diagnostics);
        assert!(
            whole.diagnostics.is_empty(),
            "{:?}",
            &whole.diagnostics[..1]
        );
        // The chunks really were several.
        assert!(chunk_starts(src.as_bytes(), CHUNK_TARGET).len() > 10);
    }

    #[test]
    fn errors_after_many_comments_stay_linear() {
        // Tree-sitter's error recovery slows down with every comment line
        // before an error: 50000 comment lines then 1000 broken initializers
        // took 13 s parsed whole. Chunks keep that local.
        let mut src = "// c\n".repeat(50000);
        for i in 0..1000 {
            src.push_str(&format!(
                "static int t{i}[] = {{ 1, 2,\n__global__ void k{i}(float *a) {{ a[threadIdx.x] = {i}; }}\n"
            ));
        }
        let start = std::time::Instant::now();
        let f = chunked(&src);
        let took = start.elapsed();
        assert_eq!(f.functions.len(), 1000);
        assert!(f.diagnostics.iter().any(|d| d.code == "parse-error"));
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    }
}
