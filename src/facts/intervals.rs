//! Barrier intervals and happens-before, for the race checks that build on
//! them. A control-flow graph over statements is built structurally; a
//! worklist then derives (linear in edges × interval starts per statement;
//! the pair relations only for functions with at most [`PAIR_LIMIT`]
//! accessing statements):
//! - `Interval(s, start)`: statement `s` can run in the barrier interval that
//!   begins at `start` (the function entry or a block-wide barrier) — with
//!   loops, a statement can belong to several (the interval changes around
//!   the back edge);
//! - `HappensBefore(a, b)`: `b` is reachable from `a` and every path from `a`
//!   to `b` crosses a block-wide barrier, so all threads finish `a` before any
//!   starts `b`;
//! - `Concurrent(a, b)`: `b` is reachable from `a` without crossing a
//!   barrier: different threads may run them in the same interval.
//!
//! Statements are the ones holding memory accesses; the entry is node
//! [`ENTRY`].

use crate::ir::{BarrierKind, Function, StmtId, StmtKind};

/// The synthetic entry node.
pub const ENTRY: u32 = u32::MAX - 1;
/// The synthetic exit node.
pub const EXIT: u32 = u32::MAX;

/// Interval and ordering facts of one function (statement ids).
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash)]
pub struct Intervals {
    /// (statement, interval start): start is [`ENTRY`] or a barrier statement.
    pub interval: Vec<(u32, u32)>,
    /// (a, b): a happens before b (separated by a barrier on every path).
    pub happens_before: Vec<(u32, u32)>,
    /// (a, b): b can follow a in the same barrier interval.
    pub concurrent: Vec<(u32, u32)>,
    /// Whether `happens_before` and `concurrent` were computed: they are
    /// pair relations (quadratic), so only for functions with at most
    /// [`PAIR_LIMIT`] accessing statements. `interval` is always complete.
    pub pairs_complete: bool,
}

/// Accessing statements up to which the pair relations are computed.
pub const PAIR_LIMIT: usize = 256;

impl Intervals {
    /// The interval starts of each statement.
    pub fn starts(&self) -> std::collections::HashMap<u32, Vec<u32>> {
        let mut m: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
        for (s, start) in &self.interval {
            m.entry(*s).or_default().push(*start);
        }
        m
    }
}

struct Cfg<'f> {
    f: &'f Function,
    succ: Vec<(u32, u32)>,
    breaks: Vec<u32>,
    continues: Vec<u32>,
}

impl Cfg<'_> {
    fn edge(&mut self, a: u32, b: u32) {
        self.succ.push((a, b));
    }

    /// Add the edges of statement `s`, whose successor is `next`; return the
    /// node control enters `s` at.
    fn build(&mut self, s: StmtId, next: u32) -> u32 {
        match self.f.stmt(s).kind.clone() {
            StmtKind::Block(items) => {
                let mut n = next;
                for i in items.iter().rev() {
                    n = self.build(*i, n);
                }
                n
            }
            StmtKind::If { then, els, .. } | StmtKind::PreprocAlt { then, els, .. } => {
                let t = self.build(then, next);
                self.edge(s.0, t);
                let e = match els {
                    Some(e) => self.build(e, next),
                    None => next,
                };
                self.edge(s.0, e);
                s.0
            }
            StmtKind::For { init, body, .. } => {
                self.looped(s, body, next);
                match init {
                    Some(i) => self.build(i, s.0),
                    None => s.0,
                }
            }
            StmtKind::While { body, .. } => {
                self.looped(s, body, next);
                s.0
            }
            StmtKind::DoWhile { body, .. } => {
                self.breaks.push(next);
                self.continues.push(s.0);
                let b = self.build(body, s.0);
                self.breaks.pop();
                self.continues.pop();
                self.edge(s.0, b);
                self.edge(s.0, next);
                b
            }
            StmtKind::Switch { body, .. } => {
                self.breaks.push(next);
                let b = self.build(body, next);
                self.breaks.pop();
                self.edge(s.0, b);
                self.edge(s.0, next);
                s.0
            }
            StmtKind::Return(_) => {
                self.edge(s.0, EXIT);
                s.0
            }
            StmtKind::Break => {
                let t = self.breaks.last().copied().unwrap_or(next);
                self.edge(s.0, t);
                s.0
            }
            StmtKind::Continue => {
                let t = self.continues.last().copied().unwrap_or(next);
                self.edge(s.0, t);
                s.0
            }
            _ => {
                self.edge(s.0, next);
                s.0
            }
        }
    }

    /// A loop header `s` (condition and step): body, back edge, exit.
    fn looped(&mut self, s: StmtId, body: StmtId, next: u32) {
        self.breaks.push(next);
        self.continues.push(s.0);
        let b = self.build(body, s.0);
        self.breaks.pop();
        self.continues.pop();
        self.edge(s.0, b);
        self.edge(s.0, next);
    }
}

