//! issue 8, session 15: tail guards of loops that advance a window by the
//! lanes' spread, and work counted in stores through members of `this` and
//! in atomics. Fixture: tests/fixtures/findings/s15/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| {
        common::check_fixtures(&["findings/s15/kernels.cu", "findings/s15/masks.cu"])
    })
}

fn of(function: &str, rule: &str) -> Vec<&'static serde_json::Value> {
    common::rule_in(findings(), function, rule)
}

use common::message;

/// (audits 20261222 #56, 20261223 #56, 20261224 #54, 20261225 #57: llm.c's
/// `global_index = lane * x128::size + c * C_per_iteration < C`) A guard on
/// a window that the loop advances by the lanes' whole spread splits a warp
/// in one iteration only. A window step smaller than the spread can split
/// every iteration: that stays "every warp".
#[test]
fn a_window_guard_splits_only_the_straddling_iteration() {
    let d = of("row_chunks", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    let m = message(d[0]);
    assert!(
        m.contains("only the iteration whose window straddles the bound"),
        "{m}"
    );
    assert!(m.contains("at most one partial iteration"), "{m}");
    let o = of("row_overlap", "divergent-branch");
    assert_eq!(o.len(), 1, "{:#?}", findings());
    assert!(message(o[0]).contains("every warp"), "{}", message(o[0]));
}

/// (audits 20261222 #30, 20261225 #25: cdpQuadtree's `set_point`) A method
/// that stores through members of `this` does memory accesses, not
/// register arithmetic.
#[test]
fn stores_through_members_are_memory_work() {
    let d = of("compact", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    let m = message(d[0]);
    assert!(!m.contains("register arithmetic"), "{m}");
    assert!(m.contains("2 memory accesses"), "{m}");
}

/// (audit 20261225 #28: bisect's `atomicExch` on a shared flag) An atomic
/// is a memory access in the divergent part's work.
#[test]
fn an_atomic_is_memory_work() {
    let d = of("converge", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    let m = message(d[0]);
    assert!(!m.contains("register arithmetic"), "{m}");
    assert!(m.contains("2 memory accesses"), "{m}");
}

/// (audit 20261226 #33: cdpAdvancedQuicksort's branch inside `if (lane_id
/// == 0)` with `lane_id = threadIdx.x & (warpSize - 1)`) A branch that one
/// lane per warp reaches has nothing to split: not reported.
#[test]
fn a_branch_inside_a_one_lane_region_is_not_divergence() {
    let d = of("last_warp", "divergent-branch");
    assert!(d.is_empty(), "{d:#?}");
}

/// (audit 20261224 #30: HSOpticalFlow's `threadIdx.x < by` inside `else if
/// (threadIdx.y == 1)` with 32 x 6 blocks) "Every warp" is every warp the
/// enclosing conditions let reach the branch: one of six here.
#[test]
fn every_warp_counts_only_the_warps_that_reach_the_branch() {
    let d = of("halo_cols", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    let m = message(d[0]);
    assert!(m.contains("(1 of the block's 6"), "{m}");
}

/// (session 15) Two reads of one array 33 elements apart per lane, with
/// the lanes' stride unknown (`src[tx * w]`, `src[tx * w + 33]`), are two
/// accesses of one element per lane each, not one 136-byte record: six
/// lanes touch up to 6 sectors where 1 would do.
#[test]
fn far_apart_reads_of_one_array_are_not_one_record() {
    let u = of("halo_cols", "uncoalesced-global");
    assert_eq!(u.len(), 2, "{u:#?}");
    for x in u {
        let m = message(x);
        assert!(m.contains("up to 6 sectors of 32 B where 1 would"), "{m}");
    }
}

/// (audits 20261221 #2, 20261223 #1, 20261224 #4: lud's `threadIdx.x >
/// i`, nw's `tx <= m`) A one-sided test of the thread index against the
/// counter of an enclosing loop that moves by one is a triangular
/// (wavefront) sweep: a note that says the idle lanes are the order of the
/// work, not a serialised path. A test against a loaded bound is not.
#[test]
fn a_wavefront_guard_is_a_sweep() {
    let d = of("wavefront", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(m.contains("triangular (wavefront) sweep"), "{m}");
    assert!(
        m.contains("`m`, the counter of the enclosing loop at line 124"),
        "{m}"
    );
    let n = of("not_a_sweep", "divergent-branch");
    assert_eq!(n.len(), 1, "{:#?}", findings());
    assert!(!message(n[0]).contains("sweep"), "{}", message(n[0]));
}

/// (audit 20261228 #28: threadFenceReduction's `while (i < gridDim.x) { …;
/// i += blockSize; }` with `case 512: k<512><<<g, dimBlock>>>` under
/// `switch (threads)` and `dim3 dimBlock(threads, 1, 1)`) A template
/// argument that is the block size under each case makes the step a block
/// stride: one partial iteration at most. A case that another falls into
/// (`case 128: case 256:`) does not.
#[test]
fn a_template_block_size_under_a_switch_case_is_block_dim() {
    let d = of("last_block_sum", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("block-stride loop"),
        "{}",
        message(d[0])
    );
    let f = of("last_block_sum_ft", "divergent-branch");
    assert_eq!(f.len(), 1, "{:#?}", findings());
    assert!(
        !message(f[0]).contains("block-stride loop"),
        "{}",
        message(f[0])
    );
}

/// (audits 20261222 #39, 20261225 #40, 20261227 #41: bisect's up-sweep
/// over `num_threads_compaction >> 1`, a value the kernel computes) With
/// the guard's start unknown, the tree scan's worst iteration is the one
/// with a warp of active lanes: the degree grows with the start (8-way at
/// 256 two-byte elements, 32-way only from 1024), a note that says so.
#[test]
fn a_tree_scan_of_unknown_length_states_its_degree_by_length() {
    let b = of("up_sweep", "shared-bank-conflict");
    assert_eq!(b.len(), 3, "{:#?}", findings());
    for x in b {
        assert_eq!(x["severity"], "note", "{x:#?}");
        let m = message(x);
        assert!(
            m.contains("8-way for a start of 256, up to 32-way only from a start of 1024"),
            "{m}"
        );
    }
}

/// (audit 20261228 #25: Mandelbrot's unrolled escape tests `if (xx + yy >
/// 4) return i - k;`) Several early exits that only leave the loop are a
/// note, as one is: a warp runs as long as its last lane. Exits that store
/// first stay a warning (`escape_steps`, tests/findings_divergence_cost.rs).
#[test]
fn early_exits_that_only_leave_are_a_note() {
    let d = of("escape_count", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(
        m.contains("2 early exits") && m.contains("each of which only leaves the loop"),
        "{m}"
    );
}

/// (audits 20261224 #55, 20261226 #55, 20261227 #56: llm.c's `for (; t2
/// <= t; t2 += warp.size())` after earlier loops over `t2`, and
/// fused_residual's count-down `for (; c >= 0; c -= WarpSize *
/// x128::size)`) A loop without an initialiser whose counter is carried
/// from loops over it by the same step is a stride loop: one partial
/// iteration at most. An update under a test of the lane breaks that.
#[test]
fn a_counter_carried_across_stride_loops_is_a_stride_tail() {
    for k in ["carried", "zigzag"] {
        for d in of(k, "divergent-branch") {
            if d["facts"]["condition"] == "t2 <= b" && d["facts"]["loop"] == false {
                continue;
            }
            assert_eq!(d["severity"], "note", "{d:#?}");
        }
    }
    let loops: Vec<_> = of("carried", "divergent-branch")
        .into_iter()
        .filter(|d| message(d).contains("at most one partial iteration"))
        .collect();
    assert_eq!(loops.len(), 2, "{:#?}", findings());
    let down = of("zigzag", "divergent-branch");
    assert!(
        down.iter().any(|d| d["facts"]["condition"] == "c >= 0"
            && message(d).contains("at most one partial iteration")),
        "{down:#?}"
    );
    let n = of("not_carried", "divergent-branch");
    assert_eq!(n.len(), 1, "{:#?}", findings());
    assert_eq!(n[0]["severity"], "warning", "{:#?}", n[0]);
}

/// (audits 20261223 #32, 20261226 #32, 20261229 #33: mergeSort's `i <
/// segmentSamplesA` with `i = pos & (stride / 128 - 1)`, FALSE three
/// times) A test of an index masked to groups states that a bound at or
/// past the group's size splits nothing.
#[test]
fn a_masked_index_test_names_the_bound_that_splits_nothing() {
    let d = of("sample_ranks", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    let m = message(d[0]);
    assert!(
        m.contains("the index stays below `stride / 128`")
            && m.contains("every thread of a group is on one side and no warp splits"),
        "{m}"
    );
}

/// (audit 20261229 #62: crossentropy's `probs_bt[ix]` with `probs_bt =
/// probs + b * T * V + t * V`) A gather through a pointer set per thread:
/// the message names the pointer, not only the loaded index.
#[test]
fn a_gather_through_a_per_thread_pointer_names_the_pointer() {
    let d = of("row_pick", "uncoalesced-global");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    let m = message(d[0]);
    assert!(
        m.contains("the pointer `row` is itself set from the thread index"),
        "{m}"
    );
    assert!(
        !m.contains("as a gather, its cost is the loaded values"),
        "{m}"
    );
}
