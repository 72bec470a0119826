//! Named barriers (`bar.sync`/`bar.arrive`/`bar.red` with ids and thread
//! counts, and `__syncthreads` as barrier 0 of the whole block), checked the
//! way WEFT does from PTX, here from source: every thread of one block is
//! emulated over the structured IR with its own `threadIdx` (conditions on
//! warp ids, `threadIdx.x / 32`, are evaluated per warp rather than called
//! divergent), which yields each warp's sequence of barrier operations; the
//! block is then run under the hardware's semantics (a generation completes
//! when the count of threads has registered; `sync` blocks, `arrive` does
//! not). Reported: deadlock (a warp blocked forever, with the cycle of waits
//! when there is one), count mismatch within a generation, over-arrival
//! (registrations past the count) and recycling (a warp registering twice in
//! one generation), and generations that complete with arrivals only.
//!
//! Anything the emulation cannot decide (a condition or loop bound on data,
//! a barrier id that is not constant) makes the function's verdict unknown,
//! not an error.

use super::LaunchDims;
use super::stride::AffineCx;
use crate::ir::{
    BarrierKind, BinOp, Builtin, Dim, ExprId, ExprKind, Function, StmtId, StmtKind, UnOp, VarId,
};
use std::collections::HashMap;

/// Emulation budget (statements executed, over all threads).
pub const STEP_BUDGET: u64 = 4_000_000;

/// What went wrong with a named barrier.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NamedBarrierIssue {
    /// Warps that wait forever: (warp, barrier index in `Function::barriers`).
    Deadlock {
        /// The blocked warps and where.
        waits: Vec<(u32, usize)>,
        /// Whether the waits form a cycle between barrier ids.
        cyclic: bool,
    },
    /// One generation used with two thread counts.
    CountMismatch {
        /// The barrier id.
        id: i64,
        /// (warp, barrier index, count) of the two operations.
        first: (u32, usize, i64),
        /// The conflicting one.
        second: (u32, usize, i64),
    },
    /// More threads registered than the count.
    OverArrival {
        /// The barrier id.
        id: i64,
        /// The count.
        count: i64,
        /// The operation past the count.
        at: (u32, usize),
        /// Threads registered on that id over the whole run.
        total: i64,
    },
    /// A warp registered twice in one generation.
    Recycling {
        /// The barrier id.
        id: i64,
        /// The warp and the second operation.
        at: (u32, usize),
    },
    /// A generation that completed with arrivals only (no warp waited).
    ArriveOnly {
        /// The barrier id.
        id: i64,
        /// The last arrival.
        at: (u32, usize),
    },
}

/// The named-barrier facts of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NamedBarrierFacts {
    /// Problems found.
    pub issues: Vec<NamedBarrierIssue>,
    /// Threads emulated (0: not evaluated).
    pub threads: u32,
    /// Why the emulation gave up, when it did.
    pub unknown: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Op {
    barrier: usize,
    id: i64,
    count: i64,
    wait: bool,
}

struct Emu<'a> {
    f: &'a Function,
    t: [i64; 3],
    bdim: [i64; 3],
    env: HashMap<u32, i64>,
    ops: Vec<Op>,
    steps: u64,
    block_threads: i64,
    has_ops: HashMap<u32, bool>,
}

enum Flow {
    Normal,
    Return,
    Break,
    Continue,
}

type R<T> = Result<T, String>;

fn is_named(kind: BarrierKind) -> bool {
    matches!(
        kind,
        BarrierKind::BarSync
            | BarrierKind::BarArrive
            | BarrierKind::BarRed
            | BarrierKind::SyncThreads
            | BarrierKind::SyncThreadsReduce
    )
}

