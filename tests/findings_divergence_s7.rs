//! issue 8, session 7: divergent-branch precision (audit 20261128 #3, #24,
//! #27, #30, #33, #53). Fixture: tests/fixtures/findings/divergence_s7/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/divergence_s7/kernels.cu"]))
}

fn divergent(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

use common::message;

#[test]
fn quotient_of_a_reassigned_index_is_one_run_per_block() {
    // `i = (threadIdx.x + offset) / n; if (i < m)` with `i` assigned twice.
    let d = divergent("strided_save");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(
        m.contains("one contiguous run") && m.contains("at most one warp per block"),
        "{m}"
    );
}

#[test]
fn masked_index_is_one_run_per_group() {
    let d = divergent("masked_rank");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(m.contains("modulo `stride / 4`"), "{m}");
    assert!(m.contains("at least 32"), "{m}");
}

#[test]
fn image_guard_on_narrow_blocks_splits_edge_blocks_only() {
    let d = divergent("image_guard");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(m.contains("a warp spans 2 rows"), "{m}");
    assert!(m.contains("only the blocks at its edge"), "{m}");
    assert!(m.contains("`iy < h` selects one contiguous run"), "{m}");
}

#[test]
fn fixed_subset_of_each_row_is_stated() {
    let d = divergent("quarter_loads");
    assert_eq!(d.len(), 1, "{d:#?}");
    let m = message(d[0]);
    assert!(
        m.contains("holds for 4 of the 16 threads of every row"),
        "{m}"
    );
    assert!(m.contains("8 of the 32 lanes"), "{m}");
}

#[test]
fn triangular_loop_states_the_trip_count_spread() {
    let d = divergent("triangle_rows");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(m.contains("differ by at most ⌈31/`nh`⌉"), "{m}");
    assert!(m.contains("wraps around"), "{m}");
    // A bound that is the linear index itself has no small spread.
    for f in divergent("triangle_lanes") {
        assert!(!message(f).contains("differ by at most"), "{f:#?}");
    }
}

#[test]
fn warp_index_from_warp_size_is_warp_uniform() {
    assert!(
        divergent("warp_tiles").is_empty(),
        "{:#?}",
        divergent("warp_tiles")
    );
    // 48-wide blocks: a warp straddles rows, the warp index can differ.
    assert_eq!(divergent("warp_tiles_odd").len(), 1);
}

#[test]
fn strided_pick_and_block_local_columns_stay_warnings() {
    let d = divergent("interleaved");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "warning", "{:#?}", d[0]);
    assert!(!message(d[0]).contains("contiguous run"), "{:#?}", d[0]);
    // (Session 14) The shrinking window runs in a loop of 8 known
    // iterations (`iters` is 8 at the only launch): a short part, a note.
    let d = divergent("shrink");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    // (Session 15) `tx >= i + 1` against the loop's counter is a
    // triangular sweep, and the message says so.
    assert!(
        message(d[0]).contains("triangular (wavefront) sweep"),
        "{}",
        message(d[0])
    );
}

#[test]
fn straight_line_callees_are_counted_not_unknown_calls() {
    let d = divergent("bisect_step");
    assert!(!d.is_empty(), "{:#?}", findings());
    for f in &d {
        let m = message(f);
        assert!(!m.contains("bodies are not counted"), "{m}");
        assert_eq!(f["facts"]["work"]["calls"], 0, "{f:#?}");
    }
    let outer = d
        .iter()
        .find(|f| f["line"] == 185)
        .expect("the outer split");
    assert!(
        message(outer).contains("register arithmetic only"),
        "{}",
        message(outer)
    );
}

#[test]
fn bound_of_the_group_base_keeps_the_run() {
    let d = divergent("masked_last");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("modulo `stride / 4`"),
        "{}",
        message(d[0])
    );
}

#[test]
fn a_part_under_the_predication_threshold_is_a_note() {
    let d = divergent("few_slots");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
}
