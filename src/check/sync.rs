//! Synchronisation rules: `shared-race`, `global-race`, the named-barrier
//! rules (WEFT's properties) and `analysis-incomplete`, from
//! [`crate::facts::races`] and [`crate::facts::named_barriers`].

use super::{Finding, Severity, line_ref, suppressed};
use crate::facts::named_barriers::NamedBarrierIssue;
use crate::facts::races::{Race, Witness};
use crate::ir::{Function, MemSpace, Span};

/// Whether the exit guarded by `cond` is a `return` (the threads leave the
/// kernel) rather than a `break`/`continue`.
pub fn exit_is_return(f: &Function, cond: crate::ir::ExprId) -> bool {
    use crate::ir::StmtKind;
    fn returns(f: &Function, s: crate::ir::StmtId) -> bool {
        match &f.stmt(s).kind {
            StmtKind::Return(_) => true,
            StmtKind::Block(v) => v.last().is_some_and(|l| returns(f, *l)),
            _ => false,
        }
    }
    f.stmts.iter().any(|s| match &s.kind {
        StmtKind::If { cond: c, then, .. } => *c == cond && returns(f, *then),
        _ => false,
    })
}

/// For an early `return` taken when a thread-dependent index reaches a
/// uniform bound (`if (index >= n) return;`): the clause saying when no
/// thread takes it, so that skipping a barrier after it cannot happen.
pub fn exit_bound_clause(
    f: &Function,
    u: &crate::facts::uniformity::Uniformity,
    cond: crate::ir::ExprId,
) -> Option<String> {
    use crate::ir::{BinOp, ExprKind};
    if !exit_is_return(f, cond) {
        return None;
    }
    let (x, n, below) = match &f.expr(cond).kind {
        ExprKind::Binary(BinOp::Ge, x, n) | ExprKind::Binary(BinOp::Le, n, x) => (*x, *n, true),
        ExprKind::Binary(BinOp::Gt, x, n) | ExprKind::Binary(BinOp::Lt, n, x) => (*x, *n, false),
        _ => return None,
    };
    if u.is_uniform(x.0) || !u.is_uniform(n.0) {
        return None;
    }
    let (xt, nt) = (f.expr_text(x), f.expr_text(n));
    let stays = if below { "below" } else { "at most" };
    Some(format!(
        "; no thread takes this exit if `{xt}` stays {stays} `{nt}` in every launch (for a \
         global index: grid × block ≤ `{nt}`, e.g. `{nt}` a multiple of the block size), \
         which cudalog cannot prove from the launch sites"
    ))
}

fn thread_text(t: [i64; 3]) -> String {
    if t[1] == 0 && t[2] == 0 {
        format!("{}", t[0])
    } else {
        format!("({}, {}, {})", t[0], t[1], t[2])
    }
}

/// The witness in words; `roles` names what each thread runs (`("the
/// write", "the read")`) when the two accesses differ. An unchecked witness
/// (see [`Witness::checked`]) is not shown: "two threads".
fn witness_text(w: &Witness, roles: Option<(&str, &str)>) -> String {
    if !w.checked {
        return "two threads".to_string();
    }
    let role = |i: usize| match roles {
        Some(r) => format!(" ({})", if i == 0 { r.0 } else { r.1 }),
        None => String::new(),
    };
    let mut s = match (w.blocks, roles) {
        (Some(b), _) => format!(
            "thread {} of block {}{} and thread {} of block {}{}",
            thread_text(w.threads[0]),
            thread_text(b[0]),
            role(0),
            thread_text(w.threads[1]),
            thread_text(b[1]),
            role(1)
        ),
        (None, Some(_)) => format!(
            "thread {}{} and thread {}{}",
            thread_text(w.threads[0]),
            role(0),
            thread_text(w.threads[1]),
            role(1)
        ),
        (None, None) => format!(
            "threads {} and {}",
            thread_text(w.threads[0]),
            thread_text(w.threads[1])
        ),
    };
    if !w.values.is_empty() {
        // A value each thread has its own copy of (an iteration of the loop
        // whose back edge separates the accesses) is named by its access.
        let own = |n: &str| {
            w.values
                .iter()
                .any(|(m, _)| m.strip_suffix(" (second thread)") == Some(n))
        };
        let v: Vec<String> = w
            .values
            .iter()
            .map(|(n, x)| match (roles, n.strip_suffix(" (second thread)")) {
                (Some((_, r1)), Some(base)) => format!("{base} for {r1} = {x}"),
                (Some((r0, _)), None) if own(n) => format!("{n} for {r0} = {x}"),
                _ => format!("{n} = {x}"),
            })
            .collect();
        s.push_str(&format!(" (with {})", v.join(", ")));
    }
    s
}