impl Emu<'_> {
    fn contains_ops(&mut self, s: StmtId) -> bool {
        if let Some(v) = self.has_ops.get(&s.0) {
            return *v;
        }
        let f = self.f;
        let v = match &f.stmt(s).kind {
            StmtKind::Barrier(i) => f
                .barriers
                .get(*i as usize)
                .is_some_and(|b| is_named(b.kind)),
            _ => f.child_stmts(s).into_iter().any(|c| self.contains_ops(c)),
        };
        self.has_ops.insert(s.0, v);
        v
    }

    fn eval(&self, e: ExprId, depth: u32) -> Option<i64> {
        if depth > 64 {
            return None;
        }
        let f = self.f;
        Some(match &f.expr(e).kind {
            ExprKind::Int(v) => *v,
            ExprKind::Bool(b) => i64::from(*b),
            ExprKind::SizeOf(Some(n)) => i64::try_from(*n).ok()?,
            ExprKind::Builtin(b) => match b {
                Builtin::ThreadIdx(d) => self.t[dim(*d)],
                Builtin::BlockDim(d) => self.bdim[dim(*d)],
                Builtin::WarpSize => 32,
                _ => return None,
            },
            ExprKind::Var(v) => *self.env.get(&v.0)?,
            ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => self.eval(*a, depth + 1)?,
            ExprKind::Unary(UnOp::Neg, a) => self.eval(*a, depth + 1)?.checked_neg()?,
            ExprKind::Unary(UnOp::Not, a) => i64::from(self.eval(*a, depth + 1)? == 0),
            ExprKind::Unary(UnOp::BitNot, a) => !self.eval(*a, depth + 1)?,
            ExprKind::Binary(BinOp::LogAnd, a, b) => {
                if self.eval(*a, depth + 1)? == 0 {
                    0
                } else {
                    i64::from(self.eval(*b, depth + 1)? != 0)
                }
            }
            ExprKind::Binary(BinOp::LogOr, a, b) => {
                if self.eval(*a, depth + 1)? != 0 {
                    1
                } else {
                    i64::from(self.eval(*b, depth + 1)? != 0)
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.eval(*a, depth + 1)?, self.eval(*b, depth + 1)?);
                match op {
                    BinOp::Add => x.checked_add(y)?,
                    BinOp::Sub => x.checked_sub(y)?,
                    BinOp::Mul => x.checked_mul(y)?,
                    BinOp::Div => x.checked_div(y)?,
                    BinOp::Rem => x.checked_rem(y)?,
                    BinOp::Shl => x.checked_shl(u32::try_from(y).ok()?)?,
                    BinOp::Shr => x.checked_shr(u32::try_from(y).ok()?)?,
                    BinOp::BitAnd => x & y,
                    BinOp::BitOr => x | y,
                    BinOp::BitXor => x ^ y,
                    BinOp::Eq => i64::from(x == y),
                    BinOp::Ne => i64::from(x != y),
                    BinOp::Lt => i64::from(x < y),
                    BinOp::Le => i64::from(x <= y),
                    BinOp::Gt => i64::from(x > y),
                    BinOp::Ge => i64::from(x >= y),
                    BinOp::LogAnd | BinOp::LogOr | BinOp::Comma => y,
                }
            }
            ExprKind::Cond(c, a, b) => {
                if self.eval(*c, depth + 1)? != 0 {
                    self.eval(*a, depth + 1)?
                } else {
                    self.eval(*b, depth + 1)?
                }
            }
            _ => return None,
        })
    }

    /// Side effects of an expression on locals (assignments), as far as
    /// they can be evaluated; anything else makes the target unknown.
    fn effects(&mut self, e: ExprId, depth: u32) {
        if depth > 64 {
            return;
        }
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Assign { op, lhs, rhs } => {
                self.effects(*rhs, depth + 1);
                if let ExprKind::Var(v) = f.expr(*lhs).kind {
                    let val = match op {
                        None => self.eval(*rhs, depth + 1),
                        Some(op) => {
                            let x = self.env.get(&v.0).copied();
                            let y = self.eval(*rhs, depth + 1);
                            x.zip(y).and_then(|(x, y)| match op {
                                BinOp::Add => x.checked_add(y),
                                BinOp::Sub => x.checked_sub(y),
                                BinOp::Mul => x.checked_mul(y),
                                BinOp::Div => x.checked_div(y),
                                BinOp::Shl => x.checked_shl(u32::try_from(y).ok()?),
                                BinOp::Shr => x.checked_shr(u32::try_from(y).ok()?),
                                BinOp::BitAnd => Some(x & y),
                                BinOp::BitOr => Some(x | y),
                                BinOp::BitXor => Some(x ^ y),
                                BinOp::Rem => x.checked_rem(y),
                                _ => None,
                            })
                        }
                    };
                    self.set(v, val);
                }
            }
            ExprKind::IncDec {
                target, increment, ..
            } => {
                if let ExprKind::Var(v) = f.expr(*target).kind {
                    let val = self.env.get(&v.0).and_then(|x| {
                        if *increment {
                            x.checked_add(1)
                        } else {
                            x.checked_sub(1)
                        }
                    });
                    self.set(v, val);
                }
            }
            _ => {
                for c in f.child_exprs(e) {
                    self.effects(c, depth + 1);
                }
            }
        }
    }

    fn set(&mut self, v: VarId, val: Option<i64>) {
        match val {
            Some(x) => {
                self.env.insert(v.0, x);
            }
            None => {
                self.env.remove(&v.0);
            }
        }
    }

    /// Forget the locals `s` assigns (a region that is skipped unevaluated).
    fn forget(&mut self, s: StmtId, depth: u32) {
        if depth > 200 {
            return;
        }
        let f = self.f;
        if let StmtKind::Decl { var, .. } = &f.stmt(s).kind {
            self.env.remove(&var.0);
        }
        for e in stmt_exprs(f, s) {
            self.forget_expr(e, 0);
        }
        for c in f.child_stmts(s) {
            self.forget(c, depth + 1);
        }
    }

    fn forget_expr(&mut self, e: ExprId, depth: u32) {
        if depth > 64 {
            return;
        }
        let f = self.f;
        match &f.expr(e).kind {
            ExprKind::Assign { lhs, .. } | ExprKind::IncDec { target: lhs, .. } => {
                if let ExprKind::Var(v) = f.expr(*lhs).kind {
                    self.env.remove(&v.0);
                }
            }
            _ => {}
        }
        for c in f.child_exprs(e) {
            self.forget_expr(c, depth + 1);
        }
    }

    fn tick(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps > STEP_BUDGET {
            return Err("emulation budget exhausted".into());
        }
        Ok(())
    }

    fn run(&mut self, s: StmtId, depth: u32) -> R<Flow> {
        if depth > 200 {
            return Err("nesting too deep".into());
        }
        self.tick()?;
        let f = self.f;
        match &f.stmt(s).kind {
            StmtKind::Block(items) => {
                for i in items {
                    match self.run(*i, depth + 1)? {
                        Flow::Normal => {}
                        other => return Ok(other),
                    }
                }
                Ok(Flow::Normal)
            }
            StmtKind::Decl { var, init } => {
                let v = init.and_then(|e| {
                    self.effects(e, 0);
                    self.eval(e, 0)
                });
                self.set(*var, v);
                Ok(Flow::Normal)
            }
            StmtKind::Expr(e) => {
                self.effects(*e, 0);
                Ok(Flow::Normal)
            }
            StmtKind::If { cond, then, els } => match self.eval(*cond, 0) {
                Some(c) => {
                    if c != 0 {
                        self.run(*then, depth + 1)
                    } else if let Some(e) = els {
                        self.run(*e, depth + 1)
                    } else {
                        Ok(Flow::Normal)
                    }
                }
                None => {
                    if self.contains_ops(s) || self.exits_inside(s) {
                        return Err(format!(
                            "the condition `{}` cannot be evaluated",
                            f.expr_text(*cond)
                        ));
                    }
                    self.forget(s, 0);
                    Ok(Flow::Normal)
                }
            },
            StmtKind::PreprocAlt { then, .. } => self.run(*then, depth + 1),
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                if !self.contains_ops(*body) {
                    self.forget(s, 0);
                    return Ok(Flow::Normal);
                }
                if let Some(i) = init {
                    self.run(*i, depth + 1)?;
                }
                loop {
                    self.tick()?;
                    if let Some(c) = cond {
                        match self.eval(*c, 0) {
                            Some(0) => break,
                            Some(_) => {}
                            None => {
                                return Err(format!(
                                    "the loop condition `{}` cannot be evaluated",
                                    f.expr_text(*c)
                                ));
                            }
                        }
                    }
                    match self.run(*body, depth + 1)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                    if let Some(st) = step {
                        self.effects(*st, 0);
                    }
                }
                Ok(Flow::Normal)
            }
            StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
                if !self.contains_ops(*body) {
                    self.forget(s, 0);
                    return Ok(Flow::Normal);
                }
                let do_first = matches!(f.stmt(s).kind, StmtKind::DoWhile { .. });
                let mut first = true;
                loop {
                    self.tick()?;
                    if !(do_first && first) {
                        match self.eval(*cond, 0) {
                            Some(0) => break,
                            Some(_) => {}
                            None => {
                                return Err(format!(
                                    "the loop condition `{}` cannot be evaluated",
                                    f.expr_text(*cond)
                                ));
                            }
                        }
                    }
                    first = false;
                    match self.run(*body, depth + 1)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
                Ok(Flow::Normal)
            }
            StmtKind::Switch { .. } => {
                if self.contains_ops(s) {
                    return Err("a switch holds barrier operations".into());
                }
                self.forget(s, 0);
                Ok(Flow::Normal)
            }
            StmtKind::Return(_) => Ok(Flow::Return),
            StmtKind::Break => Ok(Flow::Break),
            StmtKind::Continue => Ok(Flow::Continue),
            StmtKind::Barrier(i) => {
                let Some(b) = f.barriers.get(*i as usize) else {
                    return Ok(Flow::Normal);
                };
                if !is_named(b.kind) {
                    return Ok(Flow::Normal);
                }
                let (id, count) = match b.kind {
                    BarrierKind::SyncThreads | BarrierKind::SyncThreadsReduce => {
                        (0, self.block_threads)
                    }
                    _ => {
                        let id = match (b.barrier_id, &b.barrier_id_text) {
                            (Some(v), _) => v,
                            (None, None) => 0,
                            (None, Some(t)) => self.text_value(t).ok_or_else(|| {
                                format!("the barrier id `{t}` cannot be evaluated")
                            })?,
                        };
                        let count = match (b.thread_count, &b.thread_count_text) {
                            (Some(v), _) => v,
                            (None, None) => self.block_threads,
                            (None, Some(t)) => self.text_value(t).ok_or_else(|| {
                                format!("the thread count `{t}` cannot be evaluated")
                            })?,
                        };
                        (id, count)
                    }
                };
                self.ops.push(Op {
                    barrier: *i as usize,
                    id,
                    count,
                    wait: b.kind != BarrierKind::BarArrive,
                });
                Ok(Flow::Normal)
            }
            _ => Ok(Flow::Normal),
        }
    }

    fn exits_inside(&self, s: StmtId) -> bool {
        let f = self.f;
        let mut stack = vec![s];
        let mut n = 0;
        while let Some(x) = stack.pop() {
            n += 1;
            if n > 10_000 {
                return true;
            }
            if matches!(f.stmt(x).kind, StmtKind::Return(_)) {
                return true;
            }
            stack.extend(f.child_stmts(x));
        }
        false
    }

    /// An operand written as a local's name or an integer.
    fn text_value(&self, t: &str) -> Option<i64> {
        let t = t.trim();
        if let Ok(v) = t.parse::<i64>() {
            return Some(v);
        }
        let f = self.f;
        let (i, _) = f.vars.iter().enumerate().rev().find(|(_, v)| v.name == t)?;
        self.env.get(&(i as u32)).copied()
    }
}

