//! Active lanes: which threads of each warp execute a statement, when the
//! enclosing conditions compare thread indices with constants
//! (`if (threadIdx.x < 16)`, the `else` of it, `tx >= 8 && tx < 24`).
//!
//! With the block dimensions known, every warp of the block is enumerated
//! (threads numbered x fastest, `[cost] warp` to a warp) and each thread is tested
//! against the conditions whose affine forms are fully known (integer
//! coefficients, known constant). Conditions that are not (data, unknown
//! bounds, loop counters) do not restrict: the lanes found are a superset of
//! the active ones, so costs computed from them are upper bounds.

use super::affine::{Affine, Coef};
use super::barriers::LaunchDims;
use super::stride::AffineCx;
use crate::ir::{BinOp, ExprId, ExprKind, Function, StmtId, StmtKind, UnOp};
use std::collections::HashMap;

/// The active lanes of one warp: coordinates relative to the warp's first
/// thread, `(x, y)` as in [`super::coalescing::lanes`].
pub type Warp = Vec<(i64, i64)>;

/// A condition on the thread index: `value(tx, ty, tz) op 0` must hold
/// (`holds` = false for the `else` side).
#[derive(Clone, Debug)]
struct Test {
    form: Affine,
    op: BinOp,
    holds: bool,
    /// (audit 20261209 #22, gaussian `if (yidx == 0)` with `yidx =
    /// blockIdx.y * blockDim.y + threadIdx.y`) Non-zero: the form's rest
    /// is an unknown multiple of this, and the test (an `==` that holds)
    /// keeps the lanes whose thread part can meet it in some block: those
    /// congruent to it modulo this.
    modulus: u64,
}

/// (issue 8, class 3) A lane condition as callers pass it to a device
/// function: `form op 0` (`op` one of `<`, `<=`, `>`, `>=`, `==`, `!=`)
/// holds (or, `holds` = false, does not) for the threads that make the call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LaneTest {
    form: Affine,
    op: String,
    holds: bool,
}

impl LaneTest {
    fn of(t: &Test) -> LaneTest {
        let op = match t.op {
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            _ => "!=",
        };
        LaneTest {
            form: t.form.clone(),
            op: op.to_string(),
            holds: t.holds,
        }
    }

    /// (issue 11) The test as `c·threadIdx + k op 0`, `op` normalised for
    /// `holds`; `None` where that is `!=` (not one linear constraint).
    pub fn linear(&self) -> Option<([i64; 3], i64, BinOp)> {
        let t = self.test();
        let mut c = [0i64; 3];
        for (d, k) in t.form.coef.iter().enumerate() {
            match k {
                Coef::Int(v) => c[d] = *v,
                _ => return None,
            }
        }
        let op = if t.holds {
            t.op
        } else {
            match t.op {
                BinOp::Lt => BinOp::Ge,
                BinOp::Le => BinOp::Gt,
                BinOp::Gt => BinOp::Le,
                BinOp::Ge => BinOp::Lt,
                BinOp::Ne => BinOp::Eq,
                _ => BinOp::Ne,
            }
        };
        (op != BinOp::Ne).then_some((c, t.form.offset?, op))
    }

    fn test(&self) -> Test {
        let op = match self.op.as_str() {
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            "==" => BinOp::Eq,
            _ => BinOp::Ne,
        };
        Test {
            form: self.form.clone(),
            op,
            holds: self.holds,
            modulus: 0,
        }
    }
}

impl Test {
    fn eval(&self, t: [i64; 3]) -> bool {
        let mut v = self.form.offset.unwrap_or(0);
        for (d, c) in self.form.coef.iter().enumerate() {
            if let Coef::Int(k) = c {
                v += k * t[d];
            }
        }
        if self.modulus > 0 {
            return (v.rem_euclid(self.modulus as i64) == 0) == self.holds;
        }
        let r = match self.op {
            BinOp::Lt => v < 0,
            BinOp::Le => v <= 0,
            BinOp::Gt => v > 0,
            BinOp::Ge => v >= 0,
            BinOp::Eq => v == 0,
            BinOp::Ne => v != 0,
            _ => true,
        };
        r == self.holds
    }
}

