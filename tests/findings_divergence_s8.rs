//! issue 8, session 8 (audit 20261130 #51): a grid-edge guard whose index
//! grows by a block offset at least as large as the range one block's
//! threads cover splits only the blocks at the grid's edge, whatever the
//! thread stride; overlapping block ranges, a missing block offset or a
//! bound that moves with the block still split every warp. Fixture:
//! tests/fixtures/findings/divergence_s8/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/divergence_s8/kernels.cu"]))
}

fn guard_findings(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| {
            f["rule"] == "divergent-branch"
                && f["function"] == function
                && f["message"].as_str().unwrap().starts_with("`oc < ")
        })
        .collect()
}

#[test]
fn a_strided_grid_edge_guard_is_not_divergence() {
    assert!(
        guard_findings("edge_strided").is_empty(),
        "{:#?}",
        guard_findings("edge_strided")
    );
}

#[test]
fn overlapping_blocks_missing_offsets_and_moving_bounds_stay_reported() {
    for k in ["edge_overlapping", "no_block_offset", "per_block_bound"] {
        assert_eq!(guard_findings(k).len(), 1, "{k}: {:#?}", findings());
    }
}

fn loop_findings(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| {
            f["rule"] == "divergent-branch"
                && f["function"] == function
                && f["message"].as_str().unwrap().starts_with("`p < ")
        })
        .collect()
}

/// (session 8) `for (p = start; p < start + n; p++)`: `n` iterations in
/// every lane, whatever `start` is.
#[test]
fn a_loop_of_uniform_count_from_a_per_thread_start_is_not_divergent() {
    assert!(
        loop_findings("column_sums").is_empty(),
        "{:#?}",
        loop_findings("column_sums")
    );
    assert_eq!(loop_findings("ragged_sums").len(), 1, "{:#?}", findings());
}
