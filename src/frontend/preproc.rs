//! Preprocessor-lite: macro tables, macro expansion and `#if` evaluation.
//!
//! cudalog does not run a C preprocessor. It records object-like and simple
//! function-like `#define`s (from the file, its local includes, the workspace
//! configuration and `-D` flags) so that the lowering can expand them where
//! kernel code uses them, and it evaluates `#if`/`#ifdef` conditions when they
//! are decidable from what it has seen.
//!
//! **Which names are defined.** A name the table has a `#define` or `#undef`
//! for is decided by it. Any other name is, as the compiler sees it,
//! undefined (`#ifdef` code under it is dead) when the table is *closed*
//! (the default for a workspace, [`MacroTable::predefined`]) — unless the
//! name stays *undecidable*: names reserved to the implementation (`__x`,
//! `_X`: set by nvcc passes such as `__CUDA_ARCH__` or by system headers
//! cudalog does not read), names configured as unknown, and names some file
//! of the workspace `#define`s ([`MacroTable::mark_unknown`]): headers are
//! scanned without their includer's macros, so such a name may be set where
//! the header is included. An undecidable condition yields `None`, and the
//! callers keep both branches.
//!
//! **Expansion.** Object-like macros are expanded with C's rule (a macro is
//! never re-expanded inside its own expansion), each expansion is capped at
//! [`MAX_EXPANSION_TOKENS`] tokens, sub-expansions are cached within one
//! call, and all expansions of one unit of work (a file's scan, a function's
//! lowering: [`enter_unit`]) share a token and time budget. Exceeding a limit
//! makes the value unknown and records a [`BudgetEvent`] that the unit turns
//! into a diagnostic.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::time::{Duration, Instant};

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
    /// Names without a visible `#define`/`#undef` whose definedness stays
    /// undecidable (configured as unknown, or defined by some workspace file).
    maybe: BTreeSet<String>,
    /// Whether any other name without a visible `#define` is undefined.
    closed: bool,
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

/// Most tokens one expansion may produce.
pub const MAX_EXPANSION_TOKENS: usize = 1 << 16;
/// Most tokens all expansions of one unit (a file's scan, a function's
/// lowering) may produce.
pub const UNIT_TOKEN_BUDGET: usize = 1 << 22;
/// Most time the expansions of one unit may take.
pub const UNIT_TIME_BUDGET: Duration = Duration::from_secs(2);
/// Deepest chain of macros expanded inside each other.
const MAX_EXPANSION_NESTING: usize = 256;

/// Whether `name` is reserved to the implementation (C 7.1.3: it starts with
/// two underscores, or an underscore and an uppercase letter): such macros
/// come from the compiler or system headers, which cudalog does not see.
pub fn is_reserved(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0] == b'_' && (b[1] == b'_' || b[1].is_ascii_uppercase())
}

