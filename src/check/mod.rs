//! Turning facts into findings: the built-in rules, suppression comments.
//!
//! Rules implemented so far: `barrier-divergence`. (Coalescing, bank
//! conflicts and divergent branches build on the same uniformity facts and
//! follow.)

mod sync;

use crate::ir::{BarrierKind, FunctionKind, Span};
use serde::Serialize;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Note,
    /// Likely a performance problem.
    Warning,
    /// Undefined behaviour or a correctness bug.
    Error,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl std::str::FromStr for Severity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "note" => Ok(Severity::Note),
            "warning" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            other => Err(format!("unknown severity `{other}` (note, warning, error)")),
        }
    }
}

/// A rule's static description.
pub struct RuleInfo {
    /// Identifier, e.g. `barrier-divergence`.
    pub id: &'static str,
    /// Default severity.
    pub severity: Severity,
    /// One-line description.
    pub summary: &'static str,
}

/// The built-in rules.
pub const RULES: &[RuleInfo] = &[
    RuleInfo {
        id: "barrier-divergence",
        severity: Severity::Error,
        summary: "a barrier can be reached by only some of the threads that must meet at it",
    },
    RuleInfo {
        id: "uncoalesced-global",
        severity: Severity::Warning,
        summary: "one warp's global access touches more sectors than its bytes need",
    },
    RuleInfo {
        id: "divergent-branch",
        severity: Severity::Warning,
        summary: "a branch can split a warp, serialising what the lanes disagree on",
    },
    RuleInfo {
        id: "shared-bank-conflict",
        severity: Severity::Warning,
        summary: "one warp's shared-memory access is serialised by bank conflicts",
    },
    RuleInfo {
        id: "misaligned-global",
        severity: Severity::Note,
        summary: "a unit-stride global access is offset from sector boundaries by a constant",
    },
    // Synchronisation rules (src/check/sync.rs).RuleInfo] = &[
    RuleInfo {
        id: "shared-race",
        severity: Severity::Error,
        summary: "two threads of a block access the same shared location, one writes, and no barrier orders them",
    },
    RuleInfo {
        id: "global-race",
        severity: Severity::Error,
        summary: "two threads access the same global location, one writes, and no barrier orders them",
    },
    RuleInfo {
        id: "named-barrier-deadlock",
        severity: Severity::Error,
        summary: "a warp waits at a named barrier that can never complete",
    },
    RuleInfo {
        id: "named-barrier-count-mismatch",
        severity: Severity::Error,
        summary: "one generation of a named barrier is used with different thread counts",
    },
    RuleInfo {
        id: "named-barrier-over-arrival",
        severity: Severity::Error,
        summary: "more threads register at a named barrier than its thread count",
    },
    RuleInfo {
        id: "named-barrier-recycling",
        severity: Severity::Error,
        summary: "a warp registers again at a named barrier before its generation completed",
    },
    RuleInfo {
        id: "named-barrier-arrive-only",
        severity: Severity::Error,
        summary: "a named-barrier generation completes with arrivals only: no warp waits, nothing is ordered",
    },
    RuleInfo {
        id: "analysis-incomplete",
        severity: Severity::Note,
        summary: "an analysis stopped at its per-function budget; its findings for this function are partial",
    },
];

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Rule id.
    pub rule: String,
    /// Severity.
    pub severity: Severity,
    /// File path relative to the workspace root.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// Last column (exclusive) on `line`, for carets.
    pub end_col: u32,
    /// Function name.
    pub function: String,
    /// The function's key in the store (`functions.key`).
    pub function_key: String,
    /// Explanation.
    pub message: String,
    /// The facts behind the finding.
    pub facts: serde_json::Value,
    /// Whether a `cudalog-ignore` comment covers it.
    pub suppressed: bool,
}

/// (session 15) For a one-sided `if` comparing a thread index with a
/// uniform value that reads the counter of an enclosing loop stepping by
/// one (`threadIdx.x > i`, `tx <= m`): that counter's name and the loop's
/// line.
fn triangular_sweep(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    b: &crate::facts::divergence::BranchFact,
    parents: &[Option<crate::ir::StmtId>],
) -> Option<(String, u32)> {
    use crate::facts::loops::StepOp;
    use crate::ir::{BinOp, ExprKind};
    let ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, x, y) = f.expr(b.cond).kind
    else {
        return None;
    };
    let dims = |e: crate::ir::ExprId| {
        a.uniformity
            .expr_dims
            .get(e.0 as usize)
            .copied()
            .unwrap_or(0)
    };
    let threads = |e: crate::ir::ExprId| dims(e) & 0b111 != 0 && dims(e) & (1 << 3) == 0;
    let counter = if threads(x) && dims(y) == 0 {
        y
    } else if threads(y) && dims(x) == 0 {
        x
    } else {
        return None;
    };
    let mut reads = Vec::new();
    let mut stack = vec![counter];
    while let Some(e) = stack.pop() {
        if let ExprKind::Var(v) = f.expr(e).kind {
            reads.push(v);
        }
        stack.extend(f.child_exprs(e));
    }
    let mut at = parents.get(b.stmt.0 as usize).copied().flatten();
    while let Some(p) = at {
        if let Some(l) = a.loops.get(p)
            && let Some(iv) = l.vars.iter().find(|iv| reads.contains(&iv.var))
            && matches!(iv.op, StepOp::Add | StepOp::Sub)
            && iv
                .step
                .is_none_or(|s| matches!(f.expr(f.strip_casts(s)).kind, ExprKind::Int(1)))
        {
            return Some((f.var(iv.var).name.clone(), f.stmt(p).span.line + 1));
        }
        at = parents.get(p.0 as usize).copied().flatten();
    }
    None
}

/// The message of a `divergent-branch` finding (issue 8, class 6): says
/// what is actually serialised — both paths of an `if`/`else`, the taken
/// side of a one-sided `if`, the extra iterations of a loop, or the one
/// partial last iteration of a block-/grid-stride loop (`tail`: whether its
/// step involves `gridDim`).
fn divergence_message(
    f: &crate::ir::Function,
    b: &crate::facts::divergence::BranchFact,
    cond: &str,
    dims: &str,
    region: &str,
    tail: Option<bool>,
    launch: &crate::facts::LaunchDims,
) -> String {
    use crate::ir::StmtKind;
    if tail.is_some() {
        use crate::facts::divergence::{BranchKind, Stride};
        // (session 6, audits #31, #51) The stride named as it is; the
        // condition under which the partial iteration does not happen.
        let (name, exact) = match &b.kind {
            BranchKind::StrideTail {
                stride, exact_if, ..
            } => (
                stride.loop_name(),
                exact_if.map(|(bound, step)| {
                    format!(
                        ", none when `{}` is a multiple of `{}`",
                        f.expr_text(bound),
                        f.expr_text(step)
                    )
                }),
            ),
            _ => (Stride::Block.loop_name(), None),
        };
        // (session 12) A guard inside the stride loop, not its condition.
        if matches!(f.stmt(b.stmt).kind, StmtKind::If { .. }) {
            // (session 15) The window may be the counter times a step
            // (`c * C_per_iteration`) of a loop that is not itself a
            // stride loop.
            let name = if name == Stride::Other.loop_name() {
                "loop"
            } else {
                name
            };
            return format!(
                "`{cond}` compares a position that the enclosing {name} advances by at least a \
                 warp's spread each iteration, plus the lane's offset, with a uniform bound: \
                 each iteration the lanes of a warp cover one window of consecutive values, and \
                 only the iteration whose window straddles the bound leaves some lanes idle \
                 (cost: at most one partial iteration)"
            );
        }
        return format!(
            "`{cond}`: {name}; the lanes of a warp start less than one step apart, so \
             their trip counts differ by at most one: only the last iteration runs with some \
             lanes idle (cost: at most one partial iteration{})",
            exact.unwrap_or_default()
        );
    }
    let what = match (&f.stmt(b.stmt).kind, b.in_expression) {
        (_, true) => {
            "which then evaluate both operands one after the other (usually compiled to a \
             select or a short predicated sequence, so cheap)"
        }
        (StmtKind::If { els: None, .. }, false) => {
            "and the lanes that take the branch run it while the others, which have no path \
             of their own, wait"
        }
        (StmtKind::If { .. } | StmtKind::Switch { .. }, false) => {
            "which then run both paths one after the other"
        }
        _ => "and the lanes that keep looping run the extra iterations while the others wait",
    };
    use crate::facts::divergence::Shape;
    // (session 15, audit 20261224 #30) "every warp" is every warp that the
    // enclosing conditions let reach the branch.
    let every = match b.reach {
        Some((1, 0)) => "the one warp of the block that its conditions on thread indices let \
                         reach it (they exclude the others)"
            .to_string(),
        Some((n, 0)) => format!(
            "every warp that reaches it (at most {n} of the block's: its conditions on thread \
             indices exclude the others)"
        ),
        Some((n, m)) => format!(
            "every warp that reaches it ({n} of the block's {m}: the enclosing conditions \
             exclude the others)"
        ),
        None => "every warp".to_string(),
    };
    match &b.shape {
        Shape::SameCall(callee) => format!(
            "`{cond}` depends on {dims} and can differ between the threads of a warp, but both \
             paths make one call of `{callee}` with other arguments: the compiler can often \
             merge them into one call on selected arguments, leaving only the selects divergent"
        ),
        Shape::EveryWarp => format!(
            "`{cond}` compares a lane index (it repeats in every warp) against a uniform bound, \
             so every warp{} can split the same way, {what}{region} (cost: the divergent part, in \
             {every})",
            if b.reach.is_some() {
                " that reaches it"
            } else {
                ""
            }
        ),
        Shape::OneWarp { scope, .. } if one_warp_unit(scope, launch) => format!(
            "`{cond}` compares a thread index that grows with the lane's position against a \
             uniform bound; each {scope} is a single warp, so it can split {every}, \
             {what}{region} (cost: the divergent part, in each)"
        ),
        Shape::OneWarp { scope, tests } => {
            let (warps, which) = if *tests == 1 {
                (
                    "at most one warp".to_string(),
                    "the one straddling the bound",
                )
            } else {
                (format!("at most {tests} warps"), "those straddling a bound")
            };
            // (session 16) A global index of a 1-D grid: one run of the
            // whole grid's threads.
            if *scope == "grid" {
                return format!(
                    "`{cond}` compares the global thread index (scaled or offset the same in \
                     every block) against a bound that is the same in every block, so the \
                     threads it selects are one contiguous run of the whole grid: it splits \
                     {warps} of the grid ({which}{}; none when the bound falls on a warp's \
                     edge), {what}{region} (cost: the divergent part in {} only)",
                    if *tests == 1 { ", the grid's tail" } else { "" },
                    if *tests == 1 {
                        "that warp"
                    } else {
                        "those warps"
                    }
                );
            }
            format!(
                "`{cond}` compares a thread index that grows with the lane's position against a \
                 uniform bound, so the threads it selects are one contiguous run: it splits \
                 {warps} per {scope} ({which}; every other warp is wholly on one side), \
                 {what}{region} (cost: the divergent part in those warps only)"
            )
        }
        // (session 7, audit 20261128 #3, #24, #27, #30) One clause per
        // threshold test, each with the warps it can split.
        Shape::Runs {
            clauses,
            every_warp,
        } => {
            let cost = if *every_warp {
                format!("the divergent part, in {every}, with the idle lanes' share")
            } else {
                "the divergent part in the split warps only; every other warp is wholly on one side"
                    .to_string()
            };
            // (session 16) With the warps that reach it counted, "every
            // warp" in a clause is every one of those.
            let clauses = clauses.join("; ");
            let clauses = if b.reach.is_some() {
                clauses.replace(
                    "so every warp can split",
                    "so every warp that reaches it can split",
                )
            } else {
                clauses
            };
            format!("{clauses}, {what}{region} (cost: {cost})")
        }
        // (session 7, audit 20261128 #53)
        Shape::TripSpread {
            bound,
            spread,
            wrap,
            ..
        } => {
            let wrap = wrap.as_ref().map(|w| format!(", {w}")).unwrap_or_default();
            format!(
                "`{cond}`: the loop bound `{bound}` takes a few consecutive values across the \
                 lanes of a warp, so their trip counts differ by at most {spread} \
                 iteration(s){wrap}; the lanes with fewer iterations idle through the others' \
                 extra ones{region} (cost: at most {spread} extra iteration(s) per warp)"
            )
        }
        _ => format!(
            "`{cond}` depends on {dims} and can differ between the threads of a warp, {what}{region}"
        ),
    }
}

/// (audit V4) Folds every divergent-branch finding nested inside the
/// region of another reported divergent branch that already says the warp
/// runs that region with lanes idle ([`crate::facts::divergence::folds_nested`])
/// into the outermost such finding: its message says how many nested
/// divergent branches it holds (and where), its `facts.nested_lines` lists their
/// lines, and its severity is the highest of the group. `findings` are the
/// function's divergent-branch findings with their branch indices.
fn fold_nested_branches(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    findings: Vec<(usize, Finding)>,
) -> Vec<(usize, Finding)> {
    use crate::facts::divergence::{folds_nested, region_stmts};
    // For each finding, the index (into `findings`) of a reported outer
    // branch whose region holds it.
    let mut outer_of: Vec<Option<usize>> = vec![None; findings.len()];
    let mut regions: Vec<(usize, std::collections::BTreeSet<u32>)> = Vec::new();
    for (i, (bi, _)) in findings.iter().enumerate() {
        let b = &a.branches[*bi];
        if folds_nested(b) {
            regions.push((i, region_stmts(f, b.stmt)));
        }
    }
    for (j, (bj, _)) in findings.iter().enumerate() {
        let s = a.branches[*bj].stmt.0;
        // The outermost holder: the one with the largest region.
        outer_of[j] = regions
            .iter()
            .filter(|(i, r)| *i != j && r.contains(&s))
            .max_by_key(|(_, r)| r.len())
            .map(|(i, _)| *i);
    }
    let mut nested: Vec<Vec<(u32, Severity)>> = vec![Vec::new(); findings.len()];
    for (j, (_, fj)) in findings.iter().enumerate() {
        if let Some(i) = outer_of[j] {
            nested[i].push((fj.line, fj.severity));
        }
    }
    let mut out = Vec::new();
    for (i, (bi, mut fi)) in findings.into_iter().enumerate() {
        if outer_of[i].is_some() {
            continue;
        }
        let inner = &mut nested[i];
        if !inner.is_empty() {
            inner.sort();
            inner.dedup_by_key(|(l, _)| *l);
            let n = inner.len();
            let lines: Vec<String> = inner.iter().map(|(l, _)| line_ref(*l)).collect();
            let (s, these) = if n == 1 {
                ("", "it is")
            } else {
                ("es", "they are")
            };
            fi.message.push_str(&format!(
                "; and {n} nested divergent branch{s} inside (line{} {}), run within this \
                 already divergent part: {these} not reported separately",
                if n == 1 { "" } else { "s" },
                lines.join(", ")
            ));
            if let Some(max) = inner.iter().map(|(_, sev)| *sev).max() {
                fi.severity = fi.severity.max(max);
            }
            fi.facts["nested_lines"] =
                serde_json::json!(inner.iter().map(|(l, _)| l).collect::<Vec<_>>());
        }
        out.push((bi, fi));
    }
    out
}

/// (audit V7) Groups the early exits of one loop — divergent `if (...)
/// return;` / `break;` findings leaving the same innermost loop
/// ([`crate::facts::divergence::loop_exit`]) — into one finding per loop
/// when there are two or more: what they cost is that the lanes of a warp
/// leave the loop at different iterations (its trip count differs per
/// lane), not the exits' bodies. The finding sits on the loop's line, is a
/// warning, lists the exits' lines (`facts.exit_lines`) and keeps the
/// first exit's other facts. `suppressed` tells whether a line (relative
/// to the function) carries a `cudalog-ignore` for the rule.
fn fold_loop_exits(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    findings: Vec<(usize, Finding)>,
    suppressed: &dyn Fn(u32) -> bool,
) -> Vec<Finding> {
    use crate::facts::divergence::{BranchKind, loop_exit, stmt_parents};
    let parents = stmt_parents(f);
    let exit_of: Vec<Option<crate::ir::StmtId>> = findings
        .iter()
        .map(|(bi, _)| {
            let b = &a.branches[*bi];
            if b.in_expression || !matches!(b.kind, BranchKind::Divergent { .. }) {
                return None;
            }
            loop_exit(f, &parents, b.stmt)
        })
        .collect();
    let mut per_loop: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, l) in exit_of.iter().enumerate() {
        if let Some(l) = l {
            per_loop.entry(l.0).or_default().push(i);
        }
    }
    per_loop.retain(|_, v| v.len() >= 2);
    let bis: Vec<usize> = findings.iter().map(|(bi, _)| *bi).collect();
    let mut slots: Vec<Option<Finding>> = findings.into_iter().map(|(_, x)| Some(x)).collect();
    let mut out = Vec::new();
    for (l, members) in &per_loop {
        // (session 15, audit 20261228 #25: Mandelbrot's unrolled escape
        // tests `if (xx + yy > 4) return i - k;`) Exits whose taken side
        // only leaves (a `break`, or a `return` of register arithmetic):
        // as for one such exit, a warp runs as long as its last lane.
        let leave_only = members.iter().all(|i| {
            let b = &a.branches[bis[*i]];
            matches!(&f.stmt(b.stmt).kind, crate::ir::StmtKind::If { then, .. }
                if break_only(f, *then) || return_of_registers(f, *then))
        });
        let mut group: Vec<Finding> = members.iter().filter_map(|i| slots[*i].take()).collect();
        group.sort_by_key(|x| (x.line, x.col));
        let exits: Vec<u32> = group.iter().map(|x| x.line).collect();
        let refs: Vec<String> = exits.iter().map(|l| line_ref(*l)).collect();
        let lp = crate::ir::StmtId(*l);
        let keyword = match f.stmt(lp).kind {
            crate::ir::StmtKind::For { .. } => "for",
            crate::ir::StmtKind::While { .. } => "while",
            _ => "do",
        };
        let span = f.stmt(lp).span;
        let (line, col) = (span.line + 1, span.col);
        let mut first = group.swap_remove(0);
        let cond = first.facts["condition"].as_str().unwrap_or("").to_string();
        let n = exits.len();
        if leave_only {
            first.message = format!(
                "this `{keyword}` loop has {n} early exits (lines {}) under conditions that can \
                 differ between the threads of a warp (the first: `{cond}`), each of which only \
                 leaves the loop: the lanes that take one stop iterating while the others go \
                 on, and the warp runs as long as its last lane does; the exits never make a \
                 warp slower than the loop without them, and what they save depends on how \
                 evenly the lanes of a warp exit (cost: the exited lanes idle until the last \
                 lane of their warp leaves)",
                refs.join(", ")
            );
            first.severity = Severity::Note;
        } else {
            first.message = format!(
                "this `{keyword}` loop has {n} early exits (lines {}) under conditions that can \
                 differ between the threads of a warp (the first: `{cond}`), so the lanes of a \
                 warp leave it at different iterations and the lanes still looping run the \
                 extra iterations while the others wait (cost: the difference in trip count \
                 between the lanes)",
                refs.join(", ")
            );
            first.severity = Severity::Warning;
        }
        first.line = line;
        first.col = col;
        first.end_col = col + 1;
        first.suppressed = suppressed(line);
        first.facts["exit_lines"] = serde_json::json!(exits);
        first.facts["loop"] = serde_json::json!(true);
        first.facts["work"] = serde_json::json!("unbounded");
        out.push(first);
    }
    out.extend(slots.into_iter().flatten());
    out
}

