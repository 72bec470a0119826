//! issue 8 audit (session 5), class 6: divergent branches whose divergent
//! part is a few operations are not reported (`[cost] divergent_min_ops`);
//! the ones reported state their cost. Fixture:
//! tests/fixtures/findings/cheap/divergence.cu.

mod common;

use std::sync::OnceLock;

const FIXTURE: &str = "findings/cheap/divergence.cu";

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&[FIXTURE]))
}

fn divergent<'a>(all: &'a [serde_json::Value], function: &str) -> Vec<&'a serde_json::Value> {
    all.iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

/// Check the fixture with a `cudalog.toml` holding `toml`.
fn with_config(toml: &str) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    common::copy_fixtures(dir.path(), &[FIXTURE]);
    std::fs::write(dir.path().join("cudalog.toml"), toml).unwrap();
    common::check_json(dir.path())
}

#[test]
fn short_divergent_parts_are_not_reported() {
    for f in ["search_hit", "shared_increment", "compaction", "char_chain"] {
        let d = divergent(findings(), f);
        assert!(d.is_empty(), "{f}: {d:#?}");
    }
}

#[test]
fn short_parts_under_thread_index_conditions_stay() {
    let d = divergent(findings(), "interleaved");
    assert!(
        d.iter()
            .any(|f| f["facts"]["condition"] == "(tid % (2 * s)) == 0"),
        "{d:#?}"
    );
}

/// Above the threshold a data-dependent straight-line part is reported
/// with its cost; at four times the threshold (35 operations here) it is
/// a warning.
#[test]
fn long_data_dependent_part_is_reported_with_its_cost() {
    let d = divergent(findings(), "long_data_branch");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "warning");
    let m = d[0]["message"].as_str().unwrap();
    assert!(m.contains("12 memory accesses"), "{m}");
    assert!(m.contains("depends on values loaded per thread"), "{m}");
    assert_eq!(d[0]["facts"]["work"]["memory"], 12);
    assert_eq!(d[0]["facts"]["data_dependent"], true);
}

#[test]
fn calls_loops_and_early_returns_are_never_cheap() {
    let d = divergent(findings(), "calls_helper");
    assert_eq!(d.len(), 1, "{d:#?}");
    let m = d[0]["message"].as_str().unwrap();
    assert!(m.contains("1 call whose body is not counted"), "{m}");
    let d = divergent(findings(), "loops_inside");
    assert!(
        d.iter()
            .any(|f| f["severity"] == "warning" && f["facts"]["work"] == "unbounded"),
        "{d:#?}"
    );
    // (audit 20261205 #6, #52, #56) An early return outside every loop
    // runs nothing twice: the lanes that leave have no work left, and the
    // others go on; on the corpora such exits were bounds guards the
    // threshold reasoning missed, surplus threads and triangular skips.
    let d = divergent(findings(), "early_return");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn the_threshold_is_a_cost_key() {
    // 0 reports every divergent branch, as before the threshold.
    let all = with_config("[cost]\ndivergent_min_ops = 0\n");
    for f in ["search_hit", "shared_increment", "compaction", "char_chain"] {
        assert_eq!(divergent(&all, f).len(), 1, "{f}");
    }
    // A high threshold drops the long straight-line part too, but never a
    // part with a loop or a call.
    let all = with_config("[cost]\ndivergent_min_ops = 100\n");
    assert!(divergent(&all, "long_data_branch").is_empty());
    assert_eq!(divergent(&all, "calls_helper").len(), 1);
    assert!(!divergent(&all, "loops_inside").is_empty());
}

fn lanes() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/cheap/lanes.cu"]))
}

/// Session 5 audit V10: a threshold on a lane index (`threadIdx.x % 32`,
/// a 32-thread tile's rank) splits every warp, not one per block.
#[test]
fn lane_index_thresholds_split_every_warp() {
    for f in ["lane_tail", "tile_rank"] {
        let d = divergent(lanes(), f);
        assert_eq!(d.len(), 1, "{f}: {d:#?}");
        assert_eq!(d[0]["facts"]["shape"], "every_warp", "{f}");
        let m = d[0]["message"].as_str().unwrap();
        assert!(m.contains("every warp can split"), "{m}");
        assert!(!m.contains("at most one warp"), "{m}");
    }
}

/// Session 5 audit wording: a block of one warp does not have "at most
/// one warp per block" split, it has its only warp split.
#[test]
fn a_one_warp_block_says_every_warp() {
    let d = divergent(lanes(), "one_warp_block");
    assert_eq!(d.len(), 1, "{d:#?}");
    let m = d[0]["message"].as_str().unwrap();
    assert!(m.contains("each block is a single warp"), "{m}");
    let d = divergent(lanes(), "many_warps");
    assert_eq!(d.len(), 1, "{d:#?}");
    let m = d[0]["message"].as_str().unwrap();
    assert!(m.contains("at most one warp per block"), "{m}");
}

/// Session 5 audit V11: under `dim3(4, 8, z)` a warp is one z-slice, so a
/// loop over `x + 4·z` stepping by a multiple of 4 is a stride loop (one
/// partial iteration), not a warning.
#[test]
fn z_slice_warps_make_a_stride_loop() {
    let all = common::check_fixtures(&["findings/cheap/zslice.cu"]);
    let d = divergent(&all, "zslice_stride");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note");
    assert_eq!(d[0]["facts"]["stride_tail"], true);
}
