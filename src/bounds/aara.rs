//! The LP stage: automatic amortised resource analysis (AARA) over a cost
//! program, with potential functions found by linear programming (good_lp
//! with the pure-Rust microlp solver).
//!
//! A potential is a non-negative linear combination of *monomials*,
//! products of at most `D` base functions of the program state:
//! - `I(d, k) = ceil(max(0, d) / k)` for a linear expression `d` over the
//!   uniform variables and parameters (the iterations left of a loop
//!   `while (d ≥ 1) … d -= k …`);
//! - `L↑(x, hi, k)`: the multiplications by `k` that take `x ≥ 1` to
//!   `hi` (`s *= 2` loops), `L↓(x, k)`: the divisions by `k` that take `x`
//!   to zero (`s /= 2`, `s >>= 1`);
//! - invariant non-negative atoms (alignment indicators) that costs mention.
//!
//! Bases come from each loop's guard and the updates of its variables, and
//! are closed under the program's assignments (`j := i` turns `I(n - j)`
//! into `I(n - i)`). Walking the program backwards from a zero potential,
//! every statement relates the potential before it to the one after:
//! a tick adds its cost; an assignment substitutes; `v += c` *rewrites*
//! bases that mention `v` — in a context where a loop guard `d ≥ 1` holds,
//! `I(d - k, k) = I(d, k) - 1`, so a product `I(d)·J` becomes
//! `I(d)·J - J`, which frees potential to pay for inner work (this is how
//! triangular nests get `n²/2`, and how a counter shared by two loops pays
//! for both with one linear potential); a uniform branch needs a potential
//! at least as large as each side's; a loop head gets fresh LP variables
//! that must cover both the exit and one more iteration. The objective
//! minimises the entry potential at typical sizes (higher degrees weigh
//! more). Infeasible means no bound; a deadline makes it a timeout.

use super::expr::Bx;
use super::poly::{AtomId, AtomKind, Atoms, Poly};
use super::program::{LoopNode, Node};
use crate::facts::loops::StepOp;
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// A base function.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Base {
    /// `ceil(max(0, d) / k)`.
    Interval {
        /// The distance.
        d: Poly,
        /// The step.
        k: i64,
    },
    /// Multiplications by `k` from `x` (≥ 1) until `x ≥ hi`.
    LogUp {
        /// The growing value.
        x: Poly,
        /// Its bound.
        hi: Poly,
        /// The factor.
        k: i64,
    },
    /// Divisions by `k` from `x` until it reaches 0.
    LogDown {
        /// The shrinking value.
        x: Poly,
        /// The divisor.
        k: i64,
    },
    /// An invariant non-negative atom.
    Atom(AtomId),
}

impl Base {
    fn mentions(&self, v: AtomId) -> bool {
        match self {
            Base::Interval { d, .. } => d.mentions(v),
            Base::LogUp { x, hi, .. } => x.mentions(v) || hi.mentions(v),
            Base::LogDown { x, .. } => x.mentions(v),
            Base::Atom(a) => *a == v,
        }
    }
    fn substitute(&self, v: AtomId, p: &Poly) -> Option<Base> {
        Some(match self {
            Base::Interval { d, k } => Base::Interval {
                d: d.substitute(v, p)?,
                k: *k,
            },
            Base::LogUp { x, hi, k } => Base::LogUp {
                x: x.substitute(v, p)?,
                hi: hi.substitute(v, p)?,
                k: *k,
            },
            Base::LogDown { x, k } => Base::LogDown {
                x: x.substitute(v, p)?,
                k: *k,
            },
            Base::Atom(a) => {
                if *a == v {
                    return None;
                }
                Base::Atom(*a)
            }
        })
    }
}

/// Why no potential was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The LP is infeasible (a loop with cost and no decreasing potential).
    NoBound(String),
    /// The deadline passed.
    Timeout,
}

/// A solved bound: `Σ coef · Π bases`.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// (coefficient as numerator/denominator, bases).
    pub terms: Vec<((i64, i64), Vec<Base>)>,
    /// Milliseconds in the solver.
    pub solver_ms: f64,
}

/// An LP expression: a constant plus a combination of LP variables.
#[derive(Clone, Debug, Default)]
struct Lin {
    c: f64,
    v: BTreeMap<usize, f64>,
}

impl Lin {
    fn var(i: usize) -> Lin {
        let mut l = Lin::default();
        l.v.insert(i, 1.0);
        l
    }
    fn add_scaled(&mut self, o: &Lin, k: f64) {
        self.c += o.c * k;
        for (i, x) in &o.v {
            let e = self.v.entry(*i).or_insert(0.0);
            *e += x * k;
        }
    }
    fn is_zero(&self) -> bool {
        self.c == 0.0 && self.v.values().all(|x| *x == 0.0)
    }
}

/// A potential: monomial id → coefficient.
#[derive(Clone, Debug, Default)]
struct Pot {
    coef: BTreeMap<usize, Lin>,
    /// Every coefficient is a non-negative combination (safe to rewrite
    /// with inequalities).
    nonneg: bool,
}

/// Context: polynomials known to be ≥ 1 (`None`: unreachable).
type Ctx = Option<Vec<Poly>>;

struct Jumps {
    brk: Pot,
    cont: Pot,
}

/// Most monomials per annotation.
const MAX_MONOS: usize = 240;
/// Most base functions.
const MAX_BASES: usize = 40;

