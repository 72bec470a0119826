//! The evaluator: in-memory, bottom-up, semi-naive, with hash-indexed joins
//! over store rows loaded once per session (see docs/ARCHITECTURE.md for
//! why this and not SQL).
//!
//! Relations are append-only sets of tuples in insertion order, so the
//! "delta" of a semi-naive iteration is a range of tuple numbers, and an
//! index (bound columns → tuple numbers, ascending) serves old, delta and
//! full views alike.

use super::ast::{AggKind, BinOp, CmpOp};
use super::compile::{
    CAgg, CExpr, CExprKind, CLit, CRule, Const, Functor, InputSpec, Program, RelId,
};
use super::schema::{Ty, quote};
use anyhow::{Context, Result};
use indexmap::IndexSet;
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use rustc_hash::{FxBuildHasher, FxHashMap};
use smallvec::SmallVec;
use std::cmp::Ordering;
use std::sync::Arc;

/// A value of the rule language. Symbols are interned in [`Symbols`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// SQL NULL (`nil`).
    Nil,
    /// Integer.
    Num(i64),
    /// Float (bits).
    Float(u64),
    /// Interned symbol.
    Sym(u32),
}

/// The symbol table of a session.
#[derive(Default)]
pub struct Symbols {
    map: FxHashMap<Arc<str>, u32>,
    strs: Vec<Arc<str>>,
}

impl Symbols {
    /// Intern `s`.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.map.get(s) {
            return i;
        }
        let a: Arc<str> = s.into();
        let i = self.strs.len() as u32;
        self.strs.push(a.clone());
        self.map.insert(a, i);
        i
    }

    /// The text of symbol `i`.
    pub fn get(&self, i: u32) -> &str {
        &self.strs[i as usize]
    }

    /// Render a value as text (nil as `nil`).
    pub fn show(&self, v: Value) -> String {
        match v {
            Value::Nil => "nil".into(),
            Value::Num(n) => n.to_string(),
            Value::Float(f) => f64::from_bits(f).to_string(),
            Value::Sym(s) => self.get(s).to_string(),
        }
    }

    /// A value as JSON.
    pub fn json(&self, v: Value) -> serde_json::Value {
        match v {
            Value::Nil => serde_json::Value::Null,
            Value::Num(n) => n.into(),
            Value::Float(f) => f64::from_bits(f).into(),
            Value::Sym(s) => self.get(s).into(),
        }
    }

    fn cmp(&self, a: Value, b: Value) -> Option<Ordering> {
        match (a, b) {
            (Value::Num(x), Value::Num(y)) => Some(x.cmp(&y)),
            (Value::Float(x), Value::Float(y)) => f64::from_bits(x).partial_cmp(&f64::from_bits(y)),
            (Value::Sym(x), Value::Sym(y)) => Some(self.get(x).cmp(self.get(y))),
            _ => None,
        }
    }
}

type Tuple = Box<[Value]>;
type Key = SmallVec<[Value; 3]>;

/// A set of tuples in insertion order, with hash indexes on column sets.
pub struct Relation {
    arity: usize,
    tuples: IndexSet<Tuple, FxBuildHasher>,
    indexes: FxHashMap<Vec<usize>, Index>,
}

#[derive(Default)]
struct Index {
    upto: usize,
    map: FxHashMap<Key, Vec<u32>>,
}

impl Relation {
    /// An empty relation of `arity` columns.
    pub fn new(arity: usize) -> Relation {
        Relation {
            arity,
            tuples: IndexSet::default(),
            indexes: FxHashMap::default(),
        }
    }

    /// Number of tuples.
    pub fn len(&self) -> usize {
        self.tuples.len()
    }

    /// Whether there are no tuples.
    pub fn is_empty(&self) -> bool {
        self.tuples.is_empty()
    }

    /// Number of columns.
    pub fn arity(&self) -> usize {
        self.arity
    }

    /// The tuples in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &[Value]> {
        self.tuples.iter().map(|t| &**t)
    }

    /// Add a tuple; whether it was new.
    pub fn insert(&mut self, t: Tuple) -> bool {
        debug_assert_eq!(t.len(), self.arity);
        self.tuples.insert(t)
    }

    fn ensure_index(&mut self, cols: &[usize]) {
        let idx = self.indexes.entry(cols.to_vec()).or_default();
        while idx.upto < self.tuples.len() {
            let t = &self.tuples[idx.upto];
            let key: Key = cols.iter().map(|&c| t[c]).collect();
            idx.map.entry(key).or_default().push(idx.upto as u32);
            idx.upto += 1;
        }
    }

    fn lookup(&self, cols: &[usize], key: &[Value]) -> &[u32] {
        self.indexes
            .get(cols)
            .and_then(|i| i.map.get(key))
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }
}

