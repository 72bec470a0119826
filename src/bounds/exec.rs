//! Symbolic warp execution: one kernel's IR run for *one warp* over
//! symbolic values (uniform polynomials in the parameters, launch
//! dimensions and loop counters, plus per-lane offsets), producing the cost
//! program ([`super::program`]) that the LP stage bounds.
//!
//! Cost model (the same amounts the simulator charges, see [`super::steps`]):
//! - a global access costs the distinct sectors its 32 lanes can touch, the
//!   worst over the alignments the symbolic part of the address allows
//!   (its coefficients' gcd), or `lanes × sectors per lane` when the
//!   per-lane addresses are not known;
//! - a shared access costs its wavefronts `d` (the most distinct words one
//!   bank serves, again the worst alignment), of which `d - 1` are conflicts;
//! - a branch or loop test whose condition is not provably the same on every
//!   lane costs one divergent warp, and both sides run (costs are charged
//!   for all lanes, an upper bound since every count is monotone in the
//!   set of active lanes);
//! - steps as in [`super::steps`].
//!
//! Lanes. With a symbolic block, lane `l` of a warp has `threadIdx.x =
//! w + l` with `w` the warp's first `threadIdx.x` (`0 ≤ w < blockDim.x`),
//! and `threadIdx.y/z` uniform: that holds for 1-D blocks and for blocks
//! whose `blockDim.x` is a multiple of the warp size (the assumption is
//! reported). With a known block, every warp's lanes are concrete when the
//! assumption does not hold (the caller runs one execution per warp).
//!
//! Loops. Variables assigned in a loop are *tracked*: at the loop head
//! they hold `A + offsets` with `A` a cost-program variable and the
//! offsets those they entered with; the body is re-executed until the
//! shape at the back edge agrees with the head (variables that change
//! shape become unknown). Guards come from the loop test (`d ≥ 1` for the
//! worst lane, `&&` takes either side); counters with a symbolic step
//! (`i += blockDim.x * gridDim.x`) get a fresh counter that counts the
//! iterations down from `ceil(d / step)` at entry.

#![allow(clippy::too_many_lines)]

use super::expr::Bx;
use super::poly::{AtomId, AtomKind, Atoms, Poly};
use super::program::{Cost, LoopNode, Node};
use super::steps;
use super::value::{IntVal, Offs, Root, Val};
use crate::facts::cost::CostModel;
use crate::facts::loops::{LoopFacts, StepOp};
use crate::ir::{
    BinOp, Builtin, Dim, ExprId, ExprKind, Function, MemSpace, StmtId, StmtKind, Type, UnOp, VarId,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

const SECTORS: usize = 0;
const CONFLICTS: usize = 1;
const DIVWARPS: usize = 2;
const STEPS: usize = 3;

/// How the lanes of the analysed warp are laid out.
#[derive(Clone, Debug, PartialEq)]
pub enum Lanes {
    /// `threadIdx.x = w + lane`, `threadIdx.y/z` uniform (symbolic warp start).
    Symbolic,
    /// The thread indices of each lane.
    Concrete(Vec<[i64; 3]>),
}

/// What is known of the launch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    /// Block dimensions, when fixed.
    pub block: Option<[u32; 3]>,
    /// Grid dimensions, when fixed.
    pub grid: Option<[u32; 3]>,
    /// Values of scalar and template parameters fixed for the analysis.
    pub values: BTreeMap<String, i64>,
}

/// The result of one symbolic execution.
pub struct Built {
    /// The cost program.
    pub prog: Node,
    /// Its atoms.
    pub atoms: Atoms,
    /// Upper bounds of the block and warp index atoms (lower bound 0).
    pub upper: HashMap<AtomId, Poly>,
}

#[derive(Default)]
struct Frame {
    breaks: Vec<Vec<Val>>,
    conts: Vec<Vec<Val>>,
    /// Divergence depth when the loop was entered.
    div_base: usize,
    /// A lane may leave the loop on its own.
    divergent_exit: bool,
    is_switch: bool,
}

/// The symbolic executor of one warp.
pub struct Exec<'a> {
    f: &'a Function,
    cost: CostModel,
    shape: &'a Shape,
    lanes: Lanes,
    loops: &'a LoopFacts,
    /// Atoms.
    pub atoms: Atoms,
    env: Vec<Val>,
    tracked: Vec<bool>,
    out: Vec<Node>,
    pending: [i64; 4],
    /// Symbolic costs not yet emitted (alignment indicators).
    pending_sym: [Poly; 4],
    acc: HashMap<ExprId, Vec<usize>>,
    frames: Vec<Frame>,
    div_depth: usize,
    arm_depth: usize,
    next_counter: u32,
    /// `(atom, op, k)` of the last `A op k` evaluated (`s >> 1`, `s / 2`).
    last_scale: Option<(AtomId, StepOp, i64)>,
    /// Symbolic additive steps seen while running a `for` step.
    sym_steps: Option<HashMap<AtomId, Poly>>,
    /// Upper bounds of the block and warp indices (lower bound 0).
    upper: HashMap<AtomId, Poly>,
    /// The invariant value each program variable was last assigned, while
    /// it has not changed since.
    assigned_value: HashMap<AtomId, Poly>,
    /// Inside an unrolled loop: tracked variables keep constant values.
    keep_consts: usize,
    /// Setting the head form of a loop (always the variable's atom).
    forcing: bool,
    /// Iterations left for unrolling loops with constant trip counts.
    unroll_budget: usize,
    /// Lanes known to be active (all lanes unless concrete lanes decided a
    /// branch).
    mask: Vec<bool>,
    /// Steps paid so far (monotone, never flushed).
    steps_seen: i64,
    /// Of those, the steps spent in assignments (see [`Exec::assignment`]).
    side_seen: i64,
}

fn d_index(d: Dim) -> usize {
    match d {
        Dim::X => 0,
        Dim::Y => 1,
        Dim::Z => 2,
    }
}

impl<'a> Exec<'a> {
    /// Execute `f`'s body for one warp.
    pub fn run(
        f: &'a Function,
        cost: CostModel,
        shape: &'a Shape,
        lanes: Lanes,
        loops: &'a LoopFacts,
    ) -> Option<Built> {
        let body = f.body?;
        let mut acc: HashMap<ExprId, Vec<usize>> = HashMap::new();
        for (i, a) in f.accesses.iter().enumerate() {
            acc.entry(a.expr).or_default().push(i);
        }
        let mut tracked = vec![false; f.vars.len()];
        mark_tracked(f, body, &mut tracked);
        let mut x = Exec {
            f,
            cost,
            shape,
            lanes,
            loops,
            atoms: Atoms::default(),
            env: vec![Val::unknown(false, false); f.vars.len()],
            tracked,
            out: Vec::new(),
            pending: [0; 4],
            pending_sym: Default::default(),
            acc,
            frames: Vec::new(),
            div_depth: 0,
            arm_depth: 0,
            next_counter: f.vars.len() as u32,
            last_scale: None,
            sym_steps: None,
            upper: HashMap::new(),
            assigned_value: HashMap::new(),
            keep_consts: 0,
            forcing: false,
            unroll_budget: 2048,
            mask: Vec::new(),
            steps_seen: 0,
            side_seen: 0,
        };
        let n = x.n();
        x.mask = match &x.lanes {
            Lanes::Concrete(t) => (0..n).map(|l| l < t.len()).collect(),
            Lanes::Symbolic => vec![true; n],
        };
        for p in &f.params {
            let var = f.var(*p);
            let v = if var.ty.is_indexable() {
                Val::Ptr(Root::Var(*p), IntVal::constant(0))
            } else if is_int_type(&var.ty) {
                match shape.values.get(&var.name) {
                    Some(c) => Val::int(*c),
                    None => Val::Int(IntVal::uniform(Poly::atom(
                        x.atoms.intern(AtomKind::Param(var.name.clone())),
                    ))),
                }
            } else {
                Val::unknown(true, false)
            };
            x.set_var(*p, v);
        }
        x.stmt(body);
        x.flush();
        let prog = Node::seq(std::mem::take(&mut x.out));
        Some(Built {
            prog,
            atoms: x.atoms,
            upper: x.upper,
        })
    }

    fn n(&self) -> usize {
        self.cost.warp as usize
    }

    // ---- program building -------------------------------------------------

    fn pay(&mut self, m: usize, k: i64) {
        self.pending[m] = self.pending[m].saturating_add(k);
        if m == STEPS {
            self.steps_seen = self.steps_seen.saturating_add(k);
        }
    }

    /// Pay a symbolic cost (a non-negative polynomial in invariant atoms).
    fn pay_sym(&mut self, m: usize, p: &Poly) {
        if let Some(x) = self.pending_sym[m].add(p) {
            self.pending_sym[m] = x;
        }
    }

    fn flush(&mut self) {
        let sym = self.pending_sym.iter().any(|p| !p.terms.is_empty());
        if sym {
            let c = std::mem::take(&mut self.pending);
            let s = std::mem::take(&mut self.pending_sym);
            let mut cost: Cost = Default::default();
            for m in 0..4 {
                cost[m] = s[m]
                    .add(&Poly::constant(c[m]))
                    .unwrap_or_else(|| s[m].clone());
            }
            self.out.push(Node::Tick(Box::new(cost)));
        } else if self.pending.iter().any(|c| *c != 0) {
            let c = std::mem::take(&mut self.pending);
            self.out.push(Node::tick(c));
        }
    }

    fn emit(&mut self, n: Node) {
        self.flush();
        self.out.push(n);
    }

    /// Run `f` into a separate sequence.
    fn sub<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> (Node, T) {
        self.flush();
        let saved = std::mem::take(&mut self.out);
        let r = f(self);
        self.flush();
        let body = std::mem::replace(&mut self.out, saved);
        (Node::seq(body), r)
    }

    // ---- variables --------------------------------------------------------

