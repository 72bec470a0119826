//! Lexer and recursive-descent parser for rule files.

use super::ast::*;
use super::error::{ErrorKind, RuleError};
use super::source::{RuleSource, Span};

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Num(i64),
    Float(f64),
    Str(String),
    Dot,
    Comma,
    Colon,
    ColonDash,
    Subtype,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Bang,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Semi,
    Eof,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Num(n) => format!("the number {n}"),
        Tok::Float(f) => format!("the number {f}"),
        Tok::Str(_) => "a string".into(),
        Tok::Eof => "the end of the file".into(),
        other => format!("`{}`", punct(other)),
    }
}

fn punct(t: &Tok) -> &'static str {
    match t {
        Tok::Dot => ".",
        Tok::Comma => ",",
        Tok::Colon => ":",
        Tok::ColonDash => ":-",
        Tok::Subtype => "<:",
        Tok::LParen => "(",
        Tok::RParen => ")",
        Tok::LBrace => "{",
        Tok::RBrace => "}",
        Tok::Bang => "!",
        Tok::Eq => "=",
        Tok::Ne => "!=",
        Tok::Lt => "<",
        Tok::Le => "<=",
        Tok::Gt => ">",
        Tok::Ge => ">=",
        Tok::Plus => "+",
        Tok::Minus => "-",
        Tok::Star => "*",
        Tok::Slash => "/",
        Tok::Percent => "%",
        Tok::Caret => "^",
        Tok::Semi => ";",
        _ => "?",
    }
}

struct Token {
    tok: Tok,
    span: Span,
    /// The `//` comment block that ends on the line just above this token.
    doc: String,
}

