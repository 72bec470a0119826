//! Symbolic bound expressions: polynomials with `max`, `min`, `ceil`,
//! `floor` and `log2` over the kernel's parameter names, `blockDim.x`,
//! `gridDim.x` & co and integers. They render to (and parse from) the text
//! stored in the `bounds` table and printed by `cudalog bounds`, and
//! evaluate under values given for the names.
//!
//! Division is exact (rational); `floor`/`ceil` make it integral.

use std::collections::BTreeMap;
use std::fmt;

/// A bound expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bx {
    /// An integer.
    Int(i64),
    /// A name: a parameter, `blockDim.x`, `gridDim.y`, …
    Name(String),
    /// Sum.
    Add(Vec<Bx>),
    /// Product.
    Mul(Vec<Bx>),
    /// Difference.
    Sub(Box<Bx>, Box<Bx>),
    /// Exact quotient.
    Div(Box<Bx>, Box<Bx>),
    /// Maximum.
    Max(Vec<Bx>),
    /// Minimum.
    Min(Vec<Bx>),
    /// Ceiling.
    Ceil(Box<Bx>),
    /// Floor.
    Floor(Box<Bx>),
    /// Base-2 logarithm (of a positive value; non-positive values give 0).
    Log2(Box<Bx>),
}

/// An evaluation problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A name without a value.
    #[error("no value for `{0}` (use --set {0}=N)")]
    Unbound(String),
    /// Division by zero.
    #[error("division by zero")]
    DivZero,
}

#[allow(clippy::should_implement_trait)] // constructors that simplify, not operators
impl Bx {
    /// `a + b`, simplified.
    pub fn add(a: Bx, b: Bx) -> Bx {
        Bx::Add(vec![a, b]).simplify()
    }
    /// `a * b`, simplified.
    pub fn mul(a: Bx, b: Bx) -> Bx {
        Bx::Mul(vec![a, b]).simplify()
    }
    /// `a / b`.
    pub fn div(a: Bx, b: Bx) -> Bx {
        Bx::Div(Box::new(a), Box::new(b)).simplify()
    }
    /// `max(0, a)`.
    pub fn pos(a: Bx) -> Bx {
        Bx::Max(vec![Bx::Int(0), a]).simplify()
    }
    /// A name.
    pub fn name(s: &str) -> Bx {
        Bx::Name(s.to_string())
    }

    /// Evaluate with `env` giving every name's value.
    pub fn eval(&self, env: &BTreeMap<String, f64>) -> Result<f64, EvalError> {
        Ok(match self {
            Bx::Int(v) => *v as f64,
            Bx::Name(n) => *env.get(n).ok_or_else(|| EvalError::Unbound(n.clone()))?,
            Bx::Add(v) => v.iter().map(|x| x.eval(env)).sum::<Result<f64, _>>()?,
            Bx::Mul(v) => v.iter().map(|x| x.eval(env)).product::<Result<f64, _>>()?,
            Bx::Sub(a, b) => a.eval(env)? - b.eval(env)?,
            Bx::Div(a, b) => {
                let d = b.eval(env)?;
                if d == 0.0 {
                    return Err(EvalError::DivZero);
                }
                a.eval(env)? / d
            }
            Bx::Max(v) => v
                .iter()
                .map(|x| x.eval(env))
                .try_fold(f64::NEG_INFINITY, |m, x| x.map(|x| m.max(x)))?,
            Bx::Min(v) => v
                .iter()
                .map(|x| x.eval(env))
                .try_fold(f64::INFINITY, |m, x| x.map(|x| m.min(x)))?,
            Bx::Ceil(a) => snap(a.eval(env)?).ceil(),
            Bx::Floor(a) => snap(a.eval(env)?).floor(),
            Bx::Log2(a) => {
                let x = a.eval(env)?;
                if x <= 0.0 { 0.0 } else { x.log2() }
            }
        })
    }

    /// The names the expression mentions.
    pub fn names(&self, out: &mut Vec<String>) {
        match self {
            Bx::Int(_) => {}
            Bx::Name(n) => {
                if !out.contains(n) {
                    out.push(n.clone())
                }
            }
            Bx::Add(v) | Bx::Mul(v) | Bx::Max(v) | Bx::Min(v) => {
                v.iter().for_each(|x| x.names(out))
            }
            Bx::Sub(a, b) | Bx::Div(a, b) => {
                a.names(out);
                b.names(out);
            }
            Bx::Ceil(a) | Bx::Floor(a) | Bx::Log2(a) => a.names(out),
        }
    }

