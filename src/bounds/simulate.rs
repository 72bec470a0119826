//! The lock-step cost simulator (RaCUDA's "evaluation mode"): it executes
//! one kernel's IR for concrete arguments, block and grid dimensions, and
//! counts the four metrics exactly, per warp and for the whole launch.
//!
//! Semantics. All threads of a block execute each statement together (the
//! most synchronised schedule, which race-free code cannot tell from any
//! other), under a mask of active threads; each warp is charged for every
//! operation at which it has an active thread, which is exactly RaCUDA's
//! per-warp lock-step cost semantics:
//! - a branch or loop test whose active lanes of a warp disagree is one
//!   divergent warp (`divwarps`) and both sides run, each under its lanes;
//! - a global access costs the distinct sectors the warp's active lanes
//!   touch (`sectors`), a shared access the most distinct words one bank
//!   serves (its wavefronts; `conflicts` counts those beyond
//!   `ceil(words / banks)`);
//! - `steps` follow [`super::steps`].
//!
//! Memory: every pointer parameter is its own array, filled with a value
//! or read from a file; unwritten cells and out-of-bounds reads hold the
//! fill value (RaCUDA's default value). `__shared__` arrays are per block
//! and zero-filled. Calls to device functions are one step (their bodies
//! are not executed) and return 0; common math intrinsics and atomics are
//! evaluated. A step budget turns a launch too big to simulate into an
//! error instead of a hang.

#![allow(clippy::needless_range_loop, clippy::manual_map)]

use super::steps;
use crate::facts::cost::CostModel;
use crate::ir::{
    Access, BinOp, Builtin, Dim, ExprId, ExprKind, Function, MemSpace, ScalarType, StmtId,
    StmtKind, Type, UnOp, VarId,
};
use std::collections::{BTreeMap, HashMap};

/// The four metrics, in the order of [`super::Metric::ALL`].
pub type Counts = [u64; 4];

/// How a pointer parameter's array starts out.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayInit {
    /// Every element holds this value.
    Fill(f64),
    /// These element values from index 0; the rest hold the fill value.
    Values(Vec<f64>),
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Block dimensions.
    pub block: [u32; 3],
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Values of scalar parameters and template parameters, by name.
    pub scalars: BTreeMap<String, f64>,
    /// Initial contents of pointer parameters, by name (others: `fill`).
    pub arrays: BTreeMap<String, ArrayInit>,
    /// Value of unwritten global memory.
    pub fill: f64,
    /// Only these blocks (default: every block of the grid).
    pub blocks: Option<Vec<[u32; 3]>>,
    /// Most warp-steps to execute before giving up.
    pub max_steps: u64,
    /// Cost model.
    pub cost: CostModel,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            block: [32, 1, 1],
            grid: [1, 1, 1],
            scalars: BTreeMap::new(),
            arrays: BTreeMap::new(),
            fill: 0.0,
            blocks: None,
            max_steps: 200_000_000,
            cost: CostModel::default(),
        }
    }
}

/// The counts of one warp.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WarpCounts {
    /// Its block.
    pub block: [u32; 3],
    /// Its index in the block.
    pub warp: u32,
    /// sectors, conflicts, divwarps, steps.
    pub counts: Counts,
}

/// The result of a simulation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SimResult {
    /// Every simulated warp.
    pub warps: Vec<WarpCounts>,
    /// Sums over the simulated warps.
    pub total: Counts,
    /// Maxima over the simulated warps.
    pub max_warp: Counts,
}

/// Why a simulation stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The step budget ran out.
    #[error("step budget of {0} warp-steps exhausted (a smaller launch, or --max-steps)")]
    Budget(u64),
    /// The launch is not simulable.
    #[error("{0}")]
    Invalid(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    I(i64),
    F(f64),
    /// Array id, byte offset.
    P(u32, i64),
}

impl V {
    fn as_i(self) -> i64 {
        match self {
            V::I(v) => v,
            V::F(f) => {
                if f.is_finite() {
                    f as i64
                } else {
                    0
                }
            }
            V::P(_, o) => o,
        }
    }
    fn as_f(self) -> f64 {
        match self {
            V::I(v) => v as f64,
            V::F(f) => f,
            V::P(_, o) => o as f64,
        }
    }
    fn truthy(self) -> bool {
        match self {
            V::I(v) => v != 0,
            V::F(f) => f != 0.0,
            V::P(..) => true,
        }
    }
}

/// A bit set over the threads of a block.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mask(Vec<u64>);

impl Mask {
    fn empty(n: usize) -> Mask {
        Mask(vec![0; n.div_ceil(64)])
    }
    fn full(n: usize) -> Mask {
        let mut m = Mask::empty(n);
        for i in 0..n {
            m.set(i);
        }
        m
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    fn and_not(&self, o: &Mask) -> Mask {
        Mask(self.0.iter().zip(&o.0).map(|(a, b)| a & !b).collect())
    }
    fn or_assign(&mut self, o: &Mask) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= b;
        }
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, bits)| {
            let bits = *bits;
            (0..64)
                .filter(move |b| bits >> b & 1 == 1)
                .map(move |b| w * 64 + b)
        })
    }
}

enum Frame {
    Loop { broken: Mask, continued: Mask },
    Switch { broken: Mask },
}

struct Array {
    cells: HashMap<i64, V>,
    fill: V,
}

struct Sim<'a> {
    f: &'a Function,
    cfg: &'a SimConfig,
    threads: usize,
    warp: usize,
    block_idx: [i64; 3],
    tids: Vec<[i64; 3]>,
    locals: Vec<Vec<V>>,
    arrays: Vec<Array>,
    /// Array id of each pointer parameter / shared array var / global name.
    var_array: HashMap<VarId, u32>,
    name_array: HashMap<String, u32>,
    /// Per-thread local arrays: (var, thread) -> array id.
    local_array: HashMap<(VarId, usize), u32>,
    accesses: HashMap<ExprId, Vec<usize>>,
    counts: Vec<Counts>,
    /// Per warp: the steps spent in assignments (RaCUDA's hoisted
    /// statements), so that an assignment's value part can be told apart
    /// (see [`Sim::assignment`]).
    side: Vec<u64>,
    returned: Mask,
    frames: Vec<Frame>,
    steps_used: u64,
}