/// The statement-level control-flow graph of a function, as the interval
/// computation sees it: nodes are statement ids, then [`ENTRY`] and
/// [`EXIT`] at indices `n` and `n + 1`.
pub struct Flow {
    /// Successors of each node (by index).
    pub succ: Vec<Vec<u32>>,
    /// Whether each node is a barrier that separates intervals.
    pub barrier: Vec<bool>,
    /// The branch condition of each node that chooses between successors
    /// (`if`, loop headers, `switch`), when it has one.
    pub cond: Vec<Option<crate::ir::ExprId>>,
}

/// Block-wide and named barriers: they separate barrier intervals.
fn interval_barriers(f: &Function) -> Vec<u32> {
    f.barriers
        .iter()
        .filter(|b| {
            matches!(
                b.kind,
                BarrierKind::SyncThreads
                    | BarrierKind::SyncThreadsReduce
                    | BarrierKind::CgBlockSync
                    | BarrierKind::CgGridSync
            ) || matches!(
                b.kind,
                // Named barriers separate intervals too: the warps that take
                // part are ordered by them (an approximation for warps that
                // do not take part; see named_barriers.rs for their checks).
                BarrierKind::BarSync | BarrierKind::BarArrive | BarrierKind::BarRed
            )
        })
        .map(|b| b.stmt.0)
        .collect()
}

/// The control-flow graph of `f` (`None` without a body).
pub fn flow(f: &Function) -> Option<Flow> {
    flow_with(f, &|_| false)
}

/// The control-flow graph of `f` where, besides block-wide and named
/// barriers, the barriers `extra` accepts (by index into `f.barriers`:
/// tile or warp syncs, for the threads of one tile) separate intervals.
pub fn flow_with(f: &Function, extra: &dyn Fn(usize) -> bool) -> Option<Flow> {
    let body = f.body?;
    let mut cfg = Cfg {
        f,
        succ: Vec::new(),
        breaks: Vec::new(),
        continues: Vec::new(),
    };
    let first = cfg.build(body, EXIT);
    cfg.succ.push((ENTRY, first));
    let n = f.stmts.len();
    let idx = |x: u32| -> usize {
        match x {
            ENTRY => n,
            EXIT => n + 1,
            _ => x as usize,
        }
    };
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n + 2];
    for &(a, b) in &cfg.succ {
        let t = idx(b) as u32;
        if !succ[idx(a)].contains(&t) {
            succ[idx(a)].push(t);
        }
    }
    let mut barrier = vec![false; n + 2];
    for b in interval_barriers(f) {
        barrier[idx(b)] = true;
    }
    for (i, b) in f.barriers.iter().enumerate() {
        if extra(i) {
            barrier[idx(b.stmt.0)] = true;
        }
    }
    let mut cond = vec![None; n + 2];
    for (i, st) in f.stmts.iter().enumerate() {
        cond[i] = match &st.kind {
            StmtKind::If { cond, .. }
            | StmtKind::While { cond, .. }
            | StmtKind::DoWhile { cond, .. }
            | StmtKind::Switch { cond, .. } => Some(*cond),
            StmtKind::For { cond, .. } => *cond,
            _ => None,
        };
    }
    Some(Flow {
        succ,
        barrier,
        cond,
    })
}