    /// Replace names by expressions.
    pub fn substitute(&self, map: &BTreeMap<String, Bx>) -> Bx {
        let r = |x: &Bx| x.substitute(map);
        match self {
            Bx::Int(_) => self.clone(),
            Bx::Name(n) => map.get(n).cloned().unwrap_or_else(|| self.clone()),
            Bx::Add(v) => Bx::Add(v.iter().map(r).collect()),
            Bx::Mul(v) => Bx::Mul(v.iter().map(r).collect()),
            Bx::Max(v) => Bx::Max(v.iter().map(r).collect()),
            Bx::Min(v) => Bx::Min(v.iter().map(r).collect()),
            Bx::Sub(a, b) => Bx::Sub(Box::new(r(a)), Box::new(r(b))),
            Bx::Div(a, b) => Bx::Div(Box::new(r(a)), Box::new(r(b))),
            Bx::Ceil(a) => Bx::Ceil(Box::new(r(a))),
            Bx::Floor(a) => Bx::Floor(Box::new(r(a))),
            Bx::Log2(a) => Bx::Log2(Box::new(r(a))),
        }
        .simplify()
    }

    /// Constant folding and flattening (keeps the value).
    pub fn simplify(self) -> Bx {
        match self {
            Bx::Add(v) => {
                let mut out = Vec::new();
                let mut c = 0i64;
                for x in v.into_iter().map(Bx::simplify) {
                    match x {
                        Bx::Int(k) => c = c.saturating_add(k),
                        Bx::Add(inner) => out.extend(inner),
                        other => out.push(other),
                    }
                }
                if c != 0 || out.is_empty() {
                    out.push(Bx::Int(c));
                }
                if out.len() == 1 {
                    out.pop().unwrap_or(Bx::Int(0))
                } else {
                    Bx::Add(out)
                }
            }
            Bx::Mul(v) => {
                let mut out = Vec::new();
                let mut c = 1i64;
                for x in v.into_iter().map(Bx::simplify) {
                    match x {
                        Bx::Int(k) => c = c.saturating_mul(k),
                        Bx::Mul(inner) => out.extend(inner),
                        other => out.push(other),
                    }
                }
                if c == 0 {
                    return Bx::Int(0);
                }
                if c != 1 || out.is_empty() {
                    out.insert(0, Bx::Int(c));
                }
                if out.len() == 1 {
                    out.pop().unwrap_or(Bx::Int(1))
                } else {
                    Bx::Mul(out)
                }
            }
            Bx::Sub(a, b) => match (a.simplify(), b.simplify()) {
                (Bx::Int(x), Bx::Int(y)) => Bx::Int(x.saturating_sub(y)),
                (x, Bx::Int(0)) => x,
                (x, y) => Bx::Sub(Box::new(x), Box::new(y)),
            },
            Bx::Div(a, b) => match (a.simplify(), b.simplify()) {
                (x, Bx::Int(1)) => x,
                (Bx::Int(0), _) => Bx::Int(0),
                (Bx::Int(x), Bx::Int(y)) if y != 0 && x % y == 0 => Bx::Int(x / y),
                (x, y) => Bx::Div(Box::new(x), Box::new(y)),
            },
            Bx::Max(v) | Bx::Min(v) if v.is_empty() => Bx::Int(0),
            Bx::Max(v) => {
                let mut items: Vec<Bx> = Vec::new();
                for x in v.into_iter().map(Bx::simplify) {
                    match x {
                        Bx::Max(inner) => items.extend(inner),
                        other => items.push(other),
                    }
                }
                let ints: Vec<i64> = items
                    .iter()
                    .filter_map(|x| if let Bx::Int(k) = x { Some(*k) } else { None })
                    .collect();
                items.retain(|x| !matches!(x, Bx::Int(_)));
                items.sort();
                items.dedup();
                if let Some(m) = ints.iter().max() {
                    if items.is_empty() {
                        return Bx::Int(*m);
                    }
                    items.insert(0, Bx::Int(*m));
                }
                if items.len() == 1 {
                    items.pop().unwrap_or(Bx::Int(0))
                } else {
                    Bx::Max(items)
                }
            }
            Bx::Min(v) => {
                let mut items: Vec<Bx> = v.into_iter().map(Bx::simplify).collect();
                let ints: Vec<i64> = items
                    .iter()
                    .filter_map(|x| if let Bx::Int(k) = x { Some(*k) } else { None })
                    .collect();
                items.retain(|x| !matches!(x, Bx::Int(_)));
                items.sort();
                items.dedup();
                if let Some(m) = ints.iter().min() {
                    if items.is_empty() {
                        return Bx::Int(*m);
                    }
                    items.insert(0, Bx::Int(*m));
                }
                if items.len() == 1 {
                    items.pop().unwrap_or(Bx::Int(0))
                } else {
                    Bx::Min(items)
                }
            }
            Bx::Ceil(a) => match a.simplify() {
                Bx::Int(k) => Bx::Int(k),
                x @ (Bx::Ceil(_) | Bx::Floor(_)) => x,
                Bx::Div(x, y) => match (*x, *y) {
                    (Bx::Int(p), Bx::Int(q)) if q > 0 => {
                        Bx::Int(p.div_euclid(q) + i64::from(p.rem_euclid(q) != 0))
                    }
                    (x, y) => Bx::Ceil(Box::new(Bx::Div(Box::new(x), Box::new(y)))),
                },
                x => Bx::Ceil(Box::new(x)),
            },
            Bx::Floor(a) => match a.simplify() {
                Bx::Int(k) => Bx::Int(k),
                x @ (Bx::Ceil(_) | Bx::Floor(_)) => x,
                Bx::Div(x, y) => match (*x, *y) {
                    (Bx::Int(p), Bx::Int(q)) if q > 0 => Bx::Int(p.div_euclid(q)),
                    (x, y) => Bx::Floor(Box::new(Bx::Div(Box::new(x), Box::new(y)))),
                },
                x => Bx::Floor(Box::new(x)),
            },
            Bx::Log2(a) => match a.simplify() {
                Bx::Int(k) if k > 0 && (k as u64).is_power_of_two() => {
                    Bx::Int(63 - k.leading_zeros() as i64)
                }
                x => Bx::Log2(Box::new(x)),
            },
            other => other,
        }
    }