/// Simulate `f` under `cfg`.
pub fn simulate(f: &Function, cfg: &SimConfig) -> Result<SimResult, SimError> {
    cfg.cost
        .validate()
        .map_err(|e| SimError::Invalid(e.to_string()))?;
    let [bx, by, bz] = cfg.block.map(|d| d as usize);
    let threads = bx * by * bz;
    if threads == 0 || threads > 1024 {
        return Err(SimError::Invalid(format!(
            "block {bx}x{by}x{bz} has {threads} threads (1..=1024)"
        )));
    }
    if cfg.grid.contains(&0) {
        return Err(SimError::Invalid("the grid has a zero dimension".into()));
    }
    let Some(body) = f.body else {
        return Err(SimError::Invalid(format!("`{}` has no body", f.name)));
    };
    let warp = cfg.cost.warp as usize;
    let blocks: Vec<[u32; 3]> = match &cfg.blocks {
        Some(b) => b.clone(),
        None => {
            let mut v = Vec::new();
            for z in 0..cfg.grid[2] {
                for y in 0..cfg.grid[1] {
                    for x in 0..cfg.grid[0] {
                        v.push([x, y, z]);
                    }
                }
            }
            v
        }
    };
    let mut accesses: HashMap<ExprId, Vec<usize>> = HashMap::new();
    for (i, a) in f.accesses.iter().enumerate() {
        accesses.entry(a.expr).or_default().push(i);
    }
    let tids: Vec<[i64; 3]> = (0..threads)
        .map(|t| {
            [
                (t % bx) as i64,
                ((t / bx) % by) as i64,
                (t / (bx * by)) as i64,
            ]
        })
        .collect();
    let mut sim = Sim {
        f,
        cfg,
        threads,
        warp,
        block_idx: [0; 3],
        tids,
        locals: Vec::new(),
        arrays: Vec::new(),
        var_array: HashMap::new(),
        name_array: HashMap::new(),
        local_array: HashMap::new(),
        accesses,
        counts: Vec::new(),
        side: Vec::new(),
        returned: Mask::empty(threads),
        frames: Vec::new(),
        steps_used: 0,
    };
    // Global arrays, one per pointer parameter.
    for p in &f.params {
        let var = f.var(*p);
        if var.ty.is_indexable() {
            let init = cfg.arrays.get(&var.name);
            let fill = match init {
                Some(ArrayInit::Fill(v)) => *v,
                _ => cfg.fill,
            };
            let id = sim.new_array(value_of(fill, var.ty.element()));
            if let Some(ArrayInit::Values(vals)) = init {
                let eb = var.ty.element().and_then(|t| t.bytes()).unwrap_or(4) as i64;
                for (i, v) in vals.iter().enumerate() {
                    sim.arrays[id as usize]
                        .cells
                        .insert(i as i64 * eb, value_of(*v, var.ty.element()));
                }
            }
            sim.var_array.insert(*p, id);
        }
    }
    let n_warps = threads.div_ceil(warp);
    let mut out = SimResult {
        warps: Vec::new(),
        total: [0; 4],
        max_warp: [0; 4],
    };
    for b in blocks {
        sim.block_idx = [b[0] as i64, b[1] as i64, b[2] as i64];
        sim.counts = vec![[0; 4]; n_warps];
        sim.side = vec![0; n_warps];
        sim.returned = Mask::empty(threads);
        sim.frames.clear();
        sim.local_array.clear();
        // Fresh locals and shared arrays per block.
        sim.locals = vec![vec![V::I(0); threads]; f.vars.len()];
        sim.var_array
            .retain(|v, _| f.var(*v).param_position.is_some());
        for p in &f.params {
            let var = f.var(*p);
            let val = if let Some(a) = sim.var_array.get(p) {
                V::P(*a, 0)
            } else {
                let x = cfg.scalars.get(&var.name).copied().unwrap_or(0.0);
                value_of(x, Some(&var.ty))
            };
            sim.locals[p.0 as usize] = vec![val; threads];
        }
        let all = Mask::full(threads);
        sim.stmt(body, &all)?;
        for (w, c) in sim.counts.iter().enumerate() {
            for m in 0..4 {
                out.total[m] += c[m];
                out.max_warp[m] = out.max_warp[m].max(c[m]);
            }
            out.warps.push(WarpCounts {
                block: b,
                warp: w as u32,
                counts: *c,
            });
        }
    }
    Ok(out)
}

fn value_of(x: f64, ty: Option<&Type>) -> V {
    match ty {
        Some(Type::Scalar(s)) if s.is_integral() => V::I(x as i64),
        Some(Type::Scalar(_)) => V::F(x),
        _ => {
            if x.fract() == 0.0 && x.abs() < 9e15 {
                V::I(x as i64)
            } else {
                V::F(x)
            }
        }
    }
}

fn convert(v: V, ty: &Type) -> V {
    match (ty, v) {
        (Type::Scalar(ScalarType::Bool), v) => V::I(v.truthy() as i64),
        (Type::Scalar(s), V::F(x)) if s.is_integral() => {
            V::I(if x.is_finite() { x as i64 } else { 0 })
        }
        (Type::Scalar(s), V::I(x)) if !s.is_integral() => V::F(x as f64),
        _ => v,
    }
}

const SECTORS: usize = 0;
const CONFLICTS: usize = 1;
const DIVWARPS: usize = 2;
const STEPS: usize = 3;

impl<'a> Sim<'a> {
    fn new_array(&mut self, fill: V) -> u32 {
        self.arrays.push(Array {
            cells: HashMap::new(),
            fill,
        });
        (self.arrays.len() - 1) as u32
    }

    /// Charge `n` of metric `m` to every warp with an active thread in `mask`.
    fn charge(&mut self, mask: &Mask, m: usize, n: u64) -> Result<(), SimError> {
        if n == 0 {
            return Ok(());
        }
        for w in 0..self.counts.len() {
            if self.warp_active(mask, w) {
                self.counts[w][m] += n;
                if m == STEPS {
                    self.steps_used += n;
                }
            }
        }
        if self.steps_used > self.cfg.max_steps {
            return Err(SimError::Budget(self.cfg.max_steps));
        }
        Ok(())
    }

    fn warp_active(&self, mask: &Mask, w: usize) -> bool {
        (w * self.warp..((w + 1) * self.warp).min(self.threads)).any(|t| mask.get(t))
    }

    /// Count one divergence for each warp whose active lanes disagree.
    fn diverge(&mut self, t: &Mask, f: &Mask) {
        for w in 0..self.counts.len() {
            if self.warp_active(t, w) && self.warp_active(f, w) {
                self.counts[w][DIVWARPS] += 1;
            }
        }
    }