/// Whether the unit a threshold splits at most one warp of ("block", "row
/// of the block", "z-slice of the block") holds a single warp under the
/// known block dimensions (session 5 audit wording: 16- or 32-thread
/// blocks, `dim3(8, 4, 4)` z-slices).
fn one_warp_unit(scope: &str, launch: &crate::facts::LaunchDims) -> bool {
    let [bx, by, bz] = launch.block.map(|d| d.map(u64::from));
    let threads = match scope {
        "block" => bx.zip(by).zip(bz).map(|((x, y), z)| x * y * z),
        "row of the block" => bx,
        "grid" => None,
        _ => bx.zip(by).map(|(x, y)| x * y),
    };
    threads.is_some_and(|t| t <= 32)
}

/// (session 16) A loop of `f` whose trip count is not a known small
/// constant and whose body accesses global memory: where a kernel's work
/// repeats.
fn work_loop(f: &crate::ir::Function, a: &crate::facts::Analysis) -> Option<crate::ir::StmtId> {
    (0..f.stmts.len() as u32).map(crate::ir::StmtId).find(|s| {
        matches!(
            f.stmt(*s).kind,
            crate::ir::StmtKind::For { .. }
                | crate::ir::StmtKind::While { .. }
                | crate::ir::StmtKind::DoWhile { .. }
        ) && a
            .loops
            .get(*s)
            .is_none_or(|l| l.values.as_ref().is_none_or(|v| v.len() > 32))
            && {
                let inside = crate::facts::divergence::region_stmts(f, *s);
                f.accesses.iter().enumerate().any(|(i, x)| {
                    inside.contains(&x.stmt.0)
                        && a.access_space.get(i).copied().unwrap_or(x.space)
                            == crate::ir::MemSpace::Global
                }) || f.calls.iter().any(|c| {
                    // A call passed a pointer parameter of the kernel
                    // (`load128(dout + idx * OC)`) reaches global memory.
                    inside.contains(&c.stmt.0) && passes_pointer_param(f, c.expr)
                })
            }
    })
}

/// (session 16) Whether branch `b` is a one-sided `if (lane >= d)` (or `d
/// <= lane`) whose taken side reads a value that a shuffle up by the same
/// `d` produced (`n = __shfl_up_sync(mask, v, d)`, `tile.shfl_up(v, d)`):
/// the guard of a shuffle scan.
fn shuffle_scan_guard(f: &crate::ir::Function, b: &crate::facts::divergence::BranchFact) -> bool {
    use crate::ir::{BinOp, ExprKind, StmtKind};
    let StmtKind::If {
        then, els: None, ..
    } = &f.stmt(b.stmt).kind
    else {
        return false;
    };
    if b.in_expression {
        return false;
    }
    let var_of = |e: crate::ir::ExprId| match f.expr(f.strip_casts(e)).kind {
        ExprKind::Var(v) => Some(v),
        _ => None,
    };
    let d = match &f.expr(f.strip_casts(b.cond)).kind {
        ExprKind::Binary(BinOp::Ge, _, r) => var_of(*r),
        ExprKind::Binary(BinOp::Le, l, _) => var_of(*l),
        _ => None,
    };
    let Some(d) = d else {
        return false;
    };
    let t = &f.stmt(*then).span;
    let within = |s: &crate::ir::Span| {
        (t.line, t.col) <= (s.line, s.col) && (s.end_line, s.end_col) <= (t.end_line, t.end_col)
    };
    // A variable read in the taken side whose one definition is a shuffle
    // up by `d`.
    f.exprs.iter().any(|e| {
        let ExprKind::Var(n) = e.kind else {
            return false;
        };
        within(&e.span)
            && crate::facts::barriers::single_def(f, n.0).is_some_and(|def| {
                matches!(&f.expr(f.strip_casts(def)).kind, ExprKind::Call { callee, args, .. }
                    if (callee.ends_with("shfl_up_sync") || callee.ends_with("shfl_up"))
                        && args.iter().any(|a| var_of(*a) == Some(d)))
            })
    })
}

/// (session 16) Whether the statement of access `i` (a shared store) also
/// reads global memory or fetches from a texture or surface (`s[k] =
/// in[j]`, `s[k] = tex2D<T>(…)`, `__ldg(…)`, `surf2Dread(…)`).
fn stores_a_load(f: &crate::ir::Function, a: &crate::facts::Analysis, i: usize) -> bool {
    let stmt = f.accesses[i].stmt;
    f.accesses.iter().enumerate().any(|(j, x)| {
        x.stmt == stmt
            && !x.is_write
            && a.access_space.get(j).copied().unwrap_or(x.space) == crate::ir::MemSpace::Global
    }) || f.calls.iter().any(|c| {
        let name = c.callee.rsplit("::").next().unwrap_or(&c.callee);
        c.stmt == stmt
            && (name.starts_with("tex")
                || name.starts_with("__ldg")
                || (name.starts_with("surf") && name.contains("read")))
    })
}

/// Whether call `call`'s arguments mention a pointer parameter of `f`.
fn passes_pointer_param(f: &crate::ir::Function, call: crate::ir::ExprId) -> bool {
    use crate::ir::ExprKind;
    let ExprKind::Call { args, .. } = &f.expr(call).kind else {
        return false;
    };
    let mut stack: Vec<crate::ir::ExprId> = args.clone();
    while let Some(e) = stack.pop() {
        if let ExprKind::Var(v) = f.expr(e).kind {
            let var = f.var(v);
            if var.param_position.is_some() && matches!(var.ty, crate::ir::Type::Pointer(..)) {
                return true;
            }
        }
        stack.extend(f.child_exprs(e));
    }
    false
}

/// What a divergent branch's message adds about its cost (issue 8 audit,
/// class 6): the estimated work of a straight-line divergent part, and
/// whether the condition follows the data.
fn work_clause(
    b: &crate::facts::divergence::BranchFact,
    tail: bool,
    short_ops: u32,
    once_short: Option<FunctionKind>,
) -> String {
    let w = b.work;
    if tail || w.unbounded {
        return String::new();
    }
    // (audit 20261203 #27) A few instructions, memory included, run once
    // per thread (outside every loop).
    if let Some(kind) = once_short {
        return format!(
            " (divergent part: straight-line code, about {} operations and {} memory accesses, \
             {}: a split warp loses about {} issue slots {})",
            w.ops,
            w.memory,
            if kind == FunctionKind::Kernel {
                "run once per thread outside any loop"
            } else {
                "outside any loop of this function"
            },
            w.ops + w.memory,
            if kind == FunctionKind::Kernel {
                "once"
            } else {
                "per call"
            }
        );
    }
    // (session 7, audit 20261128 #26, #31) Register arithmetic only (the
    // callees' bodies counted): a few instructions the compiler can
    // predicate; the split costs the warp those issue slots, no more.
    if w.calls == 0 && w.memory == 0 && w.ops < short_ops {
        return format!(
            " (divergent part: register arithmetic only, about {} operations in all, callees \
             included: short enough to be predicated, so a split warp loses about {} issue \
             slots){}",
            w.ops,
            w.ops,
            if b.data_dependent {
                "; the condition depends on values loaded per thread"
            } else {
                ""
            }
        );
    }
    let mut parts = vec![format!("about {} operations", w.ops)];
    if w.memory > 0 {
        parts.push(format!("{} memory accesses", w.memory));
    }
    if w.calls > 0 {
        parts.push(if w.calls == 1 {
            "1 call whose body is not counted".to_string()
        } else {
            format!("{} calls whose bodies are not counted", w.calls)
        });
    }
    let data = if b.data_dependent {
        "; the condition depends on values loaded per thread, so how many warps split \
         follows the data"
    } else {
        ""
    };
    format!(
        " (divergent part: straight-line code, {}){data}",
        parts.join(", ")
    )
}

/// (issue 8, session 11; audit 20261206 #28, reduction `tid < s`) A
/// threshold on the counter of an enclosing loop that halves it (`s >>= 1`,
/// `s /= 2`): the bound is a multiple of 32, and splits no warp, while it is
/// at least 32 and the block a power of two; only the iterations below 32
/// split one. The clause says which iterations those are, from the loop's
/// guard.
fn halving_bound_clause(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    b: &crate::facts::divergence::BranchFact,
    innermost_loop: &dyn Fn(crate::ir::StmtId) -> Option<crate::ir::StmtId>,
) -> Option<String> {
    use crate::facts::divergence::Shape;
    use crate::facts::loops::StepOp;
    use crate::ir::{BinOp, ExprKind};
    if !matches!(b.shape, Shape::OneWarp { tests: 1, .. }) || b.in_expression {
        return None;
    }
    let ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, x, y) =
        &f.expr(b.cond).kind
    else {
        return None;
    };
    let var_of = |e: crate::ir::ExprId| match &f.expr(f.strip_casts(e)).kind {
        ExprKind::Var(v) => Some(*v),
        _ => None,
    };
    let u = &a.uniformity;
    let v = if u.is_uniform(y.0) && !u.is_uniform(x.0) {
        var_of(*y)?
    } else if u.is_uniform(x.0) && !u.is_uniform(y.0) {
        var_of(*x)?
    } else {
        return None;
    };
    // The enclosing loops, innermost first: one of them halves `v`.
    let mut at = innermost_loop(b.stmt);
    while let Some(l) = at {
        if let Some(info) = a.loops.get(l)
            && let Some(iv) = info.vars.iter().find(|iv| iv.var == v)
        {
            let step = iv
                .step
                .and_then(|e| crate::facts::barriers::const_value(f, e));
            let halves = matches!(
                (iv.op, step),
                (StepOp::Div, Some(2)) | (StepOp::Shr, Some(1))
            );
            let g = info.guard.as_ref().filter(|g| g.var == v)?;
            let k = crate::facts::barriers::const_value(f, g.bound)?;
            let least = match g.op {
                BinOp::Gt => k + 1,
                BinOp::Ge => k,
                _ => return None,
            };
            if !halves || least < 1 {
                return None;
            }
            let line = line_ref(f.stmt(l).span.line + 1);
            let name = f.var(v).name.clone();
            let guard = info.cond.map(|c| f.expr_text(c)).unwrap_or_default();
            let below: Vec<i64> = [16, 8, 4, 2, 1]
                .into_iter()
                .filter(|p| *p >= least)
                .collect();
            return Some(if below.is_empty() {
                format!(
                    "; `{name}` halves each iteration of the loop at line {line}, which runs \
                     only while `{guard}`: started from a power of two (half a power-of-two \
                     block) every value it takes is a multiple of 32, so no warp splits; only \
                     a block of another size splits one warp per iteration"
                )
            } else {
                format!(
                    "; `{name}` halves each iteration of the loop at line {line}: started from a \
                     power of two (half a power-of-two block), it is a multiple of 32 and splits \
                     no warp while it is 32 or more, so only the {} iteration{} with `{name}` \
                     below 32 split{} one warp",
                    below.len(),
                    if below.len() == 1 { "" } else { "s" },
                    if below.len() == 1 { "s" } else { "" },
                )
            });
        }
        at = innermost_loop(l);
    }
    None
}

/// (issue 8, session 11) The work clause of a divergent part short enough
/// to be predicated that touches memory: what a split costs, and, inside a
/// loop, against what (`(line of the loop, operations per iteration when
/// bounded)`).
fn predicated_clause(
    b: &crate::facts::divergence::BranchFact,
    within: Option<(u32, Option<u32>)>,
) -> String {
    let w = b.work;
    let per = match within {
        Some((line, Some(ops))) => format!(
            " each iteration of the loop at line {}, against about {ops} operations in the \
             iteration",
            line_ref(line)
        ),
        Some((line, None)) => format!(
            " each iteration of the loop at line {}, whose iteration also runs nested loops",
            line_ref(line)
        ),
        None => " each time it runs".to_string(),
    };
    format!(
        " (divergent part: straight-line code, about {} operations, {} of them memory \
         accesses: short enough for the compiler to predicate, so a split warp loses about {} \
         issue slots{per}){}",
        w.ops,
        w.memory,
        w.ops,
        if b.data_dependent {
            "; the condition depends on values loaded per thread"
        } else {
            ""
        }
    )
}

