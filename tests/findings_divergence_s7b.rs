//! issue 8, session 7 (scout audit 20261130): conditions on values every
//! lane of a warp receives alike (the SM clock, warp votes, warp-tile
//! votes, a broadcast shuffle) are not divergence; a lane flag and a
//! shuffle from a per-lane source still are. Fixture:
//! tests/fixtures/findings/divergence_s7b/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/divergence_s7b/kernels.cu"]))
}

fn divergent(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

#[test]
fn a_clock_spin_loop_is_not_divergent() {
    assert!(divergent("spin").is_empty(), "{:#?}", divergent("spin"));
}

#[test]
fn loops_on_warp_votes_are_not_divergent() {
    for k in ["vote_loop", "tile_vote"] {
        let d = divergent(k);
        assert!(
            d.iter()
                .all(|f| !f["message"].as_str().unwrap().contains("any_sync")
                    && !f["message"].as_str().unwrap().contains("tile32.any")),
            "{k}: {d:#?}"
        );
    }
}

#[test]
fn a_broadcast_shuffle_is_warp_uniform() {
    assert!(
        divergent("broadcast").is_empty(),
        "{:#?}",
        divergent("broadcast")
    );
}

#[test]
fn a_lane_flag_and_a_per_lane_shuffle_stay_divergent() {
    assert_eq!(divergent("lane_flag").len(), 1, "{:#?}", findings());
    assert_eq!(divergent("shuffled").len(), 1, "{:#?}", findings());
}