/// Which part of a relation a scan reads (semi-naive evaluation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    /// Everything up to the current iteration.
    Full,
    /// The tuples derived in the previous iteration.
    Delta,
    /// Everything before the previous iteration.
    Old,
}

#[derive(Clone, Debug)]
enum RExpr {
    Var(usize),
    Const(Value),
    Bin(BinOp, Box<RExpr>, Box<RExpr>),
    Neg(Box<RExpr>),
    Call(Functor, Vec<RExpr>),
    Agg(Box<RAgg>),
}

#[derive(Clone, Debug)]
struct RAgg {
    kind: AggKind,
    target: Option<RExpr>,
    steps: Vec<Step>,
}

#[derive(Clone, Debug)]
enum Step {
    Scan {
        rel: RelId,
        src: Src,
        /// Index columns and the values they must have.
        key_cols: Vec<usize>,
        key: Vec<RExpr>,
        /// Columns binding fresh variables.
        binds: Vec<(usize, usize)>,
        /// Columns that must equal a variable bound earlier in this atom.
        same: Vec<(usize, usize)>,
    },
    Neg {
        rel: RelId,
        key_cols: Vec<usize>,
        key: Vec<RExpr>,
    },
    Cmp(CmpOp, RExpr, RExpr),
    Assign(usize, RExpr),
    Match(RExpr, RExpr),
    Contains(RExpr, RExpr),
    Fail,
}