/// The findings of one kernel or device function `f` with its analysis
/// `a`. Lines are relative to the function: line 1 is its first line (the
/// caller adds the function's 0-based start line); `file` and
/// `function_key` are left empty for the caller to fill in. `text` is the
/// definition's text and `line_before` the line just above it (for
/// `cudalog-ignore` comments).
pub fn function_findings(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    text: &str,
    line_before: &str,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if f.kind == FunctionKind::Host {
        return out;
    }
    // lines[0] is the line above the function; lines[r] its relative line r.
    let lines: Vec<&str> = std::iter::once(line_before).chain(text.lines()).collect();
    let suppressed = |lines: &[&str], line: u32, rule: &str| suppressed(lines, line + 1, rule);
    let path = String::new();
    let name = f.name.clone();
    let key = String::new();
    let abs = |s: &Span| (s.line + 1, s.col);
    let parents = crate::facts::divergence::stmt_parents(f);
    // The innermost loop around statement `s`.
    let innermost_loop = |s: crate::ir::StmtId| {
        let mut at = parents.get(s.0 as usize).copied().flatten();
        while let Some(p) = at {
            if matches!(
                f.stmt(p).kind,
                crate::ir::StmtKind::For { .. }
                    | crate::ir::StmtKind::While { .. }
                    | crate::ir::StmtKind::DoWhile { .. }
            ) {
                return Some(p);
            }
            at = parents.get(p.0 as usize).copied().flatten();
        }
        None
    };
    let in_loop = |s: crate::ir::StmtId| innermost_loop(s).is_some();
    for g in &a.global {
        // (issue 8) Fields of one element used by one statement: the first
        // access of the group carries the finding.
        if g.grouped {
            continue;
        }
        let acc = &f.accesses[g.access];
        let (line, col) = abs(&acc.span);
        let target = format!("{}{}", acc.array, acc.index_text);
        let rw = if acc.atomic {
            "atomic update"
        } else if acc.is_write {
            "write"
        } else {
            "read"
        };
        let k = acc.access_bytes.unwrap_or(0);
        let mut pattern = describe_form(&g.form, acc.elem_bytes.unwrap_or(0));
        if let (Some(e), Some((off, used))) = (acc.elem_bytes, g.fields) {
            if used < e as i64 {
                pattern.push_str(&format!(
                    ", the fields this thread reads or writes of each element (in this statement, or for reads the next ones of its block) using {used} B (from offset {off}) of each {e}-byte element"
                ));
            } else if used > e as i64 {
                // (issue 8 audit C3/C6) A group over several elements.
                pattern.push_str(&format!(
                    ", counted once with this thread's other accesses of `{}` at constant offsets from the same index (here and in the statements after it), which use {used} B of each lane's data together",
                    acc.array
                ));
            }
        } else if let (Some(e), Some(k), Some(off)) =
            (acc.elem_bytes, acc.access_bytes, acc.field_offset)
            && k < e
        {
            pattern.push_str(&format!(
                ", using {k} B (at offset {off}) of each {e}-byte element"
            ));
        }
        let cm = a.cost;
        let (sb, lb) = (cm.sector_bytes, cm.line_bytes);
        // (audit 20261209 #19, huffman `pack2` in 16-thread blocks) A block
        // smaller than a warp fills only its lanes.
        let warp_lanes = match a.launch.block {
            [Some(x), Some(y), Some(z)] => {
                (u64::from(x) * u64::from(y) * u64::from(z)).clamp(1, u64::from(cm.warp))
            }
            _ => u64::from(cm.warp),
        };
        let (rule, severity, message, sectors_json) = match &g.sectors {
            crate::facts::coalescing::Sectors::Unknown => continue,
            crate::facts::coalescing::Sectors::DataDependent => (
                "uncoalesced-global",
                Severity::Warning,
                format!(
                    "{rw} of `{target}`: the index is loaded from memory (data-dependent), so one warp \
                     may touch up to {} sectors of {sb} B where {} would hold its {} B{}",
                    warp_lanes * k.div_ceil(u64::from(sb)).max(1),
                    g.min_sectors
                        .max(((warp_lanes * k).div_ceil(u64::from(sb))) as u32),
                    warp_lanes * k,
                    match per_thread_base(f, a, acc) {
                        // (session 15, audit 20261229 #62: crossentropy's
                        // `probs_bt[ix]` with `probs_bt = probs + b * T * V
                        // + t * V`) The pointer differs per lane too: the
                        // loaded index alone does not decide the cost.
                        Some((p, def)) => format!(
                            "; the pointer `{p}` is itself set from the thread index (`{def}`), \
                             so the lanes' elements lie as far apart as their pointers: where \
                             those are a row or more apart (a row per thread) the warp touches \
                             a sector per lane whatever the loaded index holds, and only a \
                             layout with the lanes' rows side by side would cost less"
                        ),
                        None => gather_condition(
                            &g.gather,
                            &acc.indices
                                .last()
                                .map(|e| f.expr_text(*e))
                                .unwrap_or_default(),
                            acc.indices.len(),
                        ),
                    }
                ),
                serde_json::json!({"data_dependent": true}),
            ),
            crate::facts::coalescing::Sectors::UpTo(n, cause) => (
                "uncoalesced-global",
                Severity::Warning,
                format!(
                    "{rw} of `{target}`: one warp touches up to {n} sectors of {sb} B where {} would hold \
                     the same bytes; cause: {cause}",
                    g.min_sectors
                ),
                serde_json::json!({"up_to": n, "cause": cause}),
            ),
            crate::facts::coalescing::Sectors::Exact {
                actual,
                aligned,
                lines,
                alignment_known,
            } => {
                if aligned > &g.min_sectors {
                    // (issue 8 audit #42) Rows that fetch only their whole
                    // elements' sectors: say what keeps them aligned.
                    let mut rows_clause = g
                        .row_runs
                        .as_ref()
                        .map(|r| row_runs_clause(r, *aligned, *actual, sb))
                        .unwrap_or_default();
                    // (issue 8 audit #43) A sparse sample: say what share
                    // of the range it spans it fetches.
                    // Only when that share is at most `[cost]
                    // small_access_percent`.
                    let span = |bytes: i64| ((bytes + i64::from(sb) - 1) / i64::from(sb)).max(1);
                    if let Some((c, bytes)) = g.sparse
                        && cm.small_access_percent > 0
                        && span(bytes) * i64::from(cm.small_access_percent) >= 100
                    {
                        let span_sectors = span(bytes);
                        rows_clause.push_str(&format!(
                            "; a sparse sample (outside any loop, one element in every {c}): \
                             one sector per lane, 1/{span_sectors} of the sectors in the range \
                             the warp spans, so it costs little when that array is also read or \
                             written whole (a pass over it fetches {span_sectors} times as many)"
                        ));
                    }
                    (
                        "uncoalesced-global",
                        Severity::Warning,
                        format!(
                            "{rw} of `{target}`: one warp touches {aligned} sectors of {sb} B ({lines} lines \
                             of {lb} B) where {} would hold the same bytes; cause: {pattern}{rows_clause}",
                            g.min_sectors
                        ),
                        serde_json::json!({"sectors": aligned, "sectors_with_offset": actual, "lines": lines, "alignment_known": alignment_known}),
                    )
                } else if g.halo {
                    // (issue 8 audit M1, #36) Neighbours on both sides of
                    // the carrier: its misalignment is the stencil's halo,
                    // which any alignment of the array needs.
                    continue;
                } else if let Some(rows) = g.misaligned_rows
                    && actual > aligned
                {
                    (
                        "misaligned-global",
                        Severity::Note,
                        format!(
                            "{rw} of `{target}`: {rows} rows of the warp, each a separate run; the \
                             row stride is symbolic and a constant offset moves the rows off \
                             sector boundaries, so one warp touches up to {actual} sectors of {sb} B \
                             (under the worst alignment) where {aligned} would hold the same bytes"
                        ),
                        serde_json::json!({"up_to": actual, "aligned_sectors": aligned, "rows": rows, "lines": lines}),
                    )
                } else if *alignment_known && actual > aligned {
                    (
                        "misaligned-global",
                        Severity::Note,
                        format!(
                            "{rw} of `{target}`: unit stride, but a constant offset makes one warp \
                             touch {actual} sectors instead of {aligned}"
                        ),
                        serde_json::json!({"sectors": actual, "aligned_sectors": aligned, "lines": lines}),
                    )
                } else {
                    continue;
                }
            }
        };
        // (issue 8 audit #43, #46) A small part of the kernel's traffic:
        // a note that says how small.
        let (severity, message) = match g.share_permille {
            Some(p)
                if rule == "uncoalesced-global"
                    && severity == Severity::Warning
                    && p <= cm.small_access_percent.saturating_mul(10) =>
            {
                (
                    Severity::Note,
                    format!(
                        "{message}; but this access is at most about {} of the kernel's estimated \
                         global traffic (sectors per block, each access weighted by the warps that \
                         run it and the trip counts of its loops, a loop of unknown count once), \
                         so it matters little",
                        permille_text(p)
                    ),
                )
            }
            _ => (severity, message),
        };
        // (audit 20261203 #45) The same pattern repeated in a loop that
        // does not enclose this access: the loop's access is the cost.
        let (severity, message) = match g.repeated_by.map(|j| &f.accesses[j]) {
            Some(b) if rule == "uncoalesced-global" && severity == Severity::Warning => (
                Severity::Note,
                format!(
                    "{message}; the {} of `{}{}` at line {} has the same lane stride inside a \
                     loop that does not enclose this access: it repeats the pattern and carries \
                     the cost, this access adds one more of its iterations",
                    if b.is_write { "write" } else { "read" },
                    b.array,
                    b.index_text,
                    line_ref(abs(&b.span).0)
                ),
            ),
            _ => (severity, message),
        };
        // (issue 8, session 14; audit 20261217 #64, llm.c's matmul_forward
        // `out[bt * OC + oc] = val` after a loop over C) Once per thread,
        // outside every loop, next to a loop of unknown trip count that
        // makes global accesses on every iteration: after a few iterations
        // that loop moves more sectors than this access.
        // Computed only for the warnings it can lower: it walks the loops
        // and the function's global accesses.
        let epilogue = (severity == Severity::Warning && rule == "uncoalesced-global")
            .then(|| epilogue_next_to_loop(f, a, &parents, g))
            .flatten();
        let (severity, message) = match (severity, epilogue) {
            (Severity::Warning, Some((l, per_iter, n, outer))) if n <= 8 => {
                let once = match outer {
                    None => "once per thread, outside every loop".to_string(),
                    Some(o) => format!(
                        "once per iteration of the loop at line {}",
                        line_ref(abs(&f.stmt(o).span).0)
                    ),
                };
                (
                    Severity::Note,
                    format!(
                        "{message}; but it runs {once}, and the loop at line {} (its trip count \
                         is not known here) makes at least {per_iter} sector(s) of global \
                         traffic per warp on every iteration, which it runs whenever this access \
                         runs: after {n} iteration(s) that loop moves more than this access, so \
                         unless it runs only a few times this access is a small part of the \
                         kernel's traffic",
                        line_ref(abs(&f.stmt(l).span).0)
                    ),
                )
            }
            (severity, _) => (severity, message),
        };
        // (audit 20261205 #44, marchingCubes `pos[numVertsScanned[voxel] +
        // i]`) A data-dependent base plus the counter of a unit-step loop:
        // each lane covers a run of its own across the loop.
        let (severity, message) = match (&g.sectors, lane_run_loop(f, a, &parents, acc)) {
            (crate::facts::coalescing::Sectors::DataDependent, Some(l))
                if severity == Severity::Warning =>
            {
                (
                    Severity::Note,
                    format!(
                        "{message}; but the index adds the counter of the loop at line {} to a \
                         base of its own per lane, so across that loop each lane {} a contiguous \
                         run: the sectors one iteration touches in part, the next iterations of \
                         the same lane complete while they are still in cache, and what this \
                         costs beyond the minimum depends on how short the runs are",
                        line_ref(abs(&f.stmt(l).span).0),
                        if acc.is_write { "writes" } else { "reads" }
                    ),
                )
            }
            _ => (severity, message),
        };
        // (audit 20261203 #14) A fix-up that runs only for lanes whose
        // value is NaN or infinite: cold in a healthy run.
        let (severity, message) = match exceptional_value_guard(f, &parents, acc.stmt) {
            Some(cond) if rule == "uncoalesced-global" && severity == Severity::Warning => (
                Severity::Note,
                format!(
                    "{message}; but it runs only for the lanes where `{cond}` holds, a fix-up \
                     for non-finite values that a run without NaNs or infinities never executes"
                ),
            ),
            _ => (severity, message),
        };
        // (issue 8, session 13; audit 20261217 #64, llm.c's `dim3
        // blockDim(s, s)`) With blockDim.x unknown in a block of several
        // rows, the count is for full-width rows: say what narrower rows do.
        let message = match g.narrow_rows {
            Some((bx, n)) if rule == "uncoalesced-global" => format!(
                "{message}; blockDim.x is not known here and the block may have several rows: \
                 this count is for rows of {} threads or more; with narrower rows a warp spans \
                 several values of threadIdx.y and touches fewer sectors, down to {n} with \
                 {bx}-thread rows",
                a.cost.warp
            ),
            _ => message,
        };
        // (issue 8, session 13; audits 20261205-20261216: 13 of 17
        // data-dependent scatter rows judged debatable or false, marching
        // cubes' compaction `compacted[scan[i]] = i` drawn three times) A
        // store or atomic through a loaded index: where it lands is the
        // algorithm's (a compaction or a permutation by ranks writes
        // consecutive slots; a histogram hits few), a store does not stall
        // the warp as a gather does, and nothing here says the indices are
        // spread: a note that says so.
        let (severity, message) = match &g.sectors {
            crate::facts::coalescing::Sectors::DataDependent
                if rule == "uncoalesced-global"
                    && severity == Severity::Warning
                    && (acc.is_write || acc.atomic)
                    && per_thread_base(f, a, acc).is_none() =>
            {
                (
                    Severity::Note,
                    format!(
                        "{message}; as a scatter, its cost is where the loaded indices point, \
                         which only the data say: a compaction (indices from a scan of the \
                         flags) or a permutation by sorted ranks writes consecutive slots, \
                         coalesced, and stores do not stall the warp as loads do"
                    ),
                )
            }
            // (issue 8, session 14; audits 20261208-20261218: of the
            // gather rows drawn, the mesh and graph neighbours were true,
            // and the tables whose values neighbouring lanes share or keep
            // close were not: particles' cell lists, streamcluster's few
            // centres, segmentationTree's scan outputs, srad's `j + 1`
            // table) A load through a loaded index: its cost is the
            // table's values, which this analysis cannot see, so a note
            // that says what decides it.
            // (session 15) Through a per-thread row pointer: the message
            // already says what decides it.
            crate::facts::coalescing::Sectors::DataDependent
                if rule == "uncoalesced-global"
                    && severity == Severity::Warning
                    && per_thread_base(f, a, acc).is_some() =>
            {
                (Severity::Note, message)
            }
            crate::facts::coalescing::Sectors::DataDependent
                if rule == "uncoalesced-global" && severity == Severity::Warning =>
            {
                (
                    Severity::Note,
                    format!(
                        "{message}; as a gather, its cost is the loaded values, which cudalog \
                         cannot see: indices that neighbouring lanes share or keep close (a few \
                         distinct values, monotonic offsets such as CSR row starts or a scan's \
                         output, data sorted by cell or key) cost a few sectors, scattered ids \
                         (an unstructured mesh's neighbours, a graph's edges, a random \
                         permutation) up to the count above"
                    ),
                )
            }
            _ => (severity, message),
        };
        // (audit 20261208 #43, particles `cellEnd[…] = index` where the
        // sorted hash changes) A gather or scatter that only the lanes
        // passing a data-dependent test make: how many lanes access, and
        // so the sectors and the minimum, follow the data too.
        // The severity stays: whether few lanes pass (a frontier flag, a
        // boundary in sorted keys) or most (a validity test such as `nb >=
        // 0`) is not known here.
        let message = match (&g.sectors, data_guard(f, a, &parents, acc.stmt)) {
            (crate::facts::coalescing::Sectors::DataDependent, Some(cond)) => format!(
                "{message}; it runs only in the lanes where `{cond}` holds, a test on loaded \
                 values: with k such lanes the warp touches at most k sectors, so where few \
                 lanes pass (a sparse frontier, boundaries in sorted keys) the cost is as many \
                 sectors as lanes, all a scatter can do"
            ),
            _ => message,
        };
        out.push(Finding {
            rule: rule.to_string(),
            severity,
            suppressed: suppressed(&lines, line, rule),
            file: path.clone(),
            line,
            col,
            end_col: end_col_on_line(&acc.span, col),
            function: name.clone(),
            function_key: key.clone(),
            message,
            facts: serde_json::json!({
                "array": acc.array,
                "index": acc.index_text,
                "access": if acc.is_write { "write" } else { "read" },
                "elem_bytes": acc.elem_bytes,
                "bytes_per_thread": acc.access_bytes,
                "min_sectors": g.min_sectors,
                "cost": sectors_json,
                "traffic_share_permille": g.share_permille,
                "block_dims": a.launch.block,
            }),
        });
    }
    // (audit V4) The divergent-branch findings, by branch index, folded
    // below before they join `out`.
    let mut branch_findings: Vec<(usize, Finding)> = Vec::new();
    for (bi, b) in a.branches.iter().enumerate() {
        use crate::facts::divergence::BranchKind;
        let (memory, looping, tail) = match b.kind {
            BranchKind::Divergent { memory, looping } => (memory, looping, None),
            BranchKind::StrideTail { grid, memory, .. } => (memory, true, Some(grid)),
            _ => continue,
        };
        let span = if b.in_expression {
            f.expr(b.cond).span
        } else {
            f.stmt(b.stmt).span
        };
        let (line, col) = abs(&span);
        // (audit D4) Register-only sides are if-converted into selects or
        // predicated moves: no divergent path runs, nothing to report.
        use crate::facts::divergence::Shape;
        if matches!(b.shape, Shape::Select | Shape::GroupLeader) {
            continue;
        }
        // (audit 20261205 #6, #52, #56) An early exit outside every loop
        // whose taken side is only `return`: the lanes that take it leave,
        // nothing runs twice, and the others go on with those lanes idle,
        // which have no work left. Inside a loop it is a loop exit, whose
        // cost (the lanes still looping) `fold_loop_exits` reports.
        if let crate::ir::StmtKind::If {
            then, els: None, ..
        } = &f.stmt(b.stmt).kind
            && !b.in_expression
            && return_only(f, *then)
            && !in_loop(b.stmt)
        {
            continue;
        }
        // (session 16; audits 20261230 #27, 20261232 #25: shfl_scan's
        // `if (lane_id >= i) value += n;` after `n = __shfl_up_sync(…, i)`)
        // The guard of a shuffle scan: the lanes below `i` have no partner
        // `i` lanes up and skip one add of registers. That is the scan
        // itself, with nothing cheaper to do instead: not reported.
        if !memory && !looping && tail.is_none() && shuffle_scan_guard(f, b) {
            continue;
        }
        // (issue 8 audit, class 6) Under a data-dependent condition (or in
        // an expression), a divergent part of a few operations is
        // predicated or costs the idle lanes a few instructions, and the
        // split follows the input: below `[cost] divergent_min_ops`, not
        // reported. A condition on thread indices alone is the work's
        // layout, which the programmer chose and can change (`tid % (2 * s)
        // == 0` keeps every warp busy for a few lanes): still reported.
        let w = b.work;
        let bounded = tail.is_none() && !w.unbounded;
        if bounded
            && (b.data_dependent || b.in_expression)
            && w.calls == 0
            && w.ops < a.cost.divergent_min_ops
        {
            continue;
        }
        // A divergent `?:`/`&&`/`||` is a select or a short predicated
        // sequence: cheap, so a note whatever its operands read. So are
        // two calls of one function (often merged), threshold guards
        // splitting one warp per block (audit D5), and short straight-line
        // parts under a data-dependent condition (the split follows the
        // input): under four times `divergent_min_ops` (four blocks the
        // compiler could have predicated) and without calls.
        let short_data =
            bounded && b.data_dependent && w.calls == 0 && w.ops < 4 * a.cost.divergent_min_ops;
        // (session 7) Contiguous-run guards are notes unless some test cuts
        // every warp; a loop bound spread over a few values per warp is a
        // note unless the spread is a known constant above 4.
        let shape_warns = match &b.shape {
            Shape::Plain => true,
            // (session 15) Not when one warp of the block reaches it.
            Shape::Runs { every_warp, .. } => *every_warp && b.reach.is_none_or(|(n, _)| n > 1),
            Shape::TripSpread { spread, .. } => spread.parse::<u32>().is_ok_and(|k| k > 4),
            _ => false,
        };
        // (session 7) A straight-line part under the predication threshold
        // (`[cost] divergent_min_ops`, callees' bodies counted) with at
        // most one memory access costs the split warp a few issue slots,
        // stated in the message: a note whatever the condition reads. (The
        // interleaved reduction's `s[t] += s[t + k]`, three accesses, stays
        // a warning.)
        let predicable = bounded && w.calls == 0 && w.ops < a.cost.divergent_min_ops;
        // (audit 20261208 #1 hotspot `if (computed) t[ty][tx] = …`, #30
        // FDTD3d) Such a part inside a loop whose iteration does at least
        // four times its work: the split costs a small share of each
        // iteration, whatever memory the part touches.
        let loop_share = innermost_loop(b.stmt)
            .filter(|_| bounded && w.calls == 0 && tail.is_none() && !looping)
            .and_then(|l| {
                let body = match &f.stmt(l).kind {
                    crate::ir::StmtKind::For { body, .. }
                    | crate::ir::StmtKind::While { body, .. }
                    | crate::ir::StmtKind::DoWhile { body, .. } => *body,
                    _ => return None,
                };
                let lw = crate::facts::divergence::stmt_work(f, &a.loops, body, None);
                (lw.unbounded || lw.ops >= 4 * w.ops).then_some((l, lw))
            });
        // (issue 8, session 14; audit 20261220 #31, threadFenceReduction's
        // `if (vid < i)` in a 5-step in-warp tree reduction) Such a part in
        // a loop of a few known iterations, itself in no loop: a few dozen
        // issue slots per warp in all.
        // Only a threshold test against a uniform bound (the selected lanes
        // of a warp are a contiguous run, as a tree reduction's are): an
        // interleaved test such as `tid % (2 * s) == 0` keeps every warp
        // busy for a few lanes, which sequential addressing fixes.
        let threshold = matches!(
            f.expr(f.strip_casts(b.cond)).kind,
            crate::ir::ExprKind::Binary(
                crate::ir::BinOp::Lt | crate::ir::BinOp::Le | crate::ir::BinOp::Gt | crate::ir::BinOp::Ge,
                l,
                r
            ) if a.uniformity.is_uniform(l.0) || a.uniformity.is_uniform(r.0)
        );
        let fixed_loop = innermost_loop(b.stmt)
            .filter(|l| threshold && !in_loop(*l) && tail.is_none() && !looping)
            .and_then(|l| {
                let n = a.loops.get(l)?.values.as_ref()?.len() as u32;
                (n > 0 && n <= 32).then_some((l, n))
            });
        let tiny = predicable && (w.memory <= 1 || loop_share.is_some() || fixed_loop.is_some());
        // (session 16; audit 20261232 #34, MonteCarlo's `tile32.thread_rank()
        // < i` with `i` = 16, 8, …, 1) A straight-line part just over the
        // predication threshold in such a loop: still a few dozen issue
        // slots per warp in all.
        let fixed_short = !predicable
            && bounded
            && w.calls == 0
            && w.memory > 0
            && fixed_loop.is_some_and(|(_, n)| w.ops * n <= 8 * a.cost.divergent_min_ops);
        // (audit 20261209 #24, FDTD3d's halo loads under `ltidx < RADIUS`)
        // A longer part that is still at most a quarter of its loop's
        // iteration: a note that states the share.
        let small_in_loop = !predicable && loop_share.is_some_and(|(_, lw)| !lw.unbounded);
        // (audit 20261203 #27) Straight-line, under the predication
        // threshold counting its memory accesses too, and outside every
        // loop: it runs once per thread (once per call in a device
        // function), a few issue slots each time.
        let once_short = bounded
            && tail.is_none()
            && !looping
            && w.calls == 0
            // (audit 20261207 #33) Up to four times the predication
            // threshold: a few dozen issue slots, once.
            && w.ops + w.memory < 4 * a.cost.divergent_min_ops
            && !in_loop(b.stmt);
        let severity = if tail.is_none()
            && !b.in_expression
            && (memory || looping)
            && shape_warns
            && !short_data
            && !tiny
            && !fixed_short
            && !once_short
            && !small_in_loop
        {
            Severity::Warning
        } else {
            Severity::Note
        };
        // (audit 20261210 #26, volumeRender's early ray termination) An
        // `if` whose taken side only leaves the innermost loop around it:
        // an early exit, which removes work and never makes a warp slower
        // than the loop without it.
        let early_exit = match &f.stmt(b.stmt).kind {
            crate::ir::StmtKind::If {
                then, els: None, ..
            } if !b.in_expression
                && tail.is_none()
                && (break_only(f, *then) || records_then_breaks(f, *then)) =>
            {
                crate::facts::divergence::loop_exit(f, &parents, b.stmt)
            }
            // (session 16) Register moves (selects) around a `break`.
            crate::ir::StmtKind::If { .. }
                if !b.in_expression
                    && tail.is_none()
                    && crate::facts::divergence::registers_or_exit(f, b.stmt) =>
            {
                innermost_loop(b.stmt)
            }
            _ => None,
        };
        // (audits 20261209 #57, 20261214 #50/#55, llm.c's fused classifier)
        // A remainder loop: its counter starts at the bound rounded down to
        // a multiple plus a non-negative lane index and steps by a
        // constant, so no lane runs more than the remainder's iterations.
        let remainder = (tail.is_none() && !b.in_expression)
            .then(|| remainder_loop(f, a, b.stmt, b.cond))
            .flatten();
        // (issue 8, session 13; audit 20261216 #30, EGLStream's
        // `if (data[i] != expected && !errorFound) { printf(…); … }`) A
        // one-sided `if` on loaded values whose taken side reports (printf,
        // assert, trap): an error path, which a correct run does not take.
        let reports = match &f.stmt(b.stmt).kind {
            crate::ir::StmtKind::If {
                then, els: None, ..
            } if !b.in_expression && tail.is_none() && b.data_dependent => reporting_call(f, *then),
            _ => None,
        };
        let cas = (tail.is_none() && !b.in_expression && b.data_dependent)
            .then(|| cas_retry_loop(f, &parents, b.stmt, b.cond))
            .flatten();
        let range_check = match &f.stmt(b.stmt).kind {
            crate::ir::StmtKind::If {
                then, els: None, ..
            } if !b.in_expression && tail.is_none() && b.data_dependent && reports.is_none() => {
                loaded_range_check(f, a, *then, &parents, b.cond)
            }
            _ => None,
        };
        // (issue 8, session 14; audit 20261217 #5, cfd's `nb >= 0` with
        // short boundary sides) An `if`/`else` whose shorter side is short
        // straight-line code: the warp runs the longer side for its lanes
        // that take it anyway, so the split adds that short side only.
        // Under a data-dependent condition (a boundary test on loaded
        // values), a shorter side of at most a quarter of the longer's
        // work: what the split adds is small against what the warp runs.
        let short_side = b.shorter_side.filter(|(sw, lw)| {
            severity == Severity::Warning
                && tail.is_none()
                && !b.in_expression
                && sw.calls == 0
                && (sw.ops + sw.memory < 4 * a.cost.divergent_min_ops
                    || (b.data_dependent && 2 * (sw.ops + sw.memory) <= lw.ops + lw.memory))
        });
        // (issue 8, session 14; audits 20261220 #27, 20261221 #34,
        // mergeSort's `for (; stride > 0; stride >>= 1)` in its binary
        // search) A halving loop: a lane's trip count is the bit length of
        // its starting value, so lanes split only by the difference in bit
        // lengths.
        let halving = (tail.is_none() && !b.in_expression)
            .then(|| {
                let l = a.loops.get(b.stmt)?;
                if l.cond != Some(b.cond) {
                    return None;
                }
                let g = l.guard.as_ref()?;
                let iv = l.vars.iter().find(|v| v.var == g.var)?;
                let halves = match (
                    iv.op,
                    iv.step.map(|e| f.expr(f.strip_casts(e)).kind.clone()),
                ) {
                    (crate::facts::loops::StepOp::Shr, Some(crate::ir::ExprKind::Int(k))) => k >= 1,
                    (crate::facts::loops::StepOp::Div, Some(crate::ir::ExprKind::Int(k))) => k >= 2,
                    _ => false,
                };
                let to_zero = matches!(
                    (g.op, f.expr(f.strip_casts(g.bound)).kind.clone()),
                    (
                        crate::ir::BinOp::Gt | crate::ir::BinOp::Ne,
                        crate::ir::ExprKind::Int(0)
                    ) | (crate::ir::BinOp::Ge, crate::ir::ExprKind::Int(1))
                );
                (halves && to_zero).then(|| f.var(g.var).name.clone())
            })
            .flatten();
        // (session 15, audits 20261221 #2, 20261223 #1, 20261224 #4: lud's
        // `threadIdx.x > i`, nw's `tx <= m`) A one-sided test of a thread
        // index against the counter of an enclosing loop that moves by one:
        // a triangular or wavefront sweep, whose idle lanes are the order of
        // the work, not a serialised path.
        let sweep = (tail.is_none()
            && !b.in_expression
            && !b.data_dependent
            && matches!(
                f.stmt(b.stmt).kind,
                crate::ir::StmtKind::If { els: None, .. }
            ))
        .then(|| triangular_sweep(f, a, b, &parents))
        .flatten();
        let severity = if early_exit.is_some()
            || sweep.is_some()
            || halving.is_some()
            || short_side.is_some()
            || remainder.is_some()
            || reports.is_some()
            || cas.is_some()
            || range_check.is_some()
        {
            Severity::Note
        } else {
            severity
        };
        let cond_text = f.expr_text(b.cond);
        let dims = dim_names(a.uniformity.expr_dims[b.cond.0 as usize]);
        let region = match (memory, looping) {
            (true, true) => "; the divergent part accesses memory and loops",
            (true, false) => "; the divergent part accesses memory",
            (false, true) => "; the divergent part loops",
            _ => "",
        };
        branch_findings.push((
            bi,
            Finding {
                rule: "divergent-branch".into(),
                severity,
                suppressed: suppressed(&lines, line, "divergent-branch"),
                file: path.clone(),
                line,
                col,
                end_col: col + 1,
                function: name.clone(),
                function_key: key.clone(),
                message: match early_exit {
                    None if remainder.is_some() => {
                        let (most, round) = remainder.unwrap_or_default();
                        let idle = round - 1;
                        format!(
                            "`{cond_text}`: a remainder loop: its counter starts at the bound \
                             rounded down to a multiple of {round} plus a non-negative thread \
                             index, so no thread runs more than {most} iteration(s), and those \
                             whose index is {idle} or more run none{region} (cost: at most \
                             {most} iteration(s) of the loop body, by threads with an index \
                             below {idle})"
                        )
                    }
                    Some(l) => format!(
                        "`{cond_text}` depends on {dims} and can differ between the threads of \
                         a warp: an early exit from the loop at line {} (the taken side {}), \
                         so the lanes that take it stop iterating while the \
                         others go on, and the warp runs as long as its last lane does; the \
                         exit never makes a warp slower than the loop without it, and what it \
                         saves depends on how evenly the lanes of a warp exit{}",
                        line_ref(abs(&f.stmt(l).span).0),
                        match &f.stmt(b.stmt).kind {
                            crate::ir::StmtKind::If { els: Some(_), .. } => {
                                "and the other only move values between registers, which the \
                                 compiler turns into selects, or leave the loop: the exit is \
                                 what splits the warp"
                            }
                            crate::ir::StmtKind::If { then, .. } if !break_only(f, *then) => {
                                "records a value in a register and leaves the loop: a search's \
                                 exit"
                            }
                            _ => "only leaves the loop",
                        },
                        if b.data_dependent {
                            " (the condition depends on values loaded per thread)"
                        } else {
                            ""
                        }
                    ),
                    None if halving.is_some() => {
                        let v = halving.clone().unwrap_or_default();
                        format!(
                            "`{cond_text}` depends on {dims} and can differ between the threads \
                             of a warp: a halving loop, in which a lane runs one iteration per \
                             bit of its starting `{v}` (at most 32), so the lanes of a warp split \
                             only where their `{v}` values differ in bit length, and then by that \
                             difference in iterations{region}"
                        )
                    }
                    None if sweep.is_some() => {
                        let (v, at) = sweep.clone().unwrap_or_default();
                        format!(
                            "`{cond_text}` compares a thread index with `{v}`, the counter of \
                             the enclosing loop at line {}, which moves by one each iteration: a \
                             triangular (wavefront) sweep, in which lanes join or leave the branch \
                             as the counter passes their values, so a warp runs the part with \
                             lanes idle only in the iterations where the counter lies within its \
                             lanes' range of values, and no second path is serialised; the idle \
                             lanes follow the order the algorithm's dependences impose (only a \
                             remapping of the work onto the lanes recovers them){region}{}",
                            line_ref(at),
                            work_clause(b, false, 4 * a.cost.divergent_min_ops, None),
                        )
                    }
                    None if cas.is_some() => {
                        let (callee, at) = cas.clone().unwrap_or_default();
                        let at = line_ref(at);
                        format!(
                            "`{cond_text}`: a retry loop ({callee} at line {at}): a lane goes \
                             round again only when another thread changed the word between its \
                             read and its update, so the lanes of a warp split only under \
                             contention for the same words; what it costs is that contention \
                             (how many threads update one word at a time), not the branch"
                        )
                    }
                    None if range_check.is_some() => format!(
                        "{}{}; the test is a range check of the loaded value `{}` before the \
                         taken side uses it as an index or passes it on: where every value is in \
                         range no warp splits, so it costs only where the data hold values out \
                         of range",
                        divergence_message(f, b, &cond_text, &dims, region, tail, &a.launch),
                        work_clause(b, false, 4 * a.cost.divergent_min_ops, None),
                        range_check.clone().unwrap_or_default(),
                    ),
                    None if reports.is_some() => format!(
                        "{}; the divergent part reports an error (`{}`): a run whose data pass \
                         the test never takes it, so it costs only where the check fails",
                        divergence_message(f, b, &cond_text, &dims, region, tail, &a.launch),
                        reports.unwrap_or_default()
                    ),
                    None => format!(
                        "{}{}{}{}",
                        divergence_message(f, b, &cond_text, &dims, region, tail, &a.launch),
                        halving_bound_clause(f, a, b, &innermost_loop).unwrap_or_default(),
                        if small_in_loop && let Some((l, lw)) = loop_share {
                            format!(
                                " (divergent part: straight-line code, about {} operations, {} of \
                             them memory accesses, at most a quarter of the about {} operations \
                             of an iteration of the loop at line {}: a split warp loses about {} \
                             issue slots an iteration){}",
                                w.ops,
                                w.memory,
                                lw.ops,
                                line_ref(abs(&f.stmt(l).span).0),
                                w.ops,
                                if b.data_dependent {
                                    "; the condition depends on values loaded per thread"
                                } else {
                                    ""
                                }
                            )
                        } else if (tiny || fixed_short)
                            && w.memory > 0
                            && !once_short
                            && loop_share.is_none()
                            && halving_bound_clause(f, a, b, &innermost_loop).is_none()
                            && let Some((l, n)) = fixed_loop
                        {
                            format!(
                                " (divergent part: straight-line code, about {} operations, {} of \
                                 them memory accesses{}; the loop at line {} runs {n} times (its \
                                 values are known) and sits in no loop, so a split warp loses \
                                 about {} issue slots in all){}",
                                w.ops,
                                w.memory,
                                if tiny {
                                    ", short enough for the compiler to predicate"
                                } else {
                                    ""
                                },
                                line_ref(abs(&f.stmt(l).span).0),
                                w.ops * n,
                                if b.data_dependent {
                                    "; the condition depends on values loaded per thread"
                                } else {
                                    ""
                                }
                            )
                        } else if tiny && w.memory > 0 && !once_short {
                            predicated_clause(
                                b,
                                loop_share.map(|(l, lw)| {
                                    (abs(&f.stmt(l).span).0, (!lw.unbounded).then_some(lw.ops))
                                }),
                            )
                        } else {
                            work_clause(
                                b,
                                tail.is_some(),
                                4 * a.cost.divergent_min_ops,
                                (once_short && w.memory > 0).then_some(f.kind),
                            )
                        },
                        short_side.map_or(String::new(), |(sw, lw)| format!(
                            "; but a warp runs the longer side (about {} operations) anyway for \
                             its lanes that take it, so a split adds only the shorter side, about \
                             {} operations and {} memory accesses per split warp each time the \
                             branch runs",
                            lw.ops, sw.ops, sw.memory
                        ))
                    ),
                },
                facts: serde_json::json!({
                    "condition": cond_text,
                    "depends_on": dims,
                    "memory": memory,
                    "loop": looping,
                    "stride_tail": tail.is_some(),
                    "work": if bounded {
                        serde_json::json!({"ops": w.ops, "memory": w.memory, "calls": w.calls})
                    } else {
                        serde_json::json!("unbounded")
                    },
                    "data_dependent": b.data_dependent,
                    "shape": match &b.shape {
                        Shape::Plain => serde_json::json!("plain"),
                        Shape::Select => serde_json::json!("select"),
                        Shape::GroupLeader => serde_json::json!("group_leader"),
                        Shape::SameCall(c) => serde_json::json!({"same_call": c}),
                        Shape::OneWarp { scope, tests } =>
                            serde_json::json!({"one_warp_per": scope, "tests": tests}),
                        Shape::EveryWarp => serde_json::json!("every_warp"),
                        Shape::Runs { clauses, every_warp } =>
                            serde_json::json!({"runs": clauses, "every_warp": every_warp}),
                        Shape::TripSpread { spread, wrap, .. } =>
                            serde_json::json!({"trip_spread": spread, "wraps": wrap.is_some()}),
                    },
                    "block_dims": a.launch.block,
                }),
            },
        ));
    }
    let kept = fold_nested_branches(f, a, branch_findings);
    out.extend(fold_loop_exits(f, a, kept, &|line| {
        suppressed(&lines, line, "divergent-branch")
    }));
    for sc in &a.shared {
        let Some(degree) = sc.degree else { continue };
        // A re-read of what the thread already read: no wavefronts of its
        // own (the first read carries the finding).
        if degree <= sc.words_per_lane || sc.reread_of.is_some() {
            continue;
        }
        // (session 14) A tree scan: the guard's active lanes bound the
        // conflict of a stride that grows as they shrink.
        let tree = if sc.up_to && sc.words_per_lane <= 1 {
            tree_scan_degree(f, a, &parents, sc).filter(|t| match t {
                TreeScan::Known { worst, .. } => *worst < degree,
                TreeScan::Symbolic { .. } => true,
            })
        } else {
            None
        };
        if tree
            .as_ref()
            .is_some_and(|t| matches!(t, TreeScan::Known { worst, .. } if *worst <= 1))
        {
            continue;
        }
        let acc = &f.accesses[sc.access];
        let (line, col) = abs(&acc.span);
        let rw = if acc.is_write { "write" } else { "read" };
        let stride = match (&sc.symbolic, sc.word_stride) {
            // (session 7) Only the stride between the warp's rows is
            // unknown: the bound is the rows' own degrees added up.
            (Some(sym), _) if sc.rows.is_some_and(|r| r > 1) => format!(
                "the warp spans {} rows {sym} elements apart: the rows conflict with each other \
                 only when that row stride puts them on the same banks (a multiple of {nb} words \
                 does for every lane), so at most the rows' own degrees added up",
                sc.rows.unwrap_or(1),
                nb = a.cost.banks
            ),
            // (audit 20261205 #38) Rows of unknown width: the bound is the
            // number of rows, which blockDim.x sets.
            (Some(sym), _) if sc.rows_by_width => format!(
                "the lanes of a row take consecutive words and the rows are {sym} elements \
                 apart; where this kernel is launched blockDim.x is not known, and a warp spans \
                 {nb} / blockDim.x rows, so at most that many ways (2 for 16-wide blocks, none \
                 for blocks {nb} or more wide); {nb}-way needs blocks one thread wide",
                nb = a.cost.banks
            ),
            (Some(sym), _) => format!("symbolic stride factor {sym}"),
            // (issue 8, session 12, SobelFilter with its pitch known) A
            // warp of narrow rows: the stride is within a row, and the
            // rows' words add up on the banks.
            (None, Some(s))
                if a.launch.block[0].is_some_and(|x| x < a.cost.warp)
                    && a.launch.block[1].is_some_and(|y| y > 1)
                    && acc.indices.iter().any(|i| {
                        a.uniformity
                            .expr_dims
                            .get(i.0 as usize)
                            .is_some_and(|d| d & (1 << crate::facts::relations::DIM_Y) != 0)
                    }) =>
            {
                let bx = a.launch.block[0].unwrap_or(1);
                format!(
                    "word stride {s} between the lanes of a row; a warp spans {} rows of {bx} \
                     threads",
                    a.cost.warp.div_ceil(bx)
                )
            }
            (None, Some(s)) => format!("word stride {s} between lanes"),
            _ => String::new(),
        };
        let (up_to, up_to_times) = if sc.up_to {
            ("up to a ", "up to ")
        } else {
            ("", "")
        };
        let (nb, bb) = (a.cost.banks, a.cost.bank_bytes);
        // (audit 20261205 #11 lavaMD, #37 dwtHaar1D) How often the replay
        // is paid: once per entry of a loop whose iterations the load does
        // not change (the compiler keeps it in a register), or once per
        // thread outside every loop at a 2-fold replay at most.
        let replay = degree.div_ceil(sc.words_per_lane.max(1));
        let (severity, when) = if let Some(l) = hoistable_shared_read(f, &parents, sc.access) {
            (
                Severity::Note,
                format!(
                    "; but neither its index nor `{}` changes in the loop at line {} (nothing \
                     in it writes the array or waits at a barrier), so the compiler can load it \
                     once before that loop: the replay is paid once per entry of the loop, not \
                     per iteration",
                    acc.array,
                    line_ref(abs(&f.stmt(l).span).0)
                ),
            )
        } else if sc.rows_by_width {
            // (audit 20261205 #38) The degree is the rows per warp, which a
            // launch cudalog does not see sets: the message gives the
            // bound per block width.
            (Severity::Note, String::new())
        } else if !in_loop(acc.stmt) && replay <= 2 && !sc.up_to {
            (
                Severity::Note,
                "; it runs once per thread, outside every loop: one extra wavefront per warp in \
                 all"
                .to_string(),
            )
        } else if !in_loop(acc.stmt)
            && replay <= 8
            && !sc.up_to
            && f.kind == crate::ir::FunctionKind::Kernel
            && let Some(l) = work_loop(f, a)
        {
            // (session 16; audit 20261231 #60, llm.c's matmul_backward_bias
            // reorder after its accumulation loop) Once per thread, next to a
            // loop of global memory work of unknown length: a few wavefronts
            // per warp in all.
            (
                Severity::Note,
                format!(
                    "; it runs once per thread, outside every loop, while the loop at line {} \
                     repeats the kernel's global memory work: {} extra wavefront(s) per warp in \
                     all",
                    line_ref(abs(&f.stmt(l).span).0),
                    replay.saturating_sub(1)
                ),
            )
        } else if let Some((l, n)) = innermost_loop(acc.stmt)
            .filter(|l| !in_loop(*l) && replay <= 2 && !sc.up_to)
            .and_then(|l| {
                let n = a.loops.get(l)?.values.as_ref()?.len();
                (n > 0 && n <= 4).then_some((l, n))
            })
        {
            // (issue 8, session 14; audit 20261220 #38/#42, the halo fills
            // of convolutionSeparable and FunctionPointers) A loop of a few
            // known iterations, in no other loop: a few wavefronts in all.
            (
                Severity::Note,
                format!(
                    "; it runs in the {n} iteration(s) of the loop at line {} (its values are \
                     known), outside any other loop: {n} extra wavefront(s) per warp in all",
                    line_ref(abs(&f.stmt(l).span).0)
                ),
            )
        } else if replay <= 2 && !sc.up_to && acc.is_write && stores_a_load(f, a, sc.access) {
            // (session 16; audits 20261230 #39/#40/#42, 20261234 #40: the
            // tex2D staging copies of SobelFilter and FunctionPointers) A
            // 2-way store of a value loaded from global memory or a texture
            // in the same statement: the load, not the extra wavefront,
            // bounds a staging copy.
            (
                Severity::Note,
                "; it stores a value the same statement loads from global memory or a texture: \
                 the warp waits far longer for that load than for the one extra wavefront, and \
                 the load's bandwidth, not the shared store's, bounds such a staging copy"
                    .to_string(),
            )
        } else {
            (Severity::Warning, String::new())
        };
        out.push(Finding {
            rule: "shared-bank-conflict".into(),
            severity,
            suppressed: suppressed(&lines, line, "shared-bank-conflict"),
            file: path.clone(),
            line,
            col,
            end_col: end_col_on_line(&acc.span, col),
            function: name.clone(),
            function_key: key.clone(),
            message: format!("{}{when}", if sc.words_per_lane > 1 {
                // (audit 20261203 #11) Wide elements take several passes
                // without any conflict: say how many, and the conflict as
                // the ratio to them.
                let wpl = sc.words_per_lane;
                let ideal = sc
                    .conflicts
                    .map(|c| degree.saturating_sub(c))
                    .unwrap_or(wpl)
                    .max(1);
                format!(
                    "{rw} of `{}{}`: {up_to_times}{degree} wavefronts where {ideal} would serve the \
                     same words ({}-byte elements take {wpl} passes without any conflict), \
                     {}{}-fold replay ({stride}; {nb} banks of {bb} B)",
                    acc.array,
                    acc.index_text,
                    wpl * bb,
                    if sc.up_to { "up to a " } else { "a " },
                    degree.div_ceil(ideal)
                )
            } else {
                format!(
                    "{rw} of `{}{}`: {up_to}{degree}-way bank conflict ({stride}; {nb} banks of {bb} B), \
                     the warp's access is replayed {up_to_times}{degree} times",
                    acc.array, acc.index_text
                )
            }),
            facts: serde_json::json!({
                "array": acc.array,
                "index": acc.index_text,
                "dims": acc.dims,
                "degree": degree,
                "up_to": sc.up_to,
                "symbolic": sc.symbolic,
                "rows": sc.rows,
                "word_stride": sc.word_stride,
                "block_dims": a.launch.block,
            }),
        });
        if let (
            Some(TreeScan::Symbolic {
                guard,
                d0,
                full,
                example,
            }),
            Some(last),
        ) = (&tree, out.last_mut())
        {
            last.message = format!(
                "{rw} of `{}{}`: a bank conflict that grows with the scan's length (lane stride \
                 {} under `{guard}`: the guard admits fewer lanes as the stride doubles, so the \
                 worst iteration is the one with a warp of active lanes, and its degree is \
                 proportional to the start of `{guard}`'s bound, `{d0}`, which is not known \
                 here: {}-way for a start of {}, up to {degree}-way only from a start of {full}; \
                 {} banks of {} B)",
                acc.array,
                acc.index_text,
                sc.symbolic.clone().unwrap_or_default(),
                example.1,
                example.0,
                a.cost.banks,
                a.cost.bank_bytes
            );
            last.severity = Severity::Note;
        }
        if let (
            Some(TreeScan::Known {
                worst: w,
                guard,
                d0,
            }),
            Some(last),
        ) = (&tree, out.last_mut())
        {
            last.message = format!(
                "{rw} of `{}{}`: a bank conflict of at most {w} ways (lane stride {} under \
                 `{guard}`: the guard admits fewer lanes as the stride doubles, from {d0} \
                 active threads down to one, so over the loop's iterations the worst is \
                 {w}-way, not {degree}; {} banks of {} B), the warp's access is replayed at \
                 most {w} times",
                acc.array,
                acc.index_text,
                sc.symbolic.clone().unwrap_or_default(),
                a.cost.banks,
                a.cost.bank_bytes
            );
            if *w <= 8 {
                last.severity = Severity::Note;
            }
            last.facts["degree"] = serde_json::json!(w);
            last.facts["up_to"] = serde_json::json!(false);
        }
    }
    // (audit 20261216 #48/#49, drawn before as 20261126 #49) One
    // thread-dependent `return` before several block barriers is one
    // finding, at the first barrier after it; the later ones are named in it.
    let exit_barrier = |v: &crate::facts::barriers::BarrierVerdict| match v.site {
        crate::facts::barriers::BarrierSite::Barrier(i)
            if v.via_exit
                && matches!(
                    f.barriers[i].kind,
                    BarrierKind::SyncThreads | BarrierKind::CgBlockSync
                )
                && sync::exit_is_return(f, v.cond) =>
        {
            Some(abs(&f.barriers[i].span).0)
        }
        _ => None,
    };
    let mut later_exit_barriers: std::collections::HashMap<crate::ir::ExprId, Vec<_>> =
        std::collections::HashMap::new();
    for v in &a.divergent_barriers {
        if let Some(l) = exit_barrier(v) {
            later_exit_barriers.entry(v.cond).or_default().push(l);
        }
    }
    for l in later_exit_barriers.values_mut() {
        l.sort_unstable();
        l.dedup();
    }
    for v in &a.divergent_barriers {
        let mut also = String::new();
        if let Some(l) = exit_barrier(v) {
            let lines = &later_exit_barriers[&v.cond];
            if lines.first() != Some(&l) {
                continue;
            }
            if lines.len() > 1 {
                let rest: Vec<String> = lines[1..].iter().map(|x| line_ref(*x)).collect();
                also = format!(
                    " (the same holds for the {} later barrier{} at line{} {})",
                    rest.len(),
                    if rest.len() == 1 { "" } else { "s" },
                    if rest.len() == 1 { "" } else { "s" },
                    rest.join(", ")
                );
            }
        }
        let b = match v.site {
            crate::facts::barriers::BarrierSite::Barrier(i) => &f.barriers[i],
            crate::facts::barriers::BarrierSite::Call(i) => {
                out.push(call_barrier_finding(
                    f,
                    a,
                    v,
                    &f.calls[i],
                    &lines,
                    &abs,
                    FindingSite {
                        path: &path,
                        function: &name,
                        function_key: &key,
                    },
                ));
                continue;
            }
        };
        let (line, col) = abs(&b.span);
        let cond = f.expr(v.cond);
        let (cline, _) = abs(&cond.span);
        let cline_ref = line_ref(cline);
        let what = match b.kind {
            BarrierKind::SyncThreads | BarrierKind::SyncThreadsReduce => {
                "__syncthreads()".to_string()
            }
            BarrierKind::BarSync | BarrierKind::BarArrive | BarrierKind::BarRed => {
                format!(
                    "named barrier {}",
                    b.barrier_id.map(|i| i.to_string()).unwrap_or("?".into())
                )
            }
            k => k.as_str().to_string(),
        };
        let scope = match b.kind {
            BarrierKind::SyncWarp | BarrierKind::CgTileSync => "warp",
            BarrierKind::BarSync | BarrierKind::BarArrive | BarrierKind::BarRed
                if b.thread_count.is_some() || b.thread_count_text.is_some() =>
            {
                "warp"
            }
            BarrierKind::CgGridSync => "grid",
            _ => "block",
        };
        let cond_text = f.expr_text(v.cond);
        let mut dims = dim_names(a.uniformity.expr_dims[v.cond.0 as usize]);
        if b.kind == BarrierKind::CgGridSync
            && crate::facts::barriers::depends_on_block(f, v.cond, 0)
        {
            dims = if dims == "nothing" {
                "blockIdx".into()
            } else {
                format!("{dims}, blockIdx")
            };
        }
        // A thread-dependent `return` before a block barrier: since sm_70 the
        // barrier waits only for threads that have not exited.
        let exited = v.via_exit
            && matches!(b.kind, BarrierKind::SyncThreads | BarrierKind::CgBlockSync)
            && sync::exit_is_return(f, v.cond);
        // (audit 20261206 #48) A loop condition the lanes of each warp agree
        // on, before a block barrier.
        let is_loop = |s: crate::ir::StmtId| {
            matches!(
                f.stmt(s).kind,
                crate::ir::StmtKind::For { .. }
                    | crate::ir::StmtKind::While { .. }
                    | crate::ir::StmtKind::DoWhile { .. }
            )
        };
        let warp_loop = (!v.via_exit && scope == "block")
            .then(|| {
                a.branches.iter().find(|br| {
                    br.cond == v.cond
                        && br.kind == crate::facts::divergence::BranchKind::WarpUniform
                        && is_loop(br.stmt)
                })
            })
            .flatten();
        let between_warps = warp_loop.is_some();
        // (audit 20261207 #48) With no barrier after that loop (and no loop
        // around it), the warps that finish first exit.
        let then_exit = warp_loop.is_some_and(|br| {
            let end = f.stmt(br.stmt).span.end_line;
            !in_loop(br.stmt) && !f.barriers.iter().any(|o| f.stmt(o.stmt).span.line > end)
        });
        // (audit 20261207 #23) A stride loop: the lanes' trip counts differ
        // by at most one, so only its last iteration can leave lanes out.
        let stride_tail = (!v.via_exit)
            .then(|| {
                a.branches.iter().find_map(|br| match &br.kind {
                    crate::facts::divergence::BranchKind::StrideTail {
                        stride, exact_if, ..
                    } if br.cond == v.cond && is_loop(br.stmt) => Some((*stride, *exact_if)),
                    _ => None,
                })
            })
            .flatten();
        // (issue 8, session 14; audits 20261213 #23, 20261218 #23, 20261220
        // #23, binaryPartitionCG with `size = 1024 * 100`) A warp barrier in
        // a stride loop whose bound every launch passes as a multiple of
        // the warp size: the lanes of a warp leave the loop together unless
        // the block is not a whole number of warps.
        let whole_warps_bound = (scope == "warp")
            .then(|| {
                let bound = match f.expr(f.strip_casts(v.cond)).kind {
                    crate::ir::ExprKind::Binary(crate::ir::BinOp::Lt, _, r) => r,
                    _ => {
                        let br = a
                            .branches
                            .iter()
                            .find(|br| br.cond == v.cond && is_loop(br.stmt))?;
                        let g = a.loops.get(br.stmt)?.guard.as_ref()?;
                        if g.op != crate::ir::BinOp::Lt {
                            return None;
                        }
                        g.bound
                    }
                };
                let value = match f.expr(f.strip_casts(bound)).kind {
                    crate::ir::ExprKind::Int(c) => Some(c),
                    crate::ir::ExprKind::Var(p) => f
                        .var(p)
                        .param_position
                        .and_then(|i| a.launch.param_values.get(i as usize).copied().flatten()),
                    _ => None,
                }?;
                (value > 0 && value % i64::from(a.cost.warp) == 0)
                    .then(|| (f.expr_text(bound), value))
            })
            .flatten();
        // With blocks of whole warps as well, no warp straddles the bound:
        // nothing to report.
        let whole_warp_blocks = match a.launch.block {
            [Some(x), Some(y), Some(z)] => (x * y * z) % a.cost.warp == 0 && x % a.cost.warp == 0,
            _ => false,
        };
        if whole_warps_bound.is_some()
            && whole_warp_blocks
            && (stride_tail.is_some()
                || a.branches.iter().any(|br| {
                    br.cond == v.cond
                        && matches!(br.kind, crate::facts::divergence::BranchKind::BoundaryGuard)
                }))
        {
            continue;
        }
        // (issue 8, session 13; audits 20261213 #23, 20261218 #23,
        // binaryPartitionCG's `cg::sync(tile32)` in a grid-stride loop) A
        // bounds check on a grid-wide thread index splits at most the one
        // warp of the launch that straddles its bound.
        // Only a warp barrier under one comparison: a block barrier there
        // fails in the whole straddling block, and a 2-D check (`x < w &&
        // y < h`) straddles along a whole edge.
        let one_bound = matches!(
            f.expr(v.cond).kind,
            crate::ir::ExprKind::Binary(
                crate::ir::BinOp::Lt
                    | crate::ir::BinOp::Le
                    | crate::ir::BinOp::Gt
                    | crate::ir::BinOp::Ge,
                ..
            )
        );
        let boundary = !exited
            && stride_tail.is_none()
            && scope == "warp"
            && one_bound
            && a.branches.iter().any(|br| {
                br.cond == v.cond
                    && matches!(br.kind, crate::facts::divergence::BranchKind::BoundaryGuard)
            });
        let message = if boundary {
            format!(
                "{what} is reached only by threads for which `{cond_text}` (line {cline_ref}) \
                 holds, a bounds check on a grid-wide thread index: it differs between the \
                 threads of at most one warp of the launch, the one that straddles the bound \
                 (none when the bound is a multiple of {} and blocks are whole warps), and in \
                 that warp {what} is reached by only part of the {scope} (undefined behaviour, \
                 a hang before sm_70)",
                a.cost.warp
            )
        } else if exited {
            format!(
                "{what} follows a thread-dependent `return` (line {cline_ref}, taken when \
                 `{cond_text}`, which depends on {dims}): since sm_70 a barrier waits only for \
                 threads that have not exited, so this is defined there, but the exited threads \
                 must not be expected to have written data read after the barrier, and before \
                 sm_70 it can hang{also}"
            )
        } else if v.via_exit {
            format!(
                "{what} is skipped by threads that leave early: the exit at line {cline_ref} is taken \
                 when `{cond_text}`, which depends on {dims}"
            )
        } else if let (true, Some((bound, value))) = (boundary, &whole_warps_bound) {
            format!(
                "{what} is reached only by threads for which `{cond_text}` (line {cline_ref}) \
                 holds, a bounds check on a grid-wide thread index; `{bound}` is {value} at \
                 every launch, a multiple of {}, so the lanes of a warp agree on it unless the \
                 block size (not known here) is not a multiple of {}: only then is {what} \
                 reached by part of a warp",
                a.cost.warp, a.cost.warp
            )
        } else if let (Some((stride, _)), Some((bound, value))) = (stride_tail, &whole_warps_bound)
        {
            format!(
                "{what} is in a {} (`{cond_text}`, line {cline_ref}) whose lanes' trip counts \
                 differ by at most one; `{bound}` is {value} at every launch, a multiple of {}, \
                 so the lanes of a warp leave the loop together unless the block size (not known \
                 here) is not a multiple of {}: only then is {what} reached by part of the warp \
                 in the last iteration",
                stride.loop_name(),
                a.cost.warp,
                a.cost.warp
            )
        } else if let Some((stride, exact)) = stride_tail {
            format!(
                "{what} is in a {} (`{cond_text}`, line {cline_ref}) whose lanes' trip counts differ \
                 by at most one: only in its last iteration can some threads of a {scope} have left \
                 the loop, and then {what} is reached by only part of the {scope} (undefined \
                 behaviour, a hang before sm_70){}",
                stride.loop_name(),
                exact
                    .map(|(bound, step)| format!(
                        "; this happens only when `{}` is not a multiple of `{}`",
                        f.expr_text(bound),
                        f.expr_text(step)
                    ))
                    .unwrap_or_default()
            )
        } else if then_exit {
            format!(
                "{what} is reached only by threads for which `{cond_text}` (line {cline_ref}) holds; \
                 the lanes of each warp agree on it (it depends on {dims} only through the warp \
                 index), so for some values of its bound some warps of a block take one more turn \
                 than others; no barrier follows the loop, so the warps that finish first exit, \
                 and since sm_70 a barrier waits only for threads that have not exited: defined \
                 there, but the exited warps must not be expected to have written data read after \
                 the barrier, and before sm_70 it can hang"
            )
        } else if between_warps {
            // (audit 20261206 #48, layernorm_backward `bt < B * T` in a
            // warp-stride loop) The lanes of each warp agree: the warps of a
            // block reach the barrier different numbers of times only for
            // some values of the bound.
            format!(
                "{what} is reached only by threads for which `{cond_text}` (line {cline_ref}) holds; \
                 the lanes of each warp agree on it (it depends on {dims} only through the warp \
                 index), so it can differ between the warps of a {scope}: for the values of its \
                 bound where some warps of a block take one more turn than others, they wait at \
                 different barriers (a hang or wrong results); for the others all warps agree"
            )
        } else {
            format!(
                "{what} is reached only by threads for which `{cond_text}` (line {cline_ref}) holds, \
                 and that differs between threads of a {scope}: it depends on {dims}"
            )
        };
        let end_col = end_col_on_line(&b.span, col);
        out.push(Finding {
            rule: "barrier-divergence".into(),
            severity: if whole_warps_bound.is_some() && (boundary || stride_tail.is_some()) {
                Severity::Note
            } else if exited || between_warps || stride_tail.is_some() || boundary {
                Severity::Warning
            } else {
                Severity::Error
            },
            suppressed: suppressed(&lines, line, "barrier-divergence"),
            file: path.clone(),
            line,
            col,
            end_col,
            function: name.clone(),
            function_key: key.clone(),
            message,
            facts: serde_json::json!({
                "barrier_kind": b.kind.as_str(),
                "condition": cond_text,
                "condition_line": cline,
                "condition_depends_on": dims,
                "via_exit": v.via_exit,
                "thread_exit": exited,
                "block_dims": a.launch.block,
            }),
        });
    }
    out.extend(sync::sync_findings(f, a, &lines, &name));
    // (issue 8, session 11; boxFilter's `d_boxfilter_x_global`, drawn by
    // three audits) What no launch in the indexed files runs: said, since
    // dead code costs nothing (a launch through a function pointer or from
    // files outside the workspace is not seen).
    if a.launch.unlaunched {
        let clause = if f.kind == FunctionKind::Kernel {
            "; no launch of this kernel (`<<<…>>>`, `cudaLaunchKernel`) is in the indexed \
             files: if nothing launches it (dead code, or a launch through a function pointer \
             cudalog does not follow), this costs nothing"
        } else {
            "; no kernel that calls this function has a launch (`<<<…>>>`, \
             `cudaLaunchKernel`) in the indexed files: if nothing launches them, this costs \
             nothing"
        };
        // (session 14; audits 20261217 #45, 20261223 #44/#47) A cost that
        // may never be paid is a note; bugs (races, barrier divergence)
        // keep their severity, since they break whatever launches the code.
        const COSTS: [&str; 4] = [
            "uncoalesced-global",
            "shared-bank-conflict",
            "divergent-branch",
            "misaligned-global",
        ];
        for x in &mut out {
            x.message.push_str(clause);
            if x.severity == Severity::Warning && COSTS.contains(&x.rule.as_str()) {
                x.severity = Severity::Note;
            }
        }
    }
    out.sort_by(|a, b| (a.line, a.col, &a.rule).cmp(&(b.line, b.col, &b.rule)));
    out.dedup_by(|a, b| (a.line, a.col, &a.rule) == (b.line, b.col, &b.rule));
    out
}

