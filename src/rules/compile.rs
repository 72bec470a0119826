//! Semantic checks and compilation of a parsed rule file into a [`Program`]:
//! name resolution against declarations and the store's tables, named
//! arguments, arity, types, range restriction (bound variables), and
//! stratification of negation and aggregates.

use super::ast::{self, AggKind, Args, BinOp, CmpOp, Expr, Item, Literal};
use super::error::{ErrorKind, RuleError, did_you_mean};
use super::schema::{StoreSchema, Ty};
use super::source::{RuleSource, Span};
use crate::check::Severity;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Index of a relation in [`Program::rels`].
pub type RelId = usize;

/// A constant.
#[derive(Clone, Debug, PartialEq)]
pub enum Const {
    /// Integer.
    Num(i64),
    /// Float.
    Float(f64),
    /// String.
    Str(Arc<str>),
    /// SQL NULL.
    Nil,
}

/// Built-in functors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Functor {
    /// `cat(s, …)`
    Cat,
    /// `strlen(s)`
    Strlen,
    /// `substr(s, start, len)`
    Substr,
    /// `to_number(s)`
    ToNumber,
    /// `to_string(n)`
    ToString,
    /// `to_float(n)`
    ToFloat,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `abs(a)`
    Abs,
}

/// A compiled expression.
#[derive(Clone, Debug, PartialEq)]
pub struct CExpr {
    /// What it is.
    pub kind: CExprKind,
    /// Where it is written.
    pub span: Span,
}

/// Shapes of compiled expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum CExprKind {
    /// A variable slot.
    Var(usize),
    /// A constant.
    Const(Const),
    /// Arithmetic.
    Bin(BinOp, Box<CExpr>, Box<CExpr>),
    /// Negation.
    Neg(Box<CExpr>),
    /// Functor call.
    Call(Functor, Vec<CExpr>),
    /// Aggregate.
    Agg(Box<CAgg>),
}

/// A compiled aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct CAgg {
    /// Function.
    pub kind: AggKind,
    /// Target (sum/min/max).
    pub target: Option<CExpr>,
    /// Body.
    pub body: Vec<CLit>,
    /// Variable slots used in the body that are bound outside it.
    pub correlated: Vec<usize>,
}

/// A compiled body literal. Atom arguments are per column of the relation
/// as loaded (`None`: wildcard).
#[derive(Clone, Debug, PartialEq)]
pub enum CLit {
    /// Positive atom.
    Atom {
        /// Relation.
        rel: RelId,
        /// One entry per column.
        args: Vec<Option<CExpr>>,
        /// Where.
        span: Span,
    },
    /// Negated atom.
    Neg {
        /// Relation.
        rel: RelId,
        /// One entry per column.
        args: Vec<Option<CExpr>>,
        /// Where.
        span: Span,
    },
    /// Comparison (`X = e` with `X` unbound binds it).
    Cmp(CmpOp, CExpr, CExpr, Span),
    /// `match(regex, s)`: the whole of `s` matches.
    Match(CExpr, CExpr, Span),
    /// `contains(sub, s)`
    Contains(CExpr, CExpr, Span),
    /// `true` / `false`
    Bool(bool),
}

/// A compiled rule (one head, one conjunction).
#[derive(Clone, Debug)]
pub struct CRule {
    /// Derived relation.
    pub head: RelId,
    /// One expression per column.
    pub head_args: Vec<CExpr>,
    /// Body literals.
    pub body: Vec<CLit>,
    /// Variable names by slot.
    pub var_names: Vec<String>,
    /// The clause.
    pub span: Span,
}

/// Where an input relation's rows come from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InputSpec {
    /// Store table.
    pub table: String,
    /// Loaded columns, in relation order (a projection of the table when
    /// the program uses only some columns and never counts the rows).
    pub columns: Vec<String>,
    /// A SQL condition on the table's rows (empty: every row). When every
    /// atom of the relation binds some columns to constants, only rows that
    /// can match one of those atoms are loaded.
    pub filter: String,
}

/// A relation of a program.
#[derive(Clone, Debug)]
pub struct RelInfo {
    /// Name.
    pub name: String,
    /// Columns (for inputs: the loaded ones).
    pub columns: Vec<(String, Ty)>,
    /// Store table, for input relations.
    pub input: Option<InputSpec>,
}

/// A `.lint` relation.
#[derive(Clone, Debug)]
pub struct Lint {
    /// The relation.
    pub rel: RelId,
    /// Rule name of its findings (= relation name).
    pub name: String,
    /// Severity.
    pub severity: Severity,
    /// Message template.
    pub message: String,
    /// The comment above `.lint`, else the message.
    pub summary: String,
    /// Column of the function id.
    pub function_col: usize,
    /// Column of the line.
    pub line_col: usize,
    /// Column of the column number, if the relation has one named `col`.
    pub col_col: Option<usize>,
    /// Column of a per-finding severity (`severity: symbol`, optional):
    /// a tuple whose value is `note`, `warning` or `error` gets that
    /// severity instead of the declared one.
    pub severity_col: Option<usize>,
    /// Where the lint's name is written in `.lint`.
    pub span: Span,
}

/// A set of mutually recursive relations and their rules.
#[derive(Clone, Debug)]
pub struct Stratum {
    /// Relations defined here.
    pub rels: Vec<RelId>,
    /// Their rules.
    pub rules: Vec<CRule>,
    /// Whether a rule reads a relation of this stratum (needs a fixpoint).
    pub recursive: bool,
}

/// A checked, compiled rule file.
#[derive(Clone, Debug)]
pub struct Program {
    /// Its source.
    pub source: RuleSource,
    /// All relations it uses.
    pub rels: Vec<RelInfo>,
    /// Strata in evaluation order.
    pub strata: Vec<Stratum>,
    /// `.output` relations.
    pub outputs: Vec<RelId>,
    /// `.lint` relations.
    pub lints: Vec<Lint>,
}

impl Program {
    /// Number of rules (clauses × heads × disjuncts).
    pub fn rule_count(&self) -> usize {
        self.strata.iter().map(|s| s.rules.len()).sum()
    }
}

fn base_type(name: &str) -> Option<Ty> {
    match name {
        "number" | "unsigned" => Some(Ty::Number),
        "float" => Some(Ty::Float),
        "symbol" => Some(Ty::Symbol),
        _ => None,
    }
}

struct Cx<'a> {
    src: &'a RuleSource,
    schema: &'a StoreSchema,
    rels: Vec<RelInfo>,
    by_name: HashMap<String, RelId>,
    /// Declaration site of derived relations.
    decl_span: HashMap<RelId, Span>,
    types: HashMap<String, Ty>,
    errors: Vec<RuleError>,
    /// Input relations used inside an aggregate (loaded without projection).
    counted_inputs: BTreeSet<RelId>,
}