/// The findings of the synchronisation rules for `f`.
pub fn sync_findings(
    f: &Function,
    a: &crate::facts::Analysis,
    lines: &[&str],
    name: &str,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let abs = |s: &Span| (s.line + 1, s.col);
    let mut push_as = |rule: &str,
                       span: &Span,
                       message: String,
                       facts: serde_json::Value,
                       severity: Option<Severity>| {
        let (line, col) = abs(span);
        let severity = severity.unwrap_or_else(|| {
            super::RULES
                .iter()
                .find(|r| r.id == rule)
                .map(|r| r.severity)
                .unwrap_or(Severity::Error)
        });
        out.push(Finding {
            rule: rule.to_string(),
            severity,
            suppressed: suppressed(lines, line + 1, rule),
            file: String::new(),
            line,
            col,
            end_col: if span.end_line == span.line && span.end_col > col {
                span.end_col
            } else {
                col + 1
            },
            function: name.to_string(),
            function_key: String::new(),
            message,
            facts,
        });
    };
    for r in &a.races.races {
        race_finding(r, a.launch.warp_lockstep, &a.launch.block, &mut push_as);
    }
    let mut push = |rule: &str, span: &Span, message: String, facts: serde_json::Value| {
        push_as(rule, span, message, facts, None)
    };
    if let Some(why) = &a.races.incomplete {
        let span = f.body.map(|b| f.stmt(b).span).unwrap_or_default();
        push(
            "analysis-incomplete",
            &span,
            format!("race analysis incomplete: {why}"),
            serde_json::json!({"analysis": "races", "reason": why}),
        );
    }
    let nb = &a.named_barriers;
    let bspan = |i: usize| f.barriers.get(i).map(|b| b.span).unwrap_or_default();
    let bline = |i: usize| line_ref(bspan(i).line + 1);
    for issue in &nb.issues {
        match issue {
            NamedBarrierIssue::Deadlock { waits, cyclic } => {
                let Some((w, b)) = waits.first() else {
                    continue;
                };
                let others: Vec<String> = waits
                    .iter()
                    .map(|(w, b)| format!("warp {w} at line {}", bline(*b)))
                    .collect();
                let kind = if *cyclic {
                    "cyclic wait between named barriers"
                } else {
                    "a named barrier that never gets its thread count"
                };
                push(
                    "named-barrier-deadlock",
                    &bspan(*b),
                    format!(
                        "deadlock under a block of {} threads: {kind}; blocked forever: {} (warp {w} first)",
                        nb.threads,
                        others.join(", ")
                    ),
                    serde_json::json!({"waits": waits, "cyclic": cyclic, "threads": nb.threads}),
                );
            }
            NamedBarrierIssue::CountMismatch { id, first, second } => push(
                "named-barrier-count-mismatch",
                &bspan(second.1),
                format!(
                    "named barrier {id} is used with {} threads by warp {} here, but warp {} registered \
                     the same generation with {} threads at line {}",
                    second.2,
                    second.0,
                    first.0,
                    first.2,
                    bline(first.1)
                ),
                serde_json::json!({"id": id, "counts": [first.2, second.2], "threads": nb.threads}),
            ),
            NamedBarrierIssue::OverArrival {
                id,
                count,
                at,
                total,
            } => push(
                "named-barrier-over-arrival",
                &bspan(at.1),
                format!(
                    "over-arrival at named barrier {id}: {total} threads register at it in all, with a \
                     count of {count}; warp {} registers past the count, so its generation never completes \
                     as intended",
                    at.0
                ),
                serde_json::json!({"id": id, "count": count, "total": total, "warp": at.0}),
            ),
            NamedBarrierIssue::Recycling { id, at } => push(
                "named-barrier-recycling",
                &bspan(at.1),
                format!(
                    "warp {} registers at named barrier {id} again before its previous generation \
                     completed (the id is recycled too early)",
                    at.0
                ),
                serde_json::json!({"id": id, "warp": at.0}),
            ),
            NamedBarrierIssue::ArriveOnly { id, at } => push(
                "named-barrier-arrive-only",
                &bspan(at.1),
                format!(
                    "named barrier {id} completes with arrivals only (last by warp {}): no warp waits \
                     at it, so it orders nothing",
                    at.0
                ),
                serde_json::json!({"id": id, "warp": at.0}),
            ),
        }
    }
    out
}

/// A race's finding. Only a race whose collision holds whatever the
/// thread-invariant values is an error; one that needs particular values of
/// symbols the program constrains is a warning naming them; a possible race
/// (an index or a guard on data loaded from memory) is a note that states
/// what must hold for the code to be race-free.
/// Adds a finding: rule, location, message, facts, severity (`None`: the
/// rule's own).
type PushAs<'a> = dyn FnMut(&str, &Span, String, serde_json::Value, Option<Severity>) + 'a;