/// (audit 20261205 #11) The innermost loop around shared read `access`
/// whose iterations cannot change what it reads: no variable of its index
/// (nor its base) is assigned, declared or has its address taken in the
/// loop, nothing in the loop writes the array, and no barrier or call that
/// may wait is in it. The compiler can then load it once before the loop.
fn hoistable_shared_read(
    f: &crate::ir::Function,
    parents: &[Option<crate::ir::StmtId>],
    access: usize,
) -> Option<crate::ir::StmtId> {
    use crate::ir::{ExprKind, Span, StmtKind, UnOp};
    let acc = &f.accesses[access];
    if acc.is_write || acc.atomic {
        return None;
    }
    let mut at = parents.get(acc.stmt.0 as usize).copied().flatten();
    let l = loop {
        let p = at?;
        if matches!(
            f.stmt(p).kind,
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
        ) {
            break p;
        }
        at = parents.get(p.0 as usize).copied().flatten();
    };
    let ls = f.stmt(l).span;
    let within = |x: &Span| {
        (x.line, x.col) >= (ls.line, ls.col) && (x.end_line, x.end_col) <= (ls.end_line, ls.end_col)
    };
    // The variables the address is computed from.
    let mut vars: Vec<crate::ir::VarId> = acc.var.into_iter().collect();
    let mut todo: Vec<crate::ir::ExprId> = acc.indices.clone();
    let mut seen = 0usize;
    while let Some(e) = todo.pop() {
        seen += 1;
        if seen > 4096 {
            return None;
        }
        match &f.expr(e).kind {
            ExprKind::Var(v) => vars.push(*v),
            // A load in the index may change with the loop's stores.
            ExprKind::Index { .. } | ExprKind::Call { .. } => return None,
            ExprKind::Unary(UnOp::Deref, _) | ExprKind::Member { arrow: true, .. } => {
                return None;
            }
            _ => {}
        }
        todo.extend(f.child_exprs(e));
    }
    if vars.iter().any(|v| within(&f.var(*v).span)) {
        return None;
    }
    let target = |mut e: crate::ir::ExprId| loop {
        match &f.expr(e).kind {
            ExprKind::Var(v) => break Some(*v),
            ExprKind::Index { base, .. } | ExprKind::Member { base, .. } => e = *base,
            ExprKind::Unary(UnOp::Deref, x) => e = *x,
            _ => break None,
        }
    };
    for e in &f.exprs {
        if !within(&e.span) {
            continue;
        }
        match &e.kind {
            ExprKind::Assign { lhs: x, .. }
            | ExprKind::IncDec { target: x, .. }
            | ExprKind::Unary(UnOp::AddrOf, x)
                if target(*x).is_some_and(|v| vars.contains(&v)) =>
            {
                return None;
            }
            ExprKind::Call { callee, .. }
                if ["sync", "barrier", "wait"]
                    .iter()
                    .any(|w| callee.to_ascii_lowercase().contains(w)) =>
            {
                return None;
            }
            _ => {}
        }
    }
    if f.barriers.iter().any(|b| within(&f.stmt(b.stmt).span)) {
        return None;
    }
    if f.accesses
        .iter()
        .any(|o| o.array == acc.array && (o.is_write || o.atomic) && within(&o.span))
    {
        return None;
    }
    Some(l)
}