/// The AARA problem for one metric of one cost program.
pub struct Aara<'a> {
    atoms: &'a Atoms,
    metric: usize,
    deadline: Instant,
    bases: Vec<Base>,
    base_ids: HashMap<Base, usize>,
    monos: Vec<Vec<usize>>,
    mono_ids: HashMap<Vec<usize>, usize>,
    n_vars: usize,
    /// Constraints `lin ≥ 0`.
    cons: Vec<Lin>,
    /// Loops with cost and no base (for the reason).
    unbounded: Vec<String>,
    /// A positive cost term had no monomial (the bound would miss it).
    dropped: bool,
    timed_out: bool,
}

impl<'a> Aara<'a> {
    /// Find a bound of metric `metric` for `prog`.
    pub fn solve(
        atoms: &'a Atoms,
        prog: &Node,
        metric: usize,
        deadline: Instant,
        typical: &dyn Fn(AtomId) -> f64,
    ) -> Result<Solution, Failure> {
        if !prog.charges(metric) {
            return Ok(Solution {
                terms: Vec::new(),
                solver_ms: 0.0,
            });
        }
        let mut a = Aara {
            atoms,
            metric,
            deadline,
            bases: Vec::new(),
            base_ids: HashMap::new(),
            monos: Vec::new(),
            mono_ids: HashMap::new(),
            n_vars: 0,
            cons: Vec::new(),
            unbounded: Vec::new(),
            dropped: false,
            timed_out: false,
        };
        a.collect_bases(prog);
        let depth = prog.loop_depth().clamp(1, 3);
        a.build_monos(depth);
        let zero = Pot {
            coef: BTreeMap::new(),
            nonneg: true,
        };
        let jumps = Jumps {
            brk: zero.clone(),
            cont: zero.clone(),
        };
        let entry = a.back(prog, zero, &Some(Vec::new()), &jumps);
        if a.timed_out || Instant::now() > a.deadline {
            return Err(Failure::Timeout);
        }
        if a.dropped {
            return Err(Failure::NoBound(
                "a cost term is not expressible in the potentials (too many bases)".into(),
            ));
        }
        let fresh = a.fresh();
        a.geq(&fresh, &entry);
        // Objective: the entry potential at typical sizes.
        let weights: Vec<f64> = (0..a.monos.len()).map(|m| a.weight(m, typical)).collect();
        let start = Instant::now();
        let values = a.lp(&fresh, &weights)?;
        let solver_ms = start.elapsed().as_secs_f64() * 1000.0;
        let mut terms = Vec::new();
        for (m, x) in values {
            if x <= 1e-9 {
                continue;
            }
            let bases = a.monos[m].iter().map(|b| a.bases[*b].clone()).collect();
            terms.push((round_up(x), bases));
        }
        Ok(Solution { terms, solver_ms })
    }

    fn intern_base(&mut self, b: Base) -> Option<usize> {
        if let Some(i) = self.base_ids.get(&b) {
            return Some(*i);
        }
        if self.bases.len() >= MAX_BASES {
            return None;
        }
        // A constant interval is a constant; not a base.
        if let Base::Interval { d, .. } = &b
            && d.as_const().is_some()
        {
            return None;
        }
        let i = self.bases.len();
        self.bases.push(b.clone());
        self.base_ids.insert(b, i);
        Some(i)
    }

    fn collect_bases(&mut self, prog: &Node) {
        let mut assigns: Vec<(AtomId, Poly)> = Vec::new();
        let mut atoms_in_ticks: Vec<AtomId> = Vec::new();
        self.walk_bases(prog, &mut assigns, &mut atoms_in_ticks);
        for a in atoms_in_ticks {
            self.intern_base(Base::Atom(a));
        }
        // Closure under assignments.
        let mut i = 0;
        while i < self.bases.len() && self.bases.len() < MAX_BASES {
            let b = self.bases[i].clone();
            for (v, p) in &assigns {
                if b.mentions(*v)
                    && let Some(nb) = b.substitute(*v, p)
                {
                    self.intern_base(nb);
                }
            }
            i += 1;
        }
    }

    fn walk_bases(
        &mut self,
        n: &Node,
        assigns: &mut Vec<(AtomId, Poly)>,
        tick_atoms: &mut Vec<AtomId>,
    ) {
        match n {
            Node::Tick(c) => {
                for m in c[self.metric].terms.keys() {
                    for a in m {
                        if !tick_atoms.contains(a) {
                            tick_atoms.push(*a);
                        }
                    }
                }
            }
            Node::Assign(v, p) => assigns.push((*v, p.clone())),
            Node::Seq(v) | Node::Choice(v) => {
                for x in v {
                    self.walk_bases(x, assigns, tick_atoms);
                }
            }
            Node::Loop(l) => {
                for m in l.test[self.metric].terms.keys() {
                    for a in m {
                        if !tick_atoms.contains(a) {
                            tick_atoms.push(*a);
                        }
                    }
                }
                let found = self.loop_bases(l);
                if found.is_empty() && n.charges(self.metric) {
                    let why = l
                        .reason
                        .clone()
                        .unwrap_or_else(|| "no decreasing loop counter was found".into());
                    self.unbounded
                        .push(format!("loop at line {}: {why}", l.line));
                }
                for b in found {
                    self.intern_base(b);
                }
                self.walk_bases(&l.body, assigns, tick_atoms);
                self.walk_bases(&l.step, assigns, tick_atoms);
            }
            _ => {}
        }
    }