/// Check and compile `src` against the store tables of `schema`.
pub fn compile(src: &RuleSource, schema: &StoreSchema) -> Result<Program, Vec<RuleError>> {
    let items = super::parse::parse(src).map_err(|e| vec![e])?;
    let mut cx = Cx {
        src,
        schema,
        rels: Vec::new(),
        by_name: HashMap::new(),
        decl_span: HashMap::new(),
        types: HashMap::new(),
        errors: Vec::new(),
        counted_inputs: BTreeSet::new(),
    };
    // Types first, then declarations, so order in the file does not matter.
    for item in &items {
        if let Item::Type { name, base } = item {
            let b = base_type(&base.name).or_else(|| cx.types.get(&base.name).copied());
            match b {
                _ if base_type(&name.name).is_some() => cx.err(
                    name.span,
                    ErrorKind::Declaration,
                    format!("`{}` is a built-in type and cannot be redefined", name.name),
                ),
                Some(t) => {
                    cx.types.insert(name.name.clone(), t);
                }
                None => {
                    let names = cx.type_names();
                    cx.err(
                        base.span,
                        ErrorKind::Type,
                        format!(
                            "unknown type `{}`{}",
                            base.name,
                            did_you_mean(&base.name, names.iter().map(String::as_str))
                        ),
                    )
                }
            }
        }
    }
    let lint_items: Vec<&ast::LintDecl> = items
        .iter()
        .filter_map(|i| match i {
            Item::Lint(l) => Some(l),
            _ => None,
        })
        .collect();
    for item in &items {
        if let Item::Decl(d) = item {
            cx.declare(d);
        }
    }
    for l in &lint_items {
        if !cx.by_name.contains_key(&l.name.name) && cx.check_new_name(&l.name) {
            // An implicit `.decl NAME(function_id: number, line: number)`.
            let id = cx.rels.len();
            cx.rels.push(RelInfo {
                name: l.name.name.clone(),
                columns: vec![
                    ("function_id".into(), Ty::Number),
                    ("line".into(), Ty::Number),
                ],
                input: None,
            });
            cx.by_name.insert(l.name.name.clone(), id);
            cx.decl_span.insert(id, l.name.span);
        }
    }
    let mut outputs = Vec::new();
    let mut rules = Vec::new();
    for item in &items {
        match item {
            #[allow(clippy::collapsible_match)]
            Item::Input(rel) => {
                if cx.schema.table(&rel.name).is_none() {
                    let msg = if cx.by_name.contains_key(&rel.name) {
                        format!(
                            "`{}` is not a store table: only the store's tables are inputs, declared relations are computed by rules and facts",
                            rel.name
                        )
                    } else {
                        format!(
                            "`{}` is not a store table{}",
                            rel.name,
                            did_you_mean(
                                &rel.name,
                                cx.schema.tables.iter().map(|t| t.name.as_str())
                            )
                        )
                    };
                    cx.err(rel.span, ErrorKind::UnknownRelation, msg);
                }
            }
            Item::Output(rel) => {
                if let Some(id) = cx.relation(rel) {
                    if cx.rels[id].input.is_some() {
                        cx.err(
                            rel.span,
                            ErrorKind::Declaration,
                            format!(
                                "`{}` is a store table; `.output` prints derived relations (read tables with `cudalog query`)",
                                rel.name
                            ),
                        );
                    } else {
                        outputs.push(id);
                    }
                }
            }
            Item::Clause(c) => rules.extend(cx.clause(c)),
            _ => {}
        }
    }
    let mut lints = Vec::new();
    let mut seen_lints: HashMap<&str, Span> = HashMap::new();
    for l in &lint_items {
        if let Some(prev) = seen_lints.insert(&l.name.name, l.name.span) {
            let (line, _) = src.line_col(prev.start);
            cx.err(
                l.name.span,
                ErrorKind::Declaration,
                format!(
                    "the lint `{}` is already declared on line {line}",
                    l.name.name
                ),
            );
            continue;
        }
        if let Some(lint) = cx.lint(l) {
            lints.push(lint);
        }
    }
    if !cx.errors.is_empty() {
        cx.errors.sort_by_key(|e| (e.line, e.col));
        return Err(cx.errors);
    }
    cx.project_inputs(&mut rules);
    let strata = match stratify(&cx, rules) {
        Ok(s) => s,
        Err(e) => return Err(vec![e]),
    };
    Ok(Program {
        source: src.clone(),
        rels: cx.rels,
        strata,
        outputs,
        lints,
    })
}

impl Cx<'_> {
    fn err(&mut self, span: Span, kind: ErrorKind, msg: impl Into<String>) {
        self.errors.push(RuleError::at(self.src, span, kind, msg));
    }

    fn type_names(&self) -> Vec<String> {
        let mut v: Vec<String> = ["number", "unsigned", "float", "symbol"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(self.types.keys().cloned());
        v
    }

    fn ty(&mut self, t: &ast::Ident) -> Option<Ty> {
        if let Some(b) = base_type(&t.name).or_else(|| self.types.get(&t.name).copied()) {
            return Some(b);
        }
        let names = self.type_names();
        self.err(
            t.span,
            ErrorKind::Type,
            format!(
                "unknown type `{}`{}",
                t.name,
                did_you_mean(&t.name, names.iter().map(String::as_str))
            ),
        );
        None
    }

    /// Whether `name` may be declared (not reserved, not a store table).
    fn check_new_name(&mut self, name: &ast::Ident) -> bool {
        if ast::is_reserved(&name.name) {
            self.err(
                name.span,
                ErrorKind::Declaration,
                format!(
                    "`{}` is a built-in name and cannot name a relation",
                    name.name
                ),
            );
            return false;
        }
        if self.schema.table(&name.name).is_some() {
            self.err(
                name.span,
                ErrorKind::Declaration,
                format!(
                    "`{}` is a store table (an input relation) and cannot be declared again; choose another name",
                    name.name
                ),
            );
            return false;
        }
        true
    }

    fn declare(&mut self, d: &ast::Decl) {
        if let Some(&prev) = self.by_name.get(&d.name.name) {
            let (line, _) = self
                .src
                .line_col(self.decl_span.get(&prev).copied().unwrap_or_default().start);
            self.err(
                d.name.span,
                ErrorKind::Declaration,
                format!("`{}` is already declared on line {line}", d.name.name),
            );
            return;
        }
        if !self.check_new_name(&d.name) {
            return;
        }
        let mut columns = Vec::new();
        let mut ok = true;
        for (a, t) in &d.attrs {
            if columns.iter().any(|(n, _): &(String, Ty)| *n == a.name) {
                self.err(
                    a.span,
                    ErrorKind::Declaration,
                    format!("the column `{}` appears twice in this declaration", a.name),
                );
                ok = false;
            }
            match self.ty(t) {
                Some(ty) => columns.push((a.name.clone(), ty)),
                None => ok = false,
            }
        }
        if !ok {
            return;
        }
        let id = self.rels.len();
        self.rels.push(RelInfo {
            name: d.name.name.clone(),
            columns,
            input: None,
        });
        self.by_name.insert(d.name.name.clone(), id);
        self.decl_span.insert(id, d.name.span);
    }

    /// Resolve a relation name (declared, or a store table) or report it.
    fn relation(&mut self, name: &ast::Ident) -> Option<RelId> {
        if let Some(&id) = self.by_name.get(&name.name) {
            return Some(id);
        }
        if let Some(t) = self.schema.table(&name.name) {
            let id = self.rels.len();
            self.rels.push(RelInfo {
                name: t.name.clone(),
                columns: t.columns.iter().map(|c| (c.name.clone(), c.ty)).collect(),
                input: Some(InputSpec {
                    table: t.name.clone(),
                    columns: t.columns.iter().map(|c| c.name.clone()).collect(),
                    filter: String::new(),
                }),
            });
            self.by_name.insert(name.name.clone(), id);
            return Some(id);
        }
        let mut names: Vec<&str> = self.rels.iter().map(|r| r.name.as_str()).collect();
        names.extend(self.schema.tables.iter().map(|t| t.name.as_str()));
        let hint = did_you_mean(&name.name, names);
        self.err(
            name.span,
            ErrorKind::UnknownRelation,
            format!(
                "unknown relation `{}`{hint}{}",
                name.name,
                if hint.is_empty() {
                    " (declare it with `.decl`, or use a store table: `cudalog rules list --tables`)"
                } else {
                    ""
                }
            ),
        );
        None
    }

    fn lint(&mut self, l: &ast::LintDecl) -> Option<Lint> {
        let rel = *self.by_name.get(&l.name.name)?;
        let info = &self.rels[rel];
        if info.input.is_some() {
            return None; // reported by check_new_name
        }
        let find = |n: &str| info.columns.iter().position(|(c, _)| c == n);
        let function_col = find("function_id");
        let line_col = find("line");
        let col_col = find("col");
        let severity_col = find("severity");
        if let Some(p) = severity_col
            && self.rels[rel].columns[p].1 != Ty::Symbol
        {
            let msg = format!(
                "the column `severity` of the lint relation `{}` must be a symbol (`note`, `warning` or `error`)",
                l.name.name
            );
            let span = self.decl_span.get(&rel).copied().unwrap_or(l.name.span);
            self.err(span, ErrorKind::Type, msg);
            return None;
        }
        for (want, pos) in [
            ("function_id", function_col),
            ("line", line_col),
            ("col", col_col),
        ] {
            match pos {
                None if want != "col" => {
                    let msg = format!(
                        "the lint relation `{}` needs a column `{want}: number` (its findings are placed at a function's line)",
                        l.name.name
                    );
                    let span = self.decl_span.get(&rel).copied().unwrap_or(l.name.span);
                    self.err(span, ErrorKind::Declaration, msg);
                    return None;
                }
                Some(p) if self.rels[rel].columns[p].1 != Ty::Number => {
                    let msg = format!(
                        "the column `{want}` of the lint relation `{}` must be a number",
                        l.name.name
                    );
                    let span = self.decl_span.get(&rel).copied().unwrap_or(l.name.span);
                    self.err(span, ErrorKind::Type, msg);
                    return None;
                }
                _ => {}
            }
        }
        // Placeholders must name columns.
        let cols: Vec<String> = self.rels[rel].columns.iter().map(|c| c.0.clone()).collect();
        for name in placeholders(&l.message) {
            if !cols.contains(&name) {
                let hint = did_you_mean(&name, cols.iter().map(String::as_str));
                self.err(
                    l.message_span,
                    ErrorKind::UnknownColumn,
                    format!(
                        "the message uses `{{{name}}}` but `{}` has no column `{name}`{hint}",
                        l.name.name
                    ),
                );
                return None;
            }
        }
        Some(Lint {
            rel,
            name: l.name.name.clone(),
            severity: l.severity,
            message: l.message.clone(),
            summary: if l.doc.is_empty() {
                l.message.clone()
            } else {
                l.doc.clone()
            },
            function_col: function_col?,
            line_col: line_col?,
            col_col,
            severity_col,
            span: l.name.span,
        })
    }

    fn clause(&mut self, c: &ast::Clause) -> Vec<CRule> {
        let mut out = Vec::new();
        let bodies: Vec<&[Literal]> = if c.body.is_empty() {
            vec![&[]]
        } else {
            c.body.iter().map(|b| b.as_slice()).collect()
        };
        for head in &c.heads {
            for body in &bodies {
                let before = self.errors.len();
                let r = RuleCx::new(self, c.span).rule(head, body);
                if self.errors.len() == before
                    && let Some(r) = r
                {
                    out.push(r);
                }
            }
        }
        out
    }

    /// Load only the columns the program uses of each input relation
    /// (all of them when an aggregate counts its rows).
    fn project_inputs(&mut self, rules: &mut [CRule]) {
        self.filter_inputs(rules);
        let mut used: HashMap<RelId, BTreeSet<usize>> = HashMap::new();
        for r in rules.iter() {
            visit_atoms(&r.body, &mut |rel, args| {
                let e = used.entry(rel).or_default();
                for (i, a) in args.iter().enumerate() {
                    if a.is_some() {
                        e.insert(i);
                    }
                }
            });
        }
        let mut remap: HashMap<RelId, Vec<Option<usize>>> = HashMap::new();
        for (id, rel) in self.rels.iter_mut().enumerate() {
            let Some(spec) = &mut rel.input else { continue };
            if self.counted_inputs.contains(&id) {
                continue;
            }
            let keep: Vec<usize> = used
                .get(&id)
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default();
            let mut map = vec![None; rel.columns.len()];
            for (new, &old) in keep.iter().enumerate() {
                map[old] = Some(new);
            }
            rel.columns = keep.iter().map(|&i| rel.columns[i].clone()).collect();
            spec.columns = keep.iter().map(|&i| spec.columns[i].clone()).collect();
            remap.insert(id, map);
        }
        for r in rules.iter_mut() {
            remap_atoms(&mut r.body, &remap);
        }
    }
}