/// Loaded store tables and the symbol table, shared by the rule files of
/// one run (each table projection is read from SQLite once).
pub struct Session<'c> {
    conn: &'c Connection,
    /// Interned symbols.
    pub symbols: Symbols,
    inputs: Vec<Relation>,
    input_ids: FxHashMap<InputSpec, usize>,
    regexes: FxHashMap<u32, Option<regex::Regex>>,
    /// Rows read from the store.
    pub rows_loaded: usize,
    /// Rule names whose rows of `findings` are visible to rules (built-in
    /// rules only: rules never read their own or other rules' findings).
    pub builtin_rules: Vec<String>,
    in_tx: bool,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.in_tx {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// The derived relations of one evaluated program.
pub struct Evaluation {
    /// One entry per relation of the program (inputs are empty here).
    pub rels: Vec<Relation>,
}

impl<'c> Session<'c> {
    /// A session reading the store behind `conn`, in one read transaction
    /// (a consistent snapshot; rolled back when the session ends, so rules
    /// never write).
    pub fn new(conn: &'c Connection) -> Session<'c> {
        let in_tx = conn.is_autocommit() && conn.execute_batch("BEGIN DEFERRED").is_ok();
        Session {
            conn,
            symbols: Symbols::default(),
            inputs: Vec::new(),
            input_ids: FxHashMap::default(),
            regexes: FxHashMap::default(),
            rows_loaded: 0,
            builtin_rules: crate::check::RULES
                .iter()
                .map(|r| r.id.to_string())
                .collect(),
            in_tx,
        }
    }

    fn load(&mut self, spec: &InputSpec, types: &[Ty]) -> Result<usize> {
        if let Some(&i) = self.input_ids.get(spec) {
            return Ok(i);
        }
        let started = std::time::Instant::now();
        let before = self.rows_loaded;
        let mut rel = Relation::new(spec.columns.len());
        let mut conds: Vec<String> = Vec::new();
        if spec.table == "findings" {
            let ids: Vec<String> = self
                .builtin_rules
                .iter()
                .map(|r| format!("'{}'", r.replace('\'', "''")))
                .collect();
            conds.push(format!("rule IN ({})", ids.join(", ")));
        }
        if !spec.filter.is_empty() {
            conds.push(format!("({})", spec.filter));
        }
        let filter = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        if spec.columns.is_empty() {
            let sql = format!(
                "SELECT EXISTS(SELECT 1 FROM {}{filter})",
                quote(&spec.table)
            );
            let any: bool = self
                .conn
                .query_row(&sql, [], |r| r.get(0))
                .with_context(|| format!("reading table {}", spec.table))?;
            if any {
                rel.insert(Box::new([]));
            }
        } else {
            let cols: Vec<String> = spec.columns.iter().map(|c| quote(c)).collect();
            let sql = format!(
                "SELECT {} FROM {}{filter}",
                cols.join(", "),
                quote(&spec.table)
            );
            let mut stmt = self
                .conn
                .prepare(&sql)
                .with_context(|| format!("reading table {}", spec.table))?;
            let mut rows = stmt.query([])?;
            let n = cols.len();
            while let Some(row) = rows.next()? {
                let mut t = Vec::with_capacity(n);
                for (i, ty) in types.iter().enumerate().take(n) {
                    t.push(convert(row.get_ref(i)?, *ty, &mut self.symbols));
                }
                rel.insert(t.into_boxed_slice());
                self.rows_loaded += 1;
            }
        }
        tracing::debug!(
            table = %spec.table,
            columns = spec.columns.len(),
            rows = self.rows_loaded - before,
            filtered = !spec.filter.is_empty(),
            ms = started.elapsed().as_secs_f64() * 1e3,
            "rule input loaded"
        );
        let id = self.inputs.len();
        self.inputs.push(rel);
        self.input_ids.insert(spec.clone(), id);
        Ok(id)
    }

    /// Evaluate `prog` to its fixpoint.
    pub fn evaluate(&mut self, prog: &Program) -> Result<Evaluation> {
        // Where each relation lives: loaded inputs or this program's own.
        let mut slots: Vec<Slot> = Vec::with_capacity(prog.rels.len());
        for r in &prog.rels {
            slots.push(match &r.input {
                Some(spec) => {
                    let types: Vec<Ty> = r.columns.iter().map(|c| c.1).collect();
                    Slot::Input(self.load(spec, &types)?)
                }
                None => Slot::Local,
            });
        }
        let mut ev = Evaluation {
            rels: prog
                .rels
                .iter()
                .map(|r| {
                    Relation::new(if r.input.is_some() {
                        0
                    } else {
                        r.columns.len()
                    })
                })
                .collect(),
        };
        let mut ranges: Vec<(usize, usize)> = vec![(0, 0); prog.rels.len()];
        for stratum in &prog.strata {
            let in_stratum = |r: RelId| stratum.rels.contains(&r);
            // Iteration 0: every rule over everything.
            for rule in &stratum.rules {
                for &r in &stratum.rels {
                    ranges[r] = (0, ev.rels[r].len());
                }
                self.run_rule(rule, None, &in_stratum, &slots, &mut ev, &ranges)?;
            }
            if !stratum.recursive {
                continue;
            }
            let mut prev_end: FxHashMap<RelId, usize> =
                stratum.rels.iter().map(|&r| (r, 0)).collect();
            loop {
                let mut any_delta = false;
                for &r in &stratum.rels {
                    let old = prev_end[&r];
                    let full = ev.rels[r].len();
                    ranges[r] = (old, full);
                    any_delta |= full > old;
                }
                if !any_delta {
                    break;
                }
                for &r in &stratum.rels {
                    prev_end.insert(r, ranges[r].1);
                }
                for rule in &stratum.rules {
                    let rec: Vec<usize> = rule
                        .body
                        .iter()
                        .enumerate()
                        .filter(|(_, l)| matches!(l, CLit::Atom { rel, .. } if in_stratum(*rel)))
                        .map(|(i, _)| i)
                        .collect();
                    for &d in &rec {
                        if let CLit::Atom { rel, .. } = &rule.body[d]
                            && ranges[*rel].0 == ranges[*rel].1
                        {
                            continue; // empty delta
                        }
                        self.run_rule(rule, Some(d), &in_stratum, &slots, &mut ev, &ranges)?;
                    }
                }
            }
        }
        Ok(ev)
    }

    fn run_rule(
        &mut self,
        rule: &CRule,
        delta: Option<usize>,
        in_stratum: &dyn Fn(RelId) -> bool,
        slots: &[Slot],
        ev: &mut Evaluation,
        ranges: &[(usize, usize)],
    ) -> Result<()> {
        let sizes = |r: RelId| match slots[r] {
            Slot::Input(i) => self.inputs[i].len(),
            Slot::Local => ev.rels[r].len(),
        };
        let sizes: Vec<usize> = (0..slots.len()).map(sizes).collect();
        let mut planner = Planner {
            symbols: &mut self.symbols,
            sizes: &sizes,
            nvars: rule.var_names.len(),
            deferred: Vec::new(),
        };
        let mut bound = vec![false; rule.var_names.len()];
        let steps = planner.plan(&rule.body, delta, in_stratum, &mut bound);
        let head: Vec<RExpr> = rule.head_args.iter().map(|e| planner.expr(e)).collect();
        let nvars = planner.nvars;
        // Indexes the plan needs, built (or caught up) before the join runs.
        let mut need = Vec::new();
        collect_indexes(&steps, &mut need);
        for (rel, cols) in need {
            match slots[rel] {
                Slot::Input(i) => self.inputs[i].ensure_index(&cols),
                Slot::Local => ev.rels[rel].ensure_index(&cols),
            }
        }
        let mut out: Vec<Tuple> = Vec::new();
        {
            let rels = Rels {
                slots,
                inputs: &self.inputs,
                local: &ev.rels,
                ranges,
                in_stratum,
            };
            let mut st = State {
                symbols: &mut self.symbols,
                regexes: &mut self.regexes,
            };
            let mut env = vec![Value::Nil; nvars];
            run(&rels, &mut st, &steps, 0, &mut env, &mut |st, env| {
                let mut t = Vec::with_capacity(head.len());
                for e in &head {
                    match eval(&rels, st, e, env) {
                        Some(v) => t.push(v),
                        None => return,
                    }
                }
                out.push(t.into_boxed_slice());
            });
        }
        let head_rel = &mut ev.rels[rule.head];
        for t in out {
            head_rel.insert(t);
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Slot {
    Input(usize),
    Local,
}

fn convert(v: ValueRef<'_>, ty: Ty, symbols: &mut Symbols) -> Value {
    match (v, ty) {
        (ValueRef::Null, _) | (ValueRef::Blob(_), _) => Value::Nil,
        (ValueRef::Integer(i), Ty::Number) => Value::Num(i),
        (ValueRef::Integer(i), Ty::Float) => Value::Float((i as f64).to_bits()),
        (ValueRef::Integer(i), Ty::Symbol) => Value::Sym(symbols.intern(&i.to_string())),
        (ValueRef::Real(f), Ty::Float) => Value::Float(f.to_bits()),
        (ValueRef::Real(f), Ty::Number) => {
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Value::Num(f as i64)
            } else {
                Value::Nil
            }
        }
        (ValueRef::Real(f), Ty::Symbol) => Value::Sym(symbols.intern(&f.to_string())),
        (ValueRef::Text(t), Ty::Symbol) => Value::Sym(symbols.intern(&String::from_utf8_lossy(t))),
        (ValueRef::Text(t), Ty::Number) => String::from_utf8_lossy(t)
            .trim()
            .parse()
            .map(Value::Num)
            .unwrap_or(Value::Nil),
        (ValueRef::Text(t), Ty::Float) => String::from_utf8_lossy(t)
            .trim()
            .parse::<f64>()
            .map(|f| Value::Float(f.to_bits()))
            .unwrap_or(Value::Nil),
    }
}

fn collect_indexes(steps: &[Step], out: &mut Vec<(RelId, Vec<usize>)>) {
    for s in steps {
        match s {
            Step::Scan {
                rel, key_cols, key, ..
            }
            | Step::Neg { rel, key_cols, key } => {
                if !key_cols.is_empty() {
                    out.push((*rel, key_cols.clone()));
                }
                for e in key {
                    collect_expr_indexes(e, out);
                }
            }
            Step::Cmp(_, a, b) | Step::Match(a, b) | Step::Contains(a, b) => {
                collect_expr_indexes(a, out);
                collect_expr_indexes(b, out);
            }
            Step::Assign(_, e) => collect_expr_indexes(e, out),
            Step::Fail => {}
        }
    }
}

fn collect_expr_indexes(e: &RExpr, out: &mut Vec<(RelId, Vec<usize>)>) {
    match e {
        RExpr::Agg(a) => {
            collect_indexes(&a.steps, out);
            if let Some(t) = &a.target {
                collect_expr_indexes(t, out);
            }
        }
        RExpr::Bin(_, a, b) => {
            collect_expr_indexes(a, out);
            collect_expr_indexes(b, out);
        }
        RExpr::Neg(a) => collect_expr_indexes(a, out),
        RExpr::Call(_, args) => args.iter().for_each(|a| collect_expr_indexes(a, out)),
        _ => {}
    }
}

/// Orders a rule body into steps: the delta atom first, then greedily the
/// atom with the most bound columns (ties: the smaller relation), with
/// comparisons, negations and assignments as soon as their variables are bound.
struct Planner<'a> {
    symbols: &'a mut Symbols,
    sizes: &'a [usize],
    /// Variable slots in use (rule variables, then scratch slots).
    nvars: usize,
    /// Atom arguments that are expressions over variables bound later:
    /// (scratch slot holding the column, the expression it must equal).
    deferred: Vec<(usize, CExpr)>,
}

impl Planner<'_> {
    fn constant(&mut self, c: &Const) -> Value {
        match c {
            Const::Num(n) => Value::Num(*n),
            Const::Float(f) => Value::Float(f.to_bits()),
            Const::Str(s) => Value::Sym(self.symbols.intern(s)),
            Const::Nil => Value::Nil,
        }
    }

    fn expr(&mut self, e: &CExpr) -> RExpr {
        match &e.kind {
            CExprKind::Var(s) => RExpr::Var(*s),
            CExprKind::Const(c) => RExpr::Const(self.constant(c)),
            CExprKind::Bin(op, a, b) => {
                RExpr::Bin(*op, Box::new(self.expr(a)), Box::new(self.expr(b)))
            }
            CExprKind::Neg(a) => RExpr::Neg(Box::new(self.expr(a))),
            CExprKind::Call(f, args) => {
                RExpr::Call(*f, args.iter().map(|a| self.expr(a)).collect())
            }
            CExprKind::Agg(a) => RExpr::Agg(Box::new(self.agg(a))),
        }
    }

    fn agg(&mut self, a: &CAgg) -> RAgg {
        let mut bound = vec![false; self.nvars];
        for &s in &a.correlated {
            bound[s] = true;
        }
        let outer_deferred = std::mem::take(&mut self.deferred);
        let steps = self.plan(&a.body, None, &|_| false, &mut bound);
        self.deferred = outer_deferred;
        RAgg {
            kind: a.kind,
            target: a.target.as_ref().map(|t| self.expr(t)),
            steps,
        }
    }

    fn plan(
        &mut self,
        body: &[CLit],
        delta: Option<usize>,
        in_stratum: &dyn Fn(RelId) -> bool,
        bound: &mut [bool],
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut done = vec![false; body.len()];
        let d_pos = delta;
        let src_of = |i: usize, rel: RelId| -> Src {
            match d_pos {
                Some(d) if i == d => Src::Delta,
                Some(d) if in_stratum(rel) && i < d => Src::Old,
                _ => Src::Full,
            }
        };
        if let Some(d) = delta {
            self.place_atom(body, d, src_of(d, atom_rel(&body[d])), bound, &mut steps);
            done[d] = true;
        }
        loop {
            // Everything that can be checked now.
            let mut progress = true;
            while progress {
                progress = false;
                let mut k = 0;
                while k < self.deferred.len() {
                    if expr_bound(&self.deferred[k].1, bound) {
                        let (tmp, e) = self.deferred.remove(k);
                        let e = self.expr(&e);
                        steps.push(Step::Cmp(CmpOp::Eq, RExpr::Var(tmp), e));
                    } else {
                        k += 1;
                    }
                }
                for (i, l) in body.iter().enumerate() {
                    if done[i] || matches!(l, CLit::Atom { .. }) {
                        continue;
                    }
                    if let Some(s) = self.ready(l, bound) {
                        steps.push(s);
                        done[i] = true;
                        progress = true;
                    }
                }
            }
            // The next atom.
            #[allow(clippy::type_complexity)]
            let mut best: Option<(
                usize,
                (usize, std::cmp::Reverse<usize>, std::cmp::Reverse<usize>),
            )> = None;
            for (i, l) in body.iter().enumerate() {
                if done[i] {
                    continue;
                }
                if let CLit::Atom { rel, args, .. } = l {
                    let nbound = args
                        .iter()
                        .flatten()
                        .filter(|a| match &a.kind {
                            CExprKind::Var(s) => bound[*s],
                            _ => expr_bound(a, bound),
                        })
                        .count();
                    let score = (
                        nbound,
                        std::cmp::Reverse(self.sizes[*rel]),
                        std::cmp::Reverse(i),
                    );
                    if best.as_ref().is_none_or(|(_, b)| score > *b) {
                        best = Some((i, score));
                    }
                }
            }
            match best {
                Some((i, _)) => {
                    let src = src_of(i, atom_rel(&body[i]));
                    self.place_atom(body, i, src, bound, &mut steps);
                    done[i] = true;
                }
                None => break,
            }
        }
        // Whatever is left cannot be ordered (the compiler rejects unbound
        // variables, so this only happens for cyclic expression arguments):
        // such a rule derives nothing rather than something wrong.
        if done.iter().any(|d| !d) || !self.deferred.is_empty() {
            self.deferred.clear();
            steps.push(Step::Fail);
        }
        steps
    }

    fn place_atom(
        &mut self,
        body: &[CLit],
        i: usize,
        src: Src,
        bound: &mut [bool],
        steps: &mut Vec<Step>,
    ) {
        let CLit::Atom { rel, args, .. } = &body[i] else {
            return;
        };
        let mut key_cols = Vec::new();
        let mut key = Vec::new();
        let mut binds: Vec<(usize, usize)> = Vec::new();
        let mut same = Vec::new();
        for (c, a) in args.iter().enumerate() {
            let Some(a) = a else { continue };
            match &a.kind {
                CExprKind::Var(s) if !bound[*s] => {
                    if let Some(&(first, _)) = binds.iter().find(|(_, v)| v == s) {
                        same.push((c, first));
                    } else {
                        binds.push((c, *s));
                    }
                }
                _ if expr_bound(a, bound) => {
                    key_cols.push(c);
                    key.push(self.expr(a));
                }
                _ => {
                    // `r(X, X + 1)`: read the column into a scratch slot and
                    // compare once the expression's variables are bound.
                    let tmp = self.nvars;
                    self.nvars += 1;
                    binds.push((c, tmp));
                    self.deferred.push((tmp, a.clone()));
                }
            }
        }
        for &(_, s) in &binds {
            if s < bound.len() {
                bound[s] = true;
            }
        }
        steps.push(Step::Scan {
            rel: *rel,
            src,
            key_cols,
            key,
            binds,
            same,
        });
    }

    fn ready(&mut self, l: &CLit, bound: &mut [bool]) -> Option<Step> {
        match l {
            CLit::Atom { .. } => None,
            CLit::Neg { rel, args, .. } => {
                if !args.iter().flatten().all(|a| expr_bound(a, bound)) {
                    return None;
                }
                let mut key_cols = Vec::new();
                let mut key = Vec::new();
                for (c, a) in args.iter().enumerate() {
                    if let Some(a) = a {
                        key_cols.push(c);
                        key.push(self.expr(a));
                    }
                }
                Some(Step::Neg {
                    rel: *rel,
                    key_cols,
                    key,
                })
            }
            CLit::Cmp(op, a, b, _) => {
                let (ba, bb) = (expr_bound(a, bound), expr_bound(b, bound));
                if ba && bb {
                    return Some(Step::Cmp(*op, self.expr(a), self.expr(b)));
                }
                if *op == CmpOp::Eq {
                    for (x, e, be) in [(a, b, bb), (b, a, ba)] {
                        if let CExprKind::Var(s) = x.kind
                            && !bound[s]
                            && be
                        {
                            bound[s] = true;
                            return Some(Step::Assign(s, self.expr(e)));
                        }
                    }
                }
                None
            }
            CLit::Match(a, b, _) | CLit::Contains(a, b, _) => {
                if !(expr_bound(a, bound) && expr_bound(b, bound)) {
                    return None;
                }
                let (a, b) = (self.expr(a), self.expr(b));
                Some(if matches!(l, CLit::Match(..)) {
                    Step::Match(a, b)
                } else {
                    Step::Contains(a, b)
                })
            }
            CLit::Bool(true) => Some(Step::Cmp(
                CmpOp::Eq,
                RExpr::Const(Value::Num(0)),
                RExpr::Const(Value::Num(0)),
            )),
            CLit::Bool(false) => Some(Step::Fail),
        }
    }
}

fn atom_rel(l: &CLit) -> RelId {
    match l {
        CLit::Atom { rel, .. } | CLit::Neg { rel, .. } => *rel,
        _ => 0,
    }
}

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

struct Rels<'a> {
    slots: &'a [Slot],
    inputs: &'a [Relation],
    local: &'a [Relation],
    ranges: &'a [(usize, usize)],
    in_stratum: &'a dyn Fn(RelId) -> bool,
}

impl<'a> Rels<'a> {
    fn rel(&self, r: RelId) -> &'a Relation {
        match self.slots[r] {
            Slot::Input(i) => &self.inputs[i],
            Slot::Local => &self.local[r],
        }
    }

    /// Tuple-number range a scan may read.
    fn range(&self, r: RelId, src: Src) -> (usize, usize) {
        let len = self.rel(r).len();
        if !(self.in_stratum)(r) {
            return (0, len);
        }
        let (old, full) = self.ranges[r];
        match src {
            Src::Full => (0, full),
            Src::Delta => (old, full),
            Src::Old => (0, old),
        }
    }
}