fn dim(d: Dim) -> usize {
    match d {
        Dim::X => 0,
        Dim::Y => 1,
        Dim::Z => 2,
    }
}

fn stmt_exprs(f: &Function, s: StmtId) -> Vec<ExprId> {
    match &f.stmt(s).kind {
        StmtKind::Decl { init: Some(e), .. } | StmtKind::Expr(e) => vec![*e],
        StmtKind::For { step, .. } => step.iter().copied().collect(),
        _ => Vec::new(),
    }
}

/// Run the checks on `f` under the launch's block size.
pub fn analyse(f: &Function, _cx: &AffineCx<'_>, launch: &LaunchDims) -> NamedBarrierFacts {
    let mut out = NamedBarrierFacts::default();
    let uses_counts = f.barriers.iter().any(|b| {
        matches!(
            b.kind,
            BarrierKind::BarSync | BarrierKind::BarArrive | BarrierKind::BarRed
        ) && (b.thread_count.is_some() || b.thread_count_text.is_some() || b.barrier_id != Some(0))
    });
    if !uses_counts || f.kind != crate::ir::FunctionKind::Kernel {
        return out;
    }
    let Some(body) = f.body else { return out };
    // The block: the launch's, unless `__launch_bounds__` says fewer
    // threads can run (then the bound), or it is unknown.
    let bounds = f.launch_bounds.filter(|n| *n > 0).map(|n| [n, 1, 1]);
    let bdim: [i64; 3] = match (launch.block, bounds) {
        ([Some(x), Some(y), Some(z)], b) => {
            let d = [i64::from(x), i64::from(y), i64::from(z)];
            match b {
                Some(b) if d[0] * d[1] * d[2] > b[0] => b,
                _ => d,
            }
        }
        (_, Some(b)) => b,
        _ => {
            out.unknown = Some("the block size is not known".into());
            return out;
        }
    };
    let threads = bdim[0] * bdim[1] * bdim[2];
    if threads <= 0 || threads > 4096 {
        out.unknown = Some("the block size is out of range".into());
        return out;
    }
    out.threads = threads as u32;
    let mut has_ops = HashMap::new();
    let mut warps: Vec<Vec<Op>> = Vec::new();
    let mut steps = 0u64;
    for t in 0..threads {
        let tid = [
            t % bdim[0],
            (t / bdim[0]) % bdim[1],
            t / (bdim[0] * bdim[1]),
        ];
        let mut emu = Emu {
            f,
            t: tid,
            bdim,
            env: HashMap::new(),
            ops: Vec::new(),
            steps,
            block_threads: threads,
            has_ops: std::mem::take(&mut has_ops),
        };
        let r = emu.run(body, 0);
        steps = emu.steps;
        has_ops = std::mem::take(&mut emu.has_ops);
        if let Err(why) = r {
            out.unknown = Some(why);
            return out;
        }
        let w = (t / 32) as usize;
        if t % 32 == 0 {
            warps.push(emu.ops);
        } else if warps.get(w) != Some(&emu.ops) {
            out.unknown = Some(format!(
                "the threads of warp {w} take different barrier operations"
            ));
            return out;
        }
    }
    // Threads per warp (the last one can be partial).
    let warp_size = |w: usize| -> i64 { (threads - 32 * w as i64).min(32) };
    simulate(&warps, &warp_size, &mut out);
    out
}

