//! Preprocessor-lite: macro tables and `#if` evaluation.
//!
//! cudalog does not run a C preprocessor. It records object-like and simple
//! function-like `#define`s (from the file, its local includes, the workspace
//! configuration and `-D` flags) so that the lowering can expand them where
//! kernel code uses them, and it evaluates `#if`/`#ifdef` conditions when they
//! are decidable from what it has seen. An undecidable condition (a name that
//! may come from the build system, `__CUDA_ARCH__`) yields `None`, and the
//! callers keep both branches.

use std::collections::BTreeMap;

/// One `#define`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Macro {
    /// Parameter names for function-like macros, `None` for object-like ones.
    pub params: Option<Vec<String>>,
    /// Replacement text (line continuations removed).
    pub body: String,
}

/// What is known about a name in the preprocessor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MacroState {
    /// Defined, with this definition.
    Defined(Macro),
    /// Known to be undefined (`#undef`, configuration, or a platform macro
    /// such as `_WIN32` that is never set for nvcc on Linux).
    Undefined,
}

/// The preprocessor state visible at some point of a file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MacroTable {
    map: BTreeMap<String, MacroState>,
}

/// Macros nvcc defines for every CUDA translation unit.
const PREDEFINED: &[(&str, &str)] = &[
    ("__CUDACC__", "1"),
    ("__NVCC__", "1"),
    ("__cplusplus", "201703L"),
    ("__linux__", "1"),
    ("__GNUC__", "12"),
    ("__x86_64__", "1"),
    ("CUDART_VERSION", "12000"),
    ("CUDA_VERSION", "12000"),
    ("__CUDACC_VER_MAJOR__", "12"),
    ("NULL", "0"),
];

/// Platform macros that are never defined for nvcc on Linux.
const NEVER_DEFINED: &[&str] = &[
    "_WIN32",
    "_WIN64",
    "WIN32",
    "WIN64",
    "_MSC_VER",
    "__APPLE__",
    "__MACOSX",
    "__HIPCC__",
    "__HIP_PLATFORM_AMD__",
    "__clang__",
    "__QNX__",
];

impl MacroTable {
    /// A table with nvcc's predefined macros and the platform macros known to be absent.
    pub fn predefined() -> Self {
        let mut t = MacroTable::default();
        for (n, v) in PREDEFINED {
            t.define(n, None, v);
        }
        for n in NEVER_DEFINED {
            t.undef(n);
        }
        t
    }

    /// Record `#define name(params) body`.
    pub fn define(&mut self, name: &str, params: Option<Vec<String>>, body: &str) {
        self.map.insert(
            name.to_string(),
            MacroState::Defined(Macro {
                params,
                body: clean_body(body),
            }),
        );
    }

    /// Record `#undef name`.
    pub fn undef(&mut self, name: &str) {
        self.map.insert(name.to_string(), MacroState::Undefined);
    }

    /// The definition of `name`, if defined.
    pub fn get(&self, name: &str) -> Option<&Macro> {
        match self.map.get(name) {
            Some(MacroState::Defined(m)) => Some(m),
            _ => None,
        }
    }

    /// `Some(true)` if defined, `Some(false)` if known undefined, `None` if unknown.
    pub fn is_defined(&self, name: &str) -> Option<bool> {
        match self.map.get(name) {
            Some(MacroState::Defined(_)) => Some(true),
            Some(MacroState::Undefined) => Some(false),
            None => None,
        }
    }

    /// Merge another table into this one (later definitions win).
    pub fn extend(&mut self, other: &MacroTable) {
        for (k, v) in &other.map {
            self.map.insert(k.clone(), v.clone());
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Expand object-like macros in `text` to a fixed point (depth-limited),
    /// used for evaluating sizes such as `TILE_DIM + 1`.
    pub fn expand_text(&self, text: &str) -> String {
        let mut cur = text.to_string();
        for _ in 0..16 {
            let mut changed = false;
            let mut out = String::with_capacity(cur.len());
            for tok in tokenize(&cur) {
                match tok {
                    Tok::Ident(id) => match self.get(id) {
                        Some(m) if m.params.is_none() => {
                            out.push_str(" (");
                            out.push_str(&m.body);
                            out.push_str(") ");
                            changed = true;
                        }
                        _ => out.push_str(id),
                    },
                    Tok::Other(s) => out.push_str(s),
                }
            }
            cur = out;
            if !changed {
                break;
            }
        }
        cur
    }

    /// Evaluate a constant integer expression (after macro expansion), as used
    /// for array extents and launch dimensions. `None` when not constant.
    pub fn eval_int(&self, text: &str) -> Option<i64> {
        let expanded = self.expand_text(text);
        let toks: Vec<String> = ctokens(&expanded);
        let mut p = CondParser {
            toks: &toks,
            pos: 0,
            table: self,
            in_if: false,
            depth: 0,
        };
        let v = p.ternary()?;
        if p.pos == toks.len() { Some(v) } else { None }
    }

    /// Evaluate an `#if`/`#elif` condition. `None` when undecidable.
    pub fn eval_condition(&self, text: &str) -> Option<bool> {
        self.eval_condition_at(text, 0)
    }

    fn eval_condition_at(&self, text: &str, depth: u32) -> Option<bool> {
        self.eval_if_value(text, depth).map(|v| v != 0)
    }

    fn eval_if_value(&self, text: &str, depth: u32) -> Option<i64> {
        if depth > 16 {
            return None;
        }
        let toks: Vec<String> = ctokens(&clean_body(text));
        let mut p = CondParser {
            toks: &toks,
            pos: 0,
            table: self,
            in_if: true,
            depth,
        };
        let v = p.ternary()?;
        if p.pos == toks.len() { Some(v) } else { None }
    }
}

/// Remove line continuations and comments from a macro body.
fn clean_body(body: &str) -> String {
    let joined = body.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out = String::with_capacity(joined.len());
    let b = joined.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            break;
        }
        if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            match joined[i + 2..].find("*/") {
                Some(end) => {
                    i += end + 4;
                    out.push(' ');
                    continue;
                }
                None => break,
            }
        }
        let ch = joined[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out.trim().to_string()
}

enum Tok<'a> {
    Ident(&'a str),
    Other(&'a str),
}

fn tokenize(s: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(&s[st..i]));
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(Tok::Other(&s[st..i]));
        } else {
            let len = s[i..].chars().next().map(|c| c.len_utf8()).unwrap_or(1);
            out.push(Tok::Other(&s[i..i + len]));
            i += len;
        }
    }
    out
}

