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
    // (session 13, audit 20261218 #17) In a 4 x 4 warp swapping the
    // indices gains nothing: the message names the short runs instead.
    assert!(
        !m.contains("roles of threadIdx.x and threadIdx.y swapped")
            && m.contains("runs of only 4 elements"),
        "{m}"
    );
}

/// (audit 20261209 #19, huffman `pack2`) A data-dependent gather in a
/// block of 16 threads touches at most 16 sectors.
#[test]
fn a_gather_in_a_half_warp_block_counts_its_lanes() {
    let g = uncoalesced("gather_half_warp");
    assert_eq!(g.len(), 1, "{:#?}", findings());
    let m = g[0]["message"].as_str().unwrap();
    assert!(
        m.contains("up to 16 sectors") && m.contains("its 64 B"),
        "{m}"
    );
}

/// (audit 20261209 #22, gaussian `Fan2` under `if (yidx == 0)`) A guard
/// `blockIdx.y * blockDim.y + threadIdx.y == 0` keeps row 0 of the block:
/// 4 lanes in 4x4 blocks, so at most 4 sectors.
#[test]
fn an_equality_guard_with_a_block_offset_keeps_its_row() {
    let r: Vec<_> = uncoalesced("first_row_only")
        .into_iter()
        .filter(|f| f["facts"]["access"] == "read")
        .collect();
    assert_eq!(r.len(), 1, "{:#?}", findings());
    let m = r[0]["message"].as_str().unwrap();
    assert!(m.contains("up to 4 sectors"), "{m}");
}

/// (boxFilter's `d_boxfilter_x_global`, drawn by three audits) Findings in
/// a kernel no launch in the workspace runs, and in a device function only
/// such kernels call, say so; a launched kernel's do not.
#[test]
fn findings_of_unlaunched_kernels_say_so() {
    let all: Vec<_> = findings()
        .iter()
        .filter(|f| f["function"] == "never_launched" || f["function"] == "row_walk")
        .collect();
    assert!(!all.is_empty(), "{:#?}", findings());
    for f in &all {
        let m = f["message"].as_str().unwrap();
        assert!(
            m.contains("in the indexed files: if nothing launches"),
            "{m}"
        );
    }
    for f in uncoalesced("transposed_tile") {
        let m = f["message"].as_str().unwrap();
        assert!(!m.contains("if nothing launches"), "{m}");
    }
}

/// (audit 20261208 #43 particles, 20261211 #43) A scatter under a flag read
/// from memory says few passing lanes mean few sectors; one under `j != i`,
/// which most lanes pass, does not.
#[test]
fn only_sparse_data_tests_get_the_few_lanes_clause() {
    let s = uncoalesced("frontier_scatter");
    assert!(!s.is_empty(), "{:#?}", findings());
    assert!(
        s.iter().any(|f| f["message"]
            .as_str()
            .unwrap()
            .contains("where few lanes pass")),
        "{s:#?}"
    );
    let g = uncoalesced("neighbour_gather");
    assert!(!g.is_empty(), "{:#?}", findings());
    for f in &g {
        let m = f["message"].as_str().unwrap();
        assert!(!m.contains("where few lanes pass"), "{m}");
    }
}