    fn var_atom(&mut self, v: VarId) -> AtomId {
        self.atoms.intern(AtomKind::Var(v.0))
    }

    /// Set `v` (emitting the program update when it is tracked).
    fn set_var(&mut self, v: VarId, val: Val) {
        let i = v.0 as usize;
        if !self.tracked[i] {
            self.env[i] = val;
            return;
        }
        let a = self.var_atom(v);
        let scale = self.last_scale.take();
        let (root, iv) = match val {
            Val::Int(iv) => (None, iv),
            Val::Ptr(r, iv) => (Some(r), iv),
            Val::Unknown { uniform, memory } => {
                if let Some((sa, op, k)) = scale
                    && sa == a
                    && self.env_is_atom(v, a)
                {
                    self.emit_update(Node::Scale(a, op, k), a);
                    return;
                }
                self.emit_update(Node::Havoc(a), a);
                self.env[i] = Val::Unknown { uniform, memory };
                return;
            }
        };
        let konst = (root.is_none() && iv.base.as_const().is_some()).then(|| iv.clone());
        let wrap = |iv: IntVal| match &root {
            Some(r) => Val::Ptr(r.clone(), iv),
            None => Val::Int(iv),
        };
        if self.arm_depth > 0 {
            // Inside `?:`/`&&`/`||` arms: the update may not happen.
            self.emit_update(Node::Havoc(a), a);
            self.env[i] = Val::unknown(false, false);
            return;
        }
        let me = Poly::atom(a);
        let node = if let Some(c) = iv.base.sub(&me).and_then(|d| d.as_const()) {
            if c == 0 {
                None
            } else {
                Some(Node::Shift(a, c))
            }
        } else if iv.base.mentions(a) {
            match scale_of(&iv.base, a) {
                Some(k) => Some(Node::Scale(a, StepOp::Mul, k)),
                None => {
                    // `A + S` with a symbolic S: note it when in a `for` step.
                    if let Some(st) = self.sym_steps.as_mut()
                        && let Some(d) = iv.base.sub(&me)
                        && !d.mentions(a)
                    {
                        st.insert(a, d);
                    }
                    Some(Node::Havoc(a))
                }
            }
        } else {
            Some(Node::Assign(a, iv.base.clone()))
        };
        let offs = iv.offs.clone();
        if let Some(n) = node {
            // After a havoc `A` holds the new base: the form stays `A + offs`.
            self.emit_update(n, a);
        }
        self.env[i] = wrap(IntVal { base: me, offs });
        if self.keep_consts > 0
            && !self.forcing
            && let Some(c) = konst
        {
            self.env[i] = Val::Int(c);
        }
    }

    fn env_is_atom(&self, v: VarId, a: AtomId) -> bool {
        matches!(&self.env[v.0 as usize], Val::Int(iv) if iv.base == Poly::atom(a) && matches!(iv.offs, Offs::Zero))
    }

    /// Emit an update of atom `a` and keep every other value that mentions
    /// it consistent (a shift is undone in them; anything else forgets them).
    fn emit_update(&mut self, n: Node, a: AtomId) {
        match &n {
            Node::Assign(_, p)
                if !p
                    .atoms()
                    .iter()
                    .any(|x| matches!(self.atoms.kind(*x), AtomKind::Var(_))) =>
            {
                self.assigned_value.insert(a, p.clone());
            }
            _ => {
                self.assigned_value.remove(&a);
            }
        }
        let back = match &n {
            Node::Shift(_, c) => Poly::atom(a).sub(&Poly::constant(*c)),
            Node::Assign(_, p) if !p.mentions(a) => None,
            _ => None,
        };
        for (j, val) in self.env.iter_mut().enumerate() {
            let iv = match val {
                Val::Int(iv) | Val::Ptr(_, iv) => iv,
                _ => continue,
            };
            let mentions = iv.base.mentions(a)
                || matches!(&iv.offs, Offs::Sym(v) if v.iter().any(|p| p.mentions(a)));
            if !mentions {
                continue;
            }
            // The variable that owns the atom keeps its form.
            if j as u32 == atom_var(&self.atoms, a).unwrap_or(u32::MAX) {
                continue;
            }
            let sub = back.as_ref().and_then(|b| {
                let base = iv.base.substitute(a, b)?;
                let offs = match &iv.offs {
                    Offs::Sym(v) => Offs::Sym(Rc::new(
                        v.iter()
                            .map(|p| p.substitute(a, b))
                            .collect::<Option<Vec<_>>>()?,
                    )),
                    o => o.clone(),
                };
                Some(IntVal { base, offs })
            });
            match sub {
                Some(s) => *iv = s,
                None => {
                    let u = iv.is_uniform();
                    *val = Val::unknown(u, false);
                }
            }
        }
        self.emit(n);
    }

    // ---- statements -------------------------------------------------------