fn lex(src: &RuleSource) -> Result<Vec<Token>, RuleError> {
    let text = &*src.text;
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut doc: Vec<String> = Vec::new();
    let mut doc_end_line: Option<u32> = None;
    let err = |start: usize, end: usize, msg: String| {
        RuleError::at(src, Span::new(start, end), ErrorKind::Parse, msg)
    };
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let end = text[i..].find('\n').map(|e| i + e).unwrap_or(b.len());
            let (line, _) = src.line_col(start);
            let own_line = text[..start]
                .rsplit('\n')
                .next()
                .is_some_and(|l| l.trim().is_empty());
            if own_line {
                if doc_end_line.is_some_and(|l| l + 1 != line) {
                    doc.clear();
                }
                doc.push(text[i + 2..end].trim().to_string());
                doc_end_line = Some(line);
            }
            i = end;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match text[i + 2..].find("*/") {
                Some(e) => i = i + 2 + e + 2,
                None => {
                    return Err(err(
                        start,
                        start + 2,
                        "this block comment is never closed (`*/` is missing)".into(),
                    ));
                }
            }
            continue;
        }
        if c == b'#' {
            return Err(err(
                start,
                start + 1,
                "preprocessor lines (`#include`, `#define`) are not supported in rule files".into(),
            ));
        }
        let tok = if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'?') {
                i += 1;
            }
            Tok::Ident(text[start..i].to_string())
        } else if c.is_ascii_digit() {
            if c == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
                i += 2;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    i += 1;
                }
                match i64::from_str_radix(&text[start + 2..i], 16) {
                    Ok(v) => Tok::Num(v),
                    Err(_) => {
                        return Err(err(
                            start,
                            i,
                            "this hexadecimal number is not valid or does not fit in 64 bits"
                                .into(),
                        ));
                    }
                }
            } else {
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let mut is_float = false;
                if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
                    is_float = true;
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                if i < b.len() && matches!(b[i], b'e' | b'E') {
                    let mut j = i + 1;
                    if j < b.len() && matches!(b[j], b'+' | b'-') {
                        j += 1;
                    }
                    if j < b.len() && b[j].is_ascii_digit() {
                        is_float = true;
                        i = j;
                        while i < b.len() && b[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                let s = &text[start..i];
                if is_float {
                    Tok::Float(
                        s.parse()
                            .map_err(|_| err(start, i, "this number is not valid".into()))?,
                    )
                } else {
                    Tok::Num(
                        s.parse().map_err(|_| {
                            err(start, i, "this number does not fit in 64 bits".into())
                        })?,
                    )
                }
            }
        } else if c == b'"' {
            i += 1;
            let mut s = String::new();
            loop {
                let Some(ch) = text[i..].chars().next() else {
                    return Err(err(
                        start,
                        start + 1,
                        "this string is never closed (`\"` is missing)".into(),
                    ));
                };
                if ch == '\n' {
                    return Err(err(
                        start,
                        start + 1,
                        "this string is not closed on its line (`\"` is missing)".into(),
                    ));
                }
                i += ch.len_utf8();
                match ch {
                    '"' => break,
                    '\\' => {
                        let Some(e) = text[i..].chars().next() else {
                            continue;
                        };
                        i += e.len_utf8();
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            '"' => '"',
                            '\\' => '\\',
                            other => {
                                return Err(err(i - 1 - other.len_utf8(), i, format!("`\\{other}` is not a known escape (use \\\" \\\\ \\n \\t \\r)")));
                            }
                        });
                    }
                    other => s.push(other),
                }
            }
            Tok::Str(s)
        } else {
            let two = if i + 1 < b.len() { &text[i..i + 2] } else { "" };
            let (t, n) = match two {
                ":-" => (Tok::ColonDash, 2),
                "<:" => (Tok::Subtype, 2),
                "!=" => (Tok::Ne, 2),
                "<=" => (Tok::Le, 2),
                ">=" => (Tok::Ge, 2),
                _ => match c {
                    b'.' => (Tok::Dot, 1),
                    b',' => (Tok::Comma, 1),
                    b':' => (Tok::Colon, 1),
                    b'(' => (Tok::LParen, 1),
                    b')' => (Tok::RParen, 1),
                    b'{' => (Tok::LBrace, 1),
                    b'}' => (Tok::RBrace, 1),
                    b'!' => (Tok::Bang, 1),
                    b'=' => (Tok::Eq, 1),
                    b'<' => (Tok::Lt, 1),
                    b'>' => (Tok::Gt, 1),
                    b'+' => (Tok::Plus, 1),
                    b'-' => (Tok::Minus, 1),
                    b'*' => (Tok::Star, 1),
                    b'/' => (Tok::Slash, 1),
                    b'%' => (Tok::Percent, 1),
                    b'^' => (Tok::Caret, 1),
                    b';' => (Tok::Semi, 1),
                    _ => {
                        let ch = text[i..].chars().next().unwrap_or('?');
                        return Err(err(
                            start,
                            start + ch.len_utf8(),
                            format!("the character `{ch}` cannot appear here"),
                        ));
                    }
                },
            };
            i += n;
            t
        };
        let (line, _) = src.line_col(start);
        let d = if doc_end_line.is_some_and(|l| l + 1 == line) {
            doc.join("\n")
        } else {
            String::new()
        };
        doc.clear();
        doc_end_line = None;
        out.push(Token {
            tok,
            span: Span::new(start, i),
            doc: d,
        });
    }
    out.push(Token {
        tok: Tok::Eof,
        span: Span::new(b.len(), b.len()),
        doc: String::new(),
    });
    Ok(out)
}

/// Parse a rule file.
pub fn parse(src: &RuleSource) -> Result<Vec<Item>, RuleError> {
    let toks = lex(src)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
    };
    let mut items = Vec::new();
    while p.peek() != &Tok::Eof {
        items.push(p.item()?);
    }
    Ok(items)
}

struct Parser<'a> {
    src: &'a RuleSource,
    toks: Vec<Token>,
    pos: usize,
    depth: u32,
}

type PResult<T> = Result<T, RuleError>;