impl Cx<'_> {
    /// Give each input relation whose every atom (positive, negated or in
    /// an aggregate) binds some columns to integer or string constants the
    /// SQL condition "matches one of those atoms", so that the store loads
    /// only rows a rule can use. Dropping rows no atom can match changes no
    /// result, counts included.
    fn filter_inputs(&mut self, rules: &[CRule]) {
        // Per relation: one conjunction per atom (None: an atom with no
        // constant and no joined restriction, so every row may match).
        let mut atoms: HashMap<RelId, Vec<Option<Vec<String>>>> = HashMap::new();
        let rels = &self.rels;
        let schema = self.schema;
        for r in rules {
            visit_atoms(&r.body, &mut |rel, args| {
                let Some(spec) = &rels[rel].input else { return };
                let mut conj = constant_conditions(spec, args);
                for (i, a) in args.iter().enumerate() {
                    let Some(CExpr {
                        kind: CExprKind::Var(v),
                        ..
                    }) = a
                    else {
                        continue;
                    };
                    let Some(col) = spec.columns.get(i) else {
                        continue;
                    };
                    // (issue 9, session 7) Semi-joins: a column bound to a
                    // variable that positive atoms of the rule's body also
                    // bind can only take their values (an aggregate's or a
                    // negation's atom sees the rule's bindings too).
                    // (One source: more `IN`s cost SQLite more than the
                    // rows they save.)
                    for src in var_sources(schema, rels, rules, &r.body, *v, rel, 0)
                        .into_iter()
                        .take(1)
                    {
                        conj.push(in_condition(schema, &spec.table, col, &src));
                    }
                }
                atoms
                    .entry(rel)
                    .or_default()
                    .push((!conj.is_empty()).then_some(conj));
            });
        }
        for (rel, list) in atoms {
            if list.iter().any(Option::is_none) {
                continue;
            }
            let mut disj: Vec<String> = list
                .into_iter()
                .flatten()
                .map(|c| format!("({})", c.join(" AND ")))
                .collect();
            disj.sort();
            disj.dedup();
            if let Some(spec) = &mut self.rels[rel].input {
                spec.filter = disj.join(" OR ");
            }
        }
    }
}

/// `column = constant` for each argument of an input atom that is an
/// integer or string constant.
fn constant_conditions(spec: &InputSpec, args: &[Option<CExpr>]) -> Vec<String> {
    let mut conj = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let Some(a) = a else { continue };
        let lit = match &a.kind {
            CExprKind::Const(Const::Num(n)) => n.to_string(),
            CExprKind::Const(Const::Str(t)) => format!("'{}'", t.replace('\'', "''")),
            _ => continue,
        };
        if let Some(col) = spec.columns.get(i) {
            conj.push(format!("{} = {lit}", super::schema::quote(col)));
        }
    }
    conj
}

/// Depth of the search for a variable's source (through derived relations
/// and the other columns of a source atom).
const SOURCE_DEPTH: u32 = 3;

/// Whether a source atom is itself restricted by the sources of its other
/// variables (off: measured slower on the 8-copy store).
const NESTED_SOURCES: bool = false;

/// `col IN (src)`, and rows whose `col` is NULL when the column may hold
/// one (a nil joins a nil in rules; `IN` never holds for NULL).
fn in_condition(schema: &StoreSchema, table: &str, col: &str, src: &str) -> String {
    let q = super::schema::quote(col);
    let not_null = schema
        .table(table)
        .and_then(|t| t.columns.iter().find(|c| c.name == col))
        .is_some_and(|c| c.not_null);
    if not_null {
        format!("{q} IN ({src})")
    } else {
        format!("({q} IN ({src}) OR {q} IS NULL)")
    }
}