/// C tokens for the condition parser (identifiers, numbers, operators).
fn ctokens(s: &str) -> Vec<String> {
    const OPS: &[&str] = &[
        "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "!", "~", "*", "/", "%", "+",
        "-", "<", ">", "&", "^", "|", "?", ":", ",",
    ];
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    'outer: while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(s[st..i].to_string());
            continue;
        }
        for op in OPS {
            if s[i..].starts_with(op) {
                out.push((*op).to_string());
                i += op.len();
                continue 'outer;
            }
        }
        // Unknown character: make the whole expression undecidable.
        out.push("\u{0}".to_string());
        i += s[i..].chars().next().map(|c| c.len_utf8()).unwrap_or(1);
    }
    out
}

fn parse_int_literal(t: &str) -> Option<i64> {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(bin) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        i64::from_str_radix(bin, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') && t.bytes().all(|c| c.is_ascii_digit()) {
        i64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// Recursive-descent evaluator over C tokens. Every level returns `None` for
/// "undecidable"; `&&`, `||` and `?:` short-circuit so that `0 && X` is
/// decidable even when `X` is not.
struct CondParser<'a> {
    toks: &'a [String],
    pos: usize,
    table: &'a MacroTable,
    in_if: bool,
    depth: u32,
}

type Val = Option<i64>;

impl CondParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(|s| s.as_str())
    }
    fn eat(&mut self, t: &str) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn ternary(&mut self) -> Val {
        let c = self.binary(0);
        if self.eat("?") {
            let a = self.ternary();
            if !self.eat(":") {
                return None;
            }
            let b = self.ternary();
            return match c {
                Some(0) => b,
                Some(_) => a,
                None => None,
            };
        }
        c
    }
    fn binary(&mut self, min_prec: u8) -> Val {
        let mut lhs = self.unary();
        while let Some(op) = self.peek() {
            let prec = match op {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                "*" | "/" | "%" => 10,
                _ => break,
            };
            if prec < min_prec.max(1) || prec < min_prec {
                break;
            }
            let op = op.to_string();
            self.pos += 1;
            let rhs = self.binary(prec + 1);
            lhs = match op.as_str() {
                "||" => match (lhs, rhs) {
                    (Some(a), _) if a != 0 => Some(1),
                    (_, Some(b)) if b != 0 => Some(1),
                    (Some(_), Some(_)) => Some(0),
                    _ => None,
                },
                "&&" => match (lhs, rhs) {
                    (Some(0), _) | (_, Some(0)) => Some(0),
                    (Some(_), Some(_)) => Some(1),
                    _ => None,
                },
                _ => {
                    let (a, b) = (lhs?, rhs?);
                    Some(match op.as_str() {
                        "|" => a | b,
                        "^" => a ^ b,
                        "&" => a & b,
                        "==" => (a == b) as i64,
                        "!=" => (a != b) as i64,
                        "<" => (a < b) as i64,
                        ">" => (a > b) as i64,
                        "<=" => (a <= b) as i64,
                        ">=" => (a >= b) as i64,
                        "<<" => a.checked_shl(u32::try_from(b).ok()?)?,
                        ">>" => a.checked_shr(u32::try_from(b).ok()?)?,
                        "+" => a.checked_add(b)?,
                        "-" => a.checked_sub(b)?,
                        "*" => a.checked_mul(b)?,
                        "/" => a.checked_div(b)?,
                        "%" => a.checked_rem(b)?,
                        _ => return None,
                    })
                }
            };
        }
        lhs
    }
    fn unary(&mut self) -> Val {
        match self.peek() {
            Some("!") => {
                self.pos += 1;
                self.unary().map(|v| (v == 0) as i64)
            }
            Some("-") => {
                self.pos += 1;
                self.unary().and_then(|v| v.checked_neg())
            }
            Some("+") => {
                self.pos += 1;
                self.unary()
            }
            Some("~") => {
                self.pos += 1;
                self.unary().map(|v| !v)
            }
            _ => self.primary(),
        }
    }
    fn primary(&mut self) -> Val {
        let tok = self.peek()?.to_string();
        self.pos += 1;
        if tok == "(" {
            let v = self.ternary();
            if !self.eat(")") {
                self.pos = self.toks.len() + 1;
                return None;
            }
            return v;
        }
        if tok == "defined" {
            let paren = self.eat("(");
            let name = self.peek()?.to_string();
            self.pos += 1;
            if paren && !self.eat(")") {
                return None;
            }
            return self.table.is_defined(&name).map(|d| d as i64);
        }
        if tok.as_bytes()[0].is_ascii_digit() {
            return parse_int_literal(&tok);
        }
        if tok == "true" {
            return Some(1);
        }
        if tok == "false" {
            return Some(0);
        }
        if tok.as_bytes()[0].is_ascii_alphabetic() || tok.starts_with('_') {
            // A function-like use (`FOO(x)`) is never decidable here.
            if self.peek() == Some("(") {
                self.skip_parens();
                return None;
            }
            return match self.table.map.get(&tok) {
                // After `eval_int`'s expansion, a remaining name is unknown;
                // in `#if`, object-like macros are evaluated recursively.
                Some(MacroState::Defined(m)) if m.params.is_none() && self.in_if => {
                    self.table.eval_if_value(&m.body, self.depth + 1)
                }
                // `#undef`d names evaluate to 0 in `#if`.
                Some(MacroState::Undefined) if self.in_if => Some(0),
                _ => None,
            };
        }
        None
    }
    fn skip_parens(&mut self) {
        let mut depth = 0i32;
        while let Some(t) = self.toks.get(self.pos) {
            self.pos += 1;
            match t.as_str() {
                "(" => depth += 1,
                ")" => {
                    depth -= 1;
                    if depth <= 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> MacroTable {
        let mut t = MacroTable::predefined();
        t.define("TILE", None, "32");
        t.define("PAD", None, "(TILE + 1)");
        t.define("IDX", Some(vec!["i".into(), "j".into()]), "((i) * 4 + (j))");
        t.define("EMPTY", None, "");
        t
    }

    #[test]
    fn decidable_conditions() {
        let t = table();
        assert_eq!(t.eval_condition("0"), Some(false));
        assert_eq!(t.eval_condition("1"), Some(true));
        assert_eq!(t.eval_condition("defined(TILE)"), Some(true));
        assert_eq!(t.eval_condition("defined TILE && TILE >= 32"), Some(true));
        assert_eq!(t.eval_condition("PAD == 33"), Some(true));
        assert_eq!(
            t.eval_condition("defined(_WIN32) || defined(_WIN64)"),
            Some(false)
        );
        assert_eq!(t.eval_condition("0 && UNKNOWN_FLAG"), Some(false));
        assert_eq!(t.eval_condition("1 || UNKNOWN_FLAG"), Some(true));
        assert_eq!(t.eval_condition("defined(EMPTY)"), Some(true));
    }

    #[test]
    fn undecidable_conditions() {
        let t = table();
        assert_eq!(t.eval_condition("defined(__CUDA_ARCH__)"), None);
        assert_eq!(t.eval_condition("__CUDA_ARCH__ >= 700"), None);
        assert_eq!(t.eval_condition("UNKNOWN_FLAG"), None);
        assert_eq!(t.eval_condition("FOO(1)"), None);
        assert_eq!(t.eval_condition("1 +"), None);
        assert_eq!(t.eval_condition("(1"), None);
    }

    #[test]
    fn integer_expressions_expand_macros() {
        let t = table();
        assert_eq!(t.eval_int("TILE * (TILE + 1)"), Some(32 * 33));
        assert_eq!(t.eval_int("PAD"), Some(33));
        assert_eq!(t.eval_int("0x10 << 2"), Some(64));
        assert_eq!(t.eval_int("256u"), Some(256));
        assert_eq!(t.eval_int("n * 2"), None);
        assert_eq!(t.eval_int("1 / 0"), None);
    }

    #[test]
    fn undef_and_comments() {
        let mut t = table();
        t.undef("TILE");
        assert_eq!(t.eval_condition("defined(TILE)"), Some(false));
        t.define("X", None, "4 /* four */ \\\n + 1 // trailing");
        assert_eq!(t.eval_int("X"), Some(5));
    }

    #[test]
    fn self_referential_macros_terminate() {
        let mut t = MacroTable::default();
        t.define("A", None, "B + 1");
        t.define("B", None, "A + 1");
        assert_eq!(t.eval_int("A"), None);
        assert_eq!(t.eval_condition("A"), None);
    }
}