/// The interval starts (node indices: a barrier node, or the entry at
/// `succ.len() - 2`) that reach each node of `fl` without crossing a
/// barrier; a barrier node starts its own interval.
pub fn starts_in(fl: &Flow) -> Vec<Vec<u32>> {
    let n = fl.succ.len();
    let mut starts: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut work: Vec<(usize, u32)> = Vec::new();
    for st in (0..n).filter(|&i| fl.barrier[i] || i + 2 == n) {
        if fl.barrier[st] {
            starts[st].push(st as u32);
        }
        for &t in &fl.succ[st] {
            work.push((t as usize, st as u32));
        }
    }
    while let Some((t, st)) = work.pop() {
        if fl.barrier[t] || starts[t].contains(&st) {
            continue;
        }
        starts[t].push(st);
        for &u in &fl.succ[t] {
            work.push((u as usize, st));
        }
    }
    starts
}

/// Compute the intervals of `f`.
pub fn compute(f: &Function) -> Intervals {
    let Some(body) = f.body else {
        return Intervals::default();
    };
    let mut cfg = Cfg {
        f,
        succ: Vec::new(),
        breaks: Vec::new(),
        continues: Vec::new(),
    };
    let first = cfg.build(body, EXIT);
    cfg.succ.push((ENTRY, first));
    let barriers: Vec<u32> = interval_barriers(f);
    let mut srcs: Vec<u32> = f.accesses.iter().map(|a| a.stmt.0).collect();
    srcs.sort_unstable();
    srcs.dedup();
    // Nodes: statements, then ENTRY and EXIT.
    let n = f.stmts.len();
    let idx = |x: u32| -> usize {
        match x {
            ENTRY => n,
            EXIT => n + 1,
            _ => x as usize,
        }
    };
    let id = |i: usize| -> u32 {
        if i == n {
            ENTRY
        } else if i == n + 1 {
            EXIT
        } else {
            i as u32
        }
    };
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n + 2];
    for &(a, b) in &cfg.succ {
        succ[idx(a)].push(idx(b) as u32);
    }
    let mut is_barrier = vec![false; n + 2];
    for &b in &barriers {
        is_barrier[idx(b)] = true;
    }
    // Interval starts reaching each node without crossing a barrier: a
    // worklist over (node, start), linear in edges × starts per node.
    let mut starts: Vec<Vec<u32>> = vec![Vec::new(); n + 2];
    let mut work: Vec<(usize, u32)> = Vec::new();
    let start_nodes: Vec<u32> = std::iter::once(ENTRY)
        .chain(barriers.iter().copied())
        .collect();
    for &st in &start_nodes {
        for &t in &succ[idx(st)] {
            work.push((t as usize, st));
        }
    }
    while let Some((t, st)) = work.pop() {
        if starts[t].contains(&st) {
            continue;
        }
        starts[t].push(st);
        if !is_barrier[t] {
            for &u in &succ[t] {
                work.push((u as usize, st));
            }
        }
    }
    let mut out = Intervals::default();
    for (t, v) in starts.iter().enumerate() {
        if is_barrier[t] || t >= n {
            continue;
        }
        out.interval.extend(v.iter().map(|&st| (id(t), st)));
    }
    out.interval.extend(barriers.iter().map(|&b| (b, b)));
    // Pair relations for small functions: per accessing statement, what it
    // reaches, and what it reaches without crossing a barrier.
    if srcs.len() <= PAIR_LIMIT {
        out.pairs_complete = true;
        let mut is_src = vec![false; n + 2];
        for &s in &srcs {
            is_src[idx(s)] = true;
        }
        for &a in &srcs {
            let reach = |through_barriers: bool| {
                let mut seen = vec![false; n + 2];
                let mut stack: Vec<usize> = succ[idx(a)].iter().map(|&t| t as usize).collect();
                while let Some(t) = stack.pop() {
                    if seen[t] {
                        continue;
                    }
                    seen[t] = true;
                    if through_barriers || !is_barrier[t] {
                        stack.extend(succ[t].iter().map(|&u| u as usize));
                    }
                }
                seen
            };
            let all = reach(true);
            let free = reach(false);
            for t in 0..n {
                if !is_src[t] {
                    continue;
                }
                if free[t] {
                    out.concurrent.push((a, t as u32));
                } else if all[t] {
                    out.happens_before.push((a, t as u32));
                }
            }
        }
    }
    out.interval.sort_unstable();
    out.happens_before.sort_unstable();
    out.concurrent.sort_unstable();
    out
}