    fn stmt(&mut self, s: StmtId) {
        let kind = self.f.stmt(s).kind.clone();
        match kind {
            StmtKind::Block(items) => {
                for i in items {
                    self.stmt(i);
                }
            }
            StmtKind::Decl { var, init } => {
                self.pay(STEPS, steps::DECL as i64);
                let v = self.f.var(var);
                if v.ty.is_indexable() && !matches!(v.ty, Type::Pointer(_)) {
                    self.env[var.0 as usize] = Val::Ptr(Root::Var(var), IntVal::constant(0));
                    return;
                }
                if let Some(e) = init {
                    let val = self.expr(e);
                    self.pay(STEPS, steps::LOCAL_WRITE as i64);
                    let val = self.convert(val, &v.ty.clone());
                    self.set_var(var, val);
                } else {
                    let u = Val::unknown(self.div_depth == 0, false);
                    self.set_var(var, u);
                }
            }
            StmtKind::Expr(e) => {
                self.effect(e);
            }
            StmtKind::If { cond, then, els } => {
                let c = self.expr(cond);
                self.pay(STEPS, steps::TEST as i64);
                self.branch(c, then, els, s);
            }
            StmtKind::PreprocAlt { then, els, .. } => {
                self.branch(Val::unknown(true, false), then, els, s);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                if let Some(i) = init {
                    self.stmt(i);
                }
                self.looped(s, cond, step, body, false);
            }
            StmtKind::While { cond, body } => self.looped(s, Some(cond), None, body, false),
            StmtKind::DoWhile { body, cond } => self.looped(s, Some(cond), None, body, true),
            StmtKind::Switch { cond, body } => {
                let c = self.expr(cond);
                self.pay(STEPS, steps::TEST as i64);
                if !c.is_uniform() {
                    self.pay(DIVWARPS, 1);
                }
                // Every case label is an entry: running the whole body once
                // covers every suffix; jumps inside act for some lanes only.
                let before = self.env.clone();
                self.frames.push(Frame {
                    div_base: usize::MAX,
                    is_switch: true,
                    ..Frame::default()
                });
                self.div_depth += 1;
                self.stmt(body);
                self.div_depth -= 1;
                self.frames.pop();
                let mut assigned = BTreeSet::new();
                assigned_in_stmt(self.f, body, &mut assigned);
                for v in assigned {
                    let (a, b) = (&before[v as usize], &self.env[v as usize]);
                    if a != b {
                        self.env[v as usize] =
                            Val::unknown(false, a.from_memory() || b.from_memory());
                    }
                }
            }
            StmtKind::Case(_) | StmtKind::Opaque(_) => {}
            StmtKind::Break => {
                self.pay(STEPS, steps::JUMP as i64);
                let env = self.env.clone();
                let dd = self.div_depth;
                if let Some(fr) = self.frames.last_mut() {
                    fr.breaks.push(env);
                    if fr.is_switch || dd > fr.div_base {
                        fr.divergent_exit = true;
                        return;
                    }
                    self.emit(Node::Break);
                }
            }
            StmtKind::Continue => {
                self.pay(STEPS, steps::JUMP as i64);
                let env = self.env.clone();
                let dd = self.div_depth;
                if let Some(fr) = self.frames.iter_mut().rev().find(|f| !f.is_switch) {
                    fr.conts.push(env);
                    if dd > fr.div_base {
                        return;
                    }
                    self.emit(Node::Continue);
                }
            }
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e);
                }
                self.pay(STEPS, steps::JUMP as i64);
                if self.div_depth == 0 {
                    self.emit(Node::Return);
                } else {
                    for fr in &mut self.frames {
                        fr.divergent_exit = true;
                    }
                }
            }
            StmtKind::Barrier(_) => self.pay(STEPS, steps::JUMP as i64),
        }
    }

    /// An `if` with condition value `c`.
    fn branch(&mut self, c: Val, then: StmtId, els: Option<StmtId>, s: StmtId) {
        if let Some(k) = as_const_truth(&c) {
            if k {
                self.stmt(then);
            } else if let Some(e) = els {
                self.stmt(e);
            }
            return;
        }
        let uniform = c.is_uniform();
        // Concrete per-lane truth values split the active lanes exactly.
        let split = match &c {
            Val::Int(iv) if !uniform => iv.concrete(self.n()).map(|v| {
                let t: Vec<bool> = self
                    .mask
                    .iter()
                    .zip(&v)
                    .map(|(m, x)| *m && *x != 0)
                    .collect();
                let f: Vec<bool> = self
                    .mask
                    .iter()
                    .zip(&v)
                    .map(|(m, x)| *m && *x == 0)
                    .collect();
                (t, f)
            }),
            _ => None,
        };
        if let Some((t, f)) = &split {
            let (any_t, any_f) = (t.iter().any(|x| *x), f.iter().any(|x| *x));
            if !any_t || !any_f {
                let saved =
                    std::mem::replace(&mut self.mask, if any_t { t.clone() } else { f.clone() });
                if any_t {
                    self.stmt(then);
                } else if let Some(e) = els {
                    self.stmt(e);
                }
                self.mask = saved;
                return;
            }
        }
        let before = self.env.clone();
        if !uniform {
            self.pay(DIVWARPS, 1);
            self.div_depth += 1;
        }
        let saved_mask = self.mask.clone();
        if let Some((t, _)) = &split {
            self.mask = t.clone();
        }
        let (tn, _) = self.sub(|x| x.stmt(then));
        let env_t = std::mem::replace(&mut self.env, before.clone());
        if let Some((_, f)) = &split {
            self.mask = f.clone();
        }
        let (en, _) = self.sub(|x| {
            if let Some(e) = els {
                x.stmt(e)
            }
        });
        self.mask = saved_mask;
        let env_e = std::mem::take(&mut self.env);
        if uniform {
            self.emit(Node::Choice(vec![tn, en]));
            self.env = merge(&env_t, &env_e, true);
        } else {
            self.div_depth -= 1;
            // Both sides run, one after the other.
            self.emit(tn);
            self.emit(en);
            let mut env = merge(&env_t, &env_e, false);
            let mut assigned = BTreeSet::new();
            assigned_in_stmt(self.f, s, &mut assigned);
            for v in assigned {
                let i = v as usize;
                if self.tracked[i] || before[i] != env[i] {
                    env[i] = Val::unknown(false, env_t[i].from_memory() || env_e[i].from_memory());
                }
            }
            self.env = env;
        }
    }

    fn looped(
        &mut self,
        s: StmtId,
        cond: Option<ExprId>,
        step: Option<ExprId>,
        body: StmtId,
        body_first: bool,
    ) {
        let mut assigned = BTreeSet::new();
        assigned_in_stmt(self.f, body, &mut assigned);
        if let Some(c) = cond {
            assigned_in_expr(self.f, c, &mut assigned);
        }
        if let Some(st) = step {
            assigned_in_expr(self.f, st, &mut assigned);
        }
        let line = self.f.stmt(s).span.line + 1;
        let reason = self.loops.get(s).and_then(|l| l.reason.clone());
        let mut demoted: BTreeMap<u32, bool> = BTreeMap::new();
        let entry_env = self.env.clone();
        let entry_assigned = self.assigned_value.clone();
        self.flush();
        let entry_out = self.out.len();
        if let Some(c) = cond
            && self.unroll_budget > 0
            && !has_jumps(self.f, body)
            && self.try_unroll(c, step, body, body_first, &assigned, entry_out)
        {
            return;
        }
        for _round in 0..=assigned.len() + 1 {
            self.env = entry_env.clone();
            self.out.truncate(entry_out);
            // Head form.
            for v in &assigned {
                let i = *v as usize;
                if !self.tracked[i] {
                    continue;
                }
                if let Some(u) = demoted.get(v) {
                    let u = *u && self.env[i].is_uniform();
                    let a = self.var_atom(VarId(*v));
                    self.emit_update(Node::Havoc(a), a);
                    self.env[i] = Val::unknown(u, false);
                    continue;
                }
                let cur = self.env[i].clone();
                self.forcing = true;
                self.set_var(VarId(*v), cur);
                self.forcing = false;
            }
            let head = self.env.clone();
            self.frames.push(Frame {
                div_base: self.div_depth,
                ..Frame::default()
            });
            // Test (cost, guard, uniformity), body, step.
            let mut test_uniform = true;
            let mut guard: Option<Poly> = None;
            let mut test_cost = [0i64; 4];
            let mut test_sym: [Poly; 4] = Default::default();
            let mut test_effects = false;
            let mut eval_test = |x: &mut Self| {
                x.flush();
                let mark = x.out.len();
                let saved = std::mem::take(&mut x.pending);
                let saved_sym = std::mem::take(&mut x.pending_sym);
                if let Some(c) = cond {
                    let v = x.expr(c);
                    if as_const_truth(&v) != Some(true) {
                        test_uniform = v.is_uniform();
                        guard = x.guard_of(c);
                    }
                }
                x.pay(STEPS, steps::TEST as i64);
                if !test_uniform {
                    x.pay(DIVWARPS, 1);
                }
                test_cost = std::mem::replace(&mut x.pending, saved);
                test_sym = std::mem::replace(&mut x.pending_sym, saved_sym);
                if x.out.len() != mark {
                    test_effects = true;
                    x.out.truncate(mark);
                }
            };
            let body_node = if body_first {
                let (b, _) = self.sub(|x| {
                    x.stmt(body);
                    eval_test(x);
                });
                b
            } else {
                eval_test(self);
                let (b, _) = self.sub(|x| {
                    x.stmt(body);
                });
                b
            };
            let mut frame = self.frames.pop().unwrap_or_default();
            // Back edge: the body's end and every `continue`.
            let mut back = self.env.clone();
            for c in std::mem::take(&mut frame.conts) {
                back = merge(&back, &c, true);
            }
            let mut sym: HashMap<AtomId, Poly> = HashMap::new();
            let step_node = if !body_first && let Some(st) = step {
                self.env = back.clone();
                let saved = self.sym_steps.replace(HashMap::new());
                let (n, _) = self.sub(|x| {
                    x.effect(st);
                });
                sym = std::mem::replace(&mut self.sym_steps, saved).unwrap_or_default();
                back = self.env.clone();
                n
            } else {
                Node::empty()
            };
            // Does the shape hold?
            let mut changed = false;
            for v in &assigned {
                let i = *v as usize;
                if !self.tracked[i] || demoted.contains_key(v) {
                    continue;
                }
                if !same_shape(&head[i], &back[i]) {
                    demoted.insert(*v, head[i].is_uniform() && back[i].is_uniform());
                    changed = true;
                }
            }
            if changed {
                continue;
            }
            let mut guard = if test_effects { None } else { guard };
            // A symbolic additive step: count the iterations down instead.
            let mut pre = Vec::new();
            let mut step_node = step_node;
            if let Some(g) = guard.clone()
                && let Some((cnt, init)) =
                    self.symbolic_stride(&g, &body_node, &sym, &entry_env, &entry_assigned)
            {
                pre.push(Node::Assign(cnt, init));
                step_node = Node::seq(vec![step_node, Node::Shift(cnt, -1)]);
                guard = Some(Poly::atom(cnt));
            }
            let mut test: Cost = Default::default();
            for m in 0..4 {
                test[m] = test_sym[m]
                    .add(&Poly::constant(test_cost[m]))
                    .unwrap_or_else(|| Poly::constant(test_cost[m]));
            }
            for n in pre {
                self.emit(n);
            }
            self.emit(Node::Loop(Box::new(LoopNode {
                test,
                guard,
                body: body_node,
                step: step_node,
                body_first,
                line,
                reason: reason
                    .clone()
                    .or_else(|| test_effects.then(|| "the loop test has side effects".to_string())),
            })));
            // After the loop: the head shape (the test failed), merged with
            // every `break`; lanes that leave on their own hold their own values.
            let mut exit = head.clone();
            if body_first {
                exit = back.clone();
            }
            for b in &frame.breaks {
                exit = merge(&exit, b, true);
            }
            if !test_uniform || frame.divergent_exit {
                for v in &assigned {
                    exit[*v as usize] = Val::unknown(false, exit[*v as usize].from_memory());
                }
                if frame.divergent_exit {
                    for fr in self.frames.iter_mut() {
                        if self.div_depth > fr.div_base {
                            fr.divergent_exit = true;
                        }
                    }
                }
            }
            self.env = exit;
            return;
        }
        // No stable shape (should not happen): forget everything assigned.
        self.env = entry_env;
        self.out.truncate(entry_out);
        for v in &assigned {
            let i = *v as usize;
            if self.tracked[i] {
                let a = self.var_atom(VarId(*v));
                self.emit_update(Node::Havoc(a), a);
            }
            self.env[i] = Val::unknown(false, false);
        }
        let mut test: Cost = Default::default();
        test[STEPS] = Poly::constant(1);
        self.emit(Node::Loop(Box::new(LoopNode {
            test,
            guard: None,
            body: Node::tick([0, 0, 0, 1]),
            step: Node::empty(),
            body_first,
            line,
            reason: Some("the loop's variables have no stable shape".into()),
        })));
    }

    /// Run a loop whose test is a known constant on every iteration (its
    /// variables start and move by constants) iteration by iteration: exact
    /// per-iteration costs (`sdata[2 * s * tid]` at `s = 1, 2, 4, …`).
    /// Gives up (leaving no trace) when a test is not constant or the
    /// iteration budget runs out.
    fn try_unroll(
        &mut self,
        cond: ExprId,
        step: Option<ExprId>,
        body: StmtId,
        body_first: bool,
        assigned: &BTreeSet<u32>,
        entry_out: usize,
    ) -> bool {
        let saved_env = self.env.clone();
        let saved_assigned = self.assigned_value.clone();
        let saved_budget = self.unroll_budget;
        for v in assigned {
            let i = *v as usize;
            if !self.tracked[i] {
                continue;
            }
            let a = self.var_atom(VarId(*v));
            if self.env_is_atom(VarId(*v), a)
                && let Some(c) = self.assigned_value.get(&a).and_then(Poly::as_const)
            {
                self.env[i] = Val::int(c);
            }
        }
        self.keep_consts += 1;
        let mut ok = false;
        let mut first = true;
        while self.unroll_budget > 0 {
            self.unroll_budget -= 1;
            if !(body_first && first) {
                let c = self.expr(cond);
                self.pay(STEPS, steps::TEST as i64);
                match as_const_truth(&c) {
                    Some(true) => {}
                    Some(false) => {
                        ok = true;
                        break;
                    }
                    None => break,
                }
            }
            first = false;
            self.stmt(body);
            if let Some(st) = step {
                self.effect(st);
            }
        }
        self.keep_consts -= 1;
        if !ok {
            self.env = saved_env;
            self.assigned_value = saved_assigned;
            self.unroll_budget = saved_budget.saturating_sub(64).min(saved_budget);
            self.out.truncate(entry_out);
            self.pending = [0; 4];
            self.pending_sym = Default::default();
            return false;
        }
        true
    }

    /// `i += S` in a `for` step with `S` a positive invariant polynomial and
    /// the guard `g = … - i`: a counter that starts at `ceil(max(0, g) / S)`
    /// (the guard at entry, its block and warp indices at their worst).
    fn symbolic_stride(
        &mut self,
        g: &Poly,
        body: &Node,
        sym: &HashMap<AtomId, Poly>,
        entry_env: &[Val],
        entry_assigned: &HashMap<AtomId, Poly>,
    ) -> Option<(AtomId, Poly)> {
        let vars: Vec<AtomId> = g
            .atoms()
            .into_iter()
            .filter(|a| matches!(self.atoms.kind(*a), AtomKind::Var(_)))
            .collect();
        if vars.len() != 1 || g.linear_coef(vars[0]) != Some(-1) {
            return None;
        }
        let a = vars[0];
        let stride = sym.get(&a)?;
        let mut assigned = Vec::new();
        body.assigned(&mut assigned);
        if assigned.contains(&a)
            || stride.terms.is_empty()
            || stride
                .terms
                .iter()
                .any(|(m, c)| *c <= 0 || m.iter().any(|x| !self.atoms.nonneg(*x)))
        {
            return None;
        }
        let v = atom_var(&self.atoms, a)? as usize;
        let entry = match entry_env.get(v)? {
            Val::Int(iv) | Val::Ptr(_, iv) => iv.base.clone(),
            _ => return None,
        };
        let entry = if entry.mentions(a) {
            let v = entry_assigned.get(&a)?;
            entry.substitute(a, v)?
        } else {
            entry
        };
        let g0 = extremum(&g.substitute(a, &entry)?, &self.atoms, &self.upper, true)?;
        let expr = Bx::Ceil(Box::new(Bx::div(
            Bx::pos(g0.to_bx(&self.atoms)?),
            stride.to_bx(&self.atoms)?,
        )))
        .simplify();
        let d = self.atoms.intern(AtomKind::Derived { expr, nonneg: true });
        let cnt = self.atoms.intern(AtomKind::Var(self.next_counter));
        self.next_counter += 1;
        Some((cnt, Poly::atom(d)))
    }

    // ---- conditions -------------------------------------------------------

    /// The guard `d` (the loop runs only while `d ≥ 1` for some lane) of a
    /// condition, for the worst lane.
    fn guard_of(&self, c: ExprId) -> Option<Poly> {
        match &self.f.expr(c).kind {
            ExprKind::Binary(BinOp::LogAnd, a, b) => {
                self.guard_of(*a).or_else(|| self.guard_of(*b))
            }
            ExprKind::Cast(_, a) => self.guard_of(*a),
            ExprKind::Binary(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
                let (a, b) = (self.peek(*a)?, self.peek(*b)?);
                let n = self.n();
                let d = match op {
                    BinOp::Lt => b.sub(&a, n)?,
                    BinOp::Le => b.sub(&a, n)?.add(&IntVal::constant(1), n)?,
                    BinOp::Gt => a.sub(&b, n)?,
                    _ => a.sub(&b, n)?.add(&IntVal::constant(1), n)?,
                };
                worst_lane(&d)
            }
            ExprKind::Binary(BinOp::Ne, a, b) => {
                // `i != 0` with `i` counting down, `s != n`: only when the
                // other side is 0 and the value non-negative is it `i ≥ 1`.
                let (a, b) = (self.peek(*a)?, self.peek(*b)?);
                let n = self.n();
                if b.as_const() == Some(0) {
                    let d = worst_lane(&a)?;
                    if d.atoms().iter().all(|x| self.atoms.nonneg(*x))
                        && d.terms.values().all(|c| *c >= 0)
                    {
                        return Some(d);
                    }
                }
                let _ = n;
                None
            }
            ExprKind::Var(_) | ExprKind::Unary(UnOp::Plus, _) => None,
            _ => None,
        }
    }

    /// The integer value of a side-effect-free expression, without cost.
    fn peek(&self, e: ExprId) -> Option<IntVal> {
        match &self.f.expr(e).kind {
            ExprKind::Int(v) => Some(IntVal::constant(*v)),
            ExprKind::Var(v) => match &self.env[v.0 as usize] {
                Val::Int(iv) => Some(iv.clone()),
                _ => None,
            },
            ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => self.peek(*a),
            ExprKind::Unary(UnOp::Neg, a) => self.peek(*a)?.scale(-1),
            ExprKind::Builtin(b) => match self.builtin(*b) {
                Val::Int(iv) => Some(iv),
                _ => None,
            },
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
                let (a, b) = (self.peek(*a)?, self.peek(*b)?);
                let n = self.n();
                match op {
                    BinOp::Add => a.add(&b, n),
                    BinOp::Sub => a.sub(&b, n),
                    _ => a.mul(&b, n),
                }
            }
            ExprKind::TemplateParam(_) | ExprKind::Name(_) => match self.leaf_value(e) {
                Val::Int(iv) => Some(iv),
                _ => None,
            },
            _ => None,
        }
    }
}