    fn prec(&self) -> u8 {
        match self {
            Bx::Add(_) | Bx::Sub(..) => 1,
            Bx::Mul(_) | Bx::Div(..) => 2,
            Bx::Int(v) if *v < 0 => 1,
            _ => 3,
        }
    }

    fn write(&self, out: &mut String, min_prec: u8) {
        let p = self.prec();
        let paren = p < min_prec;
        if paren {
            out.push('(');
        }
        match self {
            Bx::Int(v) => out.push_str(&v.to_string()),
            Bx::Name(n) => out.push_str(n),
            Bx::Add(v) => {
                for (i, x) in v.iter().enumerate() {
                    match x {
                        Bx::Int(k) if i > 0 && *k < 0 => {
                            out.push_str(" - ");
                            out.push_str(&k.unsigned_abs().to_string());
                        }
                        _ => {
                            if i > 0 {
                                out.push_str(" + ");
                            }
                            x.write(out, 1);
                        }
                    }
                }
            }
            Bx::Sub(a, b) => {
                a.write(out, 1);
                out.push_str(" - ");
                b.write(out, 2);
            }
            Bx::Mul(v) => {
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" * ");
                    }
                    x.write(out, 2);
                }
            }
            Bx::Div(a, b) => {
                a.write(out, 2);
                out.push_str(" / ");
                b.write(out, 3);
            }
            Bx::Max(v) | Bx::Min(v) => {
                out.push_str(if matches!(self, Bx::Max(_)) {
                    "max("
                } else {
                    "min("
                });
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write(out, 0);
                }
                out.push(')');
            }
            Bx::Ceil(a) | Bx::Floor(a) | Bx::Log2(a) => {
                out.push_str(match self {
                    Bx::Ceil(_) => "ceil(",
                    Bx::Floor(_) => "floor(",
                    _ => "log2(",
                });
                a.write(out, 0);
                out.push(')');
            }
        }
        if paren {
            out.push(')');
        }
    }

    /// Parse the text [`fmt::Display`] writes.
    pub fn parse(s: &str) -> Result<Bx, String> {
        let toks = lex(s)?;
        let mut p = Parser { toks, pos: 0 };
        let e = p.sum()?;
        if p.pos != p.toks.len() {
            return Err(format!("unexpected `{}`", p.toks[p.pos]));
        }
        Ok(e)
    }
}

/// Round values within floating-point noise of an integer to it, so that
/// `ceil(64 / 2)` is 32 however the division rounded.
fn snap(x: f64) -> f64 {
    let r = x.round();
    if (x - r).abs() <= 1e-9 * x.abs().max(1.0) {
        r
    } else {
        x
    }
}

impl fmt::Display for Bx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s, 0);
        f.write_str(&s)
    }
}

