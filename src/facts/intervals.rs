//! Barrier intervals and happens-before, for the race checks that build on
//! them. A control-flow graph over statements is built structurally; a crepe
//! program then derives:
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

#[allow(missing_docs)]
mod program {
    use crepe::crepe;

    crepe! {
        @input
        pub struct Succ(pub u32, pub u32);
        @input
        pub struct IsBarrier(pub u32);
        @input
        pub struct Start(pub u32);
        @input
        pub struct Src(pub u32);

        @output
        pub struct Interval(pub u32, pub u32);
        @output
        pub struct HappensBefore(pub u32, pub u32);
        @output
        pub struct Concurrent(pub u32, pub u32);

        struct Free(u32, u32);
        struct FreeReach(u32, u32);
        struct Reach(u32, u32);

        Free(s, t) <- Start(s), Succ(s, t);
        Free(s, u) <- Free(s, t), !IsBarrier(t), Succ(t, u);
        Interval(t, s) <- Free(s, t), !IsBarrier(t);
        Interval(s, s) <- Start(s);

        FreeReach(a, t) <- Src(a), Succ(a, t);
        FreeReach(a, u) <- FreeReach(a, t), !IsBarrier(t), Succ(t, u);
        Reach(a, t) <- Src(a), Succ(a, t);
        Reach(a, u) <- Reach(a, t), Succ(t, u);
        HappensBefore(a, b) <- Reach(a, b), Src(b), !FreeReach(a, b);
        Concurrent(a, b) <- FreeReach(a, b), Src(b);
    }
}

use program::*;

/// Interval and ordering facts of one function (statement ids).
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash)]
pub struct Intervals {
    /// (statement, interval start): start is [`ENTRY`] or a barrier statement.
    pub interval: Vec<(u32, u32)>,
    /// (a, b): a happens before b (separated by a barrier on every path).
    pub happens_before: Vec<(u32, u32)>,
    /// (a, b): b can follow a in the same barrier interval.
    pub concurrent: Vec<(u32, u32)>,
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
    let barriers: Vec<u32> = f
        .barriers
        .iter()
        .filter(|b| {
            matches!(
                b.kind,
                BarrierKind::SyncThreads
                    | BarrierKind::SyncThreadsReduce
                    | BarrierKind::CgBlockSync
                    | BarrierKind::CgGridSync
            ) || (matches!(b.kind, BarrierKind::BarSync)
                && b.thread_count.is_none()
                && b.thread_count_text.is_none())
        })
        .map(|b| b.stmt.0)
        .collect();
    let mut srcs: Vec<u32> = f.accesses.iter().map(|a| a.stmt.0).collect();
    srcs.sort_unstable();
    srcs.dedup();
    let mut rt = Crepe::new();
    rt.extend(cfg.succ.iter().map(|&(a, b)| Succ(a, b)));
    rt.extend(barriers.iter().map(|&b| IsBarrier(b)));
    rt.extend(barriers.iter().map(|&b| Start(b)));
    rt.extend([Start(ENTRY)]);
    rt.extend(srcs.iter().map(|&s| Src(s)));
    let (interval, hb, conc) = rt.run_with_hasher::<rustc_hash::FxBuildHasher>();
    let mut out = Intervals {
        interval: interval
            .into_iter()
            .map(|Interval(s, t)| (s, t))
            .filter(|(s, _)| *s < ENTRY)
            .collect(),
        happens_before: hb.into_iter().map(|HappensBefore(a, b)| (a, b)).collect(),
        concurrent: conc.into_iter().map(|Concurrent(a, b)| (a, b)).collect(),
    };
    out.interval.sort_unstable();
    out.happens_before.sort_unstable();
    out.concurrent.sort_unstable();
    out
}
