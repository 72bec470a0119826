//! issue 8, session 13 (audit 20261216): one finding per early exit before
//! several barriers, template parameters that every launch passes as the
//! block size (from a host lambda), and the rows listed at each test.
//! Fixture: tests/fixtures/findings/s13/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/s13/kernels.cu"]))
}

fn of(function: &str, rule: &str) -> Vec<&'static serde_json::Value> {
    common::rule_in(findings(), function, rule)
}

use common::message;

/// (#48/#49) `if (threadIdx.y >= 8) return;` before three barriers is one
/// finding, at the first, naming the later two.
#[test]
fn one_early_exit_is_one_finding() {
    let b = of("exit_then_barriers", "barrier-divergence");
    assert_eq!(b.len(), 1, "{:#?}", b);
    assert_eq!(b[0]["line"], 11, "{:#?}", b[0]);
    assert!(
        message(b[0]).contains("2 later barriers at lines 13, 15"),
        "{}",
        message(b[0])
    );
}

/// (#53/#54/#56) `kernel<block_size><<<g, block_size>>>` inside a host
/// lambda: the template parameter is the block size, so a loop stepping by
/// it is a block-stride loop (a note); a step of half the block is not.
#[test]
fn a_template_parameter_passed_as_the_block_size_is_blockdim() {
    let d = of("template_stride", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("block-stride loop")
            && message(d[0]).contains("at most one partial iteration"),
        "{}",
        message(d[0])
    );
    let w = of("template_step_other", "divergent-branch");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (#5, hybridsort's `bucketcount`) `threads.x = 128` after the launch does
/// not change the block the launch used (32): a block-stride loop over
/// 1024 elements has no partial iteration, so nothing is reported.
#[test]
fn a_dim3_member_set_after_the_launch_does_not_change_it() {
    let d = of("count_buckets", "divergent-branch");
    assert!(d.is_empty(), "{:#?}", d);
}

/// (hybridsort's `bucketprefixoffset`) With 1024 threads stepping by 1024,
/// no two threads meet: decided, not "analysis incomplete" (the solver
/// gets the cut that the threads' parts of the two addresses agree).
#[test]
fn disjoint_columns_are_decided_within_the_budget() {
    let quiet: Vec<_> = findings()
        .iter()
        .filter(|f| f["function"] == "prefix_columns")
        .collect();
    assert!(quiet.is_empty(), "{:#?}", quiet);
}

/// (#30, EGLStream's data check) A one-sided `if` on loaded data whose
/// taken side reports (`printf`) is an error path: a note that says so. A
/// taken side that works and reports only under a further test stays a
/// warning.
#[test]
fn an_error_report_is_a_note() {
    let d = of("check_data", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("reports an error (`printf`)"),
        "{}",
        message(d[0])
    );
    let w = of("work_then_report", "divergent-branch");
    assert!(
        w.iter()
            .any(|f| f["severity"] == "warning" && !message(f).contains("reports an error")),
        "{:#?}",
        w
    );
}

/// (#45, marchingCubes' `compactVoxels`) A store through a loaded index is
/// a scatter whose cost the data decide (a compaction writes consecutive
/// slots): a note that says so. (Session 14) A gather through a loaded
/// index is a note that says its cost is the table's values.
#[test]
fn a_scatter_through_a_loaded_index_is_a_note() {
    let u = of("compact", "uncoalesced-global");
    let write = u
        .iter()
        .find(|f| message(f).starts_with("write of `out[scan[i]]`"));
    let write = write.unwrap_or_else(|| panic!("{:#?}", u));
    assert_eq!(write["severity"], "note", "{:#?}", write);
    assert!(
        message(write).contains("a compaction"),
        "{}",
        message(write)
    );
    let read = u
        .iter()
        .find(|f| message(f).starts_with("read of `table[nb[i]]`"));
    let read = read.unwrap_or_else(|| panic!("{:#?}", u));
    // (Session 14) A gather is a note too, saying what decides its cost.
    assert_eq!(read["severity"], "note", "{:#?}", read);
    assert!(message(read).contains("as a gather"), "{}", message(read));
}

/// (20261217 #64, llm.c's `dim3 blockDim(s, s)` with `s` from the command
/// line) With blockDim.x unknown in a block of several rows, the sector
/// count is for full-width rows, and the message says how many narrower
/// rows touch.
#[test]
fn an_unknown_row_width_says_what_narrow_rows_cost() {
    let u = of("naive_product", "uncoalesced-global");
    let store = u
        .iter()
        .find(|f| message(f).starts_with("write of `out[bt * OC + oc]`"))
        .unwrap_or_else(|| panic!("{:#?}", u));
    assert!(
        message(store).contains("blockDim.x is not known here")
            && message(store).contains("down to 4 with 4-thread rows"),
        "{}",
        message(store)
    );
}

/// (myocyte's `threads.y = 1` in both arms of an `if`) Assignments of a
/// `dim3` member that agree keep their value: the block is 32 x 1, and a
/// block-stride loop over 1024 elements has no partial iteration.
#[test]
fn agreeing_dim3_assignments_keep_their_value() {
    let d = of("same_shape", "divergent-branch");
    assert!(d.is_empty(), "{:#?}", d);
}

/// (20261213 #23, 20261218 #23, binaryPartitionCG) A block size written
/// through its address (`int threads = 0;` then the occupancy API) is
/// unknown, not 0: the warp sync in the grid-stride loop is at worst in its
/// last iteration, a warning, not an error. A warp sync under a bounds
/// check on the grid-wide thread index splits at most one warp of the
/// launch: a warning that says so.
#[test]
fn warp_syncs_under_grid_bounds_are_bounded() {
    // (Session 14) Its bound is 1024 * 100 at the only launch, a multiple
    // of 32: a note that names the one condition left (a block that is not
    // whole warps).
    let b = of("grid_tile_sync", "barrier-divergence");
    assert_eq!(b.len(), 1, "{:#?}", findings());
    assert_eq!(b[0]["severity"], "note", "{:#?}", b[0]);
    assert!(
        message(b[0]).contains("trip counts differ by at most one")
            && message(b[0]).contains("`size` is 102400 at every launch"),
        "{}",
        message(b[0])
    );
    let g = of("guarded_tile_sync", "barrier-divergence");
    assert_eq!(g.len(), 1, "{:#?}", findings());
    assert_eq!(g[0]["severity"], "warning", "{:#?}", g[0]);
    assert!(
        message(g[0]).contains("at most one warp of the launch"),
        "{}",
        message(g[0])
    );
}

/// (simpleAWBarrier) `bar.arrive()` then `bar.wait(token)` on a
/// block-scoped `cuda::barrier` orders the block's accesses like
/// `__syncthreads()`: no race between the warp sums written before it and
/// read after it.
#[test]
fn a_block_scoped_cuda_barrier_orders_accesses() {
    let r: Vec<_> = findings()
        .iter()
        .filter(|f| f["function"] == "barrier_exchange" && f["rule"] == "shared-race")
        .collect();
    assert!(r.is_empty(), "{:#?}", r);
}

/// (20261218 #17, gaussian's `Fan2` in 4 x 4 blocks) The advice to swap
/// threadIdx.x and threadIdx.y is given only where it helps: not in a
/// square 4 x 4 warp, where the message names the short runs instead; in
/// 16 x 16 blocks it stays.
#[test]
fn index_swap_advice_only_where_it_helps() {
    let small = of("column_update", "uncoalesced-global");
    assert_eq!(small.len(), 1, "{:#?}", findings());
    assert!(
        !message(small[0]).contains("with the roles of threadIdx.x and threadIdx.y swapped")
            && message(small[0]).contains("swapping the indices gains nothing"),
        "{}",
        message(small[0])
    );
    let wide = of("column_update_wide", "uncoalesced-global");
    assert_eq!(wide.len(), 1, "{:#?}", findings());
    assert!(
        message(wide[0]).contains("with the roles of threadIdx.x and threadIdx.y swapped"),
        "{}",
        message(wide[0])
    );
}