impl Exec<'_> {
    // ---- values -----------------------------------------------------------

    fn dim_atom(&mut self, kind: fn(usize) -> AtomKind, d: usize, fixed: Option<[u32; 3]>) -> Poly {
        match fixed {
            Some(v) => Poly::constant(i64::from(v[d])),
            None => Poly::atom(self.atoms.intern(kind(d))),
        }
    }

    fn block_dim(&mut self, d: usize) -> Poly {
        self.dim_atom(AtomKind::BlockDim, d, self.shape.block)
    }

    fn grid_dim(&mut self, d: usize) -> Poly {
        self.dim_atom(AtomKind::GridDim, d, self.shape.grid)
    }

    fn builtin_mut(&mut self, b: Builtin) -> Val {
        match b {
            Builtin::BlockDim(d) => Val::Int(IntVal::uniform(self.block_dim(d_index(d)))),
            Builtin::GridDim(d) => Val::Int(IntVal::uniform(self.grid_dim(d_index(d)))),
            Builtin::WarpSize => Val::int(i64::from(self.cost.warp)),
            Builtin::BlockIdx(d) => {
                let d = d_index(d);
                let g = self.grid_dim(d);
                if g.as_const() == Some(1) {
                    return Val::int(0);
                }
                let a = self.atoms.intern(AtomKind::BlockIdx(d));
                let up = g.sub(&Poly::constant(1)).unwrap_or_default();
                self.upper.insert(a, up);
                Val::Int(IntVal::uniform(Poly::atom(a)))
            }
            Builtin::ThreadIdx(d) => {
                let d = d_index(d);
                let n = self.n();
                match &self.lanes {
                    Lanes::Concrete(t) => Val::Int(IntVal::lanes(
                        (0..n).map(|l| t.get(l).map_or(0, |x| x[d])).collect(),
                    )),
                    Lanes::Symbolic => {
                        let bd = self.block_dim(d);
                        if bd.as_const() == Some(1) {
                            return Val::int(0);
                        }
                        let a = self.atoms.intern(AtomKind::WarpBase(d));
                        let up = bd.sub(&Poly::constant(1)).unwrap_or_default();
                        self.upper.insert(a, up);
                        let base = IntVal::uniform(Poly::atom(a));
                        if d == 0 {
                            let offs = IntVal::lanes((0..n as i64).collect());
                            Val::Int(base.add(&offs, n).unwrap_or(base))
                        } else {
                            Val::Int(base)
                        }
                    }
                }
            }
        }
    }

    /// Read-only view of a built-in (atoms already interned by a previous
    /// evaluation; otherwise unknown).
    fn builtin(&self, b: Builtin) -> Val {
        let n = self.n();
        let fixed = |f: Option<[u32; 3]>, d: usize| f.map(|v| i64::from(v[d]));
        let atom = |k: AtomKind| self.atoms_lookup(&k);
        match b {
            Builtin::BlockDim(d) => {
                let d = d_index(d);
                match fixed(self.shape.block, d) {
                    Some(c) => Val::int(c),
                    None => atom(AtomKind::BlockDim(d)),
                }
            }
            Builtin::GridDim(d) => {
                let d = d_index(d);
                match fixed(self.shape.grid, d) {
                    Some(c) => Val::int(c),
                    None => atom(AtomKind::GridDim(d)),
                }
            }
            Builtin::WarpSize => Val::int(i64::from(self.cost.warp)),
            Builtin::BlockIdx(d) => {
                let d = d_index(d);
                if fixed(self.shape.grid, d) == Some(1) {
                    return Val::int(0);
                }
                atom(AtomKind::BlockIdx(d))
            }
            Builtin::ThreadIdx(d) => {
                let d = d_index(d);
                match &self.lanes {
                    Lanes::Concrete(t) => Val::Int(IntVal::lanes(
                        (0..n).map(|l| t.get(l).map_or(0, |x| x[d])).collect(),
                    )),
                    Lanes::Symbolic => {
                        if fixed(self.shape.block, d) == Some(1) {
                            return Val::int(0);
                        }
                        let Val::Int(base) = atom(AtomKind::WarpBase(d)) else {
                            return Val::unknown(false, false);
                        };
                        if d == 0 {
                            let offs = IntVal::lanes((0..n as i64).collect());
                            base.add(&offs, n)
                                .map_or(Val::unknown(false, false), Val::Int)
                        } else {
                            Val::Int(base)
                        }
                    }
                }
            }
        }
    }

    fn atoms_lookup(&self, k: &AtomKind) -> Val {
        match self.atoms.get(k) {
            Some(id) => Val::Int(IntVal::uniform(Poly::atom(id))),
            None => Val::unknown(true, false),
        }
    }

    /// The value of a name or template parameter.
    fn leaf_value(&self, e: ExprId) -> Val {
        let name = match &self.f.expr(e).kind {
            ExprKind::Name(n) => n.clone(),
            ExprKind::TemplateParam(i) => match self.f.template_params.get(*i as usize) {
                Some(p) => p.name.clone(),
                None => return Val::unknown(true, false),
            },
            _ => return Val::unknown(true, false),
        };
        if let Some(c) = self.shape.values.get(&name) {
            return Val::int(*c);
        }
        let kind = match &self.f.expr(e).kind {
            ExprKind::TemplateParam(_) => AtomKind::TParam(name),
            _ => AtomKind::Param(name),
        };
        self.atoms_lookup(&kind)
    }

    fn leaf_value_mut(&mut self, e: ExprId) -> Val {
        let (name, tparam) = match &self.f.expr(e).kind {
            ExprKind::Name(n) => (n.clone(), false),
            ExprKind::TemplateParam(i) => match self.f.template_params.get(*i as usize) {
                Some(p) if !p.is_type => (p.name.clone(), true),
                _ => return Val::unknown(true, false),
            },
            _ => return Val::unknown(true, false),
        };
        if let Some(c) = self.shape.values.get(&name) {
            return Val::int(*c);
        }
        let kind = if tparam {
            AtomKind::TParam(name)
        } else {
            AtomKind::Param(name)
        };
        Val::Int(IntVal::uniform(Poly::atom(self.atoms.intern(kind))))
    }

    fn convert(&self, v: Val, ty: &Type) -> Val {
        match ty {
            Type::Scalar(s) if !s.is_integral() => Val::unknown(v.is_uniform(), v.from_memory()),
            Type::Scalar(crate::ir::ScalarType::Bool) => match &v {
                Val::Int(iv) => match iv.concrete(self.n()) {
                    Some(c) => Val::Int(IntVal::lanes(
                        c.iter().map(|x| i64::from(*x != 0)).collect(),
                    )),
                    None => Val::unknown(iv.is_uniform(), false),
                },
                _ => Val::unknown(v.is_uniform(), v.from_memory()),
            },
            _ => v,
        }
    }

    // ---- expressions ------------------------------------------------------

    /// Evaluate `e` (charging its costs), its value used.
    fn expr(&mut self, e: ExprId) -> Val {
        self.eval(e, true)
    }

    /// Evaluate `e` for its effects only (an expression statement, a `for`
    /// step, the left of `,`): an assignment's value costs nothing more.
    fn effect(&mut self, e: ExprId) -> Val {
        self.eval(e, false)
    }

    /// An assignment expression: `lhs = rhs`, `lhs op= rhs` (`rhs` given),
    /// or `++lhs`/`lhs++`/… (`incdec = Some((increment, prefix))`). Charges
    /// as the simulator's `assignment`: every step of the assignment is a
    /// (RaCUDA-hoisted) statement's step, and a `used` value pays again the
    /// steps of the expression RaCUDA leaves in its place (`e`'s value part,
    /// `x op e`, `x`, `x - 1`; see [`super::steps`]).
    fn assignment(
        &mut self,
        lhs: ExprId,
        op: Option<BinOp>,
        rhs: Option<ExprId>,
        incdec: Option<(bool, bool)>,
        used: bool,
    ) -> Val {
        let n = self.n();
        let (t0, s0) = (self.steps_seen, self.side_seen);
        let (r, op) = match (rhs, incdec) {
            (Some(r), _) => (self.expr(r), op),
            (None, Some((inc, _))) => {
                self.pay(STEPS, steps::LEAF as i64);
                (Val::int(1), Some(if inc { BinOp::Add } else { BinOp::Sub }))
            }
            (None, None) => (Val::unknown(false, false), op),
        };
        let value = (self.steps_seen - t0) - (self.side_seen - s0);
        let (new, read) = self.assign(lhs, op, r);
        self.side_seen = s0 + (self.steps_seen - t0);
        if used {
            let again = match incdec {
                None => value + read,
                Some((_, true)) => (read - steps::BINARY as i64).max(0),
                Some((_, false)) => read + steps::LEAF as i64,
            };
            self.pay(STEPS, again);
        }
        match incdec {
            Some((inc, false)) => match &new {
                Val::Int(iv) => iv
                    .add(&IntVal::constant(if inc { -1 } else { 1 }), n)
                    .map_or(Val::unknown(false, false), Val::Int),
                o => Val::unknown(o.is_uniform(), o.from_memory()),
            },
            _ => new,
        }
    }

    /// Evaluate `e` (charging its costs); `used`: its value is used (see
    /// [`Exec::assignment`]).
    fn eval(&mut self, e: ExprId, used: bool) -> Val {
        let n = self.n();
        let kind = self.f.expr(e).kind.clone();
        match kind {
            ExprKind::Int(v) => {
                self.pay(STEPS, 1);
                Val::int(v)
            }
            ExprKind::Bool(b) => {
                self.pay(STEPS, 1);
                Val::int(i64::from(b))
            }
            ExprKind::SizeOf(Some(s)) => {
                self.pay(STEPS, 1);
                Val::int(s as i64)
            }
            ExprKind::Float(_) | ExprKind::Str | ExprKind::SizeOf(None) | ExprKind::Unknown(_) => {
                self.pay(STEPS, 1);
                Val::unknown(true, false)
            }
            ExprKind::Var(v) => {
                self.pay(STEPS, 1);
                self.env[v.0 as usize].clone()
            }
            ExprKind::Name(_) | ExprKind::TemplateParam(_) => {
                self.pay(STEPS, 1);
                if let ExprKind::Name(nm) = &self.f.expr(e).kind
                    && self.f.accesses.iter().any(|a| a.array == *nm)
                {
                    return Val::Ptr(Root::Name(nm.clone()), IntVal::constant(0));
                }
                self.leaf_value_mut(e)
            }
            ExprKind::Builtin(b) => {
                self.pay(STEPS, 1);
                self.builtin_mut(b)
            }
            ExprKind::Unary(op, a) => match op {
                UnOp::Plus => self.eval(a, used),
                UnOp::Neg => {
                    let v = self.expr(a);
                    self.pay(STEPS, steps::NEG as i64);
                    match v {
                        Val::Int(iv) => iv.scale(-1).map_or(Val::unknown(false, false), Val::Int),
                        o => Val::unknown(o.is_uniform(), o.from_memory()),
                    }
                }
                UnOp::Not => {
                    let v = self.expr(a);
                    self.pay(STEPS, 1);
                    match &v {
                        Val::Int(iv) => match iv.concrete(n) {
                            Some(c) => Val::Int(IntVal::lanes(
                                c.iter().map(|x| i64::from(*x == 0)).collect(),
                            )),
                            None => Val::unknown(iv.is_uniform(), false),
                        },
                        o => Val::unknown(o.is_uniform(), o.from_memory()),
                    }
                }
                UnOp::BitNot => {
                    let v = self.expr(a);
                    self.pay(STEPS, 1);
                    match &v {
                        Val::Int(iv) => match iv.concrete(n) {
                            Some(c) => Val::Int(IntVal::lanes(c.iter().map(|x| !x).collect())),
                            None => Val::unknown(iv.is_uniform(), false),
                        },
                        o => Val::unknown(o.is_uniform(), o.from_memory()),
                    }
                }
                UnOp::AddrOf => {
                    self.pay(STEPS, 1);
                    match self.f.expr(a).kind.clone() {
                        ExprKind::Index { .. } | ExprKind::Unary(UnOp::Deref, _) => {
                            let (_, root, addr) = self.address(a);
                            match (root, addr) {
                                (Some(r), Some(iv)) => Val::Ptr(r, iv),
                                _ => Val::unknown(false, false),
                            }
                        }
                        _ => {
                            let v = self.expr(a);
                            Val::unknown(v.is_uniform(), false)
                        }
                    }
                }
                UnOp::Deref => {
                    self.pay(STEPS, 1);
                    self.read_access(e)
                }
            },
            ExprKind::Binary(BinOp::Comma, a, b) => {
                self.effect(a);
                self.eval(b, used)
            }
            ExprKind::Binary(op, a, b) => self.binary(op, a, b),
            ExprKind::Assign { op, lhs, rhs } => self.assignment(lhs, op, Some(rhs), None, used),
            ExprKind::IncDec {
                target,
                increment,
                prefix,
            } => self.assignment(target, None, None, Some((increment, prefix)), used),
            ExprKind::Cond(c, a, b) => {
                let cv = self.expr(c);
                self.pay(STEPS, steps::TEST as i64);
                match as_const_truth(&cv) {
                    Some(true) => return self.expr(a),
                    Some(false) => return self.expr(b),
                    None => {}
                }
                if !cv.is_uniform() {
                    self.pay(DIVWARPS, 1);
                }
                self.arm_depth += 1;
                let before = self.env.clone();
                let av = self.expr(a);
                let env_a = std::mem::replace(&mut self.env, before);
                let bv = self.expr(b);
                self.arm_depth -= 1;
                self.env = merge(&env_a, &self.env, cv.is_uniform());
                if av == bv {
                    av
                } else {
                    Val::unknown(
                        cv.is_uniform() && av.is_uniform() && bv.is_uniform(),
                        av.from_memory() || bv.from_memory(),
                    )
                }
            }
            ExprKind::Cast(ty, a) => {
                let v = self.eval(a, used);
                self.convert(v, &ty)
            }
            ExprKind::Call {
                callee,
                receiver,
                args,
            } => self.call(&callee, receiver, &args),
            ExprKind::Index { .. } => self.read_access(e),
            ExprKind::Member { base, arrow, .. } => {
                if arrow {
                    self.pay(STEPS, 1);
                    self.read_access(e)
                } else if matches!(self.f.expr(base).kind, ExprKind::Index { .. }) {
                    self.read_access(base)
                } else {
                    self.pay(STEPS, 1);
                    Val::unknown(false, false)
                }
            }
        }
    }

    fn binary(&mut self, op: BinOp, a: ExprId, b: ExprId) -> Val {
        let n = self.n();
        let av = self.expr(a);
        if matches!(op, BinOp::LogAnd | BinOp::LogOr) {
            let skip = as_const_truth(&av) == Some(op == BinOp::LogOr);
            let mut bv = Val::int(0);
            if !skip {
                self.arm_depth += 1;
                let before = self.env.clone();
                bv = self.expr(b);
                self.arm_depth -= 1;
                let after = std::mem::take(&mut self.env);
                self.env = merge(&before, &after, av.is_uniform());
            }
            self.pay(STEPS, 1);
            let truth = |v: &Val| as_const_truth(v);
            return match (truth(&av), truth(&bv), skip) {
                (Some(x), _, true) => Val::int(i64::from(x)),
                (Some(x), Some(y), false) => {
                    Val::int(i64::from(if op == BinOp::LogAnd { x && y } else { x || y }))
                }
                _ => Val::unknown(av.is_uniform() && bv.is_uniform(), false),
            };
        }
        let bv = self.expr(b);
        self.pay(STEPS, 1);
        self.arith(op, &av, &bv, a)
            .unwrap_or_else(|| {
                Val::unknown(
                    av.is_uniform() && bv.is_uniform(),
                    av.from_memory() || bv.from_memory(),
                )
            })
            .normalize_lanes(n)
    }

    /// `a op b` on symbolic values (`None`: not representable).
    fn arith(&mut self, op: BinOp, av: &Val, bv: &Val, a_expr: ExprId) -> Option<Val> {
        let n = self.n();
        match (av, bv) {
            (Val::Ptr(r, o), Val::Int(i)) if matches!(op, BinOp::Add | BinOp::Sub) => {
                let eb = self.pointee_bytes(a_expr) as i64;
                let d = i.scale(if op == BinOp::Add { eb } else { -eb })?;
                return Some(Val::Ptr(r.clone(), o.add(&d, n)?));
            }
            (Val::Int(i), Val::Ptr(r, o)) if op == BinOp::Add => {
                let d = i.scale(4)?;
                return Some(Val::Ptr(r.clone(), o.add(&d, n)?));
            }
            _ => {}
        }
        let (Val::Int(x), Val::Int(y)) = (av, bv) else {
            return None;
        };
        // Concrete lanes: compute.
        if let (Some(cx), Some(cy)) = (x.concrete(n), y.concrete(n)) {
            let v: Option<Vec<i64>> = cx
                .iter()
                .zip(&cy)
                .map(|(p, q)| const_op(op, *p, *q))
                .collect();
            return Some(Val::Int(IntVal::lanes(v?)));
        }
        match op {
            BinOp::Add => Some(Val::Int(x.add(y, n)?)),
            BinOp::Sub => Some(Val::Int(x.sub(y, n)?)),
            BinOp::Mul => Some(Val::Int(x.mul(y, n)?)),
            BinOp::Shl => {
                let k = y.as_const().filter(|k| (0..31).contains(k))?;
                Some(Val::Int(x.scale(1 << k)?))
            }
            BinOp::Div | BinOp::Shr => {
                let k = y.as_const()?;
                let k = if op == BinOp::Shr {
                    if !(0..31).contains(&k) {
                        return None;
                    }
                    1 << k
                } else {
                    k
                };
                if k <= 0 {
                    return None;
                }
                if k == 1 {
                    return Some(Val::Int(x.clone()));
                }
                if !x.is_uniform() {
                    return None;
                }
                let p = &x.base;
                if let Some(q) = p.div_exact(k) {
                    return Some(Val::Int(IntVal::uniform(q)));
                }
                // `A op k` of a loop variable: remember for the assignment.
                if let Some(a) = p.atoms().first().copied()
                    && p == &Poly::atom(a)
                    && matches!(self.atoms.kind(a), AtomKind::Var(_))
                {
                    let sop = if op == BinOp::Shr {
                        StepOp::Shr
                    } else {
                        StepOp::Div
                    };
                    let kk = if op == BinOp::Shr { y.as_const()? } else { k };
                    self.last_scale = Some((a, sop, kk));
                    return None;
                }
                // An invariant value: a derived atom floor(p / k).
                let nonneg = p.terms.values().all(|c| *c >= 0)
                    && p.atoms().iter().all(|a| self.atoms.nonneg(*a));
                if !nonneg {
                    return None;
                }
                let bx = p.to_bx(&self.atoms)?;
                let d = self.atoms.intern(AtomKind::Derived {
                    expr: Bx::Floor(Box::new(Bx::div(bx, Bx::Int(k)))).simplify(),
                    nonneg: true,
                });
                Some(Val::Int(IntVal::uniform(Poly::atom(d))))
            }
            _ => None,
        }
    }

    fn pointee_bytes(&self, e: ExprId) -> u64 {
        let mut e = e;
        while let ExprKind::Cast(_, a) = &self.f.expr(e).kind {
            e = *a;
        }
        match &self.f.expr(e).kind {
            ExprKind::Var(v) => self
                .f
                .var(*v)
                .ty
                .element()
                .and_then(|t| t.bytes())
                .unwrap_or(4),
            _ => 4,
        }
    }

    /// `lhs op= r`: charges like the simulator; returns the new value and
    /// the steps of the compound read and operator.
    fn assign(&mut self, lhs: ExprId, op: Option<BinOp>, r: Val) -> (Val, i64) {
        let n = self.n();
        let mut read = 0;
        let mut lhs = lhs;
        while let ExprKind::Cast(_, a) = &self.f.expr(lhs).kind {
            lhs = *a;
        }
        match self.f.expr(lhs).kind.clone() {
            ExprKind::Var(v) => {
                let old = self.env[v.0 as usize].clone();
                let mut new = r;
                if let Some(o) = op {
                    self.pay(STEPS, 2);
                    read = 2;
                    // `s >>= k`, `s /= k` of a loop variable.
                    self.last_scale = None;
                    new = self
                        .arith(o, &old, &new, lhs)
                        .unwrap_or_else(|| {
                            Val::unknown(old.is_uniform() && new.is_uniform(), new.from_memory())
                        })
                        .normalize_lanes(n);
                }
                self.pay(STEPS, steps::LOCAL_WRITE as i64);
                let ty = self.f.var(v).ty.clone();
                let new = self.convert(new, &ty);
                self.set_var(v, new);
                self.last_scale = None;
                (self.env[v.0 as usize].clone(), read)
            }
            ExprKind::Index { .. }
            | ExprKind::Unary(UnOp::Deref, _)
            | ExprKind::Member { arrow: true, .. } => {
                let (wacc, _, waddr) = self.address(lhs);
                if op.is_some() {
                    let t1 = self.steps_seen;
                    let (racc, _, raddr) = self.address(lhs);
                    self.charge_access(racc, raddr.as_ref());
                    self.pay(STEPS, 1);
                    read = self.steps_seen - t1;
                }
                if matches!(
                    self.f.expr(lhs).kind,
                    ExprKind::Member { arrow: true, .. } | ExprKind::Unary(UnOp::Deref, _)
                ) {
                    self.pay(STEPS, 1);
                }
                self.charge_access(wacc, waddr.as_ref());
                (Val::unknown(false, true), read)
            }
            ExprKind::Member { base, .. } => {
                if matches!(self.f.expr(base).kind, ExprKind::Index { .. }) {
                    return self.assign(base, op, r);
                }
                if op.is_some() {
                    self.pay(STEPS, 2);
                    read = 2;
                }
                self.pay(STEPS, steps::LOCAL_WRITE as i64);
                (r, read)
            }
            _ => {
                self.expr(lhs);
                (r, read)
            }
        }
    }

    fn call(&mut self, callee: &str, receiver: Option<ExprId>, args: &[ExprId]) -> Val {
        let base = callee.rsplit("::").next().unwrap_or(callee);
        if base.starts_with("atomic") && !args.is_empty() {
            let inner = match &self.f.expr(args[0]).kind {
                ExprKind::Unary(UnOp::AddrOf, a) => Some(*a),
                _ => None,
            };
            let (acc, addr) = match inner {
                Some(a) => {
                    let (acc, _, addr) = self.address(a);
                    (acc, addr)
                }
                None => {
                    let p = self.pointer_value(args[0]);
                    let addr = match p {
                        Val::Ptr(_, iv) => Some(iv),
                        _ => None,
                    };
                    (None, addr)
                }
            };
            for a in &args[1..] {
                self.expr(*a);
            }
            self.pay(STEPS, 2);
            self.charge_access(acc, addr.as_ref());
            return Val::unknown(false, true);
        }
        if let Some(r) = receiver {
            self.expr(r);
        }
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.expr(*a));
        }
        self.pay(STEPS, 1);
        let n = self.n();
        let ints: Option<Vec<Vec<i64>>> = vals
            .iter()
            .map(|v| v.as_int().and_then(|i| i.concrete(n)))
            .collect();
        if let Some(iv) = ints
            && !iv.is_empty()
        {
            let f2 = |g: fn(i64, i64) -> i64| -> Option<Val> {
                let (x, y) = (iv.first()?, iv.get(1)?);
                Some(Val::Int(IntVal::lanes(
                    x.iter().zip(y).map(|(a, b)| g(*a, *b)).collect(),
                )))
            };
            let r = match base {
                "min" | "umin" => f2(|a, b| a.min(b)),
                "max" | "umax" => f2(|a, b| a.max(b)),
                "__mul24" | "__umul24" => f2(|a, b| a.wrapping_mul(b)),
                "abs" => Some(Val::Int(IntVal::lanes(
                    iv[0].iter().map(|a| a.abs()).collect(),
                ))),
                _ => None,
            };
            if let Some(r) = r {
                return r;
            }
        }
        let uniform = vals.iter().all(Val::is_uniform) && receiver.is_none();
        let pure = matches!(
            base,
            "min"
                | "max"
                | "umin"
                | "umax"
                | "abs"
                | "__mul24"
                | "__umul24"
                | "fminf"
                | "fmaxf"
                | "sqrtf"
                | "sqrt"
                | "expf"
                | "exp"
                | "logf"
                | "log"
                | "fabsf"
                | "fabs"
        );
        Val::unknown(uniform && pure, vals.iter().any(Val::from_memory))
    }

    /// Read through an access expression.
    fn read_access(&mut self, e: ExprId) -> Val {
        let (acc, _, addr) = self.address(e);
        self.charge_access(acc, addr.as_ref());
        let uniform = addr.as_ref().is_some_and(IntVal::is_uniform);
        Val::unknown(uniform, true)
    }

    fn access_of(&self, e: ExprId, write: bool) -> Option<usize> {
        let v = self.acc.get(&e)?;
        v.iter()
            .copied()
            .find(|i| self.f.accesses[*i].is_write == write)
            .or_else(|| v.first().copied())
    }

    /// The access, array and per-lane byte offset of access expression `e`
    /// (charging the subscripts and a computed base).
    fn address(&mut self, e: ExprId) -> (Option<usize>, Option<Root>, Option<IntVal>) {
        let n = self.n();
        let acc = self.access_of(e, false);
        let a = acc.map(|i| &self.f.accesses[i]);
        match self.f.expr(e).kind.clone() {
            ExprKind::Index { .. } => {
                let (root, chain) = self.f.index_chain(e);
                let dims: Vec<Option<u64>> = a.map(|a| a.dims.clone()).unwrap_or_default();
                let elem = a
                    .and_then(|a| a.elem_bytes)
                    .or_else(|| self.elem_bytes_of(root))
                    .unwrap_or(4) as i64;
                let field = a.and_then(|a| a.field_offset).unwrap_or(0) as i64;
                let base = self.pointer_value(root);
                let mut flat: Option<IntVal> = Some(IntVal::constant(0));
                for (i, idx) in chain.iter().enumerate() {
                    let v = self.expr(*idx);
                    let extent = if i > 0 {
                        dims.get(i).copied().flatten().map(|x| x as i64)
                    } else {
                        Some(0)
                    };
                    flat = match (flat, v.as_int(), extent) {
                        (Some(f), Some(v), Some(ext)) => {
                            if i == 0 {
                                Some(v.clone())
                            } else {
                                f.scale(ext).and_then(|f| f.add(v, n))
                            }
                        }
                        _ => None,
                    };
                }
                let (root, off) = match base {
                    Val::Ptr(r, o) => (Some(r), Some(o)),
                    _ => (None, None),
                };
                let addr = match (off, flat) {
                    (Some(o), Some(f)) => f
                        .scale(elem)
                        .and_then(|f| o.add(&f, n))
                        .and_then(|x| x.add(&IntVal::constant(field), n)),
                    _ => None,
                };
                (acc, root, addr)
            }
            ExprKind::Unary(UnOp::Deref, p) => {
                let v = self.pointer_value(p);
                match v {
                    Val::Ptr(r, o) => (acc, Some(r), Some(o)),
                    _ => (acc, None, None),
                }
            }
            ExprKind::Member {
                base, arrow: true, ..
            } => {
                let field = a.and_then(|a| a.field_offset).unwrap_or(0) as i64;
                let v = self.pointer_value(base);
                match v {
                    Val::Ptr(r, o) => (acc, Some(r), o.add(&IntVal::constant(field), n)),
                    _ => (acc, None, None),
                }
            }
            _ => (acc, None, None),
        }
    }

    /// The offsets of the active lanes.
    fn active(&self, offs: Vec<i64>) -> Vec<i64> {
        offs.into_iter()
            .zip(&self.mask)
            .filter(|(_, m)| **m)
            .map(|(o, _)| o)
            .collect()
    }

    fn elem_bytes_of(&self, root: ExprId) -> Option<u64> {
        match &self.f.expr(root).kind {
            ExprKind::Var(v) => self.f.var(*v).ty.innermost().bytes(),
            _ => None,
        }
    }

    /// A pointer-valued expression (a variable or name is free, as in the
    /// simulator; anything else is evaluated).
    fn pointer_value(&mut self, p: ExprId) -> Val {
        match self.f.expr(p).kind.clone() {
            ExprKind::Var(v) => self.env[v.0 as usize].clone(),
            ExprKind::Name(nm) => Val::Ptr(Root::Name(nm), IntVal::constant(0)),
            _ => self.expr(p),
        }
    }

    /// Charge one warp access.
    fn charge_access(&mut self, acc: Option<usize>, addr: Option<&IntVal>) {
        let (space, bytes, aligned) = match acc.map(|i| &self.f.accesses[i]) {
            Some(a) => (
                a.space,
                a.access_bytes.or(a.elem_bytes).unwrap_or(4).max(1) as i64,
                a.field_offset.unwrap_or(0) == 0,
            ),
            None => (MemSpace::Local, 4, true),
        };
        let cm = self.cost;
        let n = self.mask.iter().filter(|m| **m).count() as i64;
        let wb = match self.lanes {
            Lanes::Symbolic => self.atoms.get(&AtomKind::WarpBase(0)),
            Lanes::Concrete(_) => None,
        };
        let warp = i64::from(cm.warp);
        match space {
            MemSpace::Global => {
                let period = cm.sector_bytes as i64;
                let (s, extra) = match lane_offsets(addr, self.n(), wb, warp) {
                    Some((offs, g)) => {
                        let offs = self.active(offs);
                        let f = |r| cm.sectors(offs.iter().map(|o| (o + r, bytes)));
                        self.split_alignment(addr, wb, warp, period, g, &offs, f)
                    }
                    None => (n * per_lane_units(bytes, period, aligned), None),
                };
                self.pay(SECTORS, s);
                self.pay(STEPS, s);
                if let Some(x) = extra {
                    self.pay_sym(SECTORS, &x);
                    self.pay_sym(STEPS, &x);
                }
            }
            MemSpace::Shared => {
                let period = i64::from(cm.banks) * i64::from(cm.bank_bytes);
                let (d, extra) = match lane_offsets(addr, self.n(), wb, warp) {
                    Some((offs, g)) => {
                        let offs = self.active(offs);
                        let f = |r| cm.bank_wavefronts(offs.iter().map(|o| (o + r, bytes))).0;
                        self.split_alignment(addr, wb, warp, period, g, &offs, f)
                    }
                    None => (
                        n * per_lane_units(bytes, i64::from(cm.bank_bytes), aligned),
                        None,
                    ),
                };
                self.pay(CONFLICTS, (d - 1).max(0));
                self.pay(STEPS, d);
                if let Some(x) = extra {
                    self.pay_sym(CONFLICTS, &x);
                    self.pay_sym(STEPS, &x);
                }
            }
            _ => self.pay(STEPS, steps::OTHER_ACCESS as i64),
        }
    }
}