impl MacroTable {
    /// A closed table with nvcc's predefined macros and the platform macros
    /// known to be absent.
    pub fn predefined() -> Self {
        let mut t = MacroTable {
            closed: true,
            ..MacroTable::default()
        };
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

    /// Keep `name` undecidable while no `#define`/`#undef` of it is visible.
    pub fn mark_unknown(&mut self, name: &str) {
        self.maybe.insert(name.to_string());
    }

    /// Whether names without a visible `#define` are undefined (closed) or
    /// undecidable (open).
    pub fn set_closed(&mut self, closed: bool) {
        self.closed = closed;
    }

    /// See [`MacroTable::set_closed`].
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The definition of `name`, if defined.
    pub fn get(&self, name: &str) -> Option<&Macro> {
        match self.map.get(name) {
            Some(MacroState::Defined(m)) => Some(m),
            _ => None,
        }
    }

    /// `Some(true)` if defined, `Some(false)` if undefined, `None` if
    /// undecidable (see the module documentation).
    pub fn is_defined(&self, name: &str) -> Option<bool> {
        match self.map.get(name) {
            Some(MacroState::Defined(_)) => Some(true),
            Some(MacroState::Undefined) => Some(false),
            None if self.closed && !self.maybe.contains(name) && !is_reserved(name) => Some(false),
            None => None,
        }
    }

    /// Merge another table into this one (later definitions win; names
    /// undecidable in either stay undecidable).
    pub fn extend(&mut self, other: &MacroTable) {
        for (k, v) in &other.map {
            self.map.insert(k.clone(), v.clone());
        }
        for k in &other.maybe {
            if !self.maybe.contains(k) {
                self.maybe.insert(k.clone());
            }
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

    /// Expand object-like macros in `text` (C's rule: no macro is expanded
    /// inside its own expansion), tokens separated by single spaces. Used for
    /// sizes such as `TILE_DIM + 1` and for qualifier macros. Empty when the
    /// expansion exceeds its budget.
    pub fn expand_text(&self, text: &str) -> String {
        let cleaned = clean_body(text);
        match self.expand_tokens(&lex(&cleaned), false) {
            Ok(t) => t.join(" "),
            Err(_) => String::new(),
        }
    }

    fn expand_tokens<'t>(
        &'t self,
        toks: &[&'t str],
        in_if: bool,
    ) -> Result<Vec<&'t str>, BudgetReason> {
        let mut x = Expander::new(self, in_if);
        let mut out = Vec::with_capacity(toks.len());
        let r = x.seq(toks, &mut out).map(|_| ());
        x.finish(r).map(|_| out)
    }

    /// Evaluate a constant integer expression (after macro expansion), as used
    /// for array extents and launch dimensions. `None` when not constant.
    pub fn eval_int(&self, text: &str) -> Option<i64> {
        let cleaned = clean_body(text);
        let toks = self.expand_tokens(&lex(&cleaned), false).ok()?;
        let mut p = CondParser {
            toks: &toks,
            pos: 0,
            table: self,
            in_if: false,
        };
        let v = p.ternary()?;
        if p.pos == toks.len() { Some(v) } else { None }
    }

    /// Evaluate an `#if`/`#elif` condition. `None` when undecidable.
    pub fn eval_condition(&self, text: &str) -> Option<bool> {
        let cleaned = clean_body(text);
        let toks = self.expand_tokens(&lex(&cleaned), true).ok()?;
        let mut p = CondParser {
            toks: &toks,
            pos: 0,
            table: self,
            in_if: true,
        };
        let v = p.ternary()?;
        if p.pos == toks.len() {
            Some(v != 0)
        } else {
            None
        }
    }
}

/// Why an expansion stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BudgetReason {
    /// One expansion produced more than [`MAX_EXPANSION_TOKENS`] tokens.
    TooManyTokens,
    /// Macros were nested more than 256 deep.
    TooDeep,
    /// The unit's token budget ([`UNIT_TOKEN_BUDGET`]) is spent.
    UnitTokens,
    /// The unit's time budget ([`UNIT_TIME_BUDGET`]) is spent.
    UnitTime,
    /// The expansions of one function created too many expressions (the
    /// lowering's own limit).
    TooManyExprs,
}

/// A macro expansion that exceeded a limit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BudgetEvent {
    /// The macro being expanded (the outermost one of the expansion).
    pub macro_name: String,
    /// Which limit.
    pub reason: BudgetReason,
}

impl BudgetEvent {
    /// A diagnostic message; `unit` names the unit ("file", "function").
    pub fn message(&self, unit: &str) -> String {
        let m = &self.macro_name;
        match self.reason {
            BudgetReason::TooManyTokens => format!(
                "expansion of macro `{m}` exceeds {MAX_EXPANSION_TOKENS} tokens; \
                 its value is unknown"
            ),
            BudgetReason::TooDeep => format!(
                "expansion of macro `{m}` nests more than {MAX_EXPANSION_NESTING} macros; \
                 its value is unknown"
            ),
            BudgetReason::UnitTokens => format!(
                "macro expansions in this {unit} exceed {UNIT_TOKEN_BUDGET} tokens \
                 (at `{m}`); later macros in it are not expanded"
            ),
            BudgetReason::TooManyExprs => format!(
                "macro expansions in this {unit} create too many expressions \
                 (at `{m}`); later macros in it are not expanded"
            ),
            BudgetReason::UnitTime => format!(
                "macro expansions in this {unit} exceed {} s (at `{m}`); \
                 later macros in it are not expanded",
                UNIT_TIME_BUDGET.as_secs()
            ),
        }
    }
}

/// The budget of one unit of work.
struct Unit {
    tokens_left: usize,
    deadline: Instant,
    spent: Option<BudgetReason>,
    reported: BTreeSet<(String, BudgetReason)>,
    events: Vec<BudgetEvent>,
}

thread_local! {
    static UNITS: RefCell<Vec<Unit>> = const { RefCell::new(Vec::new()) };
}

/// While alive, expansions on this thread share one budget (see
/// [`enter_unit`]); dropping it ends the unit.
pub struct UnitGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for UnitGuard {
    fn drop(&mut self) {
        UNITS.with(|u| {
            u.borrow_mut().pop();
        });
    }
}

