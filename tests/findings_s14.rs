//! issue 8, session 14: compare-and-swap retry loops, range checks of
//! loaded indices, if/else branches with one short side, a once-per-thread
//! store next to a loop of unknown count, and comments between `else` and
//! its statement. Fixture: tests/fixtures/findings/s14/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/s14/kernels.cu"]))
}

fn of(function: &str, rule: &str) -> Vec<&'static serde_json::Value> {
    common::rule_in(findings(), function, rule)
}

use common::message;

/// (audit 20261215 #55, llm.c's bf16x2 atomicCAS loops; jacobi's double
/// atomicAdd) A loop that repeats while its `atomicCAS` saw another value
/// splits a warp only under contention: a note naming the CAS. A loop of
/// the same shape on loaded data stays a warning.
#[test]
fn a_cas_retry_loop_is_a_note_about_contention() {
    let d = of("add_double", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(
        m.contains("compare-and-swap retry loop") && m.contains("`atomicCAS` at line 12"),
        "{m}"
    );
    let w = of("chase", "divergent-branch");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (audit 20261214 #31, warpAggregatedAtomicsCG's `if (bucket <
/// numOfBuckets)`) A range check of a loaded value that the taken side
/// passes on as an index: a note. A loaded value tested against a cut and
/// then only stored is a filter: still a warning.
#[test]
fn a_range_check_of_a_loaded_index_is_a_note() {
    let d = of("to_buckets", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("range check of the loaded value `bucket`"),
        "{}",
        message(d[0])
    );
    let w = of("filter", "divergent-branch");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (audit 20261217 #5, cfd's `nb >= 0`) An if/else on loaded data whose
/// short side is at most a quarter of the long one: the warp runs the long
/// side anyway, the split adds the short one, a note with both sizes. Two
/// long sides (loops) stay a warning.
#[test]
fn a_short_other_side_is_what_the_split_adds() {
    let d = of("flux", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("a split adds only the shorter side"),
        "{}",
        message(d[0])
    );
    let w = of("two_long", "divergent-branch");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (audit 20261217 #64, llm.c's matmul_forward) A strided store once per
/// thread after a loop of unknown count that reads global memory on every
/// iteration: a note that says after how many iterations the loop moves
/// more. Without the loop the same store is a warning.
#[test]
fn a_once_per_thread_store_after_a_loop_is_a_note() {
    let d = of("dot_rows", "uncoalesced-global");
    let store: Vec<_> = d.iter().filter(|x| x["line"] == 112).collect();
    assert_eq!(store.len(), 1, "{:#?}", d);
    assert_eq!(store[0]["severity"], "note", "{:#?}", store[0]);
    let m = message(store[0]);
    assert!(
        m.contains("once per thread, outside every loop") && m.contains("after 7 iteration(s)"),
        "{m}"
    );
    let w = of("copy_rows", "uncoalesced-global");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (binaryPartitionCG's `else // Even numbers group`) A comment between
/// `else` and its block: the block is the else side, so its loop's strided
/// store is reported and the branch's divergent part loops.
#[test]
fn a_comment_after_else_does_not_hide_the_else_side() {
    let s = of("commented_else", "uncoalesced-global");
    assert!(s.iter().any(|x| x["line"] == 134), "{:#?}", findings());
    let d = of("commented_else", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["facts"]["loop"], true, "{:#?}", d[0]);
}
