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
    assert!(m.contains("a retry loop (`atomicCAS` at line 12)"), "{m}");
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

/// (audits 20261213 #23, 20261218 #23, 20261220 #23, binaryPartitionCG) A
/// warp sync in a grid-stride loop whose bound every launch passes as
/// 102400: with 256-thread blocks no warp straddles it (nothing reported);
/// with the block from the occupancy API, a note naming the condition (a
/// block that is not whole warps); with a bound of 1000, still a warning.
#[test]
fn a_warp_sync_under_a_whole_warps_bound_is_decided_or_a_note() {
    assert!(
        of("count_odd", "barrier-divergence").is_empty(),
        "{:#?}",
        findings()
    );
    let n = of("count_odd_occ", "barrier-divergence");
    assert_eq!(n.len(), 1, "{:#?}", findings());
    assert_eq!(n[0]["severity"], "note", "{:#?}", n[0]);
    let m = message(n[0]);
    assert!(
        m.contains("grid-stride loop") && m.contains("`size` is 102400 at every launch"),
        "{m}"
    );
    let w = of("count_odd_ragged", "barrier-divergence");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (audit 20261220 #31, threadFenceReduction's in-warp tree reduction) A
/// short part with two memory accesses in a loop of 5 known iterations: a
/// note with the issue slots in all.
#[test]
fn a_short_part_in_a_loop_of_known_count_is_a_note() {
    let d = of("warp_tree", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("runs 5 times") && message(d[0]).contains("20 issue slots"),
        "{}",
        message(d[0])
    );
}

/// (audit 20261219 #4, lavaMD's `wtx = wtx + NUMBER_THREADS`, reset to
/// `tx` after each copy) A block-stride loop written out in an outer loop:
/// the stride-tail note.
#[test]
fn a_written_out_stride_step_is_a_stride_loop() {
    let d = of("boxes", "divergent-branch");
    let copy: Vec<_> = d
        .iter()
        .filter(|x| message(x).starts_with("`w < 100`"))
        .collect();
    assert_eq!(copy.len(), 1, "{:#?}", d);
    assert_eq!(copy[0]["severity"], "note", "{:#?}", copy[0]);
    assert!(
        message(copy[0]).contains("at most one partial iteration"),
        "{}",
        message(copy[0])
    );
}

/// (audit 20261219 #29, interval's `return x;` of a `const interval_gpu<T>
/// &x`) An early return of a by-reference value outside every loop: the
/// lanes that take it leave, nothing runs twice, nothing reported.
#[test]
fn an_early_return_of_a_reference_is_not_divergence() {
    assert!(
        of("widen", "divergent-branch").is_empty(),
        "{:#?}",
        findings()
    );
}

/// (audit 20261220 #38/#42, convolutionSeparable's halo fill) A 2-way
/// conflict in a loop of one known iteration, in no other loop: a note
/// that counts the extra wavefronts.
#[test]
fn a_conflict_in_a_loop_of_few_known_iterations_is_a_note() {
    let b = of("column_halo", "shared-bank-conflict");
    let fill: Vec<_> = b
        .iter()
        .filter(|x| message(x).starts_with("write"))
        .collect();
    assert_eq!(fill.len(), 1, "{:#?}", b);
    assert_eq!(fill[0]["severity"], "note", "{:#?}", fill[0]);
    assert!(
        message(fill[0]).contains("1 extra wavefront(s) per warp in all"),
        "{}",
        message(fill[0])
    );
}

/// (audit 20261220 #63, attention_backward's store once per `t`) A strided
/// store once per outer iteration next to an inner loop of unknown count
/// reading global memory: a note; the inner loop's strided read stays a
/// warning.
#[test]
fn a_store_once_per_outer_iteration_next_to_an_inner_loop_is_a_note() {
    let u = of("rows_then_store", "uncoalesced-global");
    let store: Vec<_> = u
        .iter()
        .filter(|x| message(x).starts_with("write"))
        .collect();
    assert_eq!(store.len(), 1, "{:#?}", u);
    assert_eq!(store[0]["severity"], "note", "{:#?}", store[0]);
    assert!(
        message(store[0]).contains("once per iteration of the loop at line"),
        "{}",
        message(store[0])
    );
    let read: Vec<_> = u
        .iter()
        .filter(|x| message(x).starts_with("read"))
        .collect();
    assert_eq!(read.len(), 1, "{:#?}", u);
    assert_eq!(read[0]["severity"], "warning", "{:#?}", read[0]);
}

/// (audit 20261221 #6, hybridsort's tagged shared-memory histogram) A loop
/// that writes a word and repeats while reading it back gives another
/// value is a retry loop: a note about contention.
#[test]
fn a_write_read_back_loop_is_a_retry_loop() {
    let d = of("add_tagged", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("a retry loop (a write of `s_hist[data]` read back at line 292)"),
        "{}",
        message(d[0])
    );
}

/// (audits 20261220 #27, 20261221 #34, mergeSort's binary search) A loop
/// that halves its counter to zero: a lane's trip count is the bit length
/// of its start, a note that says lanes split only by that difference.
#[test]
fn a_halving_loop_splits_only_by_bit_length() {
    let d = of("search", "divergent-branch");
    let l: Vec<_> = d
        .iter()
        .filter(|x| message(x).starts_with("`stride > 0`"))
        .collect();
    assert_eq!(l.len(), 1, "{:#?}", d);
    assert_eq!(l[0]["severity"], "note", "{:#?}", l[0]);
    assert!(
        message(l[0]).contains("differ in bit length"),
        "{}",
        message(l[0])
    );
}

/// (audits 20261217 #45, 20261223 #44/#47, boxFilter's unlaunched
/// `d_boxfilter_x`) A cost in a kernel that nothing in the workspace
/// launches is a note that says so.
#[test]
fn a_cost_in_an_unlaunched_kernel_is_a_note() {
    let u = of("never_launched", "uncoalesced-global");
    assert_eq!(u.len(), 1, "{:#?}", findings());
    assert_eq!(u[0]["severity"], "note", "{:#?}", u[0]);
    assert!(
        message(u[0]).contains("no launch of this kernel"),
        "{}",
        message(u[0])
    );
}

/// (audits 20261216 #11, 20261223 #13, 20261224 #12, huffman's tree scan)
/// A stride that doubles as the guard's active lanes halve: the conflict
/// is enumerated over the loop's iterations, 8 ways at most for 256
/// threads (a note), not "up to 32".
#[test]
fn a_tree_scan_conflict_is_bounded_by_its_active_lanes() {
    let b = of("up_sweep", "shared-bank-conflict");
    assert!(!b.is_empty(), "{:#?}", findings());
    for x in &b {
        assert_eq!(x["severity"], "note", "{:#?}", x);
        assert!(
            message(x).contains("a bank conflict of at most 8 ways"),
            "{}",
            message(x)
        );
    }
}