/// Start a unit of work (a file's scan, a function's lowering): until the
/// guard is dropped, all expansions on this thread share a budget of
/// [`UNIT_TOKEN_BUDGET`] tokens and [`UNIT_TIME_BUDGET`]. Units nest.
pub fn enter_unit() -> UnitGuard {
    UNITS.with(|u| {
        u.borrow_mut().push(Unit {
            tokens_left: UNIT_TOKEN_BUDGET,
            deadline: Instant::now() + UNIT_TIME_BUDGET,
            spent: None,
            reported: BTreeSet::new(),
            events: Vec::new(),
        })
    });
    UnitGuard {
        _not_send: std::marker::PhantomData,
    }
}

/// Take the budget events of the current unit recorded since the last call
/// (each macro and limit is reported once per unit).
pub fn take_budget_events() -> Vec<BudgetEvent> {
    UNITS.with(|u| {
        u.borrow_mut()
            .last_mut()
            .map(|unit| std::mem::take(&mut unit.events))
            .unwrap_or_default()
    })
}

/// Charge `tokens` of expansion work for `macro_name` to the current unit.
/// `Err` when the unit's budget is spent (recorded as an event once).
pub fn charge_unit(macro_name: &str, tokens: usize) -> Result<(), BudgetReason> {
    UNITS.with(|u| {
        let mut units = u.borrow_mut();
        let Some(unit) = units.last_mut() else {
            return Ok(());
        };
        if let Some(r) = unit.spent {
            return Err(r);
        }
        let reason = if tokens > unit.tokens_left {
            Some(BudgetReason::UnitTokens)
        } else if Instant::now() > unit.deadline {
            Some(BudgetReason::UnitTime)
        } else {
            None
        };
        match reason {
            Some(r) => {
                unit.spent = Some(r);
                unit.tokens_left = 0;
                record(unit, macro_name, r);
                Err(r)
            }
            None => {
                unit.tokens_left -= tokens;
                Ok(())
            }
        }
    })
}

/// Record that an expansion of `macro_name` hit `reason` (once per unit).
pub fn report_budget(macro_name: &str, reason: BudgetReason) {
    UNITS.with(|u| {
        if let Some(unit) = u.borrow_mut().last_mut() {
            record(unit, macro_name, reason);
        }
    });
}

fn record(unit: &mut Unit, macro_name: &str, reason: BudgetReason) {
    // A spent unit is reported once, whatever macro comes next.
    let key_name = match reason {
        BudgetReason::UnitTokens | BudgetReason::UnitTime | BudgetReason::TooManyExprs => {
            String::new()
        }
        _ => macro_name.to_string(),
    };
    if unit.reported.insert((key_name, reason)) {
        unit.events.push(BudgetEvent {
            macro_name: macro_name.to_string(),
            reason,
        });
    }
}

/// One expansion: a stack of macros being expanded (C's "hide set"), a
/// cache of sub-expansions that do not depend on the stack (as ranges of the
/// output, which only grows), lexed bodies, and a work counter.
struct Expander<'a> {
    table: &'a MacroTable,
    in_if: bool,
    hidden: Vec<&'a str>,
    memo: HashMap<&'a str, (usize, usize)>,
    bodies: HashMap<&'a str, Rc<Vec<&'a str>>>,
    /// Tokens emitted or lexed by this expansion.
    work: usize,
    /// The outermost macro expanded (for messages).
    first: Option<&'a str>,
    started: Instant,
}

impl<'a> Expander<'a> {
    fn new(table: &'a MacroTable, in_if: bool) -> Self {
        Expander {
            table,
            in_if,
            hidden: Vec::new(),
            memo: HashMap::new(),
            bodies: HashMap::new(),
            work: 0,
            first: None,
            started: Instant::now(),
        }
    }

    fn charge(&mut self, n: usize) -> Result<(), BudgetReason> {
        let before = self.work;
        self.work += n;
        if self.work > MAX_EXPANSION_TOKENS {
            return Err(BudgetReason::TooManyTokens);
        }
        if before / 4096 != self.work / 4096 && self.started.elapsed() > UNIT_TIME_BUDGET {
            return Err(BudgetReason::UnitTime);
        }
        Ok(())
    }

    fn emit(&mut self, out: &mut Vec<&'a str>, tok: &'a str) -> Result<(), BudgetReason> {
        self.charge(1)?;
        out.push(tok);
        Ok(())
    }