impl Exec<'_> {
    /// The cost of an access whose base is `addr`'s symbolic part, split by
    /// alignment: `(c, extra)` with the cost at most `c + extra`. `c` is the
    /// worst cost over the shifts the base allows when every term with an
    /// invariant integer factor (a parameter, a launch dimension) is a
    /// multiple of `period`, and `extra` is `(worst - c) × Σ [p mod q ≠ 0]`
    /// over those terms' factors `p` (the term `k·p·…` is a multiple of
    /// `period` when `q = period / gcd(k, period)` divides `p`). So
    /// `B[j * w + i]` costs 4 sectors per warp when `w` is a multiple of 8
    /// and 5 otherwise, instead of 5 for every `w`. `extra` is `None` when
    /// no term has such a factor or it changes nothing.
    #[allow(clippy::too_many_arguments)]
    fn split_alignment(
        &mut self,
        addr: Option<&IntVal>,
        wb: Option<AtomId>,
        warp: i64,
        period: i64,
        g: i64,
        offs: &[i64],
        f: impl Fn(i64) -> u32,
    ) -> (i64, Option<Poly>) {
        let worst = worst_alignment(offs, g, period, &f);
        let Some(a) = addr else {
            return (worst, None);
        };
        let mut g0 = 0i64;
        let mut factors: Vec<(AtomId, i64)> = Vec::new();
        for (m, c) in &a.base.terms {
            if m.is_empty() {
                continue;
            }
            let k = if wb.is_some_and(|w| m.contains(&w)) {
                c.abs().saturating_mul(warp)
            } else {
                c.abs()
            };
            if period <= 0 || k % period == 0 {
                continue;
            }
            let p = m.iter().copied().find(|x| {
                matches!(
                    self.atoms.kind(*x),
                    AtomKind::Param(_)
                        | AtomKind::TParam(_)
                        | AtomKind::BlockDim(_)
                        | AtomKind::GridDim(_)
                )
            });
            match p {
                Some(p) => factors.push((p, period / gcd(k, period))),
                None => g0 = gcd(g0, k),
            }
        }
        if factors.is_empty() {
            return (worst, None);
        }
        let aligned = worst_alignment(offs, g0, period, &f);
        if aligned >= worst {
            return (worst, None);
        }
        let mut ind = Poly::constant(0);
        for (p, q) in factors {
            let Some(pb) = self.atoms.to_bx(p) else {
                return (worst, None);
            };
            let frac = Bx::div(pb, Bx::Int(q));
            let expr = Bx::Sub(
                Box::new(Bx::Ceil(Box::new(frac.clone()))),
                Box::new(Bx::Floor(Box::new(frac))),
            );
            let d = self.atoms.intern(AtomKind::Derived { expr, nonneg: true });
            ind = ind.add(&Poly::atom(d)).unwrap_or(ind);
        }
        match ind.scale(worst - aligned) {
            Some(x) => (aligned, Some(x)),
            None => (worst, None),
        }
    }
}