    fn exited(&self) -> Mask {
        let mut m = self.returned.clone();
        for fr in self.frames.iter().rev() {
            match fr {
                Frame::Loop { broken, continued } => {
                    m.or_assign(broken);
                    m.or_assign(continued);
                    break;
                }
                Frame::Switch { broken } => m.or_assign(broken),
            }
        }
        m
    }

    fn stmt(&mut self, s: StmtId, mask: &Mask) -> Result<(), SimError> {
        let mask = mask.and_not(&self.exited());
        if mask.is_empty() {
            return Ok(());
        }
        match self.f.stmt(s).kind.clone() {
            StmtKind::Block(items) => {
                for i in items {
                    self.stmt(i, &mask)?;
                }
            }
            StmtKind::Decl { var, init } => {
                self.charge(&mask, STEPS, steps::DECL)?;
                let v = self.f.var(var);
                if v.ty.is_indexable() && !matches!(v.ty, Type::Pointer(_)) {
                    // An array: shared (one per block) or local (per thread).
                    let fill = value_of(0.0, v.ty.innermost().bytes().map(|_| v.ty.innermost()));
                    if v.space == Some(MemSpace::Shared) {
                        if !self.var_array.contains_key(&var) {
                            let id = self.new_array(fill);
                            self.var_array.insert(var, id);
                        }
                    } else {
                        for t in mask.iter() {
                            let id = self.new_array(fill);
                            self.local_array.insert((var, t), id);
                        }
                    }
                    return Ok(());
                }
                if let Some(e) = init {
                    let vals = self.expr(e, &mask)?;
                    self.charge(&mask, STEPS, steps::LOCAL_WRITE)?;
                    let ty = v.ty.clone();
                    for t in mask.iter() {
                        self.locals[var.0 as usize][t] = convert(vals[t], &ty);
                    }
                }
            }
            StmtKind::Expr(e) => {
                self.effect(e, &mask)?;
            }
            StmtKind::If { cond, then, els } => {
                let c = self.expr(cond, &mask)?;
                self.charge(&mask, STEPS, steps::TEST)?;
                let (t, fl) = self.split(&c, &mask);
                self.diverge(&t, &fl);
                if !t.is_empty() {
                    self.stmt(then, &t)?;
                }
                if let Some(e) = els
                    && !fl.is_empty()
                {
                    self.stmt(e, &fl)?;
                }
            }
            StmtKind::PreprocAlt { then, .. } => self.stmt(then, &mask)?,
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                if let Some(i) = init {
                    self.stmt(i, &mask)?;
                }
                self.looped(cond, step, body, false, &mask)?;
            }
            StmtKind::While { cond, body } => self.looped(Some(cond), None, body, false, &mask)?,
            StmtKind::DoWhile { body, cond } => self.looped(Some(cond), None, body, true, &mask)?,
            StmtKind::Switch { cond, body } => self.switch(cond, body, &mask)?,
            StmtKind::Case(_) | StmtKind::Opaque(_) => {}
            StmtKind::Break => {
                self.charge(&mask, STEPS, steps::JUMP)?;
                match self.frames.last_mut() {
                    Some(Frame::Loop { broken, .. }) | Some(Frame::Switch { broken }) => {
                        broken.or_assign(&mask)
                    }
                    None => {}
                }
            }
            StmtKind::Continue => {
                self.charge(&mask, STEPS, steps::JUMP)?;
                for fr in self.frames.iter_mut().rev() {
                    if let Frame::Loop { continued, .. } = fr {
                        continued.or_assign(&mask);
                        break;
                    }
                }
            }
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e, &mask)?;
                }
                self.charge(&mask, STEPS, steps::JUMP)?;
                self.returned.or_assign(&mask);
            }
            StmtKind::Barrier(_) => self.charge(&mask, STEPS, steps::JUMP)?,
        }
        Ok(())
    }

    fn split(&self, c: &[V], mask: &Mask) -> (Mask, Mask) {
        let mut t = Mask::empty(self.threads);
        let mut f = Mask::empty(self.threads);
        for i in mask.iter() {
            if c[i].truthy() {
                t.set(i);
            } else {
                f.set(i);
            }
        }
        (t, f)
    }

    fn looped(
        &mut self,
        cond: Option<ExprId>,
        step: Option<ExprId>,
        body: StmtId,
        body_first: bool,
        mask: &Mask,
    ) -> Result<(), SimError> {
        self.frames.push(Frame::Loop {
            broken: Mask::empty(self.threads),
            continued: Mask::empty(self.threads),
        });
        let mut live = mask.clone();
        let mut first = true;
        loop {
            live = live.and_not(&self.returned);
            if let Some(Frame::Loop { broken, .. }) = self.frames.last() {
                live = live.and_not(broken);
            }
            if live.is_empty() {
                break;
            }
            if !(body_first && first) {
                let (t, f) = match cond {
                    Some(c) => {
                        let v = self.expr(c, &live)?;
                        self.split(&v, &live)
                    }
                    None => (live.clone(), Mask::empty(self.threads)),
                };
                self.charge(&live, STEPS, steps::TEST)?;
                self.diverge(&t, &f);
                live = t;
                if live.is_empty() {
                    break;
                }
            }
            first = false;
            if let Some(Frame::Loop { continued, .. }) = self.frames.last_mut() {
                *continued = Mask::empty(self.threads);
            }
            self.stmt(body, &live)?;
            if let Some(Frame::Loop { continued, .. }) = self.frames.last_mut() {
                *continued = Mask::empty(self.threads);
            }
            let after = live.and_not(&self.exited());
            if let Some(st) = step
                && !after.is_empty()
            {
                self.effect(st, &after)?;
            }
        }
        self.frames.pop();
        Ok(())
    }

    fn switch(&mut self, cond: ExprId, body: StmtId, mask: &Mask) -> Result<(), SimError> {
        let c = self.expr(cond, mask)?;
        self.charge(mask, STEPS, steps::TEST)?;
        let items = match &self.f.stmt(body).kind {
            StmtKind::Block(v) => v.clone(),
            _ => vec![body],
        };
        // Which case each lane enters.
        let mut labels: Vec<(usize, Option<i64>)> = Vec::new();
        for (i, s) in items.iter().enumerate() {
            if let StmtKind::Case(e) = &self.f.stmt(*s).kind {
                let v = match e {
                    Some(e) => Some(self.const_eval(*e).unwrap_or(i64::MIN)),
                    None => None,
                };
                labels.push((i, v));
            }
        }
        let mut entry: Vec<Option<usize>> = vec![None; self.threads];
        for t in mask.iter() {
            let x = c[t].as_i();
            entry[t] = labels
                .iter()
                .find(|(_, v)| *v == Some(x))
                .or_else(|| labels.iter().find(|(_, v)| v.is_none()))
                .map(|(i, _)| *i);
        }
        // Divergence: lanes of one warp entering at different labels.
        for w in 0..self.counts.len() {
            let mut seen: Option<Option<usize>> = None;
            let mut split = false;
            for t in w * self.warp..((w + 1) * self.warp).min(self.threads) {
                if !mask.get(t) {
                    continue;
                }
                match seen {
                    None => seen = Some(entry[t]),
                    Some(s) if s != entry[t] => split = true,
                    _ => {}
                }
            }
            if split {
                self.counts[w][DIVWARPS] += 1;
            }
        }
        self.frames.push(Frame::Switch {
            broken: Mask::empty(self.threads),
        });
        let mut entered = Mask::empty(self.threads);
        for (i, s) in items.iter().enumerate() {
            for t in mask.iter() {
                if entry[t] == Some(i) {
                    entered.set(t);
                }
            }
            if !entered.is_empty() {
                self.stmt(*s, &entered)?;
            }
        }
        self.frames.pop();
        Ok(())
    }

    fn const_eval(&self, e: ExprId) -> Option<i64> {
        match &self.f.expr(e).kind {
            ExprKind::Int(v) => Some(*v),
            ExprKind::Cast(_, a) => self.const_eval(*a),
            ExprKind::Unary(UnOp::Neg, a) => self.const_eval(*a).map(|v| -v),
            ExprKind::Name(n) => self.cfg.scalars.get(n).map(|v| *v as i64),
            _ => crate::facts::barriers::const_value(self.f, e),
        }
    }

    fn access_of(&self, e: ExprId, write: bool) -> Option<&'a Access> {
        let f = self.f;
        self.accesses
            .get(&e)?
            .iter()
            .map(|i| &f.accesses[*i])
            .find(|a| a.is_write == write)
            .or_else(|| self.accesses.get(&e)?.first().map(|i| &f.accesses[*i]))
    }

    /// Charge the cost of one access by the threads in `mask` at byte
    /// addresses `addr` (per thread).
    fn charge_access(
        &mut self,
        mask: &Mask,
        space: MemSpace,
        addr: &[(u32, i64)],
        bytes: i64,
    ) -> Result<(), SimError> {
        let cm = self.cfg.cost;
        for w in 0..self.counts.len() {
            let lanes: Vec<usize> = (w * self.warp..((w + 1) * self.warp).min(self.threads))
                .filter(|t| mask.get(*t))
                .collect();
            if lanes.is_empty() {
                continue;
            }
            // Addresses in different arrays never share a sector or word:
            // place each array far apart.
            let ranges: Vec<(i64, i64)> = lanes
                .iter()
                .map(|t| {
                    let (a, o) = addr[*t];
                    ((a as i64) << 40 | (o & ((1 << 40) - 1)), bytes.max(1))
                })
                .collect();
            match space {
                MemSpace::Global => {
                    let s = cm.sectors(ranges.iter().copied()) as u64;
                    self.counts[w][SECTORS] += s;
                    self.counts[w][STEPS] += s;
                    self.steps_used += s;
                }
                MemSpace::Shared => {
                    let (d, ideal) = cm.bank_wavefronts(ranges.iter().copied());
                    self.counts[w][CONFLICTS] += u64::from(d.saturating_sub(ideal));
                    self.counts[w][STEPS] += u64::from(d);
                    self.steps_used += u64::from(d);
                }
                _ => {
                    self.counts[w][STEPS] += steps::OTHER_ACCESS;
                    self.steps_used += steps::OTHER_ACCESS;
                }
            }
        }
        if self.steps_used > self.cfg.max_steps {
            return Err(SimError::Budget(self.cfg.max_steps));
        }
        Ok(())
    }

    /// The array and byte address each thread's access `e` (an `Index`,
    /// deref or `->`) touches, evaluating the subscripts (charged).
    fn address(
        &mut self,
        e: ExprId,
        mask: &Mask,
        acc: Option<&Access>,
    ) -> Result<Vec<(u32, i64)>, SimError> {
        let n = self.threads;
        let mut out = vec![(u32::MAX, 0i64); n];
        match self.f.expr(e).kind.clone() {
            ExprKind::Index { .. } => {
                let (root, chain) = self.f.index_chain(e);
                let dims: Vec<Option<u64>> = acc.map(|a| a.dims.clone()).unwrap_or_default();
                let elem = acc
                    .and_then(|a| a.elem_bytes)
                    .or_else(|| self.elem_bytes_of(root))
                    .unwrap_or(4) as i64;
                let field = acc.and_then(|a| a.field_offset).unwrap_or(0) as i64;
                let base = self.pointer_value(root, mask)?;
                let mut flat = vec![0i64; n];
                for (i, idx) in chain.iter().enumerate() {
                    let v = self.expr(*idx, mask)?;
                    let extent = if i > 0 {
                        dims.get(i).copied().flatten().unwrap_or(0) as i64
                    } else {
                        0
                    };
                    for t in mask.iter() {
                        flat[t] = if i == 0 {
                            v[t].as_i()
                        } else {
                            flat[t].wrapping_mul(extent).wrapping_add(v[t].as_i())
                        };
                    }
                }
                for t in mask.iter() {
                    let (a, o) = base[t];
                    out[t] = (a, o.wrapping_add(flat[t].wrapping_mul(elem)) + field);
                }
            }
            ExprKind::Unary(UnOp::Deref, p) => {
                let base = self.pointer_value(p, mask)?;
                for t in mask.iter() {
                    out[t] = base[t];
                }
            }
            ExprKind::Member {
                base, arrow: true, ..
            } => {
                let b = self.pointer_value(base, mask)?;
                let field = acc.and_then(|a| a.field_offset).unwrap_or(0) as i64;
                for t in mask.iter() {
                    out[t] = (b[t].0, b[t].1 + field);
                }
            }
            _ => {}
        }
        Ok(out)
    }

    fn elem_bytes_of(&self, root: ExprId) -> Option<u64> {
        match &self.f.expr(root).kind {
            ExprKind::Var(v) => self.f.var(*v).ty.innermost().bytes(),
            _ => None,
        }
    }

    /// The pointer each thread's expression `p` holds (an array base:
    /// parameter, shared or local array, or a computed pointer).
    fn pointer_value(&mut self, p: ExprId, mask: &Mask) -> Result<Vec<(u32, i64)>, SimError> {
        let n = self.threads;
        match self.f.expr(p).kind.clone() {
            ExprKind::Var(v) => {
                if let Some(a) = self.var_array.get(&v) {
                    if self.f.var(v).param_position.is_some() {
                        // A parameter: its (possibly reassigned) value.
                        let vals = &self.locals[v.0 as usize];
                        return Ok((0..n)
                            .map(|t| match vals[t] {
                                V::P(x, o) => (x, o),
                                _ => (*a, 0),
                            })
                            .collect());
                    }
                    return Ok(vec![(*a, 0); n]);
                }
                let is_local_array = self.f.var(v).ty.is_indexable()
                    && !matches!(self.f.var(v).ty, Type::Pointer(_));
                if is_local_array {
                    let mut out = vec![(u32::MAX, 0); n];
                    for t in mask.iter() {
                        let id = match self.local_array.get(&(v, t)) {
                            Some(id) => *id,
                            None => {
                                let id = self.new_array(V::I(0));
                                self.local_array.insert((v, t), id);
                                id
                            }
                        };
                        out[t] = (id, 0);
                    }
                    return Ok(out);
                }
                let vals = self.locals[v.0 as usize].clone();
                Ok(vals
                    .iter()
                    .map(|x| match x {
                        V::P(a, o) => (*a, *o),
                        _ => (u32::MAX, x.as_i()),
                    })
                    .collect())
            }
            ExprKind::Name(name) => {
                let id = match self.name_array.get(&name) {
                    Some(id) => *id,
                    None => {
                        let id = self.new_array(V::I(0));
                        self.name_array.insert(name, id);
                        id
                    }
                };
                Ok(vec![(id, 0); n])
            }
            _ => {
                let vals = self.expr(p, mask)?;
                Ok(vals
                    .iter()
                    .map(|x| match x {
                        V::P(a, o) => (*a, *o),
                        _ => (u32::MAX, x.as_i()),
                    })
                    .collect())
            }
        }
    }

    fn load(&self, a: u32, o: i64) -> V {
        match self.arrays.get(a as usize) {
            Some(arr) => arr.cells.get(&o).copied().unwrap_or(arr.fill),
            None => V::I(0),
        }
    }

    fn store(&mut self, a: u32, o: i64, v: V) {
        if let Some(arr) = self.arrays.get_mut(a as usize) {
            arr.cells.insert(o, v);
        }
    }

    /// Evaluate `e` for the threads in `mask` (charging its steps), its
    /// value used.
    fn expr(&mut self, e: ExprId, mask: &Mask) -> Result<Vec<V>, SimError> {
        self.eval(e, mask, true)
    }

    /// Evaluate `e` for its effects only (an expression statement, a `for`
    /// step, the left of `,`): an assignment's value costs nothing more.
    fn effect(&mut self, e: ExprId, mask: &Mask) -> Result<Vec<V>, SimError> {
        self.eval(e, mask, false)
    }

    /// Every warp's steps so far, and its steps spent in assignments.
    fn step_marks(&self) -> (Vec<u64>, Vec<u64>) {
        (
            self.counts.iter().map(|c| c[STEPS]).collect(),
            self.side.clone(),
        )
    }

    /// Per warp: the steps since `mark` that were not spent in assignments
    /// (the value part of what ran since).
    fn value_steps(&self, mark: &(Vec<u64>, Vec<u64>)) -> Vec<u64> {
        (0..self.counts.len())
            .map(|w| (self.counts[w][STEPS] - mark.0[w]) - (self.side[w] - mark.1[w]))
            .collect()
    }

    /// Per warp: the steps since `t0`.
    fn steps_since(&self, t0: &[u64]) -> Vec<u64> {
        (0..self.counts.len())
            .map(|w| self.counts[w][STEPS] - t0[w])
            .collect()
    }

    /// Charge `v[w]` steps to each warp `w`.
    fn charge_each(&mut self, v: &[u64]) -> Result<(), SimError> {
        for (w, k) in v.iter().enumerate() {
            self.counts[w][STEPS] += k;
            self.steps_used += k;
        }
        if self.steps_used > self.cfg.max_steps {
            return Err(SimError::Budget(self.cfg.max_steps));
        }
        Ok(())
    }

    /// An assignment expression: `lhs = rhs`, `lhs op= rhs` (`rhs` given),
    /// or `++lhs`/`lhs++`/… (`incdec = Some((increment, prefix))`).
    ///
    /// RaCUDA's front end (`CUDA.ml`, `rev_cuda_of_expression`) hoists an
    /// assignment out of its expression as a statement and leaves in its
    /// place the expression it stands for: `x = e` → `e` (its value part),
    /// `x op= e` → `x op e`, `++x` → `x`, `x++` → `x - 1`. Every step of the
    /// assignment is a statement's step; when the value is `used` (a chained
    /// assignment, an operand, a condition, an argument) the steps of that
    /// stand-in expression are paid again ([`super::steps`]).
    fn assignment(
        &mut self,
        lhs: ExprId,
        op: Option<BinOp>,
        rhs: Option<ExprId>,
        incdec: Option<(bool, bool)>,
        used: bool,
        mask: &Mask,
    ) -> Result<Vec<V>, SimError> {
        let n = self.threads;
        let mark = self.step_marks();
        let (r, op) = match (rhs, incdec) {
            (Some(r), _) => (self.expr(r, mask)?, op),
            (None, Some((inc, _))) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                let o = if inc { BinOp::Add } else { BinOp::Sub };
                (vec![V::I(1); n], Some(o))
            }
            (None, None) => return Err(SimError::Invalid("assignment without a value".into())),
        };
        let value = self.value_steps(&mark);
        let (new, read) = self.assign(lhs, op, r, mask)?;
        for w in 0..self.side.len() {
            self.side[w] = mark.1[w] + (self.counts[w][STEPS] - mark.0[w]);
        }
        if used {
            // `read`: the target's read and the operator, per warp (0 on a
            // warp with no active lane).
            let again: Vec<u64> = match incdec {
                None => value.iter().zip(&read).map(|(v, r)| v + r).collect(),
                // `++x` stands for `x`: the read without the operator.
                Some((_, true)) => read
                    .iter()
                    .map(|r| r.saturating_sub(steps::BINARY))
                    .collect(),
                // `x++` stands for `x - 1`: the read, the constant, the operator.
                Some((_, false)) => read
                    .iter()
                    .map(|r| if *r > 0 { r + steps::LEAF } else { 0 })
                    .collect(),
            };
            self.charge_each(&again)?;
        }
        Ok(match incdec {
            Some((inc, false)) => new
                .iter()
                .map(|x| arith(if inc { BinOp::Sub } else { BinOp::Add }, *x, V::I(1)))
                .collect(),
            _ => new,
        })
    }

    /// Evaluate `e` for the threads in `mask` (charging its steps); `used`:
    /// its value is used (see [`Sim::assignment`]).
    fn eval(&mut self, e: ExprId, mask: &Mask, used: bool) -> Result<Vec<V>, SimError> {
        let n = self.threads;
        let kind = self.f.expr(e).kind.clone();
        let out: Vec<V> = match kind {
            ExprKind::Int(v) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                vec![V::I(v); n]
            }
            ExprKind::Float(s) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                let x = s
                    .trim_end_matches(['f', 'F', 'l', 'L'])
                    .parse::<f64>()
                    .unwrap_or(0.0);
                vec![V::F(x); n]
            }
            ExprKind::Bool(b) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                vec![V::I(b as i64); n]
            }
            ExprKind::Str | ExprKind::SizeOf(None) | ExprKind::Unknown(_) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                vec![V::I(0); n]
            }
            ExprKind::SizeOf(Some(s)) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                vec![V::I(s as i64); n]
            }
            ExprKind::Var(v) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                let var = self.f.var(v);
                if var.ty.is_indexable() && !matches!(var.ty, Type::Pointer(_)) {
                    self.pointer_value(e, mask)?
                        .into_iter()
                        .map(|(a, o)| V::P(a, o))
                        .collect()
                } else {
                    self.locals[v.0 as usize].clone()
                }
            }
            ExprKind::Name(name) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                let x = self.cfg.scalars.get(&name).copied().unwrap_or(0.0);
                vec![value_of(x, None); n]
            }
            ExprKind::TemplateParam(p) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                let name = &self.f.template_params[p as usize].name;
                let x = self.cfg.scalars.get(name).copied().unwrap_or(0.0);
                vec![value_of(x, None); n]
            }
            ExprKind::Builtin(b) => {
                self.charge(mask, STEPS, steps::LEAF)?;
                let d = |d: Dim| match d {
                    Dim::X => 0,
                    Dim::Y => 1,
                    Dim::Z => 2,
                };
                match b {
                    Builtin::ThreadIdx(x) => self.tids.iter().map(|t| V::I(t[d(x)])).collect(),
                    Builtin::BlockIdx(x) => vec![V::I(self.block_idx[d(x)]); n],
                    Builtin::BlockDim(x) => vec![V::I(self.cfg.block[d(x)] as i64); n],
                    Builtin::GridDim(x) => vec![V::I(self.cfg.grid[d(x)] as i64); n],
                    Builtin::WarpSize => vec![V::I(self.warp as i64); n],
                }
            }
            ExprKind::Unary(op, a) => match op {
                UnOp::Plus => self.eval(a, mask, used)?,
                UnOp::Neg => {
                    let v = self.expr(a, mask)?;
                    self.charge(mask, STEPS, steps::NEG)?;
                    v.iter()
                        .map(|x| match x {
                            V::I(i) => V::I(i.wrapping_neg()),
                            V::F(f) => V::F(-f),
                            p => *p,
                        })
                        .collect()
                }
                UnOp::Not | UnOp::BitNot => {
                    let v = self.expr(a, mask)?;
                    self.charge(mask, STEPS, steps::UNARY)?;
                    v.iter()
                        .map(|x| {
                            if op == UnOp::Not {
                                V::I(!x.truthy() as i64)
                            } else {
                                V::I(!x.as_i())
                            }
                        })
                        .collect()
                }
                UnOp::AddrOf => {
                    self.charge(mask, STEPS, steps::UNARY)?;
                    match self.f.expr(a).kind.clone() {
                        ExprKind::Index { .. } | ExprKind::Unary(UnOp::Deref, _) => {
                            let acc = self.access_of(a, false);
                            let addr = self.address(a, mask, acc)?;
                            addr.into_iter().map(|(x, o)| V::P(x, o)).collect()
                        }
                        _ => self.expr(a, mask)?,
                    }
                }
                UnOp::Deref => {
                    self.charge(mask, STEPS, steps::UNARY)?;
                    self.read_access(e, mask)?
                }
            },
            ExprKind::Binary(BinOp::Comma, a, b) => {
                self.effect(a, mask)?;
                self.eval(b, mask, used)?
            }
            ExprKind::Binary(op, a, b) => self.binary(op, a, b, mask)?,
            ExprKind::Assign { op, lhs, rhs } => {
                self.assignment(lhs, op, Some(rhs), None, used, mask)?
            }
            ExprKind::IncDec {
                target,
                increment,
                prefix,
            } => self.assignment(target, None, None, Some((increment, prefix)), used, mask)?,
            ExprKind::Cond(c, a, b) => {
                let cv = self.expr(c, mask)?;
                self.charge(mask, STEPS, steps::TEST)?;
                let (t, f) = self.split(&cv, mask);
                self.diverge(&t, &f);
                let mut out = vec![V::I(0); n];
                if !t.is_empty() {
                    let av = self.expr(a, &t)?;
                    for i in t.iter() {
                        out[i] = av[i];
                    }
                }
                if !f.is_empty() {
                    let bv = self.expr(b, &f)?;
                    for i in f.iter() {
                        out[i] = bv[i];
                    }
                }
                out
            }
            ExprKind::Cast(ty, a) => {
                let v = self.eval(a, mask, used)?;
                v.into_iter().map(|x| convert(x, &ty)).collect()
            }
            ExprKind::Call {
                callee,
                receiver,
                args,
            } => self.call(e, &callee, receiver, &args, mask)?,
            ExprKind::Index { .. } => self.read_access(e, mask)?,
            ExprKind::Member { base, arrow, .. } => {
                if arrow {
                    self.charge(mask, STEPS, steps::UNARY)?;
                    self.read_access(e, mask)?
                } else if matches!(self.f.expr(base).kind, ExprKind::Index { .. }) {
                    self.read_access(base, mask)?
                } else {
                    self.charge(mask, STEPS, steps::LEAF)?;
                    vec![V::I(0); n]
                }
            }
        };
        Ok(out)
    }

    /// Read through an access expression (subscript, deref, `->`).
    fn read_access(&mut self, e: ExprId, mask: &Mask) -> Result<Vec<V>, SimError> {
        let acc = self.access_of(e, false);
        let addr = self.address(e, mask, acc)?;
        self.charge_access_of(e, acc, mask, &addr)?;
        Ok((0..self.threads)
            .map(|t| {
                if mask.get(t) {
                    self.load(addr[t].0, addr[t].1)
                } else {
                    V::I(0)
                }
            })
            .collect())
    }

    fn charge_access_of(
        &mut self,
        _e: ExprId,
        acc: Option<&Access>,
        mask: &Mask,
        addr: &[(u32, i64)],
    ) -> Result<(), SimError> {
        let (space, bytes) = match acc {
            Some(a) => (a.space, a.access_bytes.or(a.elem_bytes).unwrap_or(4) as i64),
            None => (MemSpace::Local, 4),
        };
        self.charge_access(mask, space, addr, bytes)
    }

    fn binary(&mut self, op: BinOp, a: ExprId, b: ExprId, mask: &Mask) -> Result<Vec<V>, SimError> {
        let n = self.threads;
        let av = self.expr(a, mask)?;
        if matches!(op, BinOp::LogAnd | BinOp::LogOr) {
            // Short-circuit: the right side runs only where it decides.
            let (t, f) = self.split(&av, mask);
            let need = if op == BinOp::LogAnd { t } else { f };
            let mut out: Vec<V> = av.iter().map(|x| V::I(x.truthy() as i64)).collect();
            if !need.is_empty() {
                let bv = self.expr(b, &need)?;
                for i in need.iter() {
                    out[i] = V::I(bv[i].truthy() as i64);
                }
            }
            self.charge(mask, STEPS, steps::BINARY)?;
            return Ok(out);
        }
        let bv = self.expr(b, mask)?;
        self.charge(mask, STEPS, steps::BINARY)?;
        let mut out = vec![V::I(0); n];
        for i in mask.iter() {
            out[i] = arith(op, av[i], bv[i]);
        }
        Ok(out)
    }

    /// `lhs op= r` (plain `=` when `op` is `None`): charges the write (and
    /// the read and the operator for compound forms); returns the new values
    /// and, per warp, the steps of the compound read and operator.
    fn assign(
        &mut self,
        lhs: ExprId,
        op: Option<BinOp>,
        r: Vec<V>,
        mask: &Mask,
    ) -> Result<(Vec<V>, Vec<u64>), SimError> {
        let n = self.threads;
        let t0: Vec<u64> = self.counts.iter().map(|c| c[STEPS]).collect();
        let mut read = vec![0; self.counts.len()];
        let mut lhs = lhs;
        while let ExprKind::Cast(_, a) = &self.f.expr(lhs).kind {
            lhs = *a;
        }
        match self.f.expr(lhs).kind.clone() {
            ExprKind::Var(v) => {
                let old = self.locals[v.0 as usize].clone();
                let mut new = r;
                if let Some(o) = op {
                    self.charge(mask, STEPS, steps::LEAF + steps::BINARY)?;
                    read = self.steps_since(&t0);
                    for i in mask.iter() {
                        new[i] = arith(o, old[i], new[i]);
                    }
                }
                self.charge(mask, STEPS, steps::LOCAL_WRITE)?;
                let ty = self.f.var(v).ty.clone();
                for i in mask.iter() {
                    self.locals[v.0 as usize][i] = convert(new[i], &ty);
                }
                Ok((self.locals[v.0 as usize].clone(), read))
            }
            ExprKind::Index { .. }
            | ExprKind::Unary(UnOp::Deref, _)
            | ExprKind::Member { arrow: true, .. } => {
                let wacc = self.access_of(lhs, true);
                let addr = self.address(lhs, mask, wacc)?;
                let mut new = r;
                if let Some(o) = op {
                    // The compound read re-evaluates the subscripts (RaCUDA
                    // reads `a[i] = a[i] op e`).
                    let t1: Vec<u64> = self.counts.iter().map(|c| c[STEPS]).collect();
                    let racc = self.access_of(lhs, false);
                    let addr2 = self.address(lhs, mask, racc)?;
                    self.charge_access_of(lhs, racc, mask, &addr2)?;
                    self.charge(mask, STEPS, steps::BINARY)?;
                    read = self.steps_since(&t1);
                    for i in mask.iter() {
                        new[i] = arith(o, self.load(addr2[i].0, addr2[i].1), new[i]);
                    }
                }
                if matches!(
                    self.f.expr(lhs).kind,
                    ExprKind::Member { arrow: true, .. } | ExprKind::Unary(UnOp::Deref, _)
                ) {
                    self.charge(mask, STEPS, steps::UNARY)?;
                }
                self.charge_access_of(lhs, wacc, mask, &addr)?;
                for i in mask.iter() {
                    self.store(addr[i].0, addr[i].1, new[i]);
                }
                Ok((new, read))
            }
            ExprKind::Member { base, .. } => {
                if matches!(self.f.expr(base).kind, ExprKind::Index { .. }) {
                    return self.assign(base, op, r, mask);
                }
                // A field of a local struct: not modelled beyond its cost.
                if op.is_some() {
                    self.charge(mask, STEPS, steps::LEAF + steps::BINARY)?;
                    read = self.steps_since(&t0);
                }
                self.charge(mask, STEPS, steps::LOCAL_WRITE)?;
                Ok((r, read))
            }
            _ => {
                self.expr(lhs, mask)?;
                let vals = vec![V::I(0); n]
                    .into_iter()
                    .zip(r)
                    .map(|(_, x)| x)
                    .collect();
                Ok((vals, read))
            }
        }
    }

    fn call(
        &mut self,
        e: ExprId,
        callee: &str,
        receiver: Option<ExprId>,
        args: &[ExprId],
        mask: &Mask,
    ) -> Result<Vec<V>, SimError> {
        let n = self.threads;
        let base = callee.rsplit("::").next().unwrap_or(callee);
        if base.starts_with("atomic") && !args.is_empty() {
            // The first argument is an address (`&s[i]`, or a pointer).
            let addr_expr = match &self.f.expr(args[0]).kind {
                ExprKind::Unary(UnOp::AddrOf, a) => Some(*a),
                _ => None,
            };
            let (addr, acc) = match addr_expr {
                Some(a) => {
                    let acc = self.access_of(a, false);
                    (self.address(a, mask, acc)?, acc)
                }
                None => {
                    let p = self.pointer_value(args[0], mask)?;
                    (p, None)
                }
            };
            let mut vals = Vec::new();
            for a in &args[1..] {
                vals.push(self.expr(*a, mask)?);
            }
            self.charge(mask, STEPS, steps::CALL + steps::UNARY)?;
            self.charge_access_of(args[0], acc, mask, &addr)?;
            let mut out = vec![V::I(0); n];
            for t in mask.iter() {
                let old = self.load(addr[t].0, addr[t].1);
                let v = vals.first().map(|x| x[t]).unwrap_or(V::I(1));
                let new = match base {
                    "atomicAdd" => arith(BinOp::Add, old, v),
                    "atomicSub" => arith(BinOp::Sub, old, v),
                    "atomicMax" => {
                        if v.as_f() > old.as_f() {
                            v
                        } else {
                            old
                        }
                    }
                    "atomicMin" => {
                        if v.as_f() < old.as_f() {
                            v
                        } else {
                            old
                        }
                    }
                    "atomicExch" => v,
                    "atomicAnd" => V::I(old.as_i() & v.as_i()),
                    "atomicOr" => V::I(old.as_i() | v.as_i()),
                    "atomicXor" => V::I(old.as_i() ^ v.as_i()),
                    "atomicInc" => V::I(if old.as_i() >= v.as_i() {
                        0
                    } else {
                        old.as_i() + 1
                    }),
                    "atomicCAS" => {
                        if old.as_i() == v.as_i() {
                            vals.get(1).map(|x| x[t]).unwrap_or(old)
                        } else {
                            old
                        }
                    }
                    _ => old,
                };
                self.store(addr[t].0, addr[t].1, new);
                out[t] = old;
            }
            let _ = e;
            return Ok(out);
        }
        let mut vals = Vec::new();
        if let Some(r) = receiver {
            self.expr(r, mask)?;
        }
        for a in args {
            vals.push(self.expr(*a, mask)?);
        }
        self.charge(mask, STEPS, steps::CALL)?;
        let arg = |i: usize, t: usize| vals.get(i).map(|v| v[t]).unwrap_or(V::I(0));
        let mut out = vec![V::I(0); n];
        for t in mask.iter() {
            let x = arg(0, t);
            out[t] = match base {
                "min" | "fminf" | "fmin" | "umin" => {
                    if arg(1, t).as_f() < x.as_f() {
                        arg(1, t)
                    } else {
                        x
                    }
                }
                "max" | "fmaxf" | "fmax" | "umax" => {
                    if arg(1, t).as_f() > x.as_f() {
                        arg(1, t)
                    } else {
                        x
                    }
                }
                "abs" => V::I(x.as_i().abs()),
                "fabs" | "fabsf" => V::F(x.as_f().abs()),
                "sqrt" | "sqrtf" => V::F(x.as_f().sqrt()),
                "rsqrtf" | "rsqrt" => V::F(1.0 / x.as_f().sqrt()),
                "exp" | "expf" | "__expf" => V::F(x.as_f().exp()),
                "log" | "logf" | "__logf" => V::F(x.as_f().ln()),
                "sin" | "sinf" | "__sinf" => V::F(x.as_f().sin()),
                "cos" | "cosf" | "__cosf" => V::F(x.as_f().cos()),
                "floor" | "floorf" => V::F(x.as_f().floor()),
                "ceil" | "ceilf" => V::F(x.as_f().ceil()),
                "__mul24" | "__umul24" => V::I(x.as_i().wrapping_mul(arg(1, t).as_i())),
                "__fdividef" | "fdividef" => V::F(x.as_f() / arg(1, t).as_f()),
                "__popc" => V::I(x.as_i().count_ones() as i64),
                _ if base.starts_with("__shfl") => x,
                _ => V::I(0),
            };
        }
        Ok(out)
    }
}