/// Statements whose enclosing conditions restrict the lanes, with those
/// conditions.
pub struct ActiveLanes {
    tests: HashMap<u32, Vec<Test>>,
    block: Option<[i64; 3]>,
    warp: i64,
}

impl ActiveLanes {
    /// Collect the evaluable conditions enclosing each statement of `f`.
    pub fn compute(f: &Function, cx: &AffineCx<'_>, launch: &LaunchDims) -> ActiveLanes {
        ActiveLanes::compute_for_warp(f, cx, launch, 32)
    }

    /// [`ActiveLanes::compute`] for warps of `warp` threads.
    pub fn compute_for_warp(
        f: &Function,
        cx: &AffineCx<'_>,
        launch: &LaunchDims,
        warp: u32,
    ) -> ActiveLanes {
        ActiveLanes::compute_with_entry(f, cx, launch, warp, &[])
    }

    /// [`ActiveLanes::compute_for_warp`] for a device function that every
    /// caller calls under the lane conditions `entry` (issue 8, class 3: a
    /// function called only under `if (threadIdx.x < 16)` runs with 16
    /// lanes).
    pub fn compute_with_entry(
        f: &Function,
        cx: &AffineCx<'_>,
        launch: &LaunchDims,
        warp: u32,
        entry: &[LaneTest],
    ) -> ActiveLanes {
        let block = match launch.block {
            [Some(x), Some(y), Some(z)] if x > 0 && y > 0 && z > 0 => {
                Some([x as i64, y as i64, z as i64])
            }
            _ => None,
        };
        let mut out = ActiveLanes {
            tests: HashMap::new(),
            block,
            warp: i64::from(warp.max(1)),
        };
        if block.is_some()
            && let Some(b) = f.body
        {
            out.walk(f, cx, b, &mut entry.iter().map(LaneTest::test).collect());
        }
        out
    }

    /// The lane conditions enclosing statement `s` (what a call there
    /// guarantees its callee).
    pub fn tests_at(&self, s: StmtId) -> Vec<LaneTest> {
        self.tests
            .get(&s.0)
            .map(|t| {
                t.iter()
                    .filter(|t| t.modulus == 0)
                    .map(LaneTest::of)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn walk(&mut self, f: &Function, cx: &AffineCx<'_>, s: StmtId, tests: &mut Vec<Test>) {
        if !tests.is_empty() {
            self.tests.insert(s.0, tests.clone());
        }
        if let StmtKind::If { cond, then, els } = &f.stmt(s).kind {
            let n = tests.len();
            collect(f, cx, *cond, true, tests);
            self.walk(f, cx, *then, tests);
            tests.truncate(n);
            if let Some(e) = els {
                collect(f, cx, *cond, false, tests);
                self.walk(f, cx, *e, tests);
                tests.truncate(n);
            }
            return;
        }
        for c in f.child_stmts(s) {
            self.walk(f, cx, c, tests);
        }
    }

    /// The warps of the block that execute statement `s`, each with its
    /// active lanes; `None` when no enclosing condition restricts them (every
    /// warp is full).
    pub fn warps(&self, s: StmtId) -> Option<Vec<Warp>> {
        let tests = self.tests.get(&s.0)?;
        let [bx, by, bz] = self.block?;
        let threads = bx * by * bz;
        let mut warps = Vec::new();
        let ws = self.warp;
        for w in 0..((threads + ws - 1) / ws).min(64) {
            let coord = |l: i64| [l % bx, (l / bx) % by, l / (bx * by)];
            let first = coord(ws * w);
            let all: Vec<[i64; 3]> = (ws * w..(ws * w + ws).min(threads)).map(coord).collect();
            if all.iter().any(|t| t[2] != first[2]) {
                // A warp spanning z slices: not modelled (lanes are (x, y)).
                return None;
            }
            let lanes: Warp = all
                .into_iter()
                .filter(|t| tests.iter().all(|c| c.eval(*t)))
                .map(|t| (t[0] - first[0], t[1] - first[1]))
                .collect();
            if !lanes.is_empty() {
                warps.push(lanes);
            }
        }
        Some(warps)
    }
}

impl ActiveLanes {
    /// (session 16, audit 20261232 #25: shfl_scan's `warp_id == 0 &&
    /// lane_id < n`) The warps of the block in which some thread passes the
    /// conditions enclosing `s` and `pass`, with the block's warp count;
    /// `None` when the block is not known (or a warp spans z slices).
    pub fn count_warps(
        &self,
        s: StmtId,
        pass: impl Fn([i64; 3]) -> bool,
    ) -> Option<(usize, usize)> {
        let [bx, by, bz] = self.block?;
        let tests = self.tests.get(&s.0).map(Vec::as_slice).unwrap_or(&[]);
        let threads = bx * by * bz;
        let ws = self.warp;
        let total = (threads + ws - 1) / ws;
        if total > 64 {
            return None;
        }
        let coord = |l: i64| [l % bx, (l / bx) % by, l / (bx * by)];
        let mut n = 0;
        for w in 0..total {
            let first = coord(ws * w);
            let all: Vec<[i64; 3]> = (ws * w..(ws * w + ws).min(threads)).map(coord).collect();
            if all.iter().any(|t| t[2] != first[2]) {
                return None;
            }
            if all
                .iter()
                .any(|t| tests.iter().all(|c| c.eval(*t)) && pass(*t))
            {
                n += 1;
            }
        }
        Some((n, total as usize))
    }
}

/// (session 16) Whether thread `t` can pass condition `c`: `false` only
/// when a top-level conjunct of `c` compares two values
/// [`thread_value`] knows in `t` and fails (what is not known passes).
pub fn may_pass(f: &Function, c: ExprId, launch: &LaunchDims, t: [i64; 3]) -> bool {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd, a, b) => {
            may_pass(f, *a, launch, t) && may_pass(f, *b, launch, t)
        }
        ExprKind::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            a,
            b,
        ) => {
            let (Some(x), Some(y)) = (
                thread_value(f, *a, launch, t),
                thread_value(f, *b, launch, t),
            ) else {
                return true;
            };
            match op {
                BinOp::Lt => x < y,
                BinOp::Le => x <= y,
                BinOp::Gt => x > y,
                BinOp::Ge => x >= y,
                BinOp::Eq => x == y,
                _ => x != y,
            }
        }
        _ => true,
    }
}

