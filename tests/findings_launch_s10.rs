//! issue 8, session 10 (audits 20261205 and 20261206 #41, dwtHaar1D
//! `shared[tid + bdim]` with `bdim` = `block_size.x` at the launch): a
//! kernel parameter every launch passes as the same expression as a block
//! dimension is that `blockDim`, so the halves it separates never overlap
//! and a loop stepping by it is a block-stride loop; a parameter passed
//! something else stays a symbol. Fixture:
//! tests/fixtures/findings/launch_s10/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/launch_s10/kernels.cu"]))
}

fn of(function: &str, rule: &str) -> Vec<&'static serde_json::Value> {
    common::rule_in(findings(), function, rule)
}

#[test]
fn a_parameter_passed_as_the_block_size_is_blockdim() {
    assert!(of("halves", "shared-race").is_empty(), "{:#?}", findings());
    assert!(
        !of("halves_other", "shared-race").is_empty(),
        "{:#?}",
        findings()
    );
}

#[test]
fn a_loop_stepping_by_the_block_size_parameter_is_a_block_stride_loop() {
    let d = of("rows", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        d[0]["message"]
            .as_str()
            .unwrap()
            .contains("block-stride loop"),
        "{:#?}",
        d[0]
    );
}