fn lex(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            while i < cs.len() && cs[i].is_ascii_digit() {
                i += 1;
            }
            out.push(cs[st..i].iter().collect());
        } else if c.is_alphabetic() || c == '_' {
            let st = i;
            while i < cs.len() && (cs[i].is_alphanumeric() || cs[i] == '_' || cs[i] == '.') {
                i += 1;
            }
            out.push(cs[st..i].iter().collect());
        } else if "+-*/(),".contains(c) {
            out.push(c.to_string());
            i += 1;
        } else {
            return Err(format!("unexpected character `{c}`"));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<String>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }
    fn eat(&mut self, t: &str) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn sum(&mut self) -> Result<Bx, String> {
        let mut e = self.product()?;
        loop {
            if self.eat("+") {
                let r = self.product()?;
                e = match e {
                    Bx::Add(mut v) => {
                        v.push(r);
                        Bx::Add(v)
                    }
                    x => Bx::Add(vec![x, r]),
                };
            } else if self.eat("-") {
                let r = self.product()?;
                e = match r {
                    Bx::Int(k) => match e {
                        Bx::Add(mut v) => {
                            v.push(Bx::Int(-k));
                            Bx::Add(v)
                        }
                        x => Bx::Add(vec![x, Bx::Int(-k)]),
                    },
                    r => Bx::Sub(Box::new(e), Box::new(r)),
                };
            } else {
                return Ok(e);
            }
        }
    }
    fn product(&mut self) -> Result<Bx, String> {
        let mut e = self.atom()?;
        loop {
            if self.eat("*") {
                let r = self.atom()?;
                e = match e {
                    Bx::Mul(mut v) => {
                        v.push(r);
                        Bx::Mul(v)
                    }
                    x => Bx::Mul(vec![x, r]),
                };
            } else if self.eat("/") {
                let r = self.atom()?;
                e = Bx::Div(Box::new(e), Box::new(r));
            } else {
                return Ok(e);
            }
        }
    }
    fn atom(&mut self) -> Result<Bx, String> {
        let t = self.peek().ok_or("unexpected end")?.to_string();
        self.pos += 1;
        if t == "(" {
            let e = self.sum()?;
            if !self.eat(")") {
                return Err("missing `)`".into());
            }
            return Ok(e);
        }
        if t == "-" {
            let e = self.atom()?;
            return Ok(match e {
                Bx::Int(k) => Bx::Int(-k),
                x => Bx::Sub(Box::new(Bx::Int(0)), Box::new(x)),
            });
        }
        if let Ok(v) = t.parse::<i64>() {
            return Ok(Bx::Int(v));
        }
        if matches!(t.as_str(), "max" | "min" | "ceil" | "floor" | "log2") && self.eat("(") {
            let mut args = vec![self.sum()?];
            while self.eat(",") {
                args.push(self.sum()?);
            }
            if !self.eat(")") {
                return Err("missing `)`".into());
            }
            let one = |mut a: Vec<Bx>| -> Result<Box<Bx>, String> {
                if a.len() != 1 {
                    return Err(format!("`{t}` takes one argument"));
                }
                Ok(Box::new(a.remove(0)))
            };
            return Ok(match t.as_str() {
                "max" => Bx::Max(args),
                "min" => Bx::Min(args),
                "ceil" => Bx::Ceil(one(args)?),
                "floor" => Bx::Floor(one(args)?),
                _ => Bx::Log2(one(args)?),
            });
        }
        if t.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
        {
            return Ok(Bx::Name(t));
        }
        Err(format!("unexpected `{t}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_parse_evaluate_round_trip() {
        let e = Bx::Add(vec![
            Bx::Mul(vec![
                Bx::Int(3),
                Bx::Ceil(Box::new(Bx::Div(
                    Box::new(Bx::pos(Bx::name("n"))),
                    Box::new(Bx::Int(32)),
                ))),
            ]),
            Bx::Floor(Box::new(Bx::Log2(Box::new(Bx::name("blockDim.x"))))),
            Bx::Int(-4),
        ])
        .simplify();
        let text = e.to_string();
        assert_eq!(
            text,
            "3 * ceil(max(0, n) / 32) + floor(log2(blockDim.x)) - 4"
        );
        let back = Bx::parse(&text).unwrap();
        let env: BTreeMap<String, f64> = [("n".to_string(), 100.0), ("blockDim.x".into(), 256.0)]
            .into_iter()
            .collect();
        assert_eq!(e.eval(&env).unwrap(), 3.0 * 4.0 + 8.0 - 4.0);
        assert_eq!(back.eval(&env).unwrap(), e.eval(&env).unwrap());
        assert!(matches!(
            Bx::name("w").eval(&BTreeMap::new()),
            Err(EvalError::Unbound(_))
        ));
        assert_eq!(Bx::Log2(Box::new(Bx::Int(256))).simplify(), Bx::Int(8));
    }
}