/// Add the tests `cond` (or its negation) implies.
fn collect(f: &Function, cx: &AffineCx<'_>, cond: ExprId, holds: bool, out: &mut Vec<Test>) {
    match &f.expr(cond).kind {
        ExprKind::Binary(BinOp::LogAnd, a, b) if holds => {
            collect(f, cx, *a, true, out);
            collect(f, cx, *b, true, out);
        }
        ExprKind::Binary(BinOp::LogOr, a, b) if !holds => {
            collect(f, cx, *a, false, out);
            collect(f, cx, *b, false, out);
        }
        ExprKind::Unary(UnOp::Not, a) => collect(f, cx, *a, !holds, out),
        ExprKind::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            a,
            b,
        ) => {
            let diff = cx.form(*a).add_form(&cx.form(*b).times(-1));
            let ints = diff.offset.is_some()
                && diff.coef.iter().all(|c| matches!(c, Coef::Int(_)))
                && !diff.is_invariant();
            if ints && diff.rest_multiple == 0 {
                out.push(Test {
                    form: diff,
                    op: *op,
                    holds,
                    modulus: 0,
                });
            } else if ints && diff.rest_multiple > 1 && *op == BinOp::Eq && holds {
                let modulus = diff.rest_multiple;
                out.push(Test {
                    form: diff,
                    op: *op,
                    holds,
                    modulus,
                });
            }
        }
        _ => {}
    }
}