    /// Expand `toks` onto `out`; returns the smallest stack depth of a macro
    /// that was not re-expanded because it was being expanded (`usize::MAX`
    /// if none), which says whether the result depends on the stack.
    fn seq(&mut self, toks: &[&'a str], out: &mut Vec<&'a str>) -> Result<usize, BudgetReason> {
        let mut min_blocked = usize::MAX;
        let mut i = 0;
        while i < toks.len() {
            let t = toks[i];
            i += 1;
            if self.in_if && t == "defined" {
                // The operand of `defined` is never expanded.
                self.emit(out, t)?;
                let paren = toks.get(i).is_some_and(|x| *x == "(");
                let n = if paren { 3 } else { 1 };
                for x in toks.iter().skip(i).take(n) {
                    self.emit(out, x)?;
                }
                i += n;
                continue;
            }
            let object_like = if is_ident(t) {
                match self.table.map.get_key_value(t) {
                    Some((name, MacroState::Defined(m))) if m.params.is_none() => {
                        Some((name.as_str(), m.body.as_str()))
                    }
                    _ => None,
                }
            } else {
                None
            };
            let Some((name, body)) = object_like else {
                self.emit(out, t)?;
                continue;
            };
            if let Some(depth) = self.hidden.iter().position(|h| *h == name) {
                min_blocked = min_blocked.min(depth);
                self.emit(out, t)?;
                continue;
            }
            min_blocked = min_blocked.min(self.name(name, body, out)?);
        }
        Ok(min_blocked)
    }

    fn name(
        &mut self,
        name: &'a str,
        body: &'a str,
        out: &mut Vec<&'a str>,
    ) -> Result<usize, BudgetReason> {
        if let Some(&(s, e)) = self.memo.get(name) {
            self.charge(e - s)?;
            out.extend_from_within(s..e);
            return Ok(usize::MAX);
        }
        if self.hidden.len() >= MAX_EXPANSION_NESTING {
            return Err(BudgetReason::TooDeep);
        }
        self.first.get_or_insert(name);
        let toks = match self.bodies.get(name) {
            Some(t) => t.clone(),
            None => {
                let t = Rc::new(lex(body));
                self.charge(t.len())?;
                self.bodies.insert(name, t.clone());
                t
            }
        };
        let depth = self.hidden.len();
        let start = out.len();
        self.hidden.push(name);
        let blocked = self.seq(&toks, out)?;
        self.hidden.pop();
        if blocked >= depth {
            self.memo.insert(name, (start, out.len()));
        }
        Ok(blocked)
    }

    /// Charge the work to the unit and report a limit that was hit.
    fn finish(self, r: Result<(), BudgetReason>) -> Result<(), BudgetReason> {
        let name = self.first.unwrap_or("?");
        match r {
            Err(reason) => {
                report_budget(name, reason);
                Err(reason)
            }
            Ok(()) if self.first.is_some() => charge_unit(name, self.work),
            Ok(()) => Ok(()),
        }
    }
}

fn is_ident(t: &str) -> bool {
    t.as_bytes()
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
}

/// Names `#define`d anywhere in `text`: a lexical scan of directive lines,
/// dead branches and function bodies included (an over-approximation only
/// makes more `#ifdef`s undecidable).
pub fn defined_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for_each_directive(text, |dir, rest| {
        if dir == "define"
            && let Some(name) = lex(rest).into_iter().next()
            && is_ident(name)
        {
            out.insert(name.to_string());
        }
    });
    out
}

/// Identifiers that the `#if`/`#elif`/`#ifdef`/`#ifndef` lines and the
/// `#define` bodies of `text` mention: the names whose definedness can
/// matter to this file.
pub fn directive_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for_each_directive(text, |dir, rest| {
        if matches!(
            dir,
            "if" | "ifdef" | "ifndef" | "elif" | "elifdef" | "elifndef" | "define"
        ) {
            for t in lex(rest) {
                if is_ident(t) && t != "defined" {
                    out.insert(t.to_string());
                }
            }
        }
    });
    out
}

