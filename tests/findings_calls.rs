//! issue 8, class 3: what the caller guarantees at calls. A device function
//! called only under `if (threadIdx.x < 16)` runs with those 16 lanes, and a
//! reference parameter the callee assigns redefines the caller's variable
//! (its affine form after the call is not the one before).
//! Fixture: tests/fixtures/findings/calls/calls.cu.

mod common;

fn findings() -> Vec<serde_json::Value> {
    common::check_fixtures(&["findings/calls/calls.cu"])
}

fn uncoalesced<'a>(all: &'a [serde_json::Value], function: &str) -> Vec<&'a serde_json::Value> {
    all.iter()
        .filter(|f| f["function"] == function && f["rule"] == "uncoalesced-global")
        .collect()
}

#[test]
fn a_callee_runs_with_the_lanes_its_callers_call_it_under() {
    let all = findings();
    let h = uncoalesced(&all, "half_store");
    assert_eq!(h.len(), 1, "{all:#?}");
    // 16 lanes, 8 bytes apart: 4 sectors where 2 hold the 64 bytes (a full
    // warp would be 8 where 4).
    let m = h[0]["message"].as_str().unwrap();
    assert!(
        m.contains("touches 4 sectors") && m.contains("where 2"),
        "{m}"
    );
}

#[test]
fn reference_parameters_redefine_the_callers_variable() {
    let all = findings();
    // Without the call, q = 4 * threadIdx.x: stride 4.
    assert_eq!(uncoalesced(&all, "no_call").len(), 1, "{all:#?}");
    // shrink(q, 4) divides q through its reference: stride 4 is no longer
    // what a[q] reads.
    assert!(uncoalesced(&all, "by_reference").is_empty(), "{all:#?}");
}