struct Gen {
    count: i64,
    first: (u32, usize, i64),
    arrived: i64,
    waiting: Vec<u32>,
    members: Vec<u32>,
    any_wait: bool,
}

fn simulate(warps: &[Vec<Op>], warp_size: &dyn Fn(usize) -> i64, out: &mut NamedBarrierFacts) {
    let n = warps.len();
    let mut pc = vec![0usize; n];
    let mut blocked: Vec<Option<i64>> = vec![None; n];
    let mut gens: HashMap<i64, Gen> = HashMap::new();
    let mut total: HashMap<i64, i64> = HashMap::new();
    let mut completed: HashMap<i64, u32> = HashMap::new();
    loop {
        let mut progressed = false;
        for w in 0..n {
            while blocked[w].is_none() && pc[w] < warps[w].len() {
                let op = warps[w][pc[w]];
                pc[w] += 1;
                progressed = true;
                let size = warp_size(w);
                *total.entry(op.id).or_insert(0) += size;
                let g = gens.entry(op.id).or_insert_with(|| Gen {
                    count: op.count,
                    first: (w as u32, op.barrier, op.count),
                    arrived: 0,
                    waiting: Vec::new(),
                    members: Vec::new(),
                    any_wait: false,
                });
                if g.count != op.count {
                    out.issues.push(NamedBarrierIssue::CountMismatch {
                        id: op.id,
                        first: g.first,
                        second: (w as u32, op.barrier, op.count),
                    });
                    return;
                }
                if g.members.contains(&(w as u32)) {
                    out.issues.push(NamedBarrierIssue::Recycling {
                        id: op.id,
                        at: (w as u32, op.barrier),
                    });
                    return;
                }
                g.members.push(w as u32);
                g.arrived += size;
                if g.arrived > g.count {
                    out.issues.push(NamedBarrierIssue::OverArrival {
                        id: op.id,
                        count: g.count,
                        at: (w as u32, op.barrier),
                        total: total[&op.id],
                    });
                    return;
                }
                if op.wait {
                    g.any_wait = true;
                    g.waiting.push(w as u32);
                    blocked[w] = Some(op.id);
                }
                if g.arrived == g.count {
                    let g = gens.remove(&op.id).expect("present");
                    if !g.any_wait {
                        out.issues.push(NamedBarrierIssue::ArriveOnly {
                            id: op.id,
                            at: (w as u32, op.barrier),
                        });
                        return;
                    }
                    for x in g.waiting {
                        blocked[x as usize] = None;
                    }
                    *completed.entry(op.id).or_insert(0) += 1;
                }
            }
        }
        if !progressed {
            break;
        }
    }
    // A generation left open on an id that completed before: the
    // registrations overshoot a multiple of the count.
    let mut open: Vec<(&i64, &Gen)> = gens.iter().filter(|(_, g)| g.arrived > 0).collect();
    open.sort_by_key(|(id, _)| **id);
    if blocked.iter().all(Option::is_none) {
        for (id, g) in open {
            if completed.get(id).copied().unwrap_or(0) > 0 {
                let w = *g.members.last().unwrap_or(&0);
                let b = warps[w as usize]
                    .iter()
                    .rev()
                    .find(|o| o.id == *id)
                    .map(|o| o.barrier)
                    .unwrap_or(0);
                out.issues.push(NamedBarrierIssue::OverArrival {
                    id: *id,
                    count: g.count,
                    at: (w, b),
                    total: total[id],
                });
                return;
            }
        }
    }
    // Warps still blocked wait forever.
    let waits: Vec<(u32, usize)> = (0..n)
        .filter(|w| blocked[*w].is_some())
        .map(|w| (w as u32, warps[w][pc[w] - 1].barrier))
        .collect();
    if !waits.is_empty() {
        // Registrations past a completed generation: over-arrival.
        for (w, b) in &waits {
            let id = blocked[*w as usize].expect("blocked");
            if completed.get(&id).copied().unwrap_or(0) > 0 {
                let count = gens.get(&id).map(|g| g.count).unwrap_or(0);
                out.issues.push(NamedBarrierIssue::OverArrival {
                    id,
                    count,
                    at: (*w, *b),
                    total: total[&id],
                });
                return;
            }
        }
        // A cycle: a blocked warp's later operations would feed another
        // blocked warp's barrier.
        let cyclic = waits.iter().any(|(w, _)| {
            let id = blocked[*w as usize].expect("blocked");
            waits.iter().any(|(v, _)| {
                v != w
                    && warps[*v as usize][pc[*v as usize]..]
                        .iter()
                        .any(|o| o.id == id)
            })
        });
        out.issues
            .push(NamedBarrierIssue::Deadlock { waits, cyclic });
    }
}