/// What a running rule may change: symbols (created by `cat`, `to_string`,
/// `substr`) and compiled regular expressions.
struct State<'s> {
    symbols: &'s mut Symbols,
    regexes: &'s mut FxHashMap<u32, Option<regex::Regex>>,
}

type Emit<'e> = dyn FnMut(&mut State<'_>, &mut Vec<Value>) + 'e;

fn eval_key(
    rels: &Rels<'_>,
    st: &mut State<'_>,
    key: &[RExpr],
    env: &mut Vec<Value>,
) -> Option<Key> {
    let mut kv: Key = SmallVec::with_capacity(key.len());
    for e in key {
        kv.push(eval(rels, st, e, env)?);
    }
    Some(kv)
}

fn run(
    rels: &Rels<'_>,
    st: &mut State<'_>,
    steps: &[Step],
    i: usize,
    env: &mut Vec<Value>,
    emit: &mut Emit<'_>,
) {
    let Some(step) = steps.get(i) else {
        emit(st, env);
        return;
    };
    match step {
        Step::Scan {
            rel,
            src,
            key_cols,
            key,
            binds,
            same,
        } => {
            let (lo, hi) = rels.range(*rel, *src);
            if lo >= hi {
                return;
            }
            let Some(kv) = eval_key(rels, st, key, env) else {
                return;
            };
            let r = rels.rel(*rel);
            let mut visit = |t: usize, st: &mut State<'_>, env: &mut Vec<Value>| {
                let tuple = &r.tuples[t];
                if same.iter().any(|&(c, f)| tuple[c] != tuple[f]) {
                    return;
                }
                for &(c, s) in binds {
                    env[s] = tuple[c];
                }
                run(rels, st, steps, i + 1, env, emit);
            };
            if key_cols.is_empty() {
                for t in lo..hi {
                    visit(t, st, env);
                }
            } else {
                let posting = r.lookup(key_cols, &kv);
                let start = if lo == 0 {
                    0
                } else {
                    posting.partition_point(|&t| (t as usize) < lo)
                };
                for &t in &posting[start..] {
                    if t as usize >= hi {
                        break;
                    }
                    visit(t as usize, st, env);
                }
            }
        }
        Step::Neg { rel, key_cols, key } => {
            let Some(kv) = eval_key(rels, st, key, env) else {
                return;
            };
            let r = rels.rel(*rel);
            let found = if key_cols.len() == r.arity() {
                r.tuples.contains(&kv[..])
            } else if key_cols.is_empty() {
                !r.is_empty()
            } else {
                !r.lookup(key_cols, &kv).is_empty()
            };
            if !found {
                run(rels, st, steps, i + 1, env, emit);
            }
        }
        Step::Cmp(op, a, b) => {
            let (Some(x), Some(y)) = (eval(rels, st, a, env), eval(rels, st, b, env)) else {
                return;
            };
            if compare(st.symbols, *op, x, y) {
                run(rels, st, steps, i + 1, env, emit);
            }
        }
        Step::Assign(s, e) => {
            let Some(v) = eval(rels, st, e, env) else {
                return;
            };
            env[*s] = v;
            run(rels, st, steps, i + 1, env, emit);
        }
        Step::Match(re, s) => {
            let (Some(Value::Sym(re)), Some(Value::Sym(s))) =
                (eval(rels, st, re, env), eval(rels, st, s, env))
            else {
                return;
            };
            let symbols = &*st.symbols;
            let rx = st
                .regexes
                .entry(re)
                .or_insert_with(|| regex::Regex::new(&format!("^(?:{})$", symbols.get(re))).ok());
            if rx.as_ref().is_some_and(|r| r.is_match(symbols.get(s))) {
                run(rels, st, steps, i + 1, env, emit);
            }
        }
        Step::Contains(sub, s) => {
            let (Some(Value::Sym(sub)), Some(Value::Sym(s))) =
                (eval(rels, st, sub, env), eval(rels, st, s, env))
            else {
                return;
            };
            if st.symbols.get(s).contains(st.symbols.get(sub)) {
                run(rels, st, steps, i + 1, env, emit);
            }
        }
        Step::Fail => {}
    }
}

