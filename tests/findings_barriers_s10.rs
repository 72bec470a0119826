//! issue 8, session 10 (audit 20261206 #48, llm.c layernorm_backward `bt <
//! B * T` in a warp-stride loop): a barrier in a loop whose condition the
//! lanes of each warp agree on diverges only between warps, for some
//! values of its bound: a warning that says so, not an error; a loop the
//! lanes of one warp disagree on stays an error. Fixture:
//! tests/fixtures/findings/barriers_s10/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/barriers_s10/kernels.cu"]))
}

fn barriers(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "barrier-divergence" && f["function"] == function)
        .collect()
}

#[test]
fn a_barrier_in_a_warp_uniform_loop_is_a_warning_naming_the_bound() {
    for (k, wording) in [
        ("rows_per_warp", "the warps that finish first exit"),
        ("rows_then_sync", "they wait at different barriers"),
    ] {
        let b = barriers(k);
        assert!(!b.is_empty(), "{k}: {:#?}", findings());
        for f in &b {
            assert_eq!(f["severity"], "warning", "{f:#?}");
            let m = f["message"].as_str().unwrap();
            assert!(m.contains("the lanes of each warp agree"), "{m}");
            assert!(m.contains(wording), "{k}: {m}");
        }
    }
}

/// (audit 20261207 #23, binaryPartitionCG `cg::sync(tile32)` in a
/// grid-stride loop) A stride loop's lanes differ by at most one trip: the
/// barrier is reached by part of the group only in the last iteration, and
/// only when the bound is not a multiple of the step: a warning naming
/// that; a barrier under a per-thread data test stays an error.
#[test]
fn a_barrier_in_a_stride_loop_names_its_last_iteration() {
    let b = barriers("rows_per_thread");
    assert!(!b.is_empty(), "{:#?}", findings());
    for f in &b {
        assert_eq!(f["severity"], "warning", "{f:#?}");
        let m = f["message"].as_str().unwrap();
        assert!(m.contains("only in its last iteration"), "{m}");
    }
    let b = barriers("data_sync");
    assert!(!b.is_empty(), "{:#?}", findings());
    assert!(b.iter().all(|f| f["severity"] == "error"), "{b:#?}");
}