/// Call `f(directive, rest)` for each preprocessor directive line of `text`
/// (continuation lines joined).
fn for_each_directive(text: &str, mut f: impl FnMut(&str, &str)) {
    let mut lines = text.split('\n');
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let Some(after) = t.strip_prefix('#') else {
            continue;
        };
        let mut joined = after.to_string();
        while joined.trim_end().ends_with('\\') {
            let keep = joined.trim_end().len() - 1;
            joined.truncate(keep);
            joined.push(' ');
            match lines.next() {
                Some(next) => joined.push_str(next),
                None => break,
            }
        }
        let d = joined.trim_start();
        let end = d
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(d.len());
        f(&d[..end], &d[end..]);
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

/// C tokens: identifiers, pp-numbers, string and character literals,
/// operators (longest match), and any other character alone; whitespace is
/// dropped.
fn lex(s: &str) -> Vec<&str> {
    const OPS: &[&str] = &[
        "<<=", ">>=", "...", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "::", "->", "++",
        "--", "##", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
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
        let st = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < b.len() {
                let d = b[i];
                let part = d.is_ascii_alphanumeric() || d == b'_' || d == b'.' || d == b'\'';
                let exponent_sign =
                    (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
                if part || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else {
            for op in OPS {
                if s[i..].starts_with(op) {
                    out.push(&s[i..i + op.len()]);
                    i += op.len();
                    continue 'outer;
                }
            }
            i += s[i..].chars().next().map(|c| c.len_utf8()).unwrap_or(1);
        }
        // Never split a UTF-8 sequence (a literal ending in a broken escape).
        while i < b.len() && !s.is_char_boundary(i) {
            i += 1;
        }
        out.push(&s[st..i]);
    }
    out
}

fn parse_int_literal(t: &str) -> Option<i64> {
    let t = t.replace('\'', "");
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

/// Recursive-descent evaluator over expanded C tokens. Every level returns
/// `None` for "undecidable"; `&&`, `||` and `?:` short-circuit so that
/// `0 && X` is decidable even when `X` is not.
struct CondParser<'a> {
    toks: &'a [&'a str],
    pos: usize,
    table: &'a MacroTable,
    /// In `#if`, names left after expansion evaluate to 0 when undefined.
    in_if: bool,
}

type Val = Option<i64>;

impl<'a> CondParser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.toks.get(self.pos).copied()
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
            if prec < min_prec.max(1) {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(prec + 1);
            lhs = match op {
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
                    Some(match op {
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
        let tok = self.peek()?;
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
            let name = self.peek()?;
            self.pos += 1;
            if paren && !self.eat(")") {
                return None;
            }
            return self.table.is_defined(name).map(|d| d as i64);
        }
        let first = tok.as_bytes()[0];
        if first.is_ascii_digit() {
            return parse_int_literal(tok);
        }
        if first == b'\'' {
            // A plain one-character constant.
            let inner = tok.strip_prefix('\'')?.strip_suffix('\'')?;
            let mut cs = inner.chars();
            return match (cs.next(), cs.next()) {
                (Some(c), None) if c != '\\' && c.is_ascii() => Some(c as i64),
                _ => None,
            };
        }
        if tok == "true" {
            return Some(1);
        }
        if tok == "false" {
            return Some(0);
        }
        if is_ident(tok) {
            // A function-like use (`FOO(x)`) is never decidable here.
            if self.peek() == Some("(") {
                self.skip_parens();
                return None;
            }
            // A name left after expansion: in `#if`, 0 when undefined; a
            // macro that was not re-expanded (recursion) is undecidable.
            return match self.table.is_defined(tok) {
                Some(false) if self.in_if => Some(0),
                _ => None,
            };
        }
        None
    }
    fn skip_parens(&mut self) {
        let mut depth = 0i32;
        while let Some(t) = self.toks.get(self.pos) {
            self.pos += 1;
            match *t {
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

    #[test]
    fn names_without_a_define_are_undefined_unless_undecidable() {
        let mut t = table();
        // Closed world: a name nothing defines is undefined, as for nvcc.
        assert_eq!(t.is_defined("USE_FAST_PATH"), Some(false));
        assert_eq!(t.eval_condition("defined(USE_FAST_PATH)"), Some(false));
        assert_eq!(t.eval_condition("USE_FAST_PATH"), Some(false));
        assert_eq!(t.eval_condition("!USE_FAST_PATH && TILE == 32"), Some(true));
        // Reserved names come from the compiler or system headers.
        assert_eq!(t.is_defined("__CUDA_ARCH__"), None);
        assert_eq!(t.is_defined("_OPENMP"), None);
        // Configured or defined elsewhere in the workspace: undecidable
        // until a #define/#undef is visible.
        t.mark_unknown("USE_FAST_PATH");
        assert_eq!(t.eval_condition("defined(USE_FAST_PATH)"), None);
        assert_eq!(t.eval_condition("USE_FAST_PATH > 1"), None);
        t.undef("USE_FAST_PATH");
        assert_eq!(t.is_defined("USE_FAST_PATH"), Some(false));
        // An open table keeps every unknown name undecidable.
        let mut open = table();
        open.set_closed(false);
        assert_eq!(open.is_defined("USE_FAST_PATH"), None);
        // Merging keeps what either side cannot decide.
        let mut a = table();
        let mut b = MacroTable::default();
        b.mark_unknown("FROM_HEADER");
        a.extend(&b);
        assert_eq!(a.is_defined("FROM_HEADER"), None);
        assert!(a.is_closed());
    }

    #[test]
    fn expansion_follows_c_rules() {
        let mut t = table();
        // No parentheses are added: `1+2` times 3 is 7.
        t.define("SUM", None, "1+2");
        assert_eq!(t.eval_int("SUM*3"), Some(7));
        // A macro is not re-expanded inside its own expansion.
        t.define("X", None, "X X X");
        assert_eq!(t.expand_text("X"), "X X X");
        assert_eq!(t.eval_int("X"), None);
        // The operand of `defined` is not expanded; names in strings neither.
        t.define("ALIAS", None, "TILE");
        assert_eq!(
            t.eval_condition("defined ALIAS && defined(ALIAS)"),
            Some(true)
        );
        assert_eq!(t.expand_text("\"TILE\" TILE"), "\"TILE\" 32");
        assert_eq!(t.eval_int("1'024"), Some(1024));
        assert_eq!(t.eval_condition("'A' == 65"), Some(true));
    }

    #[test]
    fn expansion_bombs_stop_at_the_budget_with_an_event() {
        let mut t = MacroTable::predefined();
        t.define("M0", None, "1");
        for i in 1..=13 {
            let p = format!("M{}", i - 1);
            t.define(&format!("M{i}"), None, &format!("({p}+{p}+{p}+{p})"));
        }
        let _unit = enter_unit();
        let start = Instant::now();
        // 4^6 = 4096 ones: within the budget, and exact.
        assert_eq!(t.eval_int("M6"), Some(4096));
        assert!(take_budget_events().is_empty());
        // 4^13 tokens: stopped, unknown, reported once.
        assert_eq!(t.eval_int("M13"), None);
        assert_eq!(t.eval_int("M13 + 1"), None);
        assert_eq!(t.eval_condition("M13 > 0"), None);
        let ev = take_budget_events();
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert_eq!(ev[0].reason, BudgetReason::TooManyTokens);
        assert_eq!(ev[0].macro_name, "M13");
        assert!(ev[0].message("file").contains("M13"));
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_unit_budget_is_shared_by_its_expansions() {
        let mut t = MacroTable::predefined();
        t.define("M0", None, "1");
        for i in 1..=7 {
            let p = format!("M{}", i - 1);
            t.define(&format!("M{i}"), None, &format!("({p}+{p}+{p}+{p})"));
        }
        let _unit = enter_unit();
        // Each use is 4^7 + ... tokens, under the per-expansion cap; the
        // unit's budget runs out after a few hundred uses.
        let mut known = 0;
        for _ in 0..1000 {
            if t.eval_int("M7").is_some() {
                known += 1;
            }
        }
        assert!(known > 10 && known < 1000, "{known}");
        let ev = take_budget_events();
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert_eq!(ev[0].reason, BudgetReason::UnitTokens);
        // Outside a unit there is only the per-expansion cap.
        drop(_unit);
        assert!(t.eval_int("M7").is_some());
    }

    #[test]
    fn deep_macro_chains_are_cut() {
        let mut t = MacroTable::predefined();
        t.define("C0", None, "1");
        for i in 1..=2000 {
            t.define(&format!("C{i}"), None, &format!("C{}", i - 1));
        }
        assert_eq!(t.eval_int("C200"), Some(1));
        assert_eq!(t.eval_int("C2000"), None);
    }

    #[test]
    fn lexical_define_and_directive_names() {
        let src = "#define A 1\n  #  define B(x) (x + C)\n#if defined(D) && E > 1\n\
                   int f() {\n#ifdef F\n#endif\n}\n#if 0\n#define G \\\n  H\n#endif\n\
                   // #define I\nint J;\n";
        let d: Vec<String> = defined_names(src).into_iter().collect();
        assert_eq!(d, ["A", "B", "G"]);
        let n: Vec<String> = directive_names(src).into_iter().collect();
        assert_eq!(n, ["A", "B", "C", "D", "E", "F", "G", "H", "x"]);
    }
}