/// Evaluate an expression; `None` when it has no value (division by zero,
/// overflow, a string that is not a number, min/max over nothing).
fn eval(rels: &Rels<'_>, st: &mut State<'_>, e: &RExpr, env: &mut Vec<Value>) -> Option<Value> {
    Some(match e {
        RExpr::Var(s) => env[*s],
        RExpr::Const(v) => *v,
        RExpr::Bin(op, a, b) => {
            let x = eval(rels, st, a, env)?;
            let y = eval(rels, st, b, env)?;
            arith(*op, x, y)?
        }
        RExpr::Neg(a) => match eval(rels, st, a, env)? {
            Value::Num(n) => Value::Num(n.checked_neg()?),
            Value::Float(f) => Value::Float((-f64::from_bits(f)).to_bits()),
            Value::Nil => Value::Nil,
            Value::Sym(_) => return None,
        },
        RExpr::Call(f, args) => {
            let mut v: SmallVec<[Value; 3]> = SmallVec::new();
            for a in args {
                v.push(eval(rels, st, a, env)?);
            }
            call(st, *f, &v)?
        }
        RExpr::Agg(a) => {
            let mut acc: Option<Value> = None;
            let mut count: i64 = 0;
            let mut bad = false;
            let saved = env.clone();
            run(rels, st, &a.steps, 0, env, &mut |st, env| {
                count += 1;
                if let Some(t) = &a.target {
                    let Some(v) = eval(rels, st, t, env) else {
                        bad = true;
                        return;
                    };
                    acc = Some(match (a.kind, acc) {
                        (_, None) => v,
                        (AggKind::Sum, Some(s)) => arith(BinOp::Add, s, v).unwrap_or_else(|| {
                            bad = true;
                            s
                        }),
                        (AggKind::Min, Some(m)) => {
                            if st.symbols.cmp(v, m) == Some(Ordering::Less) {
                                v
                            } else {
                                m
                            }
                        }
                        (AggKind::Max, Some(m)) => {
                            if st.symbols.cmp(v, m) == Some(Ordering::Greater) {
                                v
                            } else {
                                m
                            }
                        }
                        (AggKind::Count, Some(m)) => m,
                    });
                }
            });
            *env = saved;
            if bad {
                return None;
            }
            match a.kind {
                AggKind::Count => Value::Num(count),
                AggKind::Sum => acc.unwrap_or(Value::Num(0)),
                AggKind::Min | AggKind::Max => acc?,
            }
        }
    })
}