/// SQL queries each of whose rows sets include every value variable `v`
/// can take in `body`: per positive atom of `body` that binds `v` (not of
/// relation `not`, the atom being filtered), the column of an input atom
/// restricted by its constants and by the sources of its other variables,
/// or the key source of a derived relation's column. Empty when no
/// positive atom restricts `v`.
fn var_sources(
    schema: &StoreSchema,
    rels: &[RelInfo],
    rules: &[CRule],
    body: &[CLit],
    v: usize,
    not: RelId,
    depth: u32,
) -> Vec<String> {
    let mut out = Vec::new();
    if depth > SOURCE_DEPTH {
        return out;
    }
    for l in body {
        let CLit::Atom { rel, args, .. } = l else {
            continue;
        };
        if *rel == not {
            continue;
        }
        for (i, a) in args.iter().enumerate() {
            if !matches!(a, Some(CExpr { kind: CExprKind::Var(w), .. }) if *w == v) {
                continue;
            }
            let found = match &rels[*rel].input {
                Some(spec) => {
                    let mut conj = constant_conditions(spec, args);
                    // Nested semi-joins made SQLite's plans slower than
                    // the rows they saved: a source atom is restricted by
                    // its constants only.
                    let nested: &[Option<CExpr>] = if NESTED_SOURCES { args } else { &[] };
                    for (k, b) in nested.iter().enumerate() {
                        let Some(CExpr {
                            kind: CExprKind::Var(w),
                            ..
                        }) = b
                        else {
                            continue;
                        };
                        if k == i || *w == v {
                            continue;
                        }
                        let Some(col) = spec.columns.get(k) else {
                            continue;
                        };
                        for src in var_sources(schema, rels, rules, body, *w, *rel, depth + 1) {
                            conj.push(in_condition(schema, &spec.table, col, &src));
                        }
                    }
                    match (conj.is_empty(), spec.columns.get(i)) {
                        (false, Some(col)) => Some(format!(
                            "SELECT {} FROM {} WHERE {}",
                            super::schema::quote(col),
                            super::schema::quote(&spec.table),
                            conj.join(" AND ")
                        )),
                        _ => None,
                    }
                }
                None => key_source(schema, rels, rules, *rel, i, depth + 1),
            };
            if let Some(src) = found
                && !out.contains(&src)
            {
                out.push(src);
            }
        }
    }
    out
}