/// (audit 20261205 #44) The loop whose counter the access's last index
/// adds to another term: `b + i` (through one local defined once, `index
/// = b + i`), with `i` an induction variable stepped by `++` or `+= 1` of
/// a loop around the access and `b` not mentioning `i`.
fn lane_run_loop(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    parents: &[Option<crate::ir::StmtId>],
    acc: &crate::ir::Access,
) -> Option<crate::ir::StmtId> {
    use crate::ir::{BinOp, ExprId, ExprKind};
    let strip = |e: ExprId| f.strip_casts(e);
    let mut idx = strip(*acc.indices.last()?);
    if let ExprKind::Var(v) = f.expr(idx).kind
        && f.var(v).param_position.is_none()
        && let Some(init) = crate::facts::barriers::single_def(f, v.0)
    {
        idx = strip(init);
    }
    let ExprKind::Binary(BinOp::Add, l, r) = f.expr(idx).kind else {
        return None;
    };
    let mentions = |e: ExprId, v: crate::ir::VarId| {
        let mut todo = vec![e];
        let mut n = 0;
        while let Some(x) = todo.pop() {
            n += 1;
            if n > 1024 || matches!(f.expr(x).kind, ExprKind::Var(w) if w == v) {
                return true;
            }
            todo.extend(f.child_exprs(x));
        }
        false
    };
    let mut at = parents.get(acc.stmt.0 as usize).copied().flatten();
    while let Some(p) = at {
        if let Some(info) = a.loops.get(p) {
            for iv in &info.vars {
                let unit = iv.op == crate::facts::loops::StepOp::Add
                    && iv
                        .step
                        .is_none_or(|s| matches!(f.expr(s).kind, ExprKind::Int(1)));
                if !unit {
                    continue;
                }
                for (counter, base) in [(l, r), (r, l)] {
                    if matches!(f.expr(strip(counter)).kind, ExprKind::Var(w) if w == iv.var)
                        && !mentions(base, iv.var)
                    {
                        return Some(p);
                    }
                }
            }
        }
        at = parents.get(p.0 as usize).copied().flatten();
    }
    None
}