/// Per-lane concrete byte offsets (relative to the symbolic base) and the
/// alignment of the base (the gcd of its coefficients; 0 when constant). A
/// warp's first `threadIdx.x` (`wb`) is a multiple of the warp size under
/// the lane layout's assumption.
fn lane_offsets(
    addr: Option<&IntVal>,
    n: usize,
    wb: Option<AtomId>,
    warp: i64,
) -> Option<(Vec<i64>, i64)> {
    let a = addr?;
    let offs = match &a.offs {
        Offs::Zero => vec![0; n],
        Offs::Con(v) => v.to_vec(),
        Offs::Sym(_) => return None,
    };
    let mut g = 0i64;
    for (m, c) in &a.base.terms {
        if m.is_empty() {
            continue;
        }
        let k = if wb.is_some_and(|w| m.contains(&w)) {
            c.abs().saturating_mul(warp)
        } else {
            c.abs()
        };
        g = gcd(g, k);
    }
    let c0 = a.base.const_term();
    Some((offs.iter().map(|o| o + c0).collect(), g))
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The worst of `f(r)` over the shifts `r` the base allows (multiples of
/// `g` modulo `period`; only 0 when `g` is 0).
fn worst_alignment(_offs: &[i64], g: i64, period: i64, f: &impl Fn(i64) -> u32) -> i64 {
    if g == 0 {
        return i64::from(f(0));
    }
    let step = gcd(g, period).max(1);
    let mut best = 0u32;
    let mut r = 0;
    while r < period {
        best = best.max(f(r));
        r += step;
    }
    i64::from(best)
}

/// The most units (sectors, bank words) one lane's access of `bytes` can touch.
fn per_lane_units(bytes: i64, unit: i64, aligned: bool) -> i64 {
    let unit = unit.max(1);
    if aligned && (unit % bytes == 0 || bytes % unit == 0) {
        (bytes + unit - 1) / unit
    } else {
        (bytes + unit - 2) / unit + 1
    }
}

fn const_op(op: BinOp, x: i64, y: i64) -> Option<i64> {
    Some(match op {
        BinOp::Add => x.checked_add(y)?,
        BinOp::Sub => x.checked_sub(y)?,
        BinOp::Mul => x.checked_mul(y)?,
        BinOp::Div => x.checked_div(y).unwrap_or(0),
        BinOp::Rem => x.checked_rem(y).unwrap_or(0),
        BinOp::Shl => x.wrapping_shl((y & 63) as u32),
        BinOp::Shr => x.wrapping_shr((y & 63) as u32),
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::LogAnd => i64::from(x != 0 && y != 0),
        BinOp::LogOr => i64::from(x != 0 || y != 0),
        BinOp::Eq => i64::from(x == y),
        BinOp::Ne => i64::from(x != y),
        BinOp::Lt => i64::from(x < y),
        BinOp::Le => i64::from(x <= y),
        BinOp::Gt => i64::from(x > y),
        BinOp::Ge => i64::from(x >= y),
        BinOp::Comma => y,
    })
}

trait NormalizeLanes {
    fn normalize_lanes(self, n: usize) -> Self;
}

impl NormalizeLanes for Val {
    /// Comparisons of non-concrete values: uniform exactly when the
    /// difference is.
    fn normalize_lanes(self, _n: usize) -> Val {
        self
    }
}

/// Whether a statement contains `break`, `continue`, `return` or anything
/// unmodelled (an unrolled loop runs its body whole).
fn has_jumps(f: &Function, s: StmtId) -> bool {
    matches!(
        f.stmt(s).kind,
        StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(_)
            | StmtKind::Opaque(_)
            | StmtKind::Switch { .. }
    ) || f.child_stmts(s).into_iter().any(|c| has_jumps(f, c))
}

/// Every variable assigned (or declared with a value) inside a loop.
fn mark_tracked(f: &Function, s: StmtId, out: &mut [bool]) {
    match &f.stmt(s).kind {
        StmtKind::For {
            init,
            cond,
            step,
            body,
        } => {
            if let Some(i) = init {
                mark_tracked(f, *i, out);
            }
            let mut set = BTreeSet::new();
            assigned_in_stmt(f, *body, &mut set);
            if let Some(c) = cond {
                assigned_in_expr(f, *c, &mut set);
            }
            if let Some(st) = step {
                assigned_in_expr(f, *st, &mut set);
            }
            for v in set {
                out[v as usize] = true;
            }
            mark_tracked(f, *body, out);
        }
        StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
            let mut set = BTreeSet::new();
            assigned_in_stmt(f, *body, &mut set);
            assigned_in_expr(f, *cond, &mut set);
            for v in set {
                out[v as usize] = true;
            }
            mark_tracked(f, *body, out);
        }
        _ => {
            for c in f.child_stmts(s) {
                mark_tracked(f, c, out);
            }
        }
    }
}

/// Variables assigned (or declared) in a statement.
fn assigned_in_stmt(f: &Function, s: StmtId, out: &mut BTreeSet<u32>) {
    match &f.stmt(s).kind {
        StmtKind::Decl { var, init } => {
            out.insert(var.0);
            if let Some(e) = init {
                assigned_in_expr(f, *e, out);
            }
        }
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => assigned_in_expr(f, *e, out),
        StmtKind::If { cond, .. } | StmtKind::Switch { cond, .. } => {
            assigned_in_expr(f, *cond, out)
        }
        StmtKind::For { cond, step, .. } => {
            if let Some(c) = cond {
                assigned_in_expr(f, *c, out);
            }
            if let Some(st) = step {
                assigned_in_expr(f, *st, out);
            }
        }
        StmtKind::While { cond, .. } | StmtKind::DoWhile { cond, .. } => {
            assigned_in_expr(f, *cond, out)
        }
        _ => {}
    }
    for c in f.child_stmts(s) {
        assigned_in_stmt(f, c, out);
    }
}

fn assigned_in_expr(f: &Function, e: ExprId, out: &mut BTreeSet<u32>) {
    let target = match &f.expr(e).kind {
        ExprKind::Assign { lhs, .. } => Some(*lhs),
        ExprKind::IncDec { target, .. } => Some(*target),
        ExprKind::Unary(UnOp::AddrOf, a) => Some(*a),
        _ => None,
    };
    if let Some(mut t) = target {
        while let ExprKind::Cast(_, a) = &f.expr(t).kind {
            t = *a;
        }
        if let ExprKind::Var(v) = &f.expr(t).kind {
            out.insert(v.0);
        }
    }
    for c in f.child_exprs(e) {
        assigned_in_expr(f, c, out);
    }
}

fn atom_var(atoms: &Atoms, a: AtomId) -> Option<u32> {
    match atoms.kind(a) {
        AtomKind::Var(v) => Some(*v),
        _ => None,
    }
}

/// `k` when `p = k · a`.
fn scale_of(p: &Poly, a: AtomId) -> Option<i64> {
    if p.terms.len() != 1 {
        return None;
    }
    let (m, c) = p.terms.iter().next()?;
    (m.as_slice() == [a] && *c >= 2).then_some(*c)
}

fn is_int_type(t: &Type) -> bool {
    match t {
        Type::Scalar(s) => s.is_integral(),
        Type::Named(_) | Type::TemplateParam(_) => true,
        _ => false,
    }
}

/// Whether a condition value is the same constant on every lane.
fn as_const_truth(v: &Val) -> Option<bool> {
    match v {
        Val::Int(iv) => iv.as_const().map(|c| c != 0),
        Val::Ptr(..) => None,
        Val::Unknown { .. } => None,
    }
}

/// The worst lane's value of `d` (the largest).
fn worst_lane(d: &IntVal) -> Option<Poly> {
    match &d.offs {
        Offs::Zero => Some(d.base.clone()),
        Offs::Con(v) => d.base.add(&Poly::constant(*v.iter().max()?)),
        Offs::Sym(_) => None,
    }
}

/// Two values with the same shape (the head form of a loop variable).
fn same_shape(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) | (Val::Ptr(_, x), Val::Ptr(_, y)) => {
            x.base == y.base
                && x.offs == y.offs
                && std::mem::discriminant(a) == std::mem::discriminant(b)
        }
        (Val::Unknown { uniform: u1, .. }, Val::Unknown { uniform: u2, .. }) => u2 >= u1,
        _ => false,
    }
}