    /// The bases a loop's guard and its updates give.
    fn loop_bases(&self, l: &LoopNode) -> Vec<Base> {
        let Some(g) = &l.guard else {
            return Vec::new();
        };
        let mut updates: Vec<&Node> = Vec::new();
        collect_updates(&l.body, &mut updates);
        collect_updates(&l.step, &mut updates);
        let vars: Vec<AtomId> = g
            .atoms()
            .into_iter()
            .filter(|a| matches!(self.atoms.kind(*a), AtomKind::Var(_)))
            .collect();
        let relevant: Vec<&&Node> = updates
            .iter()
            .filter(|u| match u {
                Node::Assign(v, _) | Node::Shift(v, _) | Node::Scale(v, ..) | Node::Havoc(v) => {
                    vars.contains(v)
                }
                _ => false,
            })
            .collect();
        let mut out = Vec::new();
        // Additive: every update a shift; some shift decreases the guard.
        let shifts: Option<Vec<i64>> = relevant
            .iter()
            .map(|u| match u {
                Node::Shift(v, c) => g.linear_coef(*v).map(|a| a * c),
                _ => None,
            })
            .collect();
        if let Some(ds) = shifts
            && let Some(k) = ds.iter().filter(|d| **d < 0).map(|d| -d).min()
        {
            out.push(Base::Interval { d: g.clone(), k });
            if k > 1 {
                out.push(Base::Interval { d: g.clone(), k: 1 });
            }
        }
        // Multiplicative: one variable, scaled by constants.
        if vars.len() == 1 && !relevant.is_empty() {
            let v = vars[0];
            let scales: Option<Vec<(StepOp, i64)>> = relevant
                .iter()
                .map(|u| match u {
                    Node::Scale(_, op, k) => Some((*op, *k)),
                    _ => None,
                })
                .collect();
            if let Some(sc) = scales {
                let factor = |op: StepOp, k: i64| match op {
                    StepOp::Mul => Some(k),
                    StepOp::Shl if (1..31).contains(&k) => Some(1 << k),
                    _ => None,
                };
                let divisor = |op: StepOp, k: i64| match op {
                    StepOp::Div => Some(k),
                    StepOp::Shr if (1..31).contains(&k) => Some(1 << k),
                    _ => None,
                };
                let coef = g.linear_coef(v);
                if coef == Some(-1)
                    && let Some(k) = sc
                        .iter()
                        .map(|(o, k)| factor(*o, *k))
                        .collect::<Option<Vec<_>>>()
                    && let Some(k) = k.into_iter().min().filter(|k| *k >= 2)
                {
                    // g = hi - v.
                    let hi = g.add(&Poly::atom(v));
                    if let Some(hi) = hi {
                        out.push(Base::LogUp {
                            x: Poly::atom(v),
                            hi,
                            k,
                        });
                    }
                }
                if coef == Some(1)
                    && g.sub(&Poly::atom(v))
                        .and_then(|r| r.as_const())
                        .is_some_and(|c| c <= 0)
                    && let Some(k) = sc
                        .iter()
                        .map(|(o, k)| divisor(*o, *k))
                        .collect::<Option<Vec<_>>>()
                    && let Some(k) = k.into_iter().min().filter(|k| *k >= 2)
                {
                    out.push(Base::LogDown {
                        x: Poly::atom(v),
                        k,
                    });
                }
            }
        }
        out
    }