/// Whether statement `s` is a bare `return;` (alone or in a block).
/// Whether statement `s` is only `break;` (in a block of one).
/// (issue 8, session 12) For a loop `for (i = lane + round_down(B); i < B;
/// i += c)` (`round_down(B)` = `B & ~(m - 1)` with `m` a power of two, or
/// `B / m * m`; `lane` a value in `[0, ∞)`, e.g. `threadIdx.x`; `c` a
/// positive constant): the most iterations any lane runs, `⌈(m - 1) / c⌉`,
/// and `m`.
fn remainder_loop(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    s: crate::ir::StmtId,
    cond: crate::ir::ExprId,
) -> Option<(i64, i64)> {
    use crate::facts::barriers::{const_value, single_def};
    use crate::ir::{BinOp, ExprKind, UnOp};
    let l = a.loops.get(s)?;
    if l.cond != Some(cond) {
        return None;
    }
    let g = l.guard.as_ref()?;
    if g.op != BinOp::Lt {
        return None;
    }
    let iv = l.vars.iter().find(|v| v.var == g.var)?;
    if iv.op != crate::facts::loops::StepOp::Add {
        return None;
    }
    // `i++` has no step expression: one.
    let step = match iv.step {
        Some(e) => const_value(f, e)?,
        None => 1,
    };
    if step <= 0 {
        return None;
    }
    let resolve = |mut e: crate::ir::ExprId| {
        for _ in 0..4 {
            e = f.strip_casts(e);
            match f.expr(e).kind {
                ExprKind::Var(v) => match single_def(f, v.0) {
                    Some(d) => e = d,
                    None => break,
                },
                ExprKind::Assign { op: None, rhs, .. } => e = rhs,
                _ => break,
            }
        }
        e
    };
    let bound_text = f.expr_text(resolve(g.bound));
    // `round_down(B)`: the multiple `m`.
    let rounding = |e: crate::ir::ExprId| -> Option<i64> {
        let e = resolve(e);
        match f.expr(e).kind {
            ExprKind::Binary(BinOp::BitAnd, x, y) => {
                let (v, mask) = if const_value(f, y).is_some()
                    || matches!(f.expr(y).kind, ExprKind::Unary(UnOp::BitNot, _))
                {
                    (x, y)
                } else {
                    (y, x)
                };
                let ExprKind::Unary(UnOp::BitNot, inner) = f.expr(f.strip_casts(mask)).kind else {
                    return None;
                };
                let low = const_value(f, inner)?;
                (low > 0 && (low + 1) & low == 0 && f.expr_text(resolve(v)) == bound_text)
                    .then_some(low + 1)
            }
            ExprKind::Binary(BinOp::Mul, x, y) => {
                let (q, m) = match (const_value(f, x), const_value(f, y)) {
                    (_, Some(m)) => (x, m),
                    (Some(m), _) => (y, m),
                    _ => return None,
                };
                let ExprKind::Binary(BinOp::Div, v, d) = f.expr(resolve(q)).kind else {
                    return None;
                };
                (m > 0 && const_value(f, d) == Some(m) && f.expr_text(resolve(v)) == bound_text)
                    .then_some(m)
            }
            _ => None,
        }
    };
    let init = resolve(iv.init?);
    let ExprKind::Binary(BinOp::Add, p, q) = f.expr(init).kind else {
        return None;
    };
    let nonneg = |e: crate::ir::ExprId| {
        crate::facts::ranges::value_range(f, e, &a.launch).is_some_and(|(lo, _)| lo >= 0)
    };
    let m = match (rounding(p), rounding(q)) {
        (Some(m), None) if nonneg(q) => m,
        (None, Some(m)) if nonneg(p) => m,
        _ => return None,
    };
    Some(((m - 1 + step - 1) / step, m))
}

/// The first call that reports an error (`printf`, `assert`, `__trap`, …,
/// by callee name) made by statement `s` itself or by one of its top-level
/// statements when it is a block (not under a further condition).
fn reporting_call(f: &crate::ir::Function, s: crate::ir::StmtId) -> Option<&'static str> {
    const REPORTS: [&str; 6] = [
        "printf",
        "assert",
        "__assertfail",
        "__trap",
        "abort",
        "__brkpt",
    ];
    let top: Vec<crate::ir::StmtId> = match &f.stmt(s).kind {
        crate::ir::StmtKind::Block(v) => v.clone(),
        _ => vec![s],
    };
    f.calls
        .iter()
        .filter(|c| top.contains(&c.stmt))
        .find_map(|c| {
            let name = c.callee.rsplit("::").next().unwrap_or(&c.callee);
            REPORTS.iter().find(|r| **r == name).copied()
        })
}

/// What [`tree_scan_degree`] finds of a tree scan's conflict.
enum TreeScan {
    /// The guard's start `d0` is known: the worst degree over the loop.
    Known {
        /// The worst degree.
        worst: u32,
        /// The guard's text.
        guard: String,
        /// Its start.
        d0: i64,
    },
    /// (session 15) The guard's start is not known (`d0`, as written).
    Symbolic {
        /// The guard's text.
        guard: String,
        /// Its start, as written.
        d0: String,
        /// The smallest start with a full (banks-way) conflict.
        full: i64,
        /// A start and its worst degree, for the message.
        example: (i64, i64),
    },
}

