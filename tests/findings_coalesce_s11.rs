//! issue 8, session 11: the lanes of a warp in blocks smaller than a warp
//! (audit 20261208 #22, Needleman-Wunsch's 16-thread blocks), and the runs
//! of lanes that share a symbolic row (audit 20261206 #22, gaussian `Fan2`
//! in 4x4 blocks). Fixture: tests/fixtures/findings/coalesce_s11/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/coalesce_s11/kernels.cu"]))
}

fn uncoalesced(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "uncoalesced-global" && f["function"] == function)
        .collect()
}

#[test]
fn a_block_of_16_threads_is_a_warp_of_16_lanes() {
    let c = uncoalesced("column_in_half_warp");
    assert_eq!(c.len(), 1, "{:#?}", findings());
    let m = c[0]["message"].as_str().unwrap();
    assert!(
        m.contains("up to 16 sectors") && m.contains("where 2 would"),
        "{m}"
    );
}

#[test]
fn lanes_sharing_a_symbolic_row_are_one_run() {
    let t = uncoalesced("transposed_tile");
    let read: Vec<_> = t
        .iter()
        .filter(|f| f["facts"]["access"] == "read")
        .collect();
    assert_eq!(read.len(), 1, "{:#?}", findings());
    let m = read[0]["message"].as_str().unwrap();
    assert!(
        m.contains("up to 8 sectors") && m.contains("where 2 would"),
        "{m}"
    );
    assert!(
        m.contains("roles of threadIdx.x and threadIdx.y swapped"),
        "{m}"
    );
}