/// Join two environments: equal values stay, others become unknown
/// (uniform when both were and the paths were a uniform choice).
fn merge(a: &[Val], b: &[Val], uniform_choice: bool) -> Vec<Val> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            if x == y {
                x.clone()
            } else {
                Val::unknown(
                    uniform_choice && x.is_uniform() && y.is_uniform(),
                    x.from_memory() || y.from_memory(),
                )
            }
        })
        .collect()
}

/// The largest (`max`) or smallest value of `p` over the block and warp
/// index atoms (each in `0..=upper`), when `p` is monotone in them: a term
/// whose other atoms are non-negative. `None` when that is not so.
pub fn extremum(p: &Poly, atoms: &Atoms, upper: &HashMap<AtomId, Poly>, max: bool) -> Option<Poly> {
    let mut out = Poly::default();
    for (m, c) in &p.terms {
        let elim: Vec<AtomId> = m
            .iter()
            .copied()
            .filter(|a| upper.contains_key(a))
            .collect();
        let mut term = Poly::default();
        term.terms.insert(m.clone(), *c);
        if elim.is_empty() {
            out = out.add(&term)?;
            continue;
        }
        if !m.iter().all(|a| atoms.nonneg(*a)) {
            return None;
        }
        // Increasing in every eliminated atom when c > 0.
        if (*c > 0) == max {
            for a in elim {
                term = term.substitute(a, upper.get(&a)?)?;
            }
            out = out.add(&term)?;
        }
        // Otherwise the atoms' lower bound 0 makes the term 0.
    }
    Some(out)
}
