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
    let b = barriers("rows_per_warp");
    assert!(!b.is_empty(), "{:#?}", findings());
    for f in &b {
        assert_eq!(f["severity"], "warning", "{f:#?}");
        let m = f["message"].as_str().unwrap();
        assert!(m.contains("the lanes of each warp agree"), "{m}");
    }
    let b = barriers("rows_per_thread");
    assert!(!b.is_empty(), "{:#?}", findings());
    assert!(b.iter().all(|f| f["severity"] == "error"), "{b:#?}");
}
