//! issue 8, session 6: divergent-branch precision (audit 20261127 #57, #31,
//! #51, #25, #28). Fixture: tests/fixtures/findings/divergence_s6/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/divergence_s6/kernels.cu"]))
}

fn divergent(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

use common::message;

#[test]
fn start_range_under_launch_proves_uniform_trip_counts() {
    // 2*ty + tx/8 on 16x16 blocks, bound 128 (or 32*m), step 32.
    assert!(
        divergent("even_rows").is_empty(),
        "{:#?}",
        divergent("even_rows")
    );
    assert!(
        divergent("even_rows_sym").is_empty(),
        "{:#?}",
        divergent("even_rows_sym")
    );
    // The block size from a host parameter overwritten with a constant.
    assert!(
        divergent("even_rows_host").is_empty(),
        "{:#?}",
        divergent("even_rows_host")
    );
}

#[test]
fn start_range_within_one_step_is_a_tail_note() {
    let d = divergent("uneven_rows");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["severity"], "note");
    assert_eq!(d[0]["facts"]["stride_tail"], true);
    let m = message(d[0]);
    assert!(
        m.contains("stride loop") && !m.contains("block-stride"),
        "{m}"
    );
}

#[test]
fn stride_loops_are_named_for_their_step() {
    let d = divergent("warp_stride");
    assert_eq!(d.len(), 1, "{d:#?}");
    let m = message(d[0]);
    assert!(m.contains("warp-stride loop"), "{m}");
    assert!(m.contains("none when `n` is a multiple of `32`"), "{m}");
}

#[test]
fn block_stride_tail_says_when_there_is_none() {
    let d = divergent("block_stride");
    assert_eq!(d.len(), 1, "{d:#?}");
    let m = message(d[0]);
    assert!(m.contains("block-stride loop"), "{m}");
    assert!(
        m.contains("none when `n` is a multiple of `blockDim.x`"),
        "{m}"
    );
}

#[test]
fn unrolled_register_array_update_is_straight_line_work() {
    let d = divergent("triangle_skip");
    let skip: Vec<_> = d
        .iter()
        .filter(|f| f["facts"]["condition"] == "i > last")
        .collect();
    assert_eq!(skip.len(), 1, "{d:#?}");
    let f = skip[0];
    assert_eq!(f["facts"]["memory"], false, "{f:#}");
    assert_eq!(f["facts"]["loop"], false, "{f:#}");
    // 8 unrolled iterations of two multiplies and an add.
    assert_eq!(f["facts"]["work"]["ops"], 24, "{f:#}");
    assert_eq!(f["facts"]["work"]["memory"], 0, "{f:#}");
    assert_eq!(f["severity"], "note", "{f:#}");
    let m = message(f);
    // (Session 15) `i > last` against the enclosing loop's counter is a
    // triangular sweep: one-sided, with no second path.
    assert!(
        m.contains("no second path is serialised") && !m.contains("loops"),
        "{m}"
    );
}

#[test]
fn register_moves_under_data_test_are_not_reported() {
    let d = divergent("argmin");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn quotient_of_grid_index_is_a_boundary_guard() {
    let d = divergent("quotient_guard");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn branches_of_a_function_called_from_one_lane_are_not_divergent() {
    let d = divergent("leader_work");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn static_member_bounds_relative_bounds_and_warp_slices_are_uniform() {
    for k in ["packed_loop", "own_window", "z_slices"] {
        let d = divergent(k);
        assert!(d.is_empty(), "{k}: {d:#?}");
    }
}