fn race_finding(r: &Race, lockstep: bool, block: &[Option<u32>; 3], push: &mut PushAs<'_>) {
    let rule = if r.space == MemSpace::Shared {
        "shared-race"
    } else {
        "global-race"
    };
    let kind = match (r.first.is_write, r.second.is_write) {
        (true, true) => "write-write",
        _ => "read-write",
    };
    let rw = |w: bool| if w { "write" } else { "read" };
    let second = if r.first.access == r.second.access && r.first.stmt == r.second.stmt {
        format!("the same {} by another thread", rw(r.second.is_write))
    } else {
        format!(
            "the {} of `{}` at line {}",
            rw(r.second.is_write),
            r.second.text,
            line_ref(r.second.span.line + 1)
        )
    };
    let same_access = r.first.access == r.second.access && r.first.stmt == r.second.stmt;
    let roles = (!same_access).then_some(if r.first.is_write == r.second.is_write {
        ("the first", "the second")
    } else if r.first.is_write {
        ("the write", "the read")
    } else {
        ("the read", "the write")
    });
    let witness = r
        .witness
        .as_ref()
        .map(|w| witness_text(w, roles))
        .unwrap_or_else(|| "two threads".to_string());
    // With the block size unknown (no launch site gives it), a witness
    // thread far into the block may not exist in the real launch: say how
    // large a block this witness needs.
    let needs_block = r
        .witness
        .as_ref()
        .filter(|w| w.checked && w.blocks.is_none())
        .and_then(|w| {
            let dims: Vec<String> = (0..3)
                .filter(|&d| block[d].is_none())
                .filter_map(|d| {
                    let hi = w.threads[0][d].max(w.threads[1][d]);
                    // Beyond one warp: a block of a warp is taken for granted.
                    (hi >= 32).then(|| format!("blockDim.{} ≥ {}", ["x", "y", "z"][d], hi + 1))
                })
                .collect();
            (!dims.is_empty()).then(|| {
                format!(
                    " (this witness needs {}; the block size of its launches is not known to cudalog)",
                    dims.join(" and ")
                )
            })
        })
        .unwrap_or_default();
    let launch_dependent = !needs_block.is_empty();
    let witness = format!("{witness}{needs_block}");
    let deps: Vec<String> = r.depends_on.iter().map(|s| format!("`{s}`")).collect();
    let (message, severity) = if r.proven && deps.is_empty() && launch_dependent {
        // The race needs a block larger than a warp and no launch says the
        // kernel gets one: conditional on the launch, so a warning that
        // says so, not an error (a kernel written for blocks of at most
        // that size is race-free as launched).
        (
            format!(
                "{kind} race on `{}` if the kernel is launched with a block that large: the {} \
                 of `{}` and {second}, not ordered by a barrier; {witness} touch the same \
                 location; race-free for smaller blocks",
                r.array,
                rw(r.first.is_write),
                r.first.text
            ),
            Some(Severity::Warning),
        )
    } else if r.proven && deps.is_empty() {
        (
            format!(
                "{kind} race on `{}`: the {} of `{}` and {second}, not ordered by a barrier; \
                 {witness} touch the same location",
                r.array,
                rw(r.first.is_write),
                r.first.text
            ),
            None,
        )
    } else if r.proven {
        (
            format!(
                "{kind} race on `{}` if {} can take the witness's values: the {} of `{}` and \
                 {second}, not ordered by a barrier; {witness} touch the same location; whether they \
                 collide depends on {}, whose values the program sets in ways cudalog does not follow",
                r.array,
                deps.join(", "),
                rw(r.first.is_write),
                r.first.text,
                deps.join(", ")
            ),
            Some(Severity::Warning),
        )
    } else {
        // A possible race: the values of symbols in the witness are the
        // solver's arbitrary picks, so only the threads are named.
        let threads = r
            .witness
            .as_ref()
            .map(|w| {
                witness_text(
                    &Witness {
                        values: Vec::new(),
                        ..w.clone()
                    },
                    None,
                )
            })
            .unwrap_or_default();
        let assumed = match &r.assumption {
            Some(a) => a.clone(),
            None => {
                let unknown = r.unknown.clone().unwrap_or_default();
                let generic = if unknown.contains("not affine") {
                    "the code is race-free only if the indices loaded from memory differ between \
                     threads (a permutation, prefix-sum offsets), which cudalog does not check"
                } else {
                    "the code is race-free only if the data condition holds for at most one of the \
                     threads that can reach the same location, which cudalog does not check"
                };
                format!("{unknown}; {generic}")
            }
        };
        (
            format!(
                "possible {kind} race on `{}`: the {} of `{}` and {second} can run in the same \
                 barrier interval ({threads}); {assumed}",
                r.array,
                rw(r.first.is_write),
                r.first.text,
            ),
            Some(Severity::Note),
        )
    };
    let message = if lockstep {
        format!("{message} (assuming warp lock-step, `[launch] warp_lockstep`)")
    } else {
        message
    };
    let facts = serde_json::json!({
        "warp_lockstep": lockstep,
        "array": r.array,
        "kind": kind,
        "proven": r.proven,
        "depends_on": r.depends_on,
        "related_line": r.second.span.line + 1,
        "related_col": r.second.span.col,
        "witness": r.witness.as_ref().map(|w| serde_json::json!({
            "threads": w.threads,
            "blocks": w.blocks,
            "values": w.values,
            "checked": w.checked,
        })),
    });
    push(rule, &r.first.span, message, facts, severity);
}