/// (issue 8, session 14; audits 20261216 #11, 20261222 #39, 20261223
/// #13/#39, 20261224 #12, 20261225 #40: huffman's and bisect's tree-scan
/// up-sweeps) A shared access whose lane stride is `f·o` for a loop
/// variable `o` that doubles (`o *= 2`), under `if (tid < d)` for a loop
/// variable `d` of the same loop that halves (`d >>= 1`): only `d` lanes
/// are active while the stride grows, so the conflict is bounded by both.
/// With `d`'s and `o`'s starts known, the iterations are enumerated (lanes
/// `0 .. min(d, 32)` of the first warp, words of `elem` bytes on `banks`
/// banks) and the worst degree returned with the guard's text and `d₀`;
/// otherwise `None`.
fn tree_scan_degree(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    parents: &[Option<crate::ir::StmtId>],
    sc: &crate::facts::banks::SharedAccessCost,
) -> Option<TreeScan> {
    use crate::facts::loops::StepOp;
    use crate::ir::{BinOp, Builtin, Dim, ExprKind, StmtKind};
    let sym = sc.symbolic.as_ref()?.trim_matches('`').to_string();
    let (factor, name) = match sym.split_once('·') {
        Some((k, v)) => (k.parse::<i64>().ok()?, v.to_string()),
        None => (1, sym.clone()),
    };
    let acc = &f.accesses[sc.access];
    let elem = i64::try_from(acc.elem_bytes?).ok()?.max(1);
    let is_tid = |e: crate::ir::ExprId| {
        let e = f.strip_casts(e);
        match f.expr(e).kind {
            ExprKind::Builtin(Builtin::ThreadIdx(Dim::X)) => true,
            ExprKind::Var(v) => {
                crate::facts::barriers::single_def(f, v.0).is_some_and(|d| {
                    matches!(
                        f.expr(f.strip_casts(d)).kind,
                        ExprKind::Builtin(Builtin::ThreadIdx(Dim::X))
                    )
                }) || f.var(v).param_position.is_some_and(|p| {
                    // (session 15, bisect's `scanInitial(tid, …)`) A
                    // parameter every caller passes `threadIdx.x` for.
                    a.params
                        .forms
                        .get(p as usize)
                        .cloned()
                        .flatten()
                        .is_some_and(|t| {
                            t.coef[0] == crate::facts::affine::Coef::Int(1)
                                && t.coef[1].is_zero()
                                && t.coef[2].is_zero()
                                && t.offset == Some(0)
                                && t.rest_multiple == 0
                        })
                })
            }
            _ => false,
        }
    };
    // The nearest enclosing `if (tid < d)` with `d` a variable.
    let mut at = parents.get(acc.stmt.0 as usize).copied().flatten();
    let mut guard = None;
    while let Some(p) = at {
        if let StmtKind::If { cond, .. } = &f.stmt(p).kind
            && let ExprKind::Binary(BinOp::Lt, l, r) = f.expr(f.strip_casts(*cond)).kind
            && is_tid(l)
            && let ExprKind::Var(d) = f.expr(f.strip_casts(r)).kind
        {
            guard = Some((p, d, f.expr_text(*cond)));
            break;
        }
        at = parents.get(p.0 as usize).copied().flatten();
    }
    let (if_stmt, d, text) = guard?;
    // The innermost loop around that `if` stepping both variables.
    let mut at = parents.get(if_stmt.0 as usize).copied().flatten();
    while let Some(p) = at {
        if let Some(l) = a.loops.get(p) {
            let halves = l.vars.iter().find(|v| v.var == d).filter(|v| {
                matches!(
                    (v.op, v.step.map(|e| f.expr(f.strip_casts(e)).kind.clone())),
                    (StepOp::Shr, Some(ExprKind::Int(1))) | (StepOp::Div, Some(ExprKind::Int(2)))
                )
            });
            let doubles = l
                .vars
                .iter()
                .find(|v| f.var(v.var).name == name)
                .filter(|v| {
                    matches!(
                        (v.op, v.step.map(|e| f.expr(f.strip_casts(e)).kind.clone())),
                        (StepOp::Shl, Some(ExprKind::Int(1)))
                            | (StepOp::Mul, Some(ExprKind::Int(2)))
                    )
                });
            if let (Some(h), Some(o)) = (halves, doubles) {
                let d_init = h.init?;
                let d0 = crate::facts::loops::launch_const(f, d_init, &a.launch);
                // `o`'s value at the loop's entry: its initialiser in the
                // loop header, or its declaration's when every other
                // assignment of it is inside the loop.
                let entry = o.init.or_else(|| {
                    let mut decl = None;
                    for (i, st) in f.stmts.iter().enumerate() {
                        let id = crate::ir::StmtId(i as u32);
                        match &st.kind {
                            StmtKind::Decl { var, init } if *var == o.var => decl = *init,
                            StmtKind::Expr(e) => {
                                if let ExprKind::Assign { lhs, .. } = f.expr(*e).kind
                                    && matches!(f.expr(f.strip_casts(lhs)).kind, ExprKind::Var(v) if v == o.var)
                                    && !within(parents, id, p)
                                    && (st.span.line < f.stmt(p).span.line
                                        || ancestors(parents, p).iter().any(|x| {
                                            matches!(
                                                f.stmt(*x).kind,
                                                StmtKind::For { .. }
                                                    | StmtKind::While { .. }
                                                    | StmtKind::DoWhile { .. }
                                            )
                                        }))
                                {
                                    return None;
                                }
                            }
                            _ => {}
                        }
                    }
                    decl
                });
                let o0 = crate::facts::loops::launch_const(f, entry?, &a.launch)?;
                let banks = i64::from(a.cost.banks);
                let bank_bytes = i64::from(a.cost.bank_bytes);
                // (session 15, audits 20261222 #39, 20261225 #40, 20261227
                // #41: bisect's scan over a parameter's length) `d`'s start
                // unknown: `d · o` stays `d₀ · o₀`, so the worst iteration
                // is the one with a warp of active lanes, at `d₀ · o₀ · c /
                // warp` ways (`c` the words per unit of `o`).
                let Some(d0) = d0 else {
                    let c = factor * elem;
                    if o0 <= 0 || c <= 0 || factor <= 0 {
                        return None;
                    }
                    let warp = i64::from(a.cost.warp);
                    // Smallest d₀ with a full conflict: d₀·o₀·c ≥ warp·banks·bank_bytes.
                    let full = (warp * banks * bank_bytes + o0 * c - 1) / (o0 * c);
                    let at = |d0: i64| ((d0 * o0 * c) / (warp * bank_bytes)).clamp(1, banks);
                    return Some(TreeScan::Symbolic {
                        guard: text,
                        d0: f.expr_text(d_init),
                        full,
                        example: (256, at(256)),
                    });
                };
                if d0 <= 0 || o0 <= 0 || d0 > 1 << 20 {
                    return None;
                }
                let (mut dv, mut ov, mut worst) = (d0, o0, 0u32);
                while dv > 0 {
                    let active = dv.min(i64::from(a.cost.warp));
                    let mut words: std::collections::BTreeMap<
                        i64,
                        std::collections::BTreeSet<i64>,
                    > = Default::default();
                    for k in 0..active {
                        let word = k * factor * ov * elem / bank_bytes;
                        words
                            .entry(word.rem_euclid(banks))
                            .or_default()
                            .insert(word);
                    }
                    let deg = words.values().map(|w| w.len()).max().unwrap_or(1) as u32;
                    worst = worst.max(deg);
                    dv >>= 1;
                    ov = ov.saturating_mul(2);
                }
                return Some(TreeScan::Known {
                    worst,
                    guard: text,
                    d0,
                });
            }
        }
        at = parents.get(p.0 as usize).copied().flatten();
    }
    None
}

/// The enclosing statements of `s`, innermost first.
fn ancestors(
    parents: &[Option<crate::ir::StmtId>],
    s: crate::ir::StmtId,
) -> Vec<crate::ir::StmtId> {
    let mut out = Vec::new();
    let mut at = parents.get(s.0 as usize).copied().flatten();
    while let Some(p) = at {
        if out.len() > 4096 {
            break;
        }
        out.push(p);
        at = parents.get(p.0 as usize).copied().flatten();
    }
    out
}

/// (issue 8, session 14) For a global access of a kernel: the loop of
/// unknown trip count in the same loops as the access (outside every loop
/// when the access is) and under no `if`/`switch` that does not also hold
/// the access (it runs whenever the access does), whose body makes the
/// most global traffic on every iteration (the minimum sectors of its
/// accesses under no `if` of its own); with that traffic, the iterations
/// after which the loop has moved more sectors than this access at its
/// worst, and the innermost loop around the access.
fn epilogue_next_to_loop(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    parents: &[Option<crate::ir::StmtId>],
    g: &crate::facts::coalescing::GlobalAccessCost,
) -> Option<(crate::ir::StmtId, u64, u64, Option<crate::ir::StmtId>)> {
    use crate::facts::coalescing::Sectors;
    use crate::ir::StmtKind;
    if f.kind != FunctionKind::Kernel {
        return None;
    }
    let is_loop = |s: crate::ir::StmtId| {
        matches!(
            f.stmt(s).kind,
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
        )
    };
    let is_branch = |s: crate::ir::StmtId| {
        matches!(
            f.stmt(s).kind,
            StmtKind::If { .. } | StmtKind::Switch { .. }
        )
    };
    let acc = &f.accesses[g.access];
    let acc_up = ancestors(parents, acc.stmt);
    // (audit 20261220 #63, attention_backward's store once per `t` next
    // to the `t2` loop) Inside loops, the candidate loop must sit in the
    // same ones: per iteration of the innermost, it runs whenever the
    // access does.
    let acc_loops: Vec<crate::ir::StmtId> =
        acc_up.iter().copied().filter(|s| is_loop(*s)).collect();
    let own = match &g.sectors {
        Sectors::Exact {
            actual, aligned, ..
        } => u64::from((*actual).max(*aligned)),
        Sectors::UpTo(n, _) => u64::from(*n),
        Sectors::DataDependent => {
            u64::from(a.cost.warp)
                * acc
                    .access_bytes
                    .unwrap_or(4)
                    .div_ceil(u64::from(a.cost.sector_bytes))
                    .max(1)
        }
        Sectors::Unknown => return None,
    };
    let mut best: Option<(crate::ir::StmtId, u64)> = None;
    for l in &a.loops.loops {
        if l.values.is_some() || !is_loop(l.stmt) {
            continue;
        }
        let up = ancestors(parents, l.stmt);
        let l_loops: Vec<crate::ir::StmtId> = up.iter().copied().filter(|s| is_loop(*s)).collect();
        if l_loops != acc_loops || up.iter().any(|s| is_branch(*s) && !acc_up.contains(s)) {
            continue;
        }
        let per_iter: u64 = a
            .global
            .iter()
            .filter(|h| !h.grouped && h.access != g.access)
            .filter(|h| {
                let hs = f.accesses[h.access].stmt;
                let chain = ancestors(parents, hs);
                let Some(pos) = chain.iter().position(|s| *s == l.stmt) else {
                    return false;
                };
                !chain[..pos].iter().any(|s| is_loop(*s) || is_branch(*s)) && !is_branch(hs)
            })
            .map(|h| u64::from(h.min_sectors))
            .sum();
        if per_iter > 0 && best.is_none_or(|(_, b)| per_iter > b) {
            best = Some((l.stmt, per_iter));
        }
    }
    let (l, per_iter) = best?;
    Some((
        l,
        per_iter,
        own.div_ceil(per_iter),
        acc_loops.first().copied(),
    ))
}

/// Whether statement `s` is `anc` or nested in it.
fn within(
    parents: &[Option<crate::ir::StmtId>],
    s: crate::ir::StmtId,
    anc: crate::ir::StmtId,
) -> bool {
    let mut at = Some(s);
    for _ in 0..4096 {
        match at {
            Some(p) if p == anc => return true,
            Some(p) => at = parents.get(p.0 as usize).copied().flatten(),
            None => return false,
        }
    }
    false
}

