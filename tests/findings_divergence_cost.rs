//! issue 8, audit classes D1, D2, D4, D5, D6: what a divergent branch costs.
//! Fixture: tests/fixtures/findings/divergence_cost/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| {
        common::check_fixtures(&[
            "findings/divergence_cost/kernels.cu",
            "findings/divergence_cost/warp_size.h",
        ])
    })
}

fn divergent(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

#[test]
fn block_stride_while_loop_is_a_tail_note() {
    let d = divergent("while_stride");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], "note");
    assert_eq!(d[0]["facts"]["stride_tail"], true);
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("one partial iteration")
    );
}

#[test]
fn stride_loop_without_a_partial_iteration_is_not_reported() {
    assert!(
        divergent("no_tail").is_empty(),
        "{:?}",
        divergent("no_tail")
    );
    assert!(
        divergent("grid_no_tail").is_empty(),
        "{:?}",
        divergent("grid_no_tail")
    );
    // 500 is not a multiple of 256: the tail note stays.
    let d = divergent("with_tail");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["facts"]["stride_tail"], true);
}

#[test]
fn register_only_branches_are_selects_and_not_reported() {
    let d = divergent("selects");
    assert!(d.is_empty(), "{d:#?}");
    // A store under the branch is not a select, but under a data test it is
    // below `[cost] divergent_min_ops` (session 5, tests/findings_cheap.rs):
    // not reported by default; with the threshold at 0 it is, as a plain
    // branch.
    assert!(divergent("predicated_store").is_empty());
    let dir = tempfile::tempdir().unwrap();
    common::copy_fixtures(
        dir.path(),
        &[
            "findings/divergence_cost/kernels.cu",
            "findings/divergence_cost/warp_size.h",
        ],
    );
    std::fs::write(
        dir.path().join("cudalog.toml"),
        "[cost]\ndivergent_min_ops = 0\n",
    )
    .unwrap();
    let all = common::check_json(dir.path());
    let d: Vec<_> = all
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == "predicated_store")
        .collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["facts"]["shape"], "plain");
}

#[test]
fn two_calls_of_one_function_are_a_note_that_says_so() {
    let d = divergent("same_call");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], "note");
    let m = d[0]["message"].as_str().unwrap();
    assert!(
        m.contains("one call of `put`") && !m.contains("run both paths"),
        "{m}"
    );
}

#[test]
fn threshold_guards_split_at_most_one_warp_per_block() {
    let d = divergent("tail_guard");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], "note");
    assert_eq!(d[0]["facts"]["shape"]["one_warp_per"], "block");
    let m = d[0]["message"].as_str().unwrap();
    assert!(m.contains("at most one warp per block"), "{m}");
    // 16 x 16 blocks: `threadIdx.y < r` is a run of whole rows (one warp
    // per block splits); `threadIdx.x < r` splits every warp holding the
    // selected columns of two rows: still a warning (in a loop: a part
    // this short run once per thread is a note, session 9).
    let d = divergent("row_guard");
    assert_eq!(d.len(), 2, "{d:?}");
    let by_line = |l: u64| d.iter().find(|f| f["line"] == l).unwrap();
    let y = by_line(d.iter().map(|f| f["line"].as_u64().unwrap()).min().unwrap());
    let x = by_line(d.iter().map(|f| f["line"].as_u64().unwrap()).max().unwrap());
    assert_eq!(y["severity"], "note", "{y}");
    assert_eq!(y["facts"]["shape"]["one_warp_per"], "block");
    assert_eq!(x["severity"], "warning", "{x}");
    // (session 7) The message says why: every warp of the block splits.
    assert_eq!(x["facts"]["shape"]["every_warp"], true, "{x}");
}

