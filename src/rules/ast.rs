//! The syntax tree of a rule file (Soufflé's syntax, the subset in docs/rules.md).

use super::source::Span;
use crate::check::Severity;

/// A name with its place.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it is.
    pub span: Span,
}

/// One top-level item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `.decl r(a: number, b: symbol)`
    Decl(Decl),
    /// `.type T <: symbol` / `.type T = number`
    Type {
        /// The new type's name.
        name: Ident,
        /// The type it stands for.
        base: Ident,
    },
    /// `.input r` (accepted for store tables, which are inputs anyway).
    Input(Ident),
    /// `.output r`
    Output(Ident),
    /// `.lint NAME SEVERITY "MESSAGE"`
    Lint(LintDecl),
    /// A rule or a fact.
    Clause(Clause),
}

/// `.decl`
#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    /// Relation name.
    pub name: Ident,
    /// Columns and their type names.
    pub attrs: Vec<(Ident, Ident)>,
    /// The whole declaration.
    pub span: Span,
}

/// `.lint`
#[derive(Clone, Debug, PartialEq)]
pub struct LintDecl {
    /// Relation (and rule) name.
    pub name: Ident,
    /// Severity of its findings.
    pub severity: Severity,
    /// Where the severity is written.
    pub severity_span: Span,
    /// The message template, `{column}` substituted.
    pub message: String,
    /// Where the message is written.
    pub message_span: Span,
    /// The `//` comment lines just above the directive (its description).
    pub doc: String,
}

/// `h1(..), h2(..) :- body.` (no body: a fact).
#[derive(Clone, Debug, PartialEq)]
pub struct Clause {
    /// Heads (usually one).
    pub heads: Vec<Atom>,
    /// Disjuncts of the body, each a conjunction (empty for facts).
    pub body: Vec<Vec<Literal>>,
    /// The whole clause.
    pub span: Span,
}

/// An atom's arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Args {
    /// `r(X, _, 3)`
    Positional(Vec<Expr>),
    /// `r(col: X, other: "v")`
    Named(Vec<(Ident, Expr)>),
}

/// `r(args)`
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    /// Relation name.
    pub rel: Ident,
    /// Arguments.
    pub args: Args,
    /// The whole atom.
    pub span: Span,
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// As written.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A body literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// A positive atom.
    Atom(Atom),
    /// `!atom`
    Neg(Atom, Span),
    /// `a op b`
    Cmp(CmpOp, Expr, Expr, Span),
    /// `match(re, s)`, `contains(sub, s)`
    Constraint(Ident, Vec<Expr>, Span),
    /// `true` / `false`
    Bool(bool, Span),
}

/// Arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `^` (power)
    Pow,
}

impl BinOp {
    /// As written.
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Pow => "^",
        }
    }
}

/// Aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    /// Number of solutions of the body.
    Count,
    /// Sum of the target over the solutions.
    Sum,
    /// Least target value (no result when the body has no solution).
    Min,
    /// Greatest target value (no result when the body has no solution).
    Max,
}

impl AggKind {
    /// As written.
    pub fn as_str(self) -> &'static str {
        match self {
            AggKind::Count => "count",
            AggKind::Sum => "sum",
            AggKind::Min => "min",
            AggKind::Max => "max",
        }
    }
}

/// Expressions (arguments, comparison operands, aggregate targets).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A variable.
    Var(Ident),
    /// `_`
    Wild(Span),
    /// Integer constant.
    Num(i64, Span),
    /// Float constant.
    Float(f64, Span),
    /// String constant.
    Str(String, Span),
    /// `nil` (SQL NULL).
    Nil(Span),
    /// `a op b`
    Bin(BinOp, Box<Expr>, Box<Expr>, Span),
    /// `-a`
    Neg(Box<Expr>, Span),
    /// A functor call: `cat(a, b)`, `strlen(s)`, …
    Call(Ident, Vec<Expr>, Span),
    /// `count : { body }`, `sum X : { body }`, …
    Agg(Box<Aggregate>),
}

/// An aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    /// Which function.
    pub kind: AggKind,
    /// The aggregated expression (absent for count).
    pub target: Option<Expr>,
    /// The body (a conjunction).
    pub body: Vec<Literal>,
    /// The whole aggregate.
    pub span: Span,
}

impl Expr {
    /// Where the expression is.
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(i) => i.span,
            Expr::Wild(s)
            | Expr::Num(_, s)
            | Expr::Float(_, s)
            | Expr::Str(_, s)
            | Expr::Nil(s)
            | Expr::Bin(_, _, _, s)
            | Expr::Neg(_, s)
            | Expr::Call(_, _, s) => *s,
            Expr::Agg(a) => a.span,
        }
    }

    /// Visit the variables of this expression (not those local to aggregates).
    pub fn vars<'a>(&'a self, out: &mut Vec<&'a Ident>) {
        match self {
            Expr::Var(i) => out.push(i),
            Expr::Bin(_, a, b, _) => {
                a.vars(out);
                b.vars(out);
            }
            Expr::Neg(a, _) => a.vars(out),
            Expr::Call(_, args, _) => args.iter().for_each(|a| a.vars(out)),
            Expr::Agg(a) => {
                // Every variable of an aggregate is collected; callers that
                // need the correlation split them (see `check`).
                if let Some(t) = &a.target {
                    t.vars(out);
                }
                for l in &a.body {
                    l.vars(out);
                }
            }
            _ => {}
        }
    }
}

impl Atom {
    /// The argument expressions, in written order.
    pub fn exprs(&self) -> Vec<&Expr> {
        match &self.args {
            Args::Positional(v) => v.iter().collect(),
            Args::Named(v) => v.iter().map(|(_, e)| e).collect(),
        }
    }
}

impl Literal {
    /// Visit all variables of the literal.
    pub fn vars<'a>(&'a self, out: &mut Vec<&'a Ident>) {
        match self {
            Literal::Atom(a) | Literal::Neg(a, _) => {
                a.exprs().into_iter().for_each(|e| e.vars(out))
            }
            Literal::Cmp(_, a, b, _) => {
                a.vars(out);
                b.vars(out);
            }
            Literal::Constraint(_, args, _) => args.iter().for_each(|a| a.vars(out)),
            Literal::Bool(..) => {}
        }
    }

    /// Where the literal is.
    pub fn span(&self) -> Span {
        match self {
            Literal::Atom(a) => a.span,
            Literal::Neg(_, s) | Literal::Cmp(_, _, _, s) | Literal::Constraint(_, _, s) => *s,
            Literal::Bool(_, s) => *s,
        }
    }
}

/// Functors usable in expressions: name and number of arguments.
pub const FUNCTORS: &[(&str, usize)] = &[
    ("cat", usize::MAX),
    ("strlen", 1),
    ("substr", 3),
    ("to_number", 1),
    ("to_string", 1),
    ("to_float", 1),
    ("min", 2),
    ("max", 2),
    ("abs", 1),
];

/// Constraint functors usable as body literals.
pub const CONSTRAINTS: &[&str] = &["match", "contains"];

/// Names that cannot be relation names.
pub fn is_reserved(name: &str) -> bool {
    FUNCTORS.iter().any(|(f, _)| *f == name)
        || CONSTRAINTS.contains(&name)
        || matches!(name, "count" | "sum" | "nil" | "true" | "false")
}