/// (issue 8, session 14; audit 20261215 #55, llm.c's bf16x2 `atomicCAS`
/// loops, jacobi's double `atomicAdd`) The loop at `s` is a
/// compare-and-swap retry loop: its condition compares (`==`/`!=`) a
/// variable that an `atomicCAS` inside the loop assigns. The callee and
/// its line are returned: a lane goes round again only when another
/// thread changed the word between its read and its swap.
fn cas_retry_loop(
    f: &crate::ir::Function,
    parents: &[Option<crate::ir::StmtId>],
    s: crate::ir::StmtId,
    cond: crate::ir::ExprId,
) -> Option<(String, u32)> {
    use crate::ir::{BinOp, ExprKind, StmtKind};
    let is_loop_cond = match &f.stmt(s).kind {
        StmtKind::While { cond: c, .. } | StmtKind::DoWhile { cond: c, .. } => *c == cond,
        StmtKind::For { cond: c, .. } => *c == Some(cond),
        _ => false,
    };
    if !is_loop_cond {
        return None;
    }
    let ExprKind::Binary(BinOp::Ne | BinOp::Eq, x, y) = f.expr(f.strip_casts(cond)).kind else {
        return None;
    };
    let vars: Vec<crate::ir::VarId> = [x, y]
        .iter()
        .filter_map(|e| match f.expr(f.strip_casts(*e)).kind {
            ExprKind::Var(v) => Some(v),
            _ => None,
        })
        .collect();
    // (audit 20261221 #6, hybridsort's histogram `do { c = tag | (s[d] +
    // 1); s[d] = c; } while (s[d] != c);`) A write read back: the lane
    // retries only when another lane of its warp wrote the same word.
    let read_back = [(x, y), (y, x)].into_iter().find_map(|(m, v)| {
        let (m, v) = (f.strip_casts(m), f.strip_casts(v));
        let ExprKind::Var(var) = f.expr(v).kind else {
            return None;
        };
        if !matches!(f.expr(m).kind, ExprKind::Index { .. }) {
            return None;
        }
        let text = f.expr_text(m);
        f.stmts.iter().enumerate().find_map(|(i, st)| {
            let id = crate::ir::StmtId(i as u32);
            let StmtKind::Expr(e) = st.kind else {
                return None;
            };
            match f.expr(e).kind {
                ExprKind::Assign { op: None, lhs, rhs }
                    if within(parents, id, s)
                        && f.expr_text(lhs) == text
                        && matches!(f.expr(f.strip_casts(rhs)).kind, ExprKind::Var(w) if w == var) =>
                {
                    Some((format!("a write of `{text}` read back"), st.span.line + 1))
                }
                _ => None,
            }
        })
    });
    if read_back.is_some() {
        return read_back;
    }
    f.calls.iter().find_map(|c| {
        let name = c.callee.rsplit("::").next().unwrap_or(&c.callee);
        if !name.starts_with("atomicCAS") || !within(parents, c.stmt, s) {
            return None;
        }
        let assigned = match &f.stmt(c.stmt).kind {
            StmtKind::Decl { var, init: Some(e) } => (f.strip_casts(*e) == c.expr).then_some(*var),
            StmtKind::Expr(e) => match f.expr(*e).kind {
                ExprKind::Assign { op: None, lhs, rhs } if f.strip_casts(rhs) == c.expr => {
                    match f.expr(f.strip_casts(lhs)).kind {
                        ExprKind::Var(v) => Some(v),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        }?;
        vars.contains(&assigned)
            .then(|| (format!("`{}`", c.callee), c.span.line + 1))
    })
}

/// (issue 8, session 14; audit 20261214 #31, warpAggregatedAtomicsCG's
/// `if (bucket < numOfBuckets)`) A one-sided range check of a loaded
/// value before the taken side uses it as an index or passes it on: each
/// test of the condition (joined by `&&`) compares a variable whose value
/// was loaded per thread with a uniform bound, and the taken side indexes
/// with one of them or passes one to a call. The tested variable's name is
/// returned.
fn loaded_range_check(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    then: crate::ir::StmtId,
    parents: &[Option<crate::ir::StmtId>],
    cond: crate::ir::ExprId,
) -> Option<String> {
    use crate::ir::{BinOp, ExprKind};
    let mut tests = vec![f.strip_casts(cond)];
    let mut tested = Vec::new();
    while let Some(e) = tests.pop() {
        match f.expr(e).kind {
            ExprKind::Binary(BinOp::LogAnd, l, r) => {
                tests.push(f.strip_casts(l));
                tests.push(f.strip_casts(r));
            }
            ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, l, r) => {
                let (l, r) = (f.strip_casts(l), f.strip_casts(r));
                let var_of = |e: crate::ir::ExprId| match f.expr(e).kind {
                    ExprKind::Var(v)
                        if a.uniformity.expr_from_memory.get(e.0 as usize) == Some(&true) =>
                    {
                        Some(v)
                    }
                    _ => None,
                };
                let uniform = |e: crate::ir::ExprId| a.uniformity.is_uniform(e.0);
                match (var_of(l), var_of(r)) {
                    (Some(v), None) if uniform(r) => tested.push(v),
                    (None, Some(v)) if uniform(l) => tested.push(v),
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    tested.dedup();
    // A use of a tested variable in the taken side: as (part of) an index
    // or as a call's argument.
    let uses = |e: crate::ir::ExprId| {
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            if let ExprKind::Var(v) = f.expr(f.strip_casts(x)).kind
                && tested.contains(&v)
            {
                return true;
            }
            stack.extend(f.child_exprs(x));
        }
        false
    };
    let used = f
        .accesses
        .iter()
        .any(|acc| within(parents, acc.stmt, then) && acc.indices.iter().any(|i| uses(*i)))
        || f.calls.iter().any(|c| {
            within(parents, c.stmt, then)
                && matches!(&f.expr(c.expr).kind, ExprKind::Call { args, .. } if args.iter().any(|x| uses(*x)))
        });
    used.then(|| f.var(tested[0]).name.clone())
}

/// (session 15) A `return` whose value is register arithmetic (no memory
/// access, no call) or none, alone in its block.
fn return_of_registers(f: &crate::ir::Function, s: crate::ir::StmtId) -> bool {
    use crate::ir::{ExprKind, StmtKind};
    match &f.stmt(s).kind {
        StmtKind::Return(None) => true,
        StmtKind::Return(Some(e)) => {
            let mut stack = vec![*e];
            while let Some(x) = stack.pop() {
                match f.expr(x).kind {
                    ExprKind::Call { .. }
                    | ExprKind::Index { .. }
                    | ExprKind::Unknown(_)
                    | ExprKind::Assign { .. } => return false,
                    ExprKind::Member { arrow: true, .. } => return false,
                    ExprKind::Unary(crate::ir::UnOp::Deref, _) => return false,
                    _ => {}
                }
                stack.extend(f.child_exprs(x));
            }
            true
        }
        StmtKind::Block(v) => v.len() == 1 && return_of_registers(f, v[0]),
        _ => false,
    }
}

fn break_only(f: &crate::ir::Function, s: crate::ir::StmtId) -> bool {
    use crate::ir::StmtKind;
    match &f.stmt(s).kind {
        StmtKind::Break => true,
        StmtKind::Block(v) => v.len() == 1 && break_only(f, v[0]),
        _ => false,
    }
}

/// (session 16; audits 20261227 #1/#2, 20261229 #3, 20261231 #1, 20261234
/// #3: particlefilter's CDF search `if (CDF[x] >= u[i]) { index = x;
/// break; }`) A block of assignments of register values (literals, locals,
/// arithmetic of them) to scalar locals, ending in `break`: the taken side
/// records where the search stopped and leaves the loop.
fn records_then_breaks(f: &crate::ir::Function, s: crate::ir::StmtId) -> bool {
    use crate::ir::{ExprKind, StmtKind};
    let StmtKind::Block(v) = &f.stmt(s).kind else {
        return false;
    };
    let Some((last, rest)) = v.split_last() else {
        return false;
    };
    if !matches!(f.stmt(*last).kind, StmtKind::Break) || rest.is_empty() {
        return false;
    }
    let register = |e: crate::ir::ExprId| {
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            match &f.expr(x).kind {
                ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {}
                ExprKind::Var(w) if !f.var(*w).ty.is_indexable() => {}
                ExprKind::Binary(_, a, b) => stack.extend([*a, *b]),
                ExprKind::Unary(
                    crate::ir::UnOp::Neg
                    | crate::ir::UnOp::Plus
                    | crate::ir::UnOp::Not
                    | crate::ir::UnOp::BitNot,
                    a,
                )
                | ExprKind::Cast(_, a) => stack.push(*a),
                _ => return false,
            }
        }
        true
    };
    rest.iter().all(|r| match &f.stmt(*r).kind {
        StmtKind::Expr(e) => match &f.expr(*e).kind {
            ExprKind::Assign { lhs, rhs, .. } => {
                matches!(f.expr(*lhs).kind, ExprKind::Var(w)
                    if !f.var(w).by_ref && !f.var(w).ty.is_indexable() && f.var(w).param_position.is_none())
                    && register(*rhs)
            }
            _ => false,
        },
        _ => false,
    })
}

fn return_only(f: &crate::ir::Function, s: crate::ir::StmtId) -> bool {
    use crate::ir::{ExprKind, StmtKind};
    match &f.stmt(s).kind {
        StmtKind::Return(None) => true,
        // (audit 20261212 #25, interval's `if (empty(x)) return 0;`) A
        // value already in a register or a literal: the return itself is
        // all the taken side does.
        StmtKind::Return(Some(e)) => match f.expr(f.strip_casts(*e)).kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => true,
            // (session 14; audit 20261219 #29, interval's `return x;` of a
            // `const interval_gpu<T> &x`) A reference to a value (not an
            // array or pointer) is a copy of what the caller holds, in
            // registers once the call is inlined.
            ExprKind::Var(v) => !f.var(v).by_ref || !f.var(v).ty.is_indexable(),
            _ => false,
        },
        StmtKind::Block(v) => v.len() == 1 && return_only(f, v[0]),
        _ => false,
    }
}

/// Whether condition `e` has a form that selects few lanes when its values
/// vary: an equality (`a == b`), or a flag read from memory (`mask[i]`,
/// `!visited[id]`), alone or joined with others by `&&`/`||`. Not a
/// relational bound (`nb >= 0`) or an inequality (`j != index`), which
/// most lanes pass.
fn sparse_test(f: &crate::ir::Function, e: crate::ir::ExprId, depth: u32) -> bool {
    use crate::ir::{BinOp, ExprKind, UnOp};
    if depth > 8 {
        return false;
    }
    match &f.expr(e).kind {
        ExprKind::Binary(BinOp::Eq, ..) => true,
        ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, a, b) => {
            sparse_test(f, *a, depth + 1) || sparse_test(f, *b, depth + 1)
        }
        ExprKind::Index { .. } | ExprKind::Member { .. } => true,
        ExprKind::Unary(UnOp::Not, a) | ExprKind::Cast(_, a) => {
            matches!(
                f.expr(*a).kind,
                ExprKind::Index { .. } | ExprKind::Member { .. }
            )
        }
        _ => false,
    }
}

/// The condition of the nearest `if` whose taken side holds statement
/// `stmt` (directly or nested) and which depends on values loaded from
/// memory, when it selects few lanes by its form ([`sparse_test`]).
fn data_guard(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    parents: &[Option<crate::ir::StmtId>],
    stmt: crate::ir::StmtId,
) -> Option<String> {
    use crate::ir::StmtKind;
    let mut child = stmt;
    let mut at = parents.get(stmt.0 as usize).copied().flatten();
    for _ in 0..256 {
        let p = at?;
        if let StmtKind::If { cond, then, .. } = &f.stmt(p).kind
            && *then == child
            && a.uniformity
                .expr_from_memory
                .get(cond.0 as usize)
                .copied()
                .unwrap_or(false)
        {
            // (audit 20261211 #43, particles `j != index`) Only a test
            // that selects few lanes by its form: an equality or a flag.
            return sparse_test(f, *cond, 0).then(|| f.expr_text(*cond));
        }
        child = p;
        at = parents.get(p.0 as usize).copied().flatten();
    }
    None
}

/// The condition of the nearest enclosing `if` whose then-branch holds
/// `stmt`, when it only tests for non-finite values (`isnan(x)`,
/// `isinf(x)`, `!isfinite(x)`, such tests compared with 1 or 0, joined by
/// `||`): the statement is a fix-up for exceptional values.
fn exceptional_value_guard(
    f: &crate::ir::Function,
    parents: &[Option<crate::ir::StmtId>],
    stmt: crate::ir::StmtId,
) -> Option<String> {
    use crate::ir::{BinOp, ExprId, ExprKind, StmtKind, UnOp};
    fn non_finite_test(f: &crate::ir::Function, e: ExprId, negated: bool) -> bool {
        match &f.expr(e).kind {
            ExprKind::Call { callee, args, .. } if args.len() == 1 => {
                let c = callee.trim_start_matches("::").trim_start_matches("std::");
                match c {
                    "isnan" | "isinf" | "__isnan" | "__isinf" | "isnanf" | "isinff" => !negated,
                    "isfinite" | "__finite" | "__finitef" => negated,
                    _ => false,
                }
            }
            ExprKind::Unary(UnOp::Not, x) => non_finite_test(f, *x, !negated),
            ExprKind::Binary(BinOp::LogOr, l, r) if !negated => {
                non_finite_test(f, *l, false) && non_finite_test(f, *r, false)
            }
            ExprKind::Binary(op @ (BinOp::Eq | BinOp::Ne), l, r) => {
                let is_int = |x: ExprId, v: i64| {
                    matches!(f.expr(x).kind, ExprKind::Int(n) if n == v)
                        || matches!(f.expr(x).kind, ExprKind::Bool(b) if i64::from(b) == v)
                };
                // `t == 1` and `t != 0` are `t`; `t != 1` and `t == 0` are `!t`.
                if is_int(*r, 1) {
                    non_finite_test(f, *l, negated ^ (*op == BinOp::Ne))
                } else if is_int(*r, 0) {
                    non_finite_test(f, *l, negated ^ (*op == BinOp::Eq))
                } else {
                    false
                }
            }
            _ => false,
        }
    }
    let mut child = stmt;
    let mut at = parents.get(stmt.0 as usize).copied().flatten();
    while let Some(p) = at {
        if let StmtKind::If { cond, then, .. } = &f.stmt(p).kind {
            if *then == child && non_finite_test(f, *cond, false) {
                return Some(f.expr_text(*cond));
            }
            // Only the nearest `if` counts.
            if *then == child {
                return None;
            }
        }
        child = p;
        at = parents.get(p.0 as usize).copied().flatten();
    }
    None
}

/// A reference to relative line `rel` inside a message, replaced by the
/// absolute line when the finding is placed ([`Finding::place`]).
fn line_ref(rel: u32) -> String {
    format!("\u{1}{rel}\u{1}")
}

impl Finding {
    /// Place a finding computed with lines relative to its function (see
    /// [`function_findings`]) in file `file`, for a function whose first
    /// line is the 0-based `start_line`: lines become absolute.
    pub fn place(&mut self, file: &str, function_key: &str, start_line: u32) {
        self.file = file.to_string();
        self.function_key = function_key.to_string();
        self.line += start_line;
        if self.message.contains('\u{1}') {
            let mut out = String::with_capacity(self.message.len());
            for (i, part) in self.message.split('\u{1}').enumerate() {
                if i % 2 == 1 {
                    let rel: u32 = part.parse().unwrap_or(0);
                    out.push_str(&(rel + start_line).to_string());
                } else {
                    out.push_str(part);
                }
            }
            self.message = out;
        }
        if let Some(v) = self.facts.get_mut("related_line")
            && let Some(rel) = v.as_u64()
        {
            *v = serde_json::Value::from(rel + u64::from(start_line));
        }
        for key in ["nested_lines", "exit_lines"] {
            if let Some(serde_json::Value::Array(v)) = self.facts.get_mut(key) {
                for l in v.iter_mut() {
                    if let Some(rel) = l.as_u64() {
                        *l = serde_json::Value::from(rel + u64::from(start_line));
                    }
                }
            }
        }
        if let Some(v) = self.facts.get_mut("condition_line")
            && let Some(rel) = v.as_u64()
        {
            *v = serde_json::Value::from(rel + u64::from(start_line));
        }
    }
}

/// "stride 2 elements × 4 B" from an affine form.
/// A share in per mille as a percentage ("1.5 %", "under 0.1 %").
fn permille_text(p: u32) -> String {
    if p == 0 {
        "under 0.1 %".into()
    } else if p.is_multiple_of(10) {
        format!("{} %", p / 10)
    } else {
        format!("{}.{} %", p / 10, p % 10)
    }
}

/// (issue 8 audit #14) For a gather: the condition under which it is
/// coalesced, naming the loaded values the index uses and how the lanes
/// read them.
/// (session 15) For an access through a local pointer set once from
/// thread indices (`const float *row = p + tid * V;`): its name and
/// definition.
fn per_thread_base(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    acc: &crate::ir::Access,
) -> Option<(String, String)> {
    let v = acc.var?;
    let var = f.var(v);
    if var.param_position.is_some() || !matches!(var.ty, crate::ir::Type::Pointer(_)) {
        return None;
    }
    let def = crate::facts::barriers::single_def(f, v.0)?;
    let dims = a
        .uniformity
        .expr_dims
        .get(def.0 as usize)
        .copied()
        .unwrap_or(0);
    (dims & 0b111 != 0).then(|| (var.name.clone(), f.expr_text(def)))
}

fn gather_condition(loaded: &[(String, Option<i64>)], index: &str, dims: usize) -> String {
    if loaded.is_empty() || dims != 1 {
        return String::new();
    }
    let norm = |s: &str| {
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != '(' && *c != ')')
            .collect::<String>()
    };
    let names: Vec<String> = loaded.iter().map(|(t, _)| format!("`{t}`")).collect();
    let how = match loaded {
        [(_, Some(1 | -1))] => {
            " (read by consecutive lanes at consecutive positions: coalesced when the table maps \
             neighbouring positions to neighbouring elements, as a neighbour or identity table does)"
        }
        [(_, Some(0))] => " (one position for every lane of a row)",
        _ => "",
    };
    if let [(t, _)] = loaded
        && norm(t) == norm(index)
    {
        return format!(
            "; it needs only the minimum when the values of `{t}` are consecutive across the \
             warp's lanes{how}"
        );
    }
    format!(
        "; it needs only the minimum when `{index}` takes consecutive values across the warp's \
         lanes, which depends on the values loaded for {}{how}",
        names.join(", ")
    )
}

/// (issue 8 audit #42) The clause for rows of a warp that are separate
/// runs under a symbolic row stride but fetch only the sectors of the whole
/// elements they read: the overfetch is the element layout, and whether
/// the rows stay sector-aligned depends on the stride.
fn row_runs_clause(
    r: &crate::facts::coalescing::RowRuns,
    aligned: u32,
    actual: u32,
    sb: u32,
) -> String {
    let whole = match r.lane_stride_bytes {
        // (session 7, audit #45) Records of several elements per lane.
        Some(b) => format!(
            "; the rows are not the cause: the warp's {} rows of {} lanes are separate runs, but \
             one run of {} lanes {b} B apart would touch as many sectors",
            r.rows,
            r.lanes_per_row,
            r.rows * r.lanes_per_row
        ),
        None => format!(
            "; the sectors fetched hold the whole elements the lanes read (the warp's {} rows of \
             {} lanes are separate runs, but elements laid end to end would take as many)",
            r.rows, r.lanes_per_row
        ),
    };
    if actual <= aligned {
        return whole;
    }
    if r.offset_aligned {
        format!(
            "{whole}; each row starts on a {sb}-B sector boundary when `{}` is a multiple of {} \
             (rows a multiple of {sb} B apart) and the array and row 0 are aligned; if `{}` is \
             not a multiple of {}, up to {actual} sectors",
            r.stride, r.multiple, r.stride, r.multiple
        )
    } else {
        format!(
            "{whole}; the index's constant offset moves the rows off sector boundaries, so up to \
             {actual} sectors"
        )
    }
}

fn describe_form(form: &crate::facts::affine::Affine, elem: u64) -> String {
    use crate::facts::affine::Coef;
    let names = ["threadIdx.x", "threadIdx.y", "threadIdx.z"];
    let parts: Vec<String> = form
        .coef
        .iter()
        .zip(names)
        .filter(|(c, _)| !c.is_zero())
        .map(|(c, n)| match c {
            Coef::Int(v) => format!("stride {v} element(s) of {elem} B per {n}"),
            Coef::Sym(s) => format!("stride `{s}` elements per {n}"),
            Coef::Unknown => format!("non-affine in {n}"),
        })
        .collect();
    if parts.is_empty() {
        "broadcast".into()
    } else {
        parts.join(", ")
    }
}

/// Where a caret should end: the span's end on its first line, else one column.
/// Where a finding is: its file and function.
struct FindingSite<'a> {
    path: &'a str,
    function: &'a str,
    function_key: &'a str,
}

/// A `barrier-divergence` finding at a call of a device function that
/// contains a block-wide barrier.
fn call_barrier_finding(
    f: &crate::ir::Function,
    a: &crate::facts::Analysis,
    v: &crate::facts::BarrierVerdict,
    call: &crate::ir::Call,
    lines: &[&str],
    abs: &dyn Fn(&Span) -> (u32, u32),
    site: FindingSite<'_>,
) -> Finding {
    let (line, col) = abs(&call.span);
    let (cline, _) = abs(&f.expr(v.cond).span);
    let cline_ref = line_ref(cline);
    let cond_text = f.expr_text(v.cond);
    let dims = dim_names(a.uniformity.expr_dims[v.cond.0 as usize]);
    let callee = &call.callee;
    // (session 16; audits 20261233 #23, 20261235 #23: nbody's `if (index
    // >= deviceNumBodies) return;` before `computeBodyAccel`) Threads that
    // left by `return` have exited: since sm_70 the callee's barrier waits
    // only for the others, as for a barrier in the kernel itself (a
    // warning there too).
    let exited = v.via_exit && sync::exit_is_return(f, v.cond);
    let message = if v.via_exit {
        // (issue 8, races helper) say when no thread can take the exit.
        let bound = sync::exit_bound_clause(f, &a.uniformity, v.cond).unwrap_or_default();
        format!(
            "the call to `{callee}`, which contains a block-wide barrier, is skipped by threads \
             that leave early: the exit at line {cline_ref} is taken when `{cond_text}`, which \
             depends on {dims}; {}the callee's code after the barrier must not read what the \
             exited threads would have written{bound}",
            if exited {
                "since sm_70 a barrier waits only for threads that have not exited, so the \
                 barrier itself is defined there (before sm_70 it can hang), but "
            } else {
                ""
            }
        )
    } else {
        format!(
            "the call to `{callee}`, which contains a block-wide barrier, is made only by \
             threads for which `{cond_text}` (line {cline_ref}) holds, and that differs between \
             threads of a block: it depends on {dims}"
        )
    };
    Finding {
        rule: "barrier-divergence".into(),
        severity: if exited {
            Severity::Warning
        } else {
            Severity::Error
        },
        suppressed: suppressed(lines, line + 1, "barrier-divergence"),
        file: site.path.to_string(),
        line,
        col,
        end_col: end_col_on_line(&call.span, col),
        function: site.function.to_string(),
        function_key: site.function_key.to_string(),
        message,
        facts: serde_json::json!({
            "barrier_kind": "call",
            "callee": callee,
            "condition": cond_text,
            "condition_line": cline,
            "condition_depends_on": dims,
            "via_exit": v.via_exit,
            "block_dims": a.launch.block,
        }),
    }
}

fn end_col_on_line(span: &Span, col: u32) -> u32 {
    if span.end_line == span.line && span.end_col > col {
        span.end_col
    } else {
        col + 1
    }
}

fn dim_names(mask: u8) -> String {
    let mut v = Vec::new();
    for (bit, name) in [
        (0, "threadIdx.x"),
        (1, "threadIdx.y"),
        (2, "threadIdx.z"),
        (3, "per-thread data"),
    ] {
        if mask & (1 << bit) != 0 {
            v.push(name);
        }
    }
    if v.is_empty() {
        "nothing".into()
    } else {
        v.join(", ")
    }
}

/// `// cudalog-ignore: rule[, rule…]` (or `all`) at the end of the
/// finding's line, or on a comment line just above it.
pub fn suppressed(lines: &[&str], line: u32, rule: &str) -> bool {
    let check = |l: &str| {
        l.find("cudalog-ignore:").is_some_and(|i| {
            l[i + "cudalog-ignore:".len()..]
                .split(|c: char| c == ',' || c.is_whitespace())
                .any(|r| r == rule || r == "all")
        })
    };
    let idx = line as usize;
    let same = idx
        .checked_sub(1)
        .and_then(|i| lines.get(i))
        .is_some_and(|l| check(l));
    let above = idx
        .checked_sub(2)
        .and_then(|i| lines.get(i))
        .is_some_and(|l| l.trim_start().starts_with("//") && check(l));
    same || above
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suppression_comments_on_the_line_or_above() {
        let lines = vec![
            "// cudalog-ignore: barrier-divergence",
            "__syncthreads();",
            "__syncthreads(); // cudalog-ignore: other-rule, barrier-divergence",
            "__syncthreads();",
            "x; // cudalog-ignore: all",
        ];
        assert!(suppressed(&lines, 2, "barrier-divergence"));
        assert!(suppressed(&lines, 3, "barrier-divergence"));
        assert!(
            !suppressed(&lines, 4, "barrier-divergence"),
            "a trailing comment covers its own line only"
        );
        assert!(!suppressed(&lines, 1, "uncoalesced-global"));
        assert!(suppressed(&lines, 5, "anything"));
        assert!(!suppressed(&lines, 99, "barrier-divergence"));
    }

    #[test]
    fn severities_order_and_parse() {
        assert!(Severity::Error > Severity::Warning && Severity::Warning > Severity::Note);
        assert_eq!("warning".parse::<Severity>(), Ok(Severity::Warning));
        assert!("fatal".parse::<Severity>().is_err());
    }
}