#[test]
fn warp_stride_loop_over_warp_indices_is_warp_uniform() {
    let d = divergent("warp_loop");
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn max_updates_and_returned_selects_are_not_reported() {
    let d = divergent("max_scan");
    assert!(d.is_empty(), "{d:#?}");
    assert!(divergent("pick").is_empty(), "{:?}", divergent("pick"));
}

#[test]
fn single_writers_per_row_or_tile_are_not_reported() {
    let d = divergent("row_leaders");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn a_one_thread_launch_does_not_diverge() {
    let d = divergent("one_thread");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn block_stride_loop_over_a_2d_linear_index_is_a_tail_note() {
    let d = divergent("stride_2d");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], "note");
    assert_eq!(d[0]["facts"]["stride_tail"], true);
}

#[test]
fn clamp_written_as_early_returns_is_a_select() {
    let d = divergent("clamp_byte");
    assert!(d.is_empty(), "{d:#?}");
    // The early return that skips a store still splits the warp.
    let d = divergent("clamp_returns");
    assert_eq!(d.len(), 1, "{d:?}");
}

#[test]
fn block_stride_loop_counting_down_is_a_tail_note() {
    let d = divergent("count_down");
    assert!(!d.is_empty(), "{d:?}");
    for f in &d {
        assert_eq!(f["severity"], "note", "{f}");
        assert_eq!(f["facts"]["stride_tail"], true, "{f}");
    }
    // Lanes 9 apart span more than a 256-thread step: not a stride tail.
    let d = divergent("count_down_spread");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_ne!(d[0]["facts"]["stride_tail"], true, "{:?}", d[0]);
}

#[test]
fn header_macro_in_launch_dims_is_resolved() {
    let d = divergent("macro_dims");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], "note", "{:?}", d[0]);
    assert_eq!(d[0]["facts"]["stride_tail"], true);
}

/// Audit class V4: the findings of tests/fixtures/findings/nested/walk.cu.
fn nested_findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/nested/walk.cu"]))
}

fn nested_divergent(function: &str) -> Vec<&'static serde_json::Value> {
    nested_findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

/// Every divergent `if` inside a reported divergent walk is folded into
/// the walk's finding, which counts and lists them.
#[test]
fn branches_nested_in_a_reported_divergent_loop_are_folded() {
    let d = nested_divergent("tree_walk");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "warning");
    assert_eq!(d[0]["facts"]["condition"], "node >= 0");
    let m = d[0]["message"].as_str().unwrap();
    assert!(m.contains("3 nested divergent branches inside"), "{m}");
    // Lines are absolute in the file: the `if`s at lines 20, 22 and 29
    // (the one at line 24 is too short to report on its own).
    assert_eq!(
        d[0]["facts"]["nested_lines"],
        serde_json::json!([20, 22, 29]),
        "{m}"
    );
    assert!(m.contains("(lines 20, 22, 29)"), "{m}");
}

/// Branches side by side are not nested: both stay.
#[test]
fn sibling_divergent_branches_stay_separate() {
    let d = nested_divergent("siblings");
    assert_eq!(d.len(), 2, "{d:#?}");
    assert!(d.iter().all(|f| f["facts"].get("nested_lines").is_none()));
}

/// A threshold splitting at most one warp per block does not fold what is
/// inside it: the warps wholly inside diverge on the nested loop alone.
#[test]
fn one_warp_threshold_does_not_fold() {
    let d = nested_divergent("threshold_then_data");
    let conds: Vec<&str> = d
        .iter()
        .map(|f| f["facts"]["condition"].as_str().unwrap())
        .collect();
    assert!(conds.contains(&"x > 1.0f"), "{d:#?}");
}

/// Folding is of divergent-branch findings only: a barrier under a
/// nested branch is still a barrier-divergence finding.
#[test]
fn folding_leaves_barrier_divergence_alone() {
    let all = nested_findings();
    assert!(
        all.iter()
            .any(|f| f["rule"] == "barrier-divergence" && f["function"] == "walk_with_barrier"),
        "{all:#?}"
    );
    let d = nested_divergent("walk_with_barrier");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["facts"]["nested_lines"], serde_json::json!([78]));
}

/// Audit class V7: the early exits of one loop under lane-varying
/// conditions are one finding for the loop (its trip count differs
/// between lanes), on the loop's line, listing the exits.
#[test]
fn early_exits_of_one_loop_are_one_finding() {
    let d = nested_divergent("escape_steps");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["line"], 96);
    assert_eq!(d[0]["severity"], "warning");
    assert_eq!(
        d[0]["facts"]["exit_lines"],
        serde_json::json!([97, 105, 113])
    );
    let m = d[0]["message"].as_str().unwrap();
    assert!(
        m.contains("3 early exits (lines 97, 105, 113)") && m.contains("different iterations"),
        "{m}"
    );
}