/// An SQL query whose rows include every value column `col` of derived
/// relation `rel` can take: the union over its rules of a source of the
/// variable each puts there. `None` when a rule's is not restricted.
fn key_source(
    schema: &StoreSchema,
    rels: &[RelInfo],
    rules: &[CRule],
    rel: RelId,
    col: usize,
    depth: u32,
) -> Option<String> {
    if depth > SOURCE_DEPTH {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    for r in rules.iter().filter(|r| r.head == rel) {
        let CExprKind::Var(v) = r.head_args.get(col)?.kind else {
            return None;
        };
        let src = var_sources(schema, rels, rules, &r.body, v, usize::MAX, depth + 1)
            .into_iter()
            .next()?;
        if !parts.contains(&src) {
            parts.push(src);
        }
    }
    (!parts.is_empty()).then(|| parts.join(" UNION "))
}

/// `{name}` placeholders of a lint message (`{{` and `}}` are literal braces).
pub fn placeholders(msg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = msg;
    while let Some(i) = rest.find(['{', '}']) {
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('{')
            && let Some(j) = tail.find('}')
        {
            out.push(tail[1..j].trim().to_string());
            rest = &tail[j + 1..];
            continue;
        }
        rest = &tail[1..];
    }
    out
}

fn visit_atoms(body: &[CLit], f: &mut dyn FnMut(RelId, &[Option<CExpr>])) {
    for l in body {
        match l {
            CLit::Atom { rel, args, .. } | CLit::Neg { rel, args, .. } => {
                f(*rel, args);
                for a in args.iter().flatten() {
                    visit_expr_atoms(a, f);
                }
            }
            CLit::Cmp(_, a, b, _) | CLit::Match(a, b, _) | CLit::Contains(a, b, _) => {
                visit_expr_atoms(a, f);
                visit_expr_atoms(b, f);
            }
            CLit::Bool(_) => {}
        }
    }
}

fn visit_expr_atoms(e: &CExpr, f: &mut dyn FnMut(RelId, &[Option<CExpr>])) {
    match &e.kind {
        CExprKind::Agg(a) => {
            visit_atoms(&a.body, f);
            if let Some(t) = &a.target {
                visit_expr_atoms(t, f);
            }
        }
        CExprKind::Bin(_, a, b) => {
            visit_expr_atoms(a, f);
            visit_expr_atoms(b, f);
        }
        CExprKind::Neg(a) => visit_expr_atoms(a, f),
        CExprKind::Call(_, args) => args.iter().for_each(|a| visit_expr_atoms(a, f)),
        _ => {}
    }
}

fn remap_atoms(body: &mut [CLit], remap: &HashMap<RelId, Vec<Option<usize>>>) {
    for l in body {
        match l {
            CLit::Atom { rel, args, .. } | CLit::Neg { rel, args, .. } => {
                if let Some(map) = remap.get(rel) {
                    let n = map.iter().flatten().count();
                    let mut new = vec![None; n];
                    for (old, a) in std::mem::take(args).into_iter().enumerate() {
                        if let Some(p) = map[old] {
                            new[p] = a;
                        }
                    }
                    *args = new;
                }
                for a in args.iter_mut().flatten() {
                    remap_expr(a, remap);
                }
            }
            CLit::Cmp(_, a, b, _) | CLit::Match(a, b, _) | CLit::Contains(a, b, _) => {
                remap_expr(a, remap);
                remap_expr(b, remap);
            }
            CLit::Bool(_) => {}
        }
    }
}

fn remap_expr(e: &mut CExpr, remap: &HashMap<RelId, Vec<Option<usize>>>) {
    match &mut e.kind {
        CExprKind::Agg(a) => {
            remap_atoms(&mut a.body, remap);
            if let Some(t) = &mut a.target {
                remap_expr(t, remap);
            }
        }
        CExprKind::Bin(_, a, b) => {
            remap_expr(a, remap);
            remap_expr(b, remap);
        }
        CExprKind::Neg(a) => remap_expr(a, remap),
        CExprKind::Call(_, args) => args.iter_mut().for_each(|a| remap_expr(a, remap)),
        _ => {}
    }
}

/// Per-rule state: variable slots, types and where they came from.
struct RuleCx<'c, 'a> {
    cx: &'c mut Cx<'a>,
    span: Span,
    names: Vec<String>,
    /// Type of each slot and a description of where it was fixed.
    tys: Vec<Option<(Ty, String)>>,
    outer: HashMap<String, usize>,
}

impl<'c, 'a> RuleCx<'c, 'a> {
    fn new(cx: &'c mut Cx<'a>, span: Span) -> Self {
        RuleCx {
            cx,
            span,
            names: Vec::new(),
            tys: Vec::new(),
            outer: HashMap::new(),
        }
    }

    fn slot(&mut self, name: &str) -> usize {
        self.names.push(name.to_string());
        self.tys.push(None);
        self.names.len() - 1
    }

    fn rule(mut self, head: &ast::Atom, body: &[Literal]) -> Option<CRule> {
        let before = self.cx.errors.len();
        // Outer variables: the head's and the body's outside aggregates.
        let mut outer_names = Vec::new();
        for e in head.exprs() {
            outer_vars(e, &mut outer_names);
        }
        for l in body {
            match l {
                Literal::Atom(a) | Literal::Neg(a, _) => a
                    .exprs()
                    .into_iter()
                    .for_each(|e| outer_vars(e, &mut outer_names)),
                Literal::Cmp(_, a, b, _) => {
                    outer_vars(a, &mut outer_names);
                    outer_vars(b, &mut outer_names);
                }
                Literal::Constraint(_, args, _) => {
                    args.iter().for_each(|e| outer_vars(e, &mut outer_names))
                }
                Literal::Bool(..) => {}
            }
        }
        for n in outer_names {
            if !self.outer.contains_key(&n) {
                let s = self.slot(&n);
                self.outer.insert(n, s);
            }
        }
        let scope = self.outer.clone();
        let cbody: Vec<CLit> = body
            .iter()
            .filter_map(|l| self.literal(l, &scope, false))
            .collect();
        let head_rel = self.cx.relation(&head.rel)?;
        if self.cx.rels[head_rel].input.is_some() {
            self.cx.err(
                head.rel.span,
                ErrorKind::Declaration,
                format!(
                    "`{}` is a store table (an input); rules cannot add rows to it — declare a new relation with `.decl`",
                    head.rel.name
                ),
            );
            return None;
        }
        let Args::Positional(hargs) = &head.args else {
            return None;
        };
        let want = self.cx.rels[head_rel].columns.len();
        if hargs.len() != want {
            let cols = describe_columns(&self.cx.rels[head_rel].columns);
            self.cx.err(
                head.span,
                ErrorKind::Arity,
                format!(
                    "`{}` has {want} column(s) ({cols}) but this head gives {}",
                    head.rel.name,
                    hargs.len()
                ),
            );
            return None;
        }
        let mut head_args = Vec::new();
        for e in hargs {
            if let Expr::Wild(s) = e {
                self.cx.err(
                    *s,
                    ErrorKind::Unbound,
                    "`_` cannot appear in a head: every column of a derived tuple needs a value",
                );
                return None;
            }
            if let Expr::Agg(a) = e {
                self.cx.err(
                    a.span,
                    ErrorKind::Parse,
                    "aggregates cannot appear in a head; bind them in the body (`N = count : { … }`)",
                );
                return None;
            }
            head_args.push(self.expr(e, &scope, false)?);
        }
        if self.cx.errors.len() > before {
            return None;
        }
        // Types.
        self.infer_types(&cbody);
        for (i, e) in head_args.iter().enumerate() {
            let (col, ty) = self.cx.rels[head_rel].columns[i].clone();
            let what = format!("column `{col}` of `{}`", head.rel.name);
            self.expect_type(e, ty, &what);
        }
        self.check_types(&cbody);
        if self.cx.errors.len() > before {
            return None;
        }
        // Range restriction.
        let mut bound = vec![false; self.names.len()];
        self.bind(&cbody, &mut bound);
        for e in &head_args {
            self.require_bound(e, &bound, "the head");
        }
        self.check_bound(&cbody, &bound);
        if self.cx.errors.len() > before {
            return None;
        }
        Some(CRule {
            head: head_rel,
            head_args,
            body: cbody,
            var_names: self.names,
            span: self.span,
        })
    }

    fn literal(
        &mut self,
        l: &Literal,
        scope: &HashMap<String, usize>,
        in_agg: bool,
    ) -> Option<CLit> {
        Some(match l {
            Literal::Atom(a) => {
                let (rel, args) = self.atom(a, scope, in_agg)?;
                CLit::Atom {
                    rel,
                    args,
                    span: a.span,
                }
            }
            Literal::Neg(a, span) => {
                let (rel, args) = self.atom(a, scope, in_agg)?;
                CLit::Neg {
                    rel,
                    args,
                    span: *span,
                }
            }
            Literal::Cmp(op, a, b, span) => {
                let a = self.expr(a, scope, in_agg);
                let b = self.expr(b, scope, in_agg);
                CLit::Cmp(*op, a?, b?, *span)
            }
            Literal::Constraint(name, args, span) => {
                if args.len() != 2 {
                    self.cx.err(
                        *span,
                        ErrorKind::Arity,
                        format!("`{}` takes 2 arguments, not {}", name.name, args.len()),
                    );
                    return None;
                }
                let a = self.expr(&args[0], scope, in_agg);
                let b = self.expr(&args[1], scope, in_agg);
                if name.name == "match" {
                    if let Some(CExpr {
                        kind: CExprKind::Const(Const::Str(re)),
                        span,
                    }) = &a
                        && let Err(e) = regex::Regex::new(&format!("^(?:{re})$"))
                    {
                        let first = e
                            .to_string()
                            .lines()
                            .last()
                            .unwrap_or("")
                            .trim()
                            .to_string();
                        self.cx.err(
                            *span,
                            ErrorKind::Parse,
                            format!("this regular expression is not valid ({first})"),
                        );
                        return None;
                    }
                    CLit::Match(a?, b?, *span)
                } else {
                    CLit::Contains(a?, b?, *span)
                }
            }
            Literal::Bool(b, _) => CLit::Bool(*b),
        })
    }

    fn atom(
        &mut self,
        a: &ast::Atom,
        scope: &HashMap<String, usize>,
        in_agg: bool,
    ) -> Option<(RelId, Vec<Option<CExpr>>)> {
        let rel = self.cx.relation(&a.rel)?;
        if in_agg && self.cx.rels[rel].input.is_some() {
            self.cx.counted_inputs.insert(rel);
        }
        let columns = self.cx.rels[rel].columns.clone();
        let mut args: Vec<Option<CExpr>> = vec![None; columns.len()];
        match &a.args {
            Args::Positional(v) => {
                if v.len() != columns.len() {
                    self.cx.err(
                        a.span,
                        ErrorKind::Arity,
                        format!(
                            "`{}` has {} column(s) ({}) but {} argument(s) are given; name the columns you need (`{}({}: X)`) to skip the others",
                            a.rel.name,
                            columns.len(),
                            describe_columns(&columns),
                            v.len(),
                            a.rel.name,
                            columns.first().map(|c| c.0.as_str()).unwrap_or("col")
                        ),
                    );
                    return None;
                }
                for (i, e) in v.iter().enumerate() {
                    if !matches!(e, Expr::Wild(_)) {
                        args[i] = Some(self.expr(e, scope, in_agg)?);
                    }
                }
            }
            Args::Named(v) => {
                for (col, e) in v {
                    let Some(i) = columns.iter().position(|(c, _)| *c == col.name) else {
                        let hint = did_you_mean(&col.name, columns.iter().map(|c| c.0.as_str()));
                        self.cx.err(
                            col.span,
                            ErrorKind::UnknownColumn,
                            format!(
                                "`{}` has no column `{}`{}",
                                a.rel.name,
                                col.name,
                                if hint.is_empty() {
                                    format!(" (its columns: {})", describe_columns(&columns))
                                } else {
                                    hint
                                }
                            ),
                        );
                        return None;
                    };
                    if args[i].is_some() {
                        self.cx.err(
                            col.span,
                            ErrorKind::UnknownColumn,
                            format!("the column `{}` is given twice in this atom", col.name),
                        );
                        return None;
                    }
                    if !matches!(e, Expr::Wild(_)) {
                        args[i] = Some(self.expr(e, scope, in_agg)?);
                    }
                }
            }
        }
        Some((rel, args))
    }

    fn expr(&mut self, e: &Expr, scope: &HashMap<String, usize>, in_agg: bool) -> Option<CExpr> {
        let span = e.span();
        let kind = match e {
            Expr::Var(id) => CExprKind::Var(*scope.get(&id.name)?),
            Expr::Wild(s) => {
                self.cx.err(
                    *s,
                    ErrorKind::Unbound,
                    "`_` stands for \"any value\" and can only be an atom's argument",
                );
                return None;
            }
            Expr::Num(n, _) => CExprKind::Const(Const::Num(*n)),
            Expr::Float(f, _) => CExprKind::Const(Const::Float(*f)),
            Expr::Str(s, _) => CExprKind::Const(Const::Str(s.as_str().into())),
            Expr::Nil(_) => CExprKind::Const(Const::Nil),
            Expr::Bin(op, a, b, _) => {
                let a = self.expr(a, scope, in_agg);
                let b = self.expr(b, scope, in_agg);
                CExprKind::Bin(*op, Box::new(a?), Box::new(b?))
            }
            Expr::Neg(a, _) => CExprKind::Neg(Box::new(self.expr(a, scope, in_agg)?)),
            Expr::Call(name, args, _) => {
                let (f, arity) = match name.name.as_str() {
                    "cat" => (Functor::Cat, usize::MAX),
                    "strlen" => (Functor::Strlen, 1),
                    "substr" => (Functor::Substr, 3),
                    "to_number" => (Functor::ToNumber, 1),
                    "to_string" => (Functor::ToString, 1),
                    "to_float" => (Functor::ToFloat, 1),
                    "min" => (Functor::Min, 2),
                    "max" => (Functor::Max, 2),
                    _ => (Functor::Abs, 1),
                };
                if (arity == usize::MAX && args.is_empty())
                    || (arity != usize::MAX && args.len() != arity)
                {
                    self.cx.err(
                        span,
                        ErrorKind::Arity,
                        format!(
                            "`{}` takes {} argument(s), not {}",
                            name.name,
                            if arity == usize::MAX {
                                "one or more".to_string()
                            } else {
                                arity.to_string()
                            },
                            args.len()
                        ),
                    );
                    return None;
                }
                let mut v = Vec::new();
                for a in args {
                    v.push(self.expr(a, scope, in_agg)?);
                }
                CExprKind::Call(f, v)
            }
            Expr::Agg(a) => {
                if in_agg {
                    self.cx.err(
                        a.span,
                        ErrorKind::Parse,
                        "aggregates cannot be nested; compute the inner one in a relation of its own",
                    );
                    return None;
                }
                // Variables of the aggregate that also occur outside are
                // correlated (bound outside); the others are local to it.
                let mut names = Vec::new();
                e.vars(&mut names);
                let mut inner = scope.clone();
                let mut correlated = BTreeSet::new();
                for n in names {
                    if let Some(&s) = self.outer.get(&n.name) {
                        correlated.insert(s);
                    } else if !inner.contains_key(&n.name) {
                        let s = self.slot(&n.name);
                        inner.insert(n.name.clone(), s);
                    }
                }
                let target = match &a.target {
                    Some(t) => Some(self.expr(t, &inner, true)?),
                    None => None,
                };
                let mut body = Vec::new();
                for l in &a.body {
                    body.push(self.literal(l, &inner, true)?);
                }
                CExprKind::Agg(Box::new(CAgg {
                    kind: a.kind,
                    target,
                    body,
                    correlated: correlated.into_iter().collect(),
                }))
            }
        };
        Some(CExpr { kind, span })
    }

    // ---- types ----

    fn set_ty(&mut self, slot: usize, ty: Ty, why: String, span: Span) {
        match &self.tys[slot] {
            None => self.tys[slot] = Some((ty, why)),
            Some((t, prev)) if *t != ty => {
                let msg = format!(
                    "`{}` is a {} here ({why}) but a {} in {prev}",
                    self.names[slot],
                    ty.as_str(),
                    t.as_str()
                );
                self.cx.err(span, ErrorKind::Type, msg);
            }
            _ => {}
        }
    }

    fn infer_types(&mut self, body: &[CLit]) {
        // Atom columns fix the types of variables written as arguments.
        let mut atoms = Vec::new();
        collect_atoms(body, &mut atoms);
        for (rel, args) in atoms {
            for (i, a) in args.iter().enumerate() {
                if let Some(CExpr {
                    kind: CExprKind::Var(s),
                    span,
                }) = a
                {
                    let (col, ty) = self.cx.rels[rel].columns[i].clone();
                    let why = format!("column `{col}` of `{}`", self.cx.rels[rel].name);
                    self.set_ty(*s, ty, why, *span);
                }
            }
        }
        // `X = e` gives X the type of e, until nothing changes.
        let mut cmps = Vec::new();
        collect_cmps(body, &mut cmps);
        loop {
            let mut changed = false;
            for (a, b) in &cmps {
                for (x, e) in [(a, b), (b, a)] {
                    if let CExprKind::Var(s) = x.kind
                        && self.tys[s].is_none()
                        && let Some(t) = self.peek_type(e)
                    {
                        let why = format!(
                            "the value of `{}`",
                            self.cx.src.text[e.span.start..e.span.end].trim()
                        );
                        self.tys[s] = Some((t, why));
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The type of `e` as far as known, without reporting errors.
    fn peek_type(&self, e: &CExpr) -> Option<Ty> {
        match &e.kind {
            CExprKind::Var(s) => self.tys[*s].as_ref().map(|t| t.0),
            CExprKind::Const(c) => match c {
                Const::Num(_) => Some(Ty::Number),
                Const::Float(_) => Some(Ty::Float),
                Const::Str(_) => Some(Ty::Symbol),
                Const::Nil => None,
            },
            CExprKind::Bin(_, a, b) => self.peek_type(a).or_else(|| self.peek_type(b)),
            CExprKind::Neg(a) => self.peek_type(a),
            CExprKind::Call(f, args) => match f {
                Functor::Cat | Functor::Substr | Functor::ToString => Some(Ty::Symbol),
                Functor::Strlen | Functor::ToNumber => Some(Ty::Number),
                Functor::ToFloat => Some(Ty::Float),
                Functor::Min | Functor::Max | Functor::Abs => {
                    args.iter().find_map(|a| self.peek_type(a))
                }
            },
            CExprKind::Agg(a) => match a.kind {
                AggKind::Count => Some(Ty::Number),
                _ => a.target.as_ref().and_then(|t| self.peek_type(t)),
            },
        }
    }

    fn text(&self, span: Span) -> String {
        let t = self.cx.src.text[span.start..span.end].trim();
        let t: String = t.chars().take(40).collect();
        t
    }

    /// Type-check `e`; `None` when unknown (nil, untyped variable) or after an error.
    fn type_of(&mut self, e: &CExpr) -> Option<Ty> {
        match &e.kind {
            CExprKind::Bin(op, a, b) => {
                let ta = self.type_of(a);
                let tb = self.type_of(b);
                for (t, x) in [(ta, a), (tb, b)] {
                    if t == Some(Ty::Symbol) {
                        let msg = format!(
                            "`{}` is a symbol and `{}` needs numbers; join symbols with cat(…)",
                            self.text(x.span),
                            op.as_str()
                        );
                        self.cx.err(x.span, ErrorKind::Type, msg);
                        return None;
                    }
                }
                if let (Some(x), Some(y)) = (ta, tb)
                    && x != y
                {
                    let msg = format!(
                        "`{}` mixes a {} and a {}; convert one with to_float(…) or to_number(…)",
                        op.as_str(),
                        x.as_str(),
                        y.as_str()
                    );
                    self.cx.err(e.span, ErrorKind::Type, msg);
                    return None;
                }
                if matches!(op, BinOp::Rem) && ta == Some(Ty::Float) {
                    self.cx
                        .err(e.span, ErrorKind::Type, "`%` needs numbers, not floats");
                    return None;
                }
                ta.or(tb)
            }
            CExprKind::Neg(a) => {
                let t = self.type_of(a);
                if t == Some(Ty::Symbol) {
                    self.cx
                        .err(e.span, ErrorKind::Type, "a symbol cannot be negated");
                    return None;
                }
                t
            }
            CExprKind::Call(f, args) => {
                let want: Vec<Option<Ty>> = match f {
                    Functor::Cat => vec![Some(Ty::Symbol); args.len()],
                    Functor::Strlen | Functor::ToNumber => vec![Some(Ty::Symbol)],
                    Functor::Substr => vec![Some(Ty::Symbol), Some(Ty::Number), Some(Ty::Number)],
                    Functor::ToString => vec![None],
                    Functor::ToFloat => vec![Some(Ty::Number)],
                    Functor::Min | Functor::Max | Functor::Abs => vec![None; args.len()],
                };
                let mut tys = Vec::new();
                for (a, w) in args.iter().zip(want) {
                    let t = self.type_of(a);
                    if let (Some(w), Some(t)) = (w, t)
                        && w != t
                    {
                        let msg = format!(
                            "`{}` is a {} but this argument must be a {}",
                            self.text(a.span),
                            t.as_str(),
                            w.as_str()
                        );
                        self.cx.err(a.span, ErrorKind::Type, msg);
                        return None;
                    }
                    tys.push(t);
                }
                match f {
                    Functor::Cat | Functor::Substr | Functor::ToString => Some(Ty::Symbol),
                    Functor::Strlen | Functor::ToNumber => Some(Ty::Number),
                    Functor::ToFloat => Some(Ty::Float),
                    Functor::Min | Functor::Max | Functor::Abs => {
                        let known: Vec<Ty> = tys.iter().flatten().copied().collect();
                        if known.windows(2).any(|w| w[0] != w[1]) {
                            self.cx.err(
                                e.span,
                                ErrorKind::Type,
                                "the arguments have different types",
                            );
                            return None;
                        }
                        if *f == Functor::Abs && known.first() == Some(&Ty::Symbol) {
                            self.cx.err(e.span, ErrorKind::Type, "`abs` needs a number");
                            return None;
                        }
                        known.first().copied()
                    }
                }
            }
            CExprKind::Agg(a) => {
                self.check_types(&a.body);
                let t = match &a.target {
                    Some(t) => self.type_of(t),
                    None => None,
                };
                match a.kind {
                    AggKind::Count => Some(Ty::Number),
                    AggKind::Sum if t == Some(Ty::Symbol) => {
                        self.cx.err(
                            e.span,
                            ErrorKind::Type,
                            "`sum` needs a number or float target, not a symbol",
                        );
                        None
                    }
                    _ => t,
                }
            }
            _ => self.peek_type(e),
        }
    }

    fn expect_type(&mut self, e: &CExpr, ty: Ty, what: &str) {
        if let Some(t) = self.type_of(e)
            && t != ty
        {
            let msg = format!(
                "`{}` is a {} but {what} is a {}",
                self.text(e.span),
                t.as_str(),
                ty.as_str()
            );
            self.cx.err(e.span, ErrorKind::Type, msg);
        }
    }

    fn check_types(&mut self, body: &[CLit]) {
        for l in body {
            match l {
                CLit::Atom { rel, args, .. } | CLit::Neg { rel, args, .. } => {
                    for (i, a) in args.iter().enumerate() {
                        if let Some(a) = a {
                            let (col, ty) = self.cx.rels[*rel].columns[i].clone();
                            let what = format!("column `{col}` of `{}`", self.cx.rels[*rel].name);
                            self.expect_type(a, ty, &what);
                        }
                    }
                }
                CLit::Cmp(op, a, b, span) => {
                    let ta = self.type_of(a);
                    let tb = self.type_of(b);
                    if let (Some(x), Some(y)) = (ta, tb)
                        && x != y
                    {
                        let msg = format!(
                            "`{}` compares a {} with a {}",
                            op.as_str(),
                            x.as_str(),
                            y.as_str()
                        );
                        self.cx.err(*span, ErrorKind::Type, msg);
                    }
                }
                CLit::Match(a, b, _) | CLit::Contains(a, b, _) => {
                    for x in [a, b] {
                        if let Some(t) = self.type_of(x)
                            && t != Ty::Symbol
                        {
                            let msg = format!(
                                "`{}` is a {} but this argument must be a symbol",
                                self.text(x.span),
                                t.as_str()
                            );
                            self.cx.err(x.span, ErrorKind::Type, msg);
                        }
                    }
                }
                CLit::Bool(_) => {}
            }
        }
    }

    // ---- binding ----

    fn bind(&self, body: &[CLit], bound: &mut [bool]) {
        loop {
            let mut changed = false;
            for l in body {
                match l {
                    CLit::Atom { args, .. } => {
                        for a in args.iter().flatten() {
                            if let CExprKind::Var(s) = a.kind
                                && !bound[s]
                            {
                                bound[s] = true;
                                changed = true;
                            }
                        }
                    }
                    CLit::Cmp(CmpOp::Eq, a, b, _) => {
                        for (x, e) in [(a, b), (b, a)] {
                            if let CExprKind::Var(s) = x.kind
                                && !bound[s]
                                && expr_bound(e, bound)
                            {
                                bound[s] = true;
                                changed = true;
                            }
                        }
                    }
                    _ => {}
                }
            }
            if !changed {
                return;
            }
        }
    }

    fn require_bound(&mut self, e: &CExpr, bound: &[bool], place: &str) {
        let mut vars = Vec::new();
        expr_vars(e, &mut vars);
        for (s, span) in vars {
            if !bound[s] {
                let msg = format!(
                    "the variable `{}` in {place} is not bound: it must appear as an argument of a positive atom of the body (or be set with `{} = …`)",
                    self.names[s], self.names[s]
                );
                self.cx.err(span, ErrorKind::Unbound, msg);
                return;
            }
        }
    }

    fn check_bound(&mut self, body: &[CLit], bound: &[bool]) {
        for l in body {
            match l {
                CLit::Atom { args, .. } => {
                    for a in args.iter().flatten() {
                        if !matches!(a.kind, CExprKind::Var(_)) {
                            self.require_bound(a, bound, "this argument");
                        }
                    }
                }
                CLit::Neg { args, .. } => {
                    for a in args.iter().flatten() {
                        let mut vars = Vec::new();
                        expr_vars(a, &mut vars);
                        if let Some((s, span)) = vars.into_iter().find(|(s, _)| !bound[*s]) {
                            let msg = format!(
                                "the variable `{}` in this negation is not bound: bind it in a positive atom, or write `_` for \"any value\"",
                                self.names[s]
                            );
                            self.cx.err(span, ErrorKind::Unbound, msg);
                            return;
                        }
                    }
                }
                CLit::Cmp(op, a, b, _) => {
                    if *op == CmpOp::Eq {
                        // `X = e` binds X when e is bound; one side at least must be.
                        let a_ok = expr_bound(a, bound);
                        let b_ok = expr_bound(b, bound);
                        if a_ok || b_ok {
                            if !a_ok {
                                self.require_bound(a, bound, "this comparison");
                            }
                            if !b_ok {
                                self.require_bound(b, bound, "this comparison");
                            }
                            self.check_aggs(a, bound);
                            self.check_aggs(b, bound);
                            continue;
                        }
                    }
                    self.require_bound(a, bound, "this comparison");
                    self.require_bound(b, bound, "this comparison");
                    self.check_aggs(a, bound);
                    self.check_aggs(b, bound);
                }
                CLit::Match(a, b, _) | CLit::Contains(a, b, _) => {
                    self.require_bound(a, bound, "this constraint");
                    self.require_bound(b, bound, "this constraint");
                }
                CLit::Bool(_) => {}
            }
        }
    }

    /// Inside an aggregate: correlated variables are bound outside, the
    /// body binds the rest, and the target must be bound by the body.
    fn check_aggs(&mut self, e: &CExpr, bound: &[bool]) {
        match &e.kind {
            CExprKind::Agg(a) => {
                for &s in &a.correlated {
                    if !bound[s] {
                        let msg = format!(
                            "the variable `{}` is used inside the aggregate and outside it, so it must be bound by a positive atom outside the aggregate",
                            self.names[s]
                        );
                        self.cx.err(e.span, ErrorKind::Unbound, msg);
                        return;
                    }
                }
                let mut inner = bound.to_vec();
                self.bind(&a.body, &mut inner);
                self.check_bound(&a.body, &inner);
                if let Some(t) = &a.target {
                    self.require_bound(t, &inner, "the aggregate's target");
                }
            }
            CExprKind::Bin(_, x, y) => {
                self.check_aggs(x, bound);
                self.check_aggs(y, bound);
            }
            CExprKind::Neg(x) => self.check_aggs(x, bound),
            CExprKind::Call(_, args) => {
                for a in args {
                    self.check_aggs(a, bound);
                }
            }
            _ => {}
        }
    }
}

fn describe_columns(cols: &[(String, Ty)]) -> String {
    cols.iter()
        .map(|(n, t)| format!("{n}: {}", t.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Variables of an expression outside aggregates (and the aggregates'
/// correlated variables).
fn outer_vars(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Var(i) => out.push(i.name.clone()),
        Expr::Bin(_, a, b, _) => {
            outer_vars(a, out);
            outer_vars(b, out);
        }
        Expr::Neg(a, _) => outer_vars(a, out),
        Expr::Call(_, args, _) => args.iter().for_each(|a| outer_vars(a, out)),
        _ => {}
    }
}

/// Whether every variable of `e` is bound (an aggregate: its correlated ones).
fn expr_bound(e: &CExpr, bound: &[bool]) -> bool {
    match &e.kind {
        CExprKind::Var(s) => bound[*s],
        CExprKind::Const(_) => true,
        CExprKind::Bin(_, a, b) => expr_bound(a, bound) && expr_bound(b, bound),
        CExprKind::Neg(a) => expr_bound(a, bound),
        CExprKind::Call(_, args) => args.iter().all(|a| expr_bound(a, bound)),
        CExprKind::Agg(a) => a.correlated.iter().all(|&s| bound[s]),
    }
}

/// Variables of `e` outside aggregates, with their spans.
fn expr_vars(e: &CExpr, out: &mut Vec<(usize, Span)>) {
    match &e.kind {
        CExprKind::Var(s) => out.push((*s, e.span)),
        CExprKind::Bin(_, a, b) => {
            expr_vars(a, out);
            expr_vars(b, out);
        }
        CExprKind::Neg(a) => expr_vars(a, out),
        CExprKind::Call(_, args) => args.iter().for_each(|a| expr_vars(a, out)),
        CExprKind::Const(_) | CExprKind::Agg(_) => {}
    }
}

fn collect_atoms<'b>(body: &'b [CLit], out: &mut Vec<(RelId, &'b [Option<CExpr>])>) {
    for l in body {
        match l {
            CLit::Atom { rel, args, .. } | CLit::Neg { rel, args, .. } => {
                out.push((*rel, args));
                for a in args.iter().flatten() {
                    collect_expr_atoms(a, out);
                }
            }
            CLit::Cmp(_, a, b, _) | CLit::Match(a, b, _) | CLit::Contains(a, b, _) => {
                collect_expr_atoms(a, out);
                collect_expr_atoms(b, out);
            }
            CLit::Bool(_) => {}
        }
    }
}

fn collect_expr_atoms<'b>(e: &'b CExpr, out: &mut Vec<(RelId, &'b [Option<CExpr>])>) {
    if let CExprKind::Agg(a) = &e.kind {
        collect_atoms(&a.body, out);
    }
}

fn collect_cmps<'b>(body: &'b [CLit], out: &mut Vec<(&'b CExpr, &'b CExpr)>) {
    for l in body {
        if let CLit::Cmp(CmpOp::Eq, a, b, _) = l {
            out.push((a, b));
            for x in [a, b] {
                if let CExprKind::Agg(g) = &x.kind {
                    collect_cmps(&g.body, out);
                }
            }
        }
    }
}

// ---- stratification ----

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dep {
    Pos,
    Neg,
    Agg,
}

/// Dependencies of a rule's body: (relation, kind, where).
fn body_deps(body: &[CLit], in_agg: bool, out: &mut Vec<(RelId, Dep, Span)>) {
    for l in body {
        match l {
            CLit::Atom { rel, args, span } => {
                out.push((*rel, if in_agg { Dep::Agg } else { Dep::Pos }, *span));
                for a in args.iter().flatten() {
                    expr_deps(a, out);
                }
            }
            CLit::Neg { rel, span, .. } => out.push((*rel, Dep::Neg, *span)),
            CLit::Cmp(_, a, b, _) | CLit::Match(a, b, _) | CLit::Contains(a, b, _) => {
                expr_deps(a, out);
                expr_deps(b, out);
            }
            CLit::Bool(_) => {}
        }
    }
}

fn expr_deps(e: &CExpr, out: &mut Vec<(RelId, Dep, Span)>) {
    match &e.kind {
        CExprKind::Agg(a) => {
            let mut inner = Vec::new();
            body_deps(&a.body, true, &mut inner);
            // Negations inside an aggregate are aggregate dependencies too.
            out.extend(
                inner
                    .into_iter()
                    .map(|(r, d, _)| (r, if d == Dep::Pos { Dep::Agg } else { d }, e.span)),
            );
        }
        CExprKind::Bin(_, a, b) => {
            expr_deps(a, out);
            expr_deps(b, out);
        }
        CExprKind::Neg(a) => expr_deps(a, out),
        CExprKind::Call(_, args) => args.iter().for_each(|a| expr_deps(a, out)),
        _ => {}
    }
}

fn stratify(cx: &Cx<'_>, rules: Vec<CRule>) -> Result<Vec<Stratum>, RuleError> {
    let n = cx.rels.len();
    // edges[h] = (body relation, kind, span) for rules with head h
    let mut edges: Vec<Vec<(RelId, Dep, Span)>> = vec![Vec::new(); n];
    for r in &rules {
        let mut deps = Vec::new();
        body_deps(&r.body, false, &mut deps);
        for d in deps {
            if cx.rels[d.0].input.is_none() {
                edges[r.head].push(d);
            }
        }
    }
    let sccs = tarjan(n, &edges);
    let mut comp = vec![0; n];
    for (i, c) in sccs.iter().enumerate() {
        for &r in c {
            comp[r] = i;
        }
    }
    // Negation or aggregation inside a component cannot be stratified.
    for (h, es) in edges.iter().enumerate() {
        for &(b, dep, span) in es {
            if dep != Dep::Pos && comp[b] == comp[h] {
                let path = cycle_path(b, h, &edges, &comp);
                let mut shown = vec![format!("`{}`", cx.rels[h].name)];
                let first = if dep == Dep::Neg {
                    format!("!`{}`", cx.rels[b].name)
                } else {
                    format!("aggregate over `{}`", cx.rels[b].name)
                };
                shown.push(first);
                for r in path.iter().skip(1) {
                    shown.push(format!("`{}`", cx.rels[*r].name));
                }
                let what = if dep == Dep::Neg {
                    "negation"
                } else {
                    "aggregation"
                };
                return Err(RuleError::at(
                    cx.src,
                    span,
                    ErrorKind::Unstratifiable,
                    format!(
                        "{what} through recursion cannot be stratified: the cycle {} ({} depends on itself)",
                        shown.join(" -> "),
                        format_args!("`{}`", cx.rels[h].name)
                    ),
                ));
            }
        }
    }
    let mut by_head: Vec<Vec<CRule>> = vec![Vec::new(); n];
    for r in rules {
        let h = r.head;
        by_head[h].push(r);
    }
    let mut strata = Vec::new();
    for c in sccs {
        let derived: Vec<RelId> = c
            .into_iter()
            .filter(|&r| cx.rels[r].input.is_none())
            .collect();
        if derived.is_empty() {
            continue;
        }
        let mut rules = Vec::new();
        for &r in &derived {
            rules.append(&mut by_head[r]);
        }
        let recursive = derived
            .iter()
            .any(|&h| edges[h].iter().any(|(b, _, _)| derived.contains(b)));
        strata.push(Stratum {
            rels: derived,
            rules,
            recursive,
        });
    }
    Ok(strata)
}

/// A path of relations from `from` to `to` inside one component (for messages).
fn cycle_path(
    from: RelId,
    to: RelId,
    edges: &[Vec<(RelId, Dep, Span)>],
    comp: &[usize],
) -> Vec<RelId> {
    let mut prev: HashMap<RelId, RelId> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(x) = queue.pop_front() {
        if x == to {
            let mut path = vec![to];
            let mut cur = to;
            while cur != from {
                cur = prev[&cur];
                path.push(cur);
            }
            path.reverse();
            return path;
        }
        for &(y, _, _) in &edges[x] {
            if comp[y] == comp[from] && seen.insert(y) {
                prev.insert(y, x);
                queue.push_back(y);
            }
        }
    }
    vec![from, to]
}

/// Strongly connected components, dependencies first (iterative Tarjan).
fn tarjan(n: usize, edges: &[Vec<(RelId, Dep, Span)>]) -> Vec<Vec<RelId>> {
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if *i < edges[v].len() {
                let w = edges[v][*i].0;
                *i += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut c = Vec::new();
                loop {
                    let w = stack.pop().expect("tarjan stack");
                    on_stack[w] = false;
                    c.push(w);
                    if w == v {
                        break;
                    }
                }
                c.sort_unstable();
                out.push(c);
            }
        }
    }
    out
}