    fn build_monos(&mut self, depth: usize) {
        let n = self.bases.len();
        let mut d = depth;
        loop {
            self.monos.clear();
            self.mono_ids.clear();
            let mut cur: Vec<Vec<usize>> = vec![Vec::new()];
            self.push_mono(Vec::new());
            for _ in 0..d {
                let mut next = Vec::new();
                for m in &cur {
                    let start = m.last().copied().unwrap_or(0);
                    for b in start..n {
                        let mut x = m.clone();
                        x.push(b);
                        next.push(x);
                    }
                }
                for m in &next {
                    self.push_mono(m.clone());
                }
                cur = next;
            }
            if self.monos.len() <= MAX_MONOS || d <= 1 {
                break;
            }
            d -= 1;
        }
        // Invariant atoms that costs mention (alignment indicators) may
        // multiply any potential: a loop's iterations times an indicator.
        let atom_bases: Vec<usize> = (0..n)
            .filter(|b| matches!(self.bases[*b], Base::Atom(_)))
            .collect();
        if !atom_bases.is_empty() {
            let existing = self.monos.clone();
            'grow: for m in existing {
                for &b in &atom_bases {
                    if self.monos.len() >= 2 * MAX_MONOS {
                        break 'grow;
                    }
                    if m.contains(&b) {
                        continue;
                    }
                    let mut x = m.clone();
                    x.push(b);
                    x.sort_unstable();
                    self.push_mono(x);
                }
            }
        }
    }

    fn push_mono(&mut self, m: Vec<usize>) -> usize {
        if let Some(i) = self.mono_ids.get(&m) {
            return *i;
        }
        let i = self.monos.len();
        self.monos.push(m.clone());
        self.mono_ids.insert(m, i);
        i
    }

    fn mono_of(&self, mut bases: Vec<usize>) -> Option<usize> {
        bases.sort_unstable();
        self.mono_ids.get(&bases).copied()
    }

    fn new_var(&mut self) -> usize {
        self.n_vars += 1;
        self.n_vars - 1
    }

    /// A fresh annotation: one non-negative LP variable per monomial.
    fn fresh(&mut self) -> Pot {
        let mut p = Pot {
            coef: BTreeMap::new(),
            nonneg: true,
        };
        for m in 0..self.monos.len() {
            let v = self.new_var();
            p.coef.insert(m, Lin::var(v));
        }
        p
    }

    /// `hi ≥ lo` coefficientwise.
    fn geq(&mut self, hi: &Pot, lo: &Pot) {
        for (m, l) in &lo.coef {
            let mut c = hi.coef.get(m).cloned().unwrap_or_default();
            c.add_scaled(l, -1.0);
            if !c.is_zero() {
                self.cons.push(c);
            }
        }
    }

    fn nonpositive(&mut self, l: &Lin) {
        let mut c = Lin::default();
        c.add_scaled(l, -1.0);
        if !c.is_zero() {
            self.cons.push(c);
        }
    }

    fn materialize(&mut self, p: Pot) -> Pot {
        if p.nonneg {
            return p;
        }
        let f = self.fresh();
        self.geq(&f, &p);
        f
    }

    fn add_tick(&mut self, p: &mut Pot, c: &Poly) {
        for (m, k) in &c.terms {
            let bases: Option<Vec<usize>> = m
                .iter()
                .map(|a| self.base_ids.get(&Base::Atom(*a)).copied())
                .collect();
            let Some(mono) = bases.and_then(|b| self.mono_of(b)) else {
                // A cost the potentials cannot express: no bound rather
                // than a bound that leaves it out.
                if *k > 0 {
                    self.dropped = true;
                }
                continue;
            };
            p.coef.entry(mono).or_default().c += *k as f64;
        }
    }

    fn back(&mut self, n: &Node, post: Pot, ctx: &Ctx, jumps: &Jumps) -> Pot {
        if self.timed_out || Instant::now() > self.deadline {
            self.timed_out = true;
            return post;
        }
        if ctx.is_none() {
            // Unreachable: any potential will do.
            return post;
        }
        match n {
            Node::Tick(c) => {
                let mut p = post;
                self.add_tick(&mut p, &c[self.metric]);
                p
            }
            Node::Assign(v, val) => self.substitute(post, *v, Some(val)),
            Node::Havoc(v) => self.substitute(post, *v, None),
            Node::Shift(v, c) => {
                let p = self.materialize(post);
                self.rewrite(p, *v, Rewrite::Shift(*c), ctx)
            }
            Node::Scale(v, op, k) => {
                let p = self.materialize(post);
                self.rewrite(p, *v, Rewrite::Scale(*op, *k), ctx)
            }
            Node::Seq(items) => {
                let mut ctxs = vec![ctx.clone()];
                for it in items {
                    let next = self.fwd(it, ctxs.last().unwrap_or(&None));
                    ctxs.push(next);
                }
                let mut p = post;
                for (i, it) in items.iter().enumerate().rev() {
                    p = self.back(it, p, &ctxs[i], jumps);
                }
                p
            }
            Node::Choice(branches) => {
                let derived: Vec<Pot> = branches
                    .iter()
                    .map(|b| self.back(b, post.clone(), ctx, jumps))
                    .collect();
                if derived.len() == 1 {
                    return derived.into_iter().next().unwrap_or(post);
                }
                let f = self.fresh();
                for d in &derived {
                    self.geq(&f, d);
                }
                f
            }
            Node::Loop(l) => self.back_loop(l, post, ctx),
            Node::Break => jumps.brk.clone(),
            Node::Continue => jumps.cont.clone(),
            Node::Return => Pot {
                coef: BTreeMap::new(),
                nonneg: true,
            },
        }
    }

    fn back_loop(&mut self, l: &LoopNode, post: Pot, ctx: &Ctx) -> Pot {
        let mut modified = Vec::new();
        l.body.assigned(&mut modified);
        l.step.assigned(&mut modified);
        let head_ctx: Ctx = ctx.as_ref().map(|facts| {
            facts
                .iter()
                .filter(|f| !modified.iter().any(|v| f.mentions(*v)))
                .cloned()
                .collect()
        });
        let body_ctx: Ctx = head_ctx.as_ref().map(|facts| {
            let mut f = facts.clone();
            if let Some(g) = &l.guard {
                f.push(g.clone());
            }
            f
        });
        let h = self.fresh();
        let mut test = Pot::default();
        self.add_tick(&mut test, &l.test[self.metric]);
        // Exit: the test fails.
        let mut exit = post.clone();
        add_pot(&mut exit, &test);
        self.geq(&h, &exit);
        // One more iteration: test, body, step, back to the head.
        let step_ctx = self.fwd(&l.body, &body_ctx);
        let after_step = self.back(
            &l.step,
            h.clone(),
            &step_ctx.or_else(|| head_ctx.clone()),
            &Jumps {
                brk: post.clone(),
                cont: h.clone(),
            },
        );
        let jumps = Jumps {
            brk: post.clone(),
            cont: after_step.clone(),
        };
        let body_entry = self.back(&l.body, after_step, &body_ctx, &jumps);
        let mut again = body_entry.clone();
        add_pot(&mut again, &test);
        if l.body_first {
            // do { body; step } while (test): the head is the test.
            self.geq(&h, &again);
            return body_entry;
        }
        self.geq(&h, &again);
        h
    }

    /// The context after `n`.
    fn fwd(&self, n: &Node, ctx: &Ctx) -> Ctx {
        let facts = ctx.as_ref()?;
        match n {
            Node::Assign(v, _) | Node::Havoc(v) | Node::Scale(v, ..) => {
                Some(facts.iter().filter(|f| !f.mentions(*v)).cloned().collect())
            }
            Node::Shift(v, c) => Some(
                facts
                    .iter()
                    .filter_map(|f| {
                        let a = f.linear_coef(*v)?;
                        let d = a.checked_mul(*c)?;
                        if d >= 0 {
                            Some(f.clone())
                        } else {
                            f.add(&Poly::constant(-d))
                        }
                    })
                    .collect(),
            ),
            Node::Seq(items) => {
                let mut c = ctx.clone();
                for it in items {
                    c = self.fwd(it, &c);
                }
                c
            }
            Node::Choice(bs) => {
                let outs: Vec<Ctx> = bs.iter().map(|b| self.fwd(b, ctx)).collect();
                let mut live = outs.into_iter().flatten();
                let first = live.next()?;
                let rest: Vec<Vec<Poly>> = live.collect();
                Some(
                    first
                        .into_iter()
                        .filter(|f| rest.iter().all(|r| r.contains(f)))
                        .collect(),
                )
            }
            Node::Loop(l) => {
                let mut modified = Vec::new();
                l.body.assigned(&mut modified);
                l.step.assigned(&mut modified);
                Some(
                    facts
                        .iter()
                        .filter(|f| !modified.iter().any(|v| f.mentions(*v)))
                        .cloned()
                        .collect(),
                )
            }
            Node::Break | Node::Continue | Node::Return => None,
            Node::Tick(_) => ctx.clone(),
        }
    }

    /// Substitute an assignment `v := val` (`None`: an unknown value).
    fn substitute(&mut self, post: Pot, v: AtomId, val: Option<&Poly>) -> Pot {
        let mut out = Pot {
            coef: BTreeMap::new(),
            nonneg: post.nonneg,
        };
        for (m, q) in post.coef {
            let bases = self.monos[m].clone();
            if !bases.iter().any(|b| self.bases[*b].mentions(v)) {
                add_lin(&mut out, m, &q, 1.0);
                continue;
            }
            let new: Option<Vec<usize>> = match val {
                Some(p) => bases
                    .iter()
                    .map(|b| {
                        let base = &self.bases[*b];
                        if base.mentions(v) {
                            let nb = base.substitute(v, p)?;
                            // A constant interval is a number.
                            self.base_ids
                                .get(&nb)
                                .copied()
                                .map(Some)
                                .or_else(|| const_base(&nb).map(|_| None))
                        } else {
                            Some(Some(*b))
                        }
                    })
                    .collect::<Option<Vec<Option<usize>>>>()
                    .map(|v| {
                        // Fold constant factors into the coefficient.
                        v.into_iter().flatten().collect()
                    }),
                None => None,
            };
            let factor: f64 = match val {
                Some(p) => bases
                    .iter()
                    .filter_map(|b| {
                        let base = &self.bases[*b];
                        if base.mentions(v) {
                            base.substitute(v, p)
                                .filter(|nb| !self.base_ids.contains_key(nb))
                        } else {
                            None
                        }
                    })
                    .map(|nb| const_base(&nb).unwrap_or(0.0))
                    .product(),
                None => 1.0,
            };
            match new.and_then(|b| self.mono_of(b)) {
                Some(nm) => add_lin(&mut out, nm, &q, factor),
                None => {
                    // Not representable: this part of the potential must be
                    // worthless (non-positive).
                    self.nonpositive(&q);
                }
            }
        }
        out
    }

    /// Rewrite the potential after `v op` into one before it. `post` is
    /// non-negative; each factor is replaced by an upper bound.
    fn rewrite(&mut self, post: Pot, v: AtomId, r: Rewrite, ctx: &Ctx) -> Pot {
        let facts: Vec<Poly> = ctx.clone().unwrap_or_default();
        let mut out = Pot {
            coef: BTreeMap::new(),
            nonneg: true,
        };
        for (m, q) in post.coef {
            let bases = self.monos[m].clone();
            // Each factor: (base id, delta) meaning `post ≤ pre + delta`.
            let mut factors: Vec<(usize, i64)> = Vec::new();
            let mut ok = true;
            for b in &bases {
                match self.bound_after(&self.bases[*b].clone(), v, r, &facts) {
                    Some(delta) => factors.push((*b, delta)),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                self.nonpositive(&q);
                continue;
            }
            if factors.iter().any(|(_, d)| *d != 0) {
                out.nonneg = false;
            }
            // Expand Π (b_i + δ_i).
            let n = factors.len();
            for mask in 0..(1u32 << n) {
                let mut coef = 1.0f64;
                let mut keep = Vec::new();
                for (i, (b, d)) in factors.iter().enumerate() {
                    if mask >> i & 1 == 1 {
                        keep.push(*b);
                    } else {
                        coef *= *d as f64;
                    }
                }
                if coef == 0.0 {
                    continue;
                }
                if let Some(nm) = self.mono_of(keep) {
                    add_lin(&mut out, nm, &q, coef);
                }
            }
        }
        out
    }

    /// `δ` with `b(after) ≤ b(before) + δ` for the update of `v`, in a
    /// context where `facts` hold before it; `None`: no such bound.
    fn bound_after(&self, b: &Base, v: AtomId, r: Rewrite, facts: &[Poly]) -> Option<i64> {
        if !b.mentions(v) {
            return Some(0);
        }
        let holds = |p: &Poly| {
            facts
                .iter()
                .any(|f| p.sub(f).and_then(|d| d.as_const()).is_some_and(|c| c >= 0))
        };
        match (b, r) {
            (Base::Interval { d, k }, Rewrite::Shift(c)) => {
                let a = d.linear_coef(v)?;
                let delta = a.checked_mul(c)?;
                if delta == 0 {
                    Some(0)
                } else if delta > 0 {
                    Some((delta + k - 1) / k)
                } else if -delta >= *k && holds(d) {
                    Some(-1)
                } else {
                    Some(0)
                }
            }
            (Base::LogUp { x, hi, k }, Rewrite::Scale(op, f)) => {
                if hi.mentions(v) || x != &Poly::atom(v) {
                    return None;
                }
                let factor = match op {
                    StepOp::Mul => f,
                    StepOp::Shl if (0..31).contains(&f) => 1 << f,
                    _ => return None,
                };
                if factor < 1 {
                    return None;
                }
                let g = hi.sub(x)?;
                if factor >= *k && holds(&g) {
                    Some(-1)
                } else {
                    Some(0)
                }
            }
            (Base::LogDown { x, k }, Rewrite::Scale(op, f)) => {
                if x != &Poly::atom(v) {
                    return None;
                }
                let div = match op {
                    StepOp::Div => f,
                    StepOp::Shr if (0..31).contains(&f) => 1 << f,
                    _ => return None,
                };
                if div < 1 {
                    return None;
                }
                if div >= *k && holds(x) {
                    Some(-1)
                } else {
                    Some(0)
                }
            }
            (Base::LogUp { x, hi, .. }, Rewrite::Shift(c)) => {
                // Decreasing in x, increasing in hi.
                let (ax, ah) = (x.linear_coef(v)?, hi.linear_coef(v)?);
                if ax * c >= 0 && ah * c <= 0 {
                    Some(0)
                } else {
                    None
                }
            }
            (Base::LogDown { x, .. }, Rewrite::Shift(c)) => {
                let a = x.linear_coef(v)?;
                if a * c <= 0 { Some(0) } else { None }
            }
            _ => None,
        }
    }

    fn weight(&self, m: usize, typical: &dyn Fn(AtomId) -> f64) -> f64 {
        let mut w = 1.0;
        for b in &self.monos[m] {
            let v = match &self.bases[*b] {
                Base::Interval { d, k } => {
                    d.eval(&|a| Some(typical(a))).unwrap_or(1000.0).max(0.0) / *k as f64
                }
                Base::LogUp { x, hi, k } => {
                    let (x, hi) = (
                        x.eval(&|a| Some(typical(a))).unwrap_or(1.0).max(1.0),
                        hi.eval(&|a| Some(typical(a))).unwrap_or(1000.0).max(1.0),
                    );
                    ((hi / x).max(1.0)).log(*k as f64).ceil()
                }
                Base::LogDown { x, k } => {
                    x.eval(&|a| Some(typical(a)))
                        .unwrap_or(1000.0)
                        .max(1.0)
                        .log(*k as f64)
                        + 1.0
                }
                Base::Atom(_) => 1.0,
            };
            w *= v.max(1.0) * 1.01;
        }
        w
    }

    fn lp(&mut self, entry: &Pot, weights: &[f64]) -> Result<Vec<(usize, f64)>, Failure> {
        use good_lp::{
            Expression, ProblemVariables, Solution as _, SolverModel, WithTimeLimit, microlp,
            variable,
        };
        let mut pv = ProblemVariables::new();
        let vars: Vec<good_lp::Variable> = (0..self.n_vars)
            .map(|_| pv.add(variable().min(0.0)))
            .collect();
        let mut objective = Expression::from(0.0);
        for (m, l) in &entry.coef {
            for (v, k) in &l.v {
                objective += vars[*v] * (k * weights[*m]);
            }
        }
        let to_expr = |l: &Lin| -> Expression {
            let mut e = Expression::from(l.c);
            for (v, k) in &l.v {
                e += vars[*v] * *k;
            }
            e
        };
        let left = self
            .deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        if left <= 0.0 {
            return Err(Failure::Timeout);
        }
        let mut model = pv.minimise(objective).using(microlp).with_time_limit(left);
        for c in &self.cons {
            if c.v.is_empty() {
                if c.c < -1e-9 {
                    return Err(Failure::NoBound(self.why()));
                }
                continue;
            }
            model.add_constraint(to_expr(c).geq(0.0));
        }
        let sol = match model.solve() {
            Ok(s) => s,
            Err(good_lp::ResolutionError::Infeasible) => return Err(Failure::NoBound(self.why())),
            Err(good_lp::ResolutionError::Other(_)) => return Err(Failure::Timeout),
            Err(e) => return Err(Failure::NoBound(format!("LP: {e}"))),
        };
        if Instant::now() > self.deadline {
            return Err(Failure::Timeout);
        }
        Ok(entry
            .coef
            .iter()
            .map(|(m, l)| {
                let mut x = l.c;
                for (v, k) in &l.v {
                    x += sol.value(vars[*v]) * k;
                }
                (*m, x)
            })
            .collect())
    }

    fn why(&self) -> String {
        match self.unbounded.first() {
            Some(s) => s.clone(),
            None => "no potential function pays for every loop iteration".into(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Rewrite {
    Shift(i64),
    Scale(StepOp, i64),
}

fn collect_updates<'n>(n: &'n Node, out: &mut Vec<&'n Node>) {
    match n {
        Node::Assign(..) | Node::Shift(..) | Node::Scale(..) | Node::Havoc(..) => out.push(n),
        Node::Seq(v) | Node::Choice(v) => v.iter().for_each(|x| collect_updates(x, out)),
        Node::Loop(l) => {
            collect_updates(&l.body, out);
            collect_updates(&l.step, out);
        }
        _ => {}
    }
}

/// The value of a base function that mentions no atom.
fn const_base(b: &Base) -> Option<f64> {
    match b {
        Base::Interval { d, k } => d.as_const().map(|c| (c.max(0) as f64 / *k as f64).ceil()),
        Base::LogUp { x, hi, k } => {
            let (x, hi) = (x.as_const()?, hi.as_const()?);
            let mut n = 0.0;
            let mut v = x.max(1);
            while v < hi {
                v = v.saturating_mul(*k);
                n += 1.0;
            }
            Some(n)
        }
        Base::LogDown { x, k } => {
            let mut v = x.as_const()?;
            let mut n = 0.0;
            while v > 0 {
                v /= *k;
                n += 1.0;
            }
            Some(n)
        }
        Base::Atom(_) => None,
    }
}

fn add_lin(p: &mut Pot, m: usize, q: &Lin, k: f64) {
    p.coef.entry(m).or_default().add_scaled(q, k);
}

fn add_pot(p: &mut Pot, o: &Pot) {
    for (m, l) in &o.coef {
        add_lin(p, *m, l, 1.0);
    }
    p.nonneg = p.nonneg && o.nonneg;
}

/// `x` as a fraction with a small denominator, rounded up.
fn round_up(x: f64) -> (i64, i64) {
    for den in [
        1i64, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 64, 100, 128, 256, 1000,
    ] {
        let v = x * den as f64;
        let r = v.round();
        if (v - r).abs() <= 1e-6 * v.abs().max(1.0) {
            return (r as i64, den);
        }
    }
    ((x * 1000.0).ceil() as i64, 1000)
}

impl Base {
    /// The base function as a bound expression (`None` when it mentions an
    /// atom a bound may not name).
    pub fn to_bx(&self, atoms: &Atoms) -> Option<Bx> {
        let log_k = |k: i64| -> Bx {
            if k > 0 && (k as u64).is_power_of_two() {
                Bx::Int(i64::from(k.trailing_zeros()))
            } else {
                Bx::Log2(Box::new(Bx::Int(k)))
            }
        };
        Some(match self {
            Base::Interval { d, k } => {
                let d = Bx::pos(d.to_bx(atoms)?);
                if *k == 1 {
                    d
                } else {
                    Bx::Ceil(Box::new(Bx::div(d, Bx::Int(*k)))).simplify()
                }
            }
            // ceil(log_k(hi / x)) when hi > x ≥ 1, else 0.
            Base::LogUp { x, hi, k } => {
                let diff = Bx::Sub(
                    Box::new(Bx::Log2(Box::new(hi.to_bx(atoms)?))),
                    Box::new(Bx::Log2(Box::new(x.to_bx(atoms)?))),
                );
                Bx::Ceil(Box::new(Bx::div(Bx::pos(diff.simplify()), log_k(*k)))).simplify()
            }
            // floor(log_k(x)) + 1 divisions take x ≥ 1 to zero (and at
            // most 1 when x ≤ 0, as log2 of a non-positive value is 0).
            Base::LogDown { x, k } => Bx::add(
                Bx::Floor(Box::new(Bx::div(
                    Bx::Log2(Box::new(x.to_bx(atoms)?)),
                    log_k(*k),
                )))
                .simplify(),
                Bx::Int(1),
            ),
            Base::Atom(a) => atoms.to_bx(*a)?,
        })
    }
}

impl Solution {
    /// The bound `Σ coef · Π bases` as an expression (`None` when a base
    /// mentions an atom a bound may not name).
    pub fn to_bx(&self, atoms: &Atoms) -> Option<Bx> {
        let mut parts = Vec::new();
        for ((num, den), bases) in &self.terms {
            let mut f = vec![Bx::Int(*num)];
            for b in bases {
                f.push(b.to_bx(atoms)?);
            }
            let t = Bx::Mul(f).simplify();
            parts.push(if *den == 1 {
                t
            } else {
                Bx::div(t, Bx::Int(*den))
            });
        }
        Some(Bx::Add(parts).simplify())
    }
}

#[cfg(test)]
mod tests {
    //! The LP carries weight: bounds that a product of trip counts cannot
    //! give (triangular nests, counters shared by loops, amortised inner
    //! loops), checked against the exact counts.
    use super::*;
    use crate::bounds::poly::AtomKind;
    use std::time::Duration;

    const STEPS: usize = 3;

    struct P {
        atoms: Atoms,
        n: AtomId,
    }

    impl P {
        fn new() -> P {
            let mut atoms = Atoms::default();
            let n = atoms.intern(AtomKind::Param("n".into()));
            P { atoms, n }
        }
        fn var(&mut self, i: u32) -> AtomId {
            self.atoms.intern(AtomKind::Var(i))
        }
        /// `n - v`.
        fn left(&self, v: AtomId) -> Poly {
            Poly::atom(self.n).sub(&Poly::atom(v)).unwrap()
        }
        fn solve(&self, prog: &Node) -> Bx {
            let deadline = Instant::now() + Duration::from_secs(10);
            let s = Aara::solve(&self.atoms, prog, STEPS, deadline, &|_| 100.0).expect("a bound");
            s.to_bx(&self.atoms).expect("renderable")
        }
    }

    fn while_loop(guard: Poly, body: Node, step: Node) -> Node {
        Node::Loop(Box::new(LoopNode {
            test: [0, 0, 0, 0].map(Poly::constant),
            guard: Some(guard),
            body,
            step,
            body_first: false,
            line: 1,
            reason: None,
        }))
    }

    fn at(b: &Bx, n: i64) -> f64 {
        b.eval(&BTreeMap::from([("n".to_string(), n as f64)]))
            .unwrap()
    }

    #[test]
    fn triangular_nest_is_half_a_square() {
        // for (i = 0; i < n; i++) for (j = i; j < n; j++) tick;
        let mut p = P::new();
        let (i, j) = (p.var(0), p.var(1));
        let inner = while_loop(p.left(j), Node::tick([0, 0, 0, 1]), Node::Shift(j, 1));
        let outer = while_loop(
            p.left(i),
            Node::seq(vec![Node::Assign(j, Poly::atom(i)), inner]),
            Node::Shift(i, 1),
        );
        let prog = Node::seq(vec![Node::Assign(i, Poly::constant(0)), outer]);
        let b = p.solve(&prog);
        for n in [0, 1, 2, 7, 50, 300] {
            let exact = (n * (n + 1) / 2) as f64;
            let v = at(&b, n);
            assert!(v >= exact, "{b} at n={n}: {v} < {exact}");
        }
        // A product of trip counts gives n²; the LP finds about n²/2.
        let v = at(&b, 300);
        assert!(v <= 0.55 * 300.0 * 300.0, "{b} at n=300: {v}");
    }

    #[test]
    fn two_loops_sharing_a_counter_cost_n_not_2n() {
        // i = 0; while (i < n) { tick; i++ } while (i < n) { tick; i++ }
        let mut p = P::new();
        let i = p.var(0);
        let l = || while_loop(p.left(i), Node::tick([0, 0, 0, 1]), Node::Shift(i, 1));
        let prog = Node::seq(vec![Node::Assign(i, Poly::constant(0)), l(), l()]);
        let b = p.solve(&prog);
        for n in [0, 1, 5, 1000] {
            let v = at(&b, n);
            assert!(v >= n as f64, "{b} at {n}");
            assert!(v <= n as f64 + 1.0, "{b} at {n}: not amortised");
        }
    }

    #[test]
    fn amortised_inner_loop_is_linear() {
        // j = 0; for (i = 0; i < n; i++) { tick; while (j < n) { if (?) break; tick; j++ } }
        let mut p = P::new();
        let (i, j) = (p.var(0), p.var(1));
        let inner = while_loop(
            p.left(j),
            Node::Choice(vec![Node::Break, Node::tick([0, 0, 0, 1])]),
            Node::Shift(j, 1),
        );
        let outer = while_loop(
            p.left(i),
            Node::seq(vec![Node::tick([0, 0, 0, 1]), inner]),
            Node::Shift(i, 1),
        );
        let prog = Node::seq(vec![
            Node::Assign(i, Poly::constant(0)),
            Node::Assign(j, Poly::constant(0)),
            outer,
        ]);
        let b = p.solve(&prog);
        for n in [0, 1, 10, 1000] {
            let v = at(&b, n);
            assert!(v >= 2.0 * n as f64, "{b} at {n}");
            assert!(v <= 2.0 * n as f64 + 2.0, "{b} at {n}: quadratic");
        }
    }

    #[test]
    fn geometric_loop_is_logarithmic() {
        // for (s = n; s > 0; s >>= 1) tick;
        let mut p = P::new();
        let s = p.var(0);
        let l = while_loop(
            Poly::atom(s),
            Node::tick([0, 0, 0, 1]),
            Node::Scale(s, StepOp::Shr, 1),
        );
        let prog = Node::seq(vec![Node::Assign(s, Poly::atom(p.n)), l]);
        let b = p.solve(&prog);
        for n in [1i64, 2, 3, 64, 1000, 1 << 20] {
            let exact = (64 - n.leading_zeros()) as f64;
            let v = at(&b, n);
            assert!(v >= exact, "{b} at {n}: {v} < {exact}");
            assert!(v <= exact + 2.0, "{b} at {n}: {v} ≫ {exact}");
        }
    }

    #[test]
    fn a_loop_without_a_decreasing_counter_has_no_bound() {
        let mut p = P::new();
        let i = p.var(0);
        let l = while_loop(p.left(i), Node::tick([0, 0, 0, 1]), Node::Havoc(i));
        let deadline = Instant::now() + Duration::from_secs(10);
        let r = Aara::solve(&p.atoms, &l, STEPS, deadline, &|_| 100.0);
        assert!(matches!(r, Err(Failure::NoBound(_))), "{r:?}");
    }

    #[test]
    fn a_past_deadline_is_a_timeout_not_a_hang() {
        let mut p = P::new();
        let i = p.var(0);
        let l = while_loop(p.left(i), Node::tick([0, 0, 0, 1]), Node::Shift(i, 1));
        let r = Aara::solve(&p.atoms, &l, STEPS, Instant::now(), &|_| 100.0);
        assert_eq!(r, Err(Failure::Timeout));
    }
}