/// (issue 8) Whether condition `c` has one value across each warp of the
/// block, by evaluating it on every thread: the block fully known and `c`
/// made of comparisons of fully known affine forms (`&&`, `||`, `!`).
/// `threadIdx.y < 2` with 16 x 4 blocks holds for whole warps.
pub fn warps_agree(
    f: &Function,
    cx: &AffineCx<'_>,
    launch: &LaunchDims,
    c: ExprId,
    warp: u32,
) -> bool {
    let [Some(bx), Some(by), Some(bz)] = launch.block else {
        return false;
    };
    let (bx, by, bz) = (i64::from(bx), i64::from(by), i64::from(bz));
    let threads = bx * by * bz;
    let ws = i64::from(warp.max(1));
    if threads <= 0 || threads > 4096 {
        return false;
    }
    let coord = |l: i64| [l % bx, (l / bx) % by, l / (bx * by)];
    for w in 0..(threads + ws - 1) / ws {
        let mut seen: Option<bool> = None;
        for l in ws * w..(ws * w + ws).min(threads) {
            let Some(v) = cond_value(f, cx, c, coord(l)) else {
                return false;
            };
            if seen.is_some_and(|s| s != v) {
                return false;
            }
            seen = Some(v);
        }
    }
    true
}

fn cond_value(f: &Function, cx: &AffineCx<'_>, c: ExprId, t: [i64; 3]) -> Option<bool> {
    match &f.expr(c).kind {
        ExprKind::Binary(BinOp::LogAnd, a, b) => {
            Some(cond_value(f, cx, *a, t)? && cond_value(f, cx, *b, t)?)
        }
        ExprKind::Binary(BinOp::LogOr, a, b) => {
            Some(cond_value(f, cx, *a, t)? || cond_value(f, cx, *b, t)?)
        }
        ExprKind::Unary(UnOp::Not, a) => cond_value(f, cx, *a, t).map(|v| !v),
        ExprKind::Binary(
            op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne),
            a,
            b,
        ) => {
            let diff = cx.form(*a).add_form(&cx.form(*b).times(-1));
            let known = diff.offset.is_some()
                && diff.rest_multiple == 0
                && diff.coef.iter().all(|c| matches!(c, Coef::Int(_)));
            known.then(|| {
                Test {
                    form: diff,
                    op: *op,
                    holds: true,
                    modulus: 0,
                }
                .eval(t)
            })
        }
        _ => None,
    }
}

/// (issue 8, session 6) The value of the integer expression `e` in the
/// thread with index `t` of a block with the launch's dimensions, when it
/// is made of constants, thread indices, known `blockDim`/template values,
/// locals with one definition, integer arithmetic (`+ - * / % << >> & | ^`)
/// and `min`/`max` of those; `None` otherwise (anything uniform but not
/// constant, loads, calls).
pub fn thread_value(f: &Function, e: ExprId, launch: &LaunchDims, t: [i64; 3]) -> Option<i64> {
    thread_value_depth(f, e, launch, t, 0)
}

fn thread_value_depth(
    f: &Function,
    e: ExprId,
    launch: &LaunchDims,
    t: [i64; 3],
    depth: u32,
) -> Option<i64> {
    use crate::ir::{Builtin, Dim};
    if depth > 24 {
        return None;
    }
    let rec = |x: ExprId| thread_value_depth(f, x, launch, t, depth + 1);
    let dim = |d: &Dim| match d {
        Dim::X => 0,
        Dim::Y => 1,
        Dim::Z => 2,
    };
    match &f.expr(e).kind {
        ExprKind::Builtin(Builtin::ThreadIdx(d)) => Some(t[dim(d)]),
        ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::Plus, a) => rec(*a),
        ExprKind::Unary(UnOp::Neg, a) => rec(*a)?.checked_neg(),
        ExprKind::Var(v) => super::barriers::single_def(f, v.0).and_then(rec),
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (rec(*a)?, rec(*b)?);
            match op {
                BinOp::BitAnd => Some(x & y),
                BinOp::BitOr => Some(x | y),
                BinOp::BitXor => Some(x ^ y),
                _ => super::barriers::fold_arith(*op, x, y),
            }
        }
        ExprKind::Call {
            callee,
            receiver: None,
            args,
        } if args.len() == 2 => {
            let c = callee.trim_start_matches("::").trim_start_matches("std::");
            let (x, y) = (rec(args[0])?, rec(args[1])?);
            match c {
                "max" | "umax" => Some(x.max(y)),
                "min" | "umin" => Some(x.min(y)),
                _ => None,
            }
        }
        _ => super::loops::launch_const(f, e, launch),
    }
}
