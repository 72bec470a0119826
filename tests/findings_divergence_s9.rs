//! issue 8, session 9 (audit 20261203): bounds at multiples of 32 in 1-D
//! blocks of unknown size (#25, reduce6 `tid < 64`) and bounds moved by a
//! uniform multiple of 32 (#30, dxtc `idx + 64 * i >= 160`) split no warp;
//! a local flag set once from thread-index range tests is itself such a
//! test (#4, pathfinder `isValid`); a straight-line part under the
//! predication threshold, memory accesses counted, outside every loop is a
//! note that says it runs once (#27). Fixture:
//! tests/fixtures/findings/divergence_s9/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/divergence_s9/kernels.cu"]))
}

fn branch(line: u64) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["line"] == line)
        .collect()
}

#[test]
fn warp_aligned_bounds_in_1d_blocks_of_unknown_size_split_no_warp() {
    assert!(branch(8).is_empty(), "{:#?}", branch(8));
    // 48 is not a multiple of 32: the warp holding thread 48 splits.
    assert_eq!(branch(11).len(), 1, "{:#?}", findings());
    assert_eq!(branch(11)[0]["severity"], "note");
}

#[test]
fn a_bound_moved_by_a_uniform_multiple_of_32_splits_no_warp() {
    assert!(branch(23).is_empty(), "{:#?}", branch(23));
}

#[test]
fn a_range_flag_is_a_threshold_test() {
    let b = branch(34);
    assert_eq!(b.len(), 1, "{:#?}", findings());
    assert_eq!(b[0]["severity"], "note", "{:#?}", b[0]);
    assert!(
        b[0]["message"]
            .as_str()
            .unwrap()
            .contains("one contiguous run"),
        "{:#?}",
        b[0]
    );
}

#[test]
fn a_short_part_outside_loops_is_a_note_that_says_it_runs_once() {
    let b = branch(46);
    assert_eq!(b.len(), 1, "{:#?}", findings());
    assert_eq!(b[0]["severity"], "note", "{:#?}", b[0]);
    assert!(
        b[0]["message"]
            .as_str()
            .unwrap()
            .contains("run once per thread outside any loop"),
        "{:#?}",
        b[0]
    );
    // The same part inside a loop stays a warning.
    let l = branch(52);
    assert_eq!(l.len(), 1, "{:#?}", findings());
    assert_eq!(l[0]["severity"], "warning", "{:#?}", l[0]);
}