const MAX_DEPTH: u32 = 128;

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }
    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }
    fn span(&self) -> Span {
        self.toks[self.pos].span
    }
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].span
    }
    fn bump(&mut self) -> &Token {
        let t = &self.toks[self.pos];
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == t {
            self.bump();
            true
        } else {
            false
        }
    }
    fn error(&self, span: Span, msg: impl Into<String>) -> RuleError {
        RuleError::at(self.src, span, ErrorKind::Parse, msg)
    }
    fn unexpected(&self, wanted: &str) -> RuleError {
        // At the end of the file, point just past the last token (where the
        // missing text belongs), not at an empty line after it.
        let span = if self.peek() == &Tok::Eof && self.pos > 0 {
            let end = self.prev_span().end;
            Span::new(end, end)
        } else {
            self.span()
        };
        self.error(
            span,
            format!("expected {wanted}, found {}", describe(self.peek())),
        )
    }
    fn expect(&mut self, t: Tok, wanted: &str) -> PResult<Span> {
        if self.peek() == &t {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(wanted))
        }
    }
    fn ident(&mut self, wanted: &str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => Err(self.unexpected(wanted)),
        }
    }
    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(self.span(), "expressions are nested too deeply"));
        }
        Ok(())
    }

    fn item(&mut self) -> PResult<Item> {
        if self.peek() == &Tok::Dot {
            let dot = self.bump().span;
            let doc = self.toks[self.pos - 1].doc.clone();
            let name = match self.peek().clone() {
                Tok::Ident(n) if self.span().start == dot.end => n,
                _ => {
                    return Err(self.error(dot, "expected a directive such as `.decl` after `.`"));
                }
            };
            let dspan = dot.to(self.bump().span);
            return match name.as_str() {
                "decl" => self.decl(dspan),
                "type" => {
                    let name = self.ident("a type name")?;
                    if !self.eat(&Tok::Subtype) && !self.eat(&Tok::Eq) {
                        return Err(self.unexpected("`<:` or `=`"));
                    }
                    let base = self.ident("a base type (number, unsigned, float or symbol)")?;
                    Ok(Item::Type { name, base })
                }
                "input" | "output" => {
                    let rel = self.ident("a relation name")?;
                    if self.peek() == &Tok::LParen {
                        return Err(self.error(
                            self.span(),
                            format!("`.{name}` parameters (IO=…) are not supported: store tables are the inputs, outputs are printed by `cudalog rules run`"),
                        ));
                    }
                    Ok(if name == "input" {
                        Item::Input(rel)
                    } else {
                        Item::Output(rel)
                    })
                }
                "lint" => {
                    let rel = self.ident("the lint's name (a relation name)")?;
                    let sev = self.ident("a severity (note, warning or error)")?;
                    let severity = sev.name.parse().map_err(|_| {
                        self.error(
                            sev.span,
                            format!(
                                "`{}` is not a severity: use note, warning or error",
                                sev.name
                            ),
                        )
                    })?;
                    let (message, message_span) = match self.peek().clone() {
                        Tok::Str(s) => (s, self.bump().span),
                        _ => return Err(self.unexpected("the lint's message as a string")),
                    };
                    Ok(Item::Lint(LintDecl {
                        name: rel,
                        severity,
                        severity_span: sev.span,
                        message,
                        message_span,
                        doc,
                    }))
                }
                "pragma" | "functor" | "comp" | "init" | "printsize" | "limitsize" | "plan" => {
                    Err(self.error(
                        dspan,
                        format!("the directive `.{name}` is not supported (see docs/rules.md)"),
                    ))
                }
                other => Err(self.error(
                    dspan,
                    format!(
                        "unknown directive `.{other}`; use .decl, .type, .input, .output or .lint"
                    ),
                )),
            };
        }
        self.clause().map(Item::Clause)
    }

    fn decl(&mut self, start: Span) -> PResult<Item> {
        let name = self.ident("a relation name")?;
        self.expect(Tok::LParen, "`(` and the relation's columns")?;
        let mut attrs = Vec::new();
        if self.peek() != &Tok::RParen {
            loop {
                let a = self.ident("a column name")?;
                self.expect(Tok::Colon, "`:` and the column's type")?;
                let t = self.ident("a type (number, unsigned, float or symbol)")?;
                attrs.push((a, t));
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        let end = self.expect(Tok::RParen, "`,` or `)`")?;
        // Soufflé's representation qualifiers are accepted and ignored.
        while let Tok::Ident(q) = self.peek() {
            if matches!(
                q.as_str(),
                "brie"
                    | "btree"
                    | "btree_delete"
                    | "eqrel"
                    | "inline"
                    | "no_inline"
                    | "magic"
                    | "no_magic"
                    | "overridable"
            ) {
                self.bump();
            } else {
                break;
            }
        }
        Ok(Item::Decl(Decl {
            name,
            attrs,
            span: start.to(end),
        }))
    }

    fn clause(&mut self) -> PResult<Clause> {
        let start = self.span();
        let mut heads = vec![self.head_atom()?];
        while self.eat(&Tok::Comma) {
            heads.push(self.head_atom()?);
        }
        let mut body = Vec::new();
        if self.eat(&Tok::ColonDash) {
            loop {
                body.push(self.conjunction(&[Tok::Dot, Tok::Semi])?);
                if !self.eat(&Tok::Semi) {
                    break;
                }
            }
        }
        if self.peek() != &Tok::Dot {
            let wanted = if body.is_empty() {
                "`:-` or `.` after the head"
            } else {
                "`,`, `;` or `.` to end the rule"
            };
            return Err(self.unexpected(wanted));
        }
        let end = self.bump().span;
        Ok(Clause {
            heads,
            body,
            span: start.to(end),
        })
    }

    fn head_atom(&mut self) -> PResult<Atom> {
        match self.peek() {
            Tok::Ident(_) if self.peek_at(1) == &Tok::LParen => {}
            _ => return Err(self.unexpected("a rule head such as `r(X, Y)`")),
        }
        let a = self.atom()?;
        if let Args::Named(v) = &a.args
            && let Some((n, _)) = v.first()
        {
            return Err(self.error(
                n.span,
                "named arguments are for body atoms; write the head's arguments in column order",
            ));
        }
        Ok(a)
    }

    fn conjunction(&mut self, end: &[Tok]) -> PResult<Vec<Literal>> {
        let mut v = vec![self.literal()?];
        while self.eat(&Tok::Comma) {
            v.push(self.literal()?);
        }
        if !end.contains(self.peek()) {
            return Err(self.unexpected(if end.contains(&Tok::RBrace) {
                "`,` or `}` to close the aggregate's body"
            } else {
                "`,`, `;` or `.` to end the rule"
            }));
        }
        Ok(v)
    }

    fn literal(&mut self) -> PResult<Literal> {
        let start = self.span();
        if self.eat(&Tok::Bang) {
            match self.peek() {
                Tok::Ident(n) if self.peek_at(1) == &Tok::LParen && !is_reserved(n) => {
                    let a = self.atom()?;
                    let span = start.to(a.span);
                    return Ok(Literal::Neg(a, span));
                }
                _ => return Err(self.unexpected("an atom after `!`")),
            }
        }
        if let Tok::Ident(n) = self.peek().clone() {
            if self.peek_at(1) == &Tok::LParen && CONSTRAINTS.contains(&n.as_str()) {
                let name = self.ident("")?;
                let args = self.call_args()?;
                let span = start.to(self.prev_span());
                return Ok(Literal::Constraint(name, args, span));
            }
            if self.peek_at(1) == &Tok::LParen && !is_reserved(&n) {
                return Ok(Literal::Atom(self.atom()?));
            }
            if (n == "true" || n == "false")
                && !matches!(
                    self.peek_at(1),
                    Tok::Eq | Tok::Ne | Tok::Lt | Tok::Le | Tok::Gt | Tok::Ge
                )
            {
                self.bump();
                return Ok(Literal::Bool(n == "true", start));
            }
        }
        let lhs = self.expr()?;
        let op = match self.peek() {
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            _ => {
                return Err(self.unexpected(
                    "a comparison operator (=, !=, <, <=, >, >=) after this expression",
                ));
            }
        };
        self.bump();
        let rhs = self.expr()?;
        let span = start.to(rhs.span());
        Ok(Literal::Cmp(op, lhs, rhs, span))
    }

    fn atom(&mut self) -> PResult<Atom> {
        let rel = self.ident("a relation name")?;
        self.expect(Tok::LParen, "`(`")?;
        let named = matches!(self.peek(), Tok::Ident(_)) && self.peek_at(1) == &Tok::Colon;
        let args = if self.peek() == &Tok::RParen {
            Args::Positional(Vec::new())
        } else if named {
            let mut v = Vec::new();
            loop {
                let col = match self.peek() {
                    Tok::Ident(_) if self.peek_at(1) == &Tok::Colon => self.ident("")?,
                    _ => {
                        return Err(self.unexpected(
                            "`column: value` (an atom's arguments are all named or all positional)",
                        ));
                    }
                };
                self.bump(); // ':'
                v.push((col, self.expr()?));
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            Args::Named(v)
        } else {
            let mut v = Vec::new();
            loop {
                if matches!(self.peek(), Tok::Ident(_)) && self.peek_at(1) == &Tok::Colon {
                    return Err(self.error(
                        self.span(),
                        "an atom's arguments are all named or all positional, not a mix",
                    ));
                }
                v.push(self.expr()?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            Args::Positional(v)
        };
        let end = self.expect(Tok::RParen, "`,` or `)` to close the atom")?;
        let span = rel.span.to(end);
        Ok(Atom { rel, args, span })
    }

    fn call_args(&mut self) -> PResult<Vec<Expr>> {
        self.expect(Tok::LParen, "`(`")?;
        let mut v = Vec::new();
        if self.peek() != &Tok::RParen {
            loop {
                v.push(self.expr()?);
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(Tok::RParen, "`,` or `)`")?;
        Ok(v)
    }

    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.additive();
        self.depth -= 1;
        r
    }

    fn additive(&mut self) -> PResult<Expr> {
        let mut lhs = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.multiplicative()?;
            let span = lhs.span().to(rhs.span());
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs), span);
        }
    }

    fn multiplicative(&mut self) -> PResult<Expr> {
        let mut lhs = self.power()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.power()?;
            let span = lhs.span().to(rhs.span());
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs), span);
        }
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.unary()?;
        if self.eat(&Tok::Caret) {
            self.enter()?;
            let exp = self.power();
            self.depth -= 1;
            let exp = exp?;
            let span = base.span().to(exp.span());
            return Ok(Expr::Bin(BinOp::Pow, Box::new(base), Box::new(exp), span));
        }
        Ok(base)
    }

    fn unary(&mut self) -> PResult<Expr> {
        if self.peek() == &Tok::Minus {
            let start = self.bump().span;
            self.enter()?;
            let e = self.unary();
            self.depth -= 1;
            let e = e?;
            let span = start.to(e.span());
            return Ok(match e {
                Expr::Num(n, _) => Expr::Num(n.wrapping_neg(), span),
                Expr::Float(f, _) => Expr::Float(-f, span),
                e => Expr::Neg(Box::new(e), span),
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        match self.peek().clone() {
            Tok::Num(n) => {
                self.bump();
                Ok(Expr::Num(n, start))
            }
            Tok::Float(f) => {
                self.bump();
                Ok(Expr::Float(f, start))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Str(s, start))
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(e)
            }
            Tok::Ident(name) => {
                let next = self.peek_at(1).clone();
                match name.as_str() {
                    "_" => {
                        self.bump();
                        Ok(Expr::Wild(start))
                    }
                    "nil" => {
                        self.bump();
                        Ok(Expr::Nil(start))
                    }
                    "count" if next == Tok::Colon => {
                        self.bump();
                        self.aggregate(AggKind::Count, None, start)
                    }
                    "sum" | "min" | "max" if next != Tok::LParen || self.paren_then_colon() => {
                        let kind = match name.as_str() {
                            "sum" => AggKind::Sum,
                            "min" => AggKind::Min,
                            _ => AggKind::Max,
                        };
                        self.bump();
                        let target = self.expr()?;
                        self.aggregate(kind, Some(target), start)
                    }
                    _ if next == Tok::LParen => {
                        let id = self.ident("")?;
                        if !FUNCTORS.iter().any(|(f, _)| *f == id.name) {
                            return Err(self.error(
                                id.span,
                                format!(
                                    "`{}(…)` is not a functor; an atom cannot be used as a value here (functors: {})",
                                    id.name,
                                    FUNCTORS.iter().map(|(f, _)| *f).collect::<Vec<_>>().join(", ")
                                ),
                            ));
                        }
                        let args = self.call_args()?;
                        let span = start.to(self.prev_span());
                        Ok(Expr::Call(id, args, span))
                    }
                    "count" | "sum" | "mean" => Err(self.error(
                        start,
                        format!("expected `{name} : {{ … }}` for an aggregate"),
                    )),
                    _ => {
                        let id = self.ident("")?;
                        Ok(Expr::Var(id))
                    }
                }
            }
            _ => Err(self.unexpected("a value (variable, `_`, number, string or expression)")),
        }
    }

    /// At `min (` / `max (` / `sum (`: is this an aggregate whose target is
    /// parenthesised (`min (X + 1) : {…}`) rather than the binary functor?
    fn paren_then_colon(&self) -> bool {
        let mut depth = 0i32;
        let mut k = self.pos + 1;
        while k < self.toks.len() {
            match self.toks[k].tok {
                Tok::LParen => depth += 1,
                Tok::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        return self.toks.get(k + 1).is_some_and(|t| t.tok == Tok::Colon);
                    }
                }
                Tok::Eof | Tok::Dot => return false,
                _ => {}
            }
            k += 1;
        }
        false
    }

    fn aggregate(&mut self, kind: AggKind, target: Option<Expr>, start: Span) -> PResult<Expr> {
        self.expect(Tok::Colon, "`:` after the aggregate")?;
        let body = if self.eat(&Tok::LBrace) {
            self.enter()?;
            let b = self.conjunction(&[Tok::RBrace]);
            self.depth -= 1;
            let b = b?;
            if self.peek() != &Tok::RBrace {
                return Err(self.unexpected("`,` or `}` to close the aggregate's body"));
            }
            self.bump();
            b
        } else {
            match self.peek() {
                Tok::Ident(n) if self.peek_at(1) == &Tok::LParen && !is_reserved(n) => {
                    vec![Literal::Atom(self.atom()?)]
                }
                _ => return Err(self.unexpected("`{ body }` or an atom after the aggregate's `:`")),
            }
        };
        let span = start.to(self.prev_span());
        Ok(Expr::Agg(Box::new(Aggregate {
            kind,
            target,
            body,
            span,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::source::Origin;

    fn p(text: &str) -> Result<Vec<Item>, RuleError> {
        parse(&RuleSource::new("t.dl", Origin::CommandLine, text))
    }

    #[test]
    fn parses_the_souffle_subset() {
        let items = p(r#"
            // a comment
            /* block
               comment */
            .type Name <: symbol
            .decl edge(a: number, b: number) btree
            .decl path(a: number, b: number)
            .output path
            .input calls
            edge(1, 2). edge(2, 3).
            path(X, Y) :- edge(X, Y).
            path(X, Z) :- path(X, Y), path(Y, Z), X != Z, !edge(Z, X), Y + 1 > 2 * -3.
            h(X), g(X) :- edge(X, _) ; edge(_, X).
            n(F, N) :- functions(id: F, kind: "kernel"), N = count : { accesses(function_id: F) }.
            m(F, L) :- f(F), L = min X : f(X), S = sum (X + 1) : { f(X), X < 3 }, M = max(1, 2).
            c(S) :- s(S), match("a.*", S), contains("b", S), strlen(S) >= 0x10, true.
            k(X) :- X = 1.5e2 ^ 2, X = nil.
            .lint hot_loop warning "`{name}` is hot"
        "#)
        .unwrap();
        assert_eq!(items.len(), 15);
        match &items[items.len() - 1] {
            Item::Lint(l) => {
                assert_eq!(l.name.name, "hot_loop");
                assert_eq!(l.message, "`{name}` is hot");
            }
            other => panic!("{other:?}"),
        }
        match &items[8] {
            Item::Clause(c) => assert_eq!(c.body[0].len(), 5),
            other => panic!("{other:?}"),
        }
        match &items[9] {
            Item::Clause(c) => {
                assert_eq!(c.heads.len(), 2);
                assert_eq!(c.body.len(), 2);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lint_doc_comments_are_the_lines_just_above() {
        let items =
            p("// unrelated\n\n// Says what.\n// Two lines.\n.lint a note \"m\"\n").unwrap();
        match &items[0] {
            Item::Lint(l) => assert_eq!(l.doc, "Says what.\nTwo lines."),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_are_located() {
        let e = p("a(X) :- b(X)\nc(Y).").unwrap_err();
        assert_eq!((e.line, e.col), (2, 1));
        assert!(
            e.message.contains("expected `,`, `;` or `.`"),
            "{}",
            e.message
        );
        let e = p("a(X) :- b(X, \"x).").unwrap_err();
        assert_eq!((e.line, e.col), (1, 14));
        let e = p(".decl r(a number)").unwrap_err();
        assert_eq!((e.line, e.col), (1, 11));
        let e = p(".lint x fatal \"m\"").unwrap_err();
        assert!(e.message.contains("not a severity"));
        let e = p("a(X) :- b(c: X, Y).").unwrap_err();
        assert!(e.message.contains("all named or all positional"));
        let e = p("a(X) :- X = foo(1).").unwrap_err();
        assert!(e.message.contains("not a functor"));
        let e = p("#include \"x.dl\"").unwrap_err();
        assert!(e.message.contains("preprocessor"));
        let e = p("a(X) :- b(X), X.").unwrap_err();
        assert!(e.message.contains("comparison operator"));
        let deep = format!("a(X) :- X = {}1{}.", "(".repeat(500), ")".repeat(500));
        assert!(p(&deep).unwrap_err().message.contains("nested too deeply"));
    }
}