fn call(st: &mut State<'_>, f: Functor, v: &[Value]) -> Option<Value> {
    let sym = |x: Value| match x {
        Value::Sym(s) => Some(s),
        _ => None,
    };
    let symbols = &mut *st.symbols;
    Some(match f {
        Functor::Strlen => Value::Num(symbols.get(sym(v[0])?).chars().count() as i64),
        Functor::ToNumber => match v[0] {
            Value::Sym(s) => Value::Num(symbols.get(s).trim().parse().ok()?),
            Value::Num(n) => Value::Num(n),
            Value::Float(f) => {
                let f = f64::from_bits(f);
                if f.is_finite() && f.abs() < 9.2e18 {
                    Value::Num(f as i64)
                } else {
                    return None;
                }
            }
            Value::Nil => Value::Nil,
        },
        Functor::ToFloat => match v[0] {
            Value::Num(n) => Value::Float((n as f64).to_bits()),
            other => other,
        },
        Functor::Min | Functor::Max => {
            let o = symbols.cmp(v[0], v[1])?;
            let first = (o != Ordering::Greater) == (f == Functor::Min);
            if first { v[0] } else { v[1] }
        }
        Functor::Abs => match v[0] {
            Value::Num(n) => Value::Num(n.checked_abs()?),
            Value::Float(f) => Value::Float(f64::from_bits(f).abs().to_bits()),
            other => other,
        },
        Functor::Cat => {
            let mut s = String::new();
            for x in v {
                s.push_str(symbols.get(sym(*x)?));
            }
            Value::Sym(symbols.intern(&s))
        }
        Functor::Substr => {
            let (Value::Num(start), Value::Num(len)) = (v[1], v[2]) else {
                return None;
            };
            if start < 0 || len < 0 {
                return None;
            }
            let s: String = symbols
                .get(sym(v[0])?)
                .chars()
                .skip(start as usize)
                .take(len as usize)
                .collect();
            Value::Sym(symbols.intern(&s))
        }
        Functor::ToString => match v[0] {
            Value::Sym(s) => Value::Sym(s),
            other => {
                let s = symbols.show(other);
                Value::Sym(symbols.intern(&s))
            }
        },
    })
}

fn arith(op: BinOp, x: Value, y: Value) -> Option<Value> {
    Some(match (x, y) {
        (Value::Nil, _) | (_, Value::Nil) => Value::Nil,
        (Value::Num(a), Value::Num(b)) => Value::Num(match op {
            BinOp::Add => a.checked_add(b)?,
            BinOp::Sub => a.checked_sub(b)?,
            BinOp::Mul => a.checked_mul(b)?,
            BinOp::Div => a.checked_div(b)?,
            BinOp::Rem => a.checked_rem(b)?,
            BinOp::Pow => a.checked_pow(u32::try_from(b).ok()?)?,
        }),
        (Value::Float(a), Value::Float(b)) => {
            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
            let r = match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Rem => a % b,
                BinOp::Pow => a.powf(b),
            };
            if !r.is_finite() {
                return None;
            }
            Value::Float(r.to_bits())
        }
        _ => return None,
    })
}

fn compare(symbols: &Symbols, op: CmpOp, x: Value, y: Value) -> bool {
    match op {
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        _ => match symbols.cmp(x, y) {
            Some(o) => match op {
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::Le => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            },
            None => false,
        },
    }
}