fn arith(op: BinOp, a: V, b: V) -> V {
    let float = matches!(a, V::F(_)) || matches!(b, V::F(_));
    match (a, b, op) {
        (V::P(x, o), V::I(k), BinOp::Add) => return V::P(x, o.wrapping_add(k)),
        (V::I(k), V::P(x, o), BinOp::Add) => return V::P(x, o.wrapping_add(k)),
        (V::P(x, o), V::I(k), BinOp::Sub) => return V::P(x, o.wrapping_sub(k)),
        _ => {}
    }
    let cmp = |r: bool| V::I(r as i64);
    if float {
        let (x, y) = (a.as_f(), b.as_f());
        return match op {
            BinOp::Add => V::F(x + y),
            BinOp::Sub => V::F(x - y),
            BinOp::Mul => V::F(x * y),
            BinOp::Div => V::F(x / y),
            BinOp::Rem => V::F(x % y),
            BinOp::Eq => cmp(x == y),
            BinOp::Ne => cmp(x != y),
            BinOp::Lt => cmp(x < y),
            BinOp::Le => cmp(x <= y),
            BinOp::Gt => cmp(x > y),
            BinOp::Ge => cmp(x >= y),
            BinOp::LogAnd => cmp(x != 0.0 && y != 0.0),
            BinOp::LogOr => cmp(x != 0.0 || y != 0.0),
            _ => arith(op, V::I(x as i64), V::I(y as i64)),
        };
    }
    let (x, y) = (a.as_i(), b.as_i());
    V::I(match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div => x.checked_div(y).unwrap_or(0),
        BinOp::Rem => x.checked_rem(y).unwrap_or(0),
        BinOp::Shl => x.wrapping_shl((y & 63) as u32),
        BinOp::Shr => x.wrapping_shr((y & 63) as u32),
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::LogAnd => (x != 0 && y != 0) as i64,
        BinOp::LogOr => (x != 0 || y != 0) as i64,
        BinOp::Eq => (x == y) as i64,
        BinOp::Ne => (x != y) as i64,
        BinOp::Lt => (x < y) as i64,
        BinOp::Le => (x <= y) as i64,
        BinOp::Gt => (x > y) as i64,
        BinOp::Ge => (x >= y) as i64,
        BinOp::Comma => y,
    })
}
