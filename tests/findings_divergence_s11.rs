//! issue 8, session 11 (audit 20261208 #26 reduce6 `cta.thread_rank() <
//! 32`; #1 hotspot and #30 FDTD3d, a one- or two-instruction copy under an
//! edge flag inside a loop). Fixture:
//! tests/fixtures/findings/divergence_s11/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/divergence_s11/kernels.cu"]))
}

fn divergent(function: &str) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "divergent-branch" && f["function"] == function)
        .collect()
}

/// A block's `thread_rank()` is the linear thread index, and warps are
/// runs of 32 consecutive ones whatever the block's shape (here unknown):
/// `rank < 32` is warp 0, `rank < 40` splits warp 1.
#[test]
fn a_rank_edge_at_a_multiple_of_32_splits_no_warp() {
    assert!(divergent("rank_last_warp").is_empty(), "{:#?}", findings());
    assert_eq!(divergent("rank_mid_warp").len(), 1, "{:#?}", findings());
}

/// A two-instruction part inside a loop whose iteration does more than
/// four times its work is a note that states what the split costs per
/// iteration; the interleaved reduction, whose loop is mostly the split
/// part, stays a warning.
#[test]
fn a_predicable_part_in_a_larger_loop_is_a_note_with_its_cost() {
    let e = divergent("edge_copy_in_loop");
    assert_eq!(e.len(), 1, "{:#?}", findings());
    assert_eq!(e[0]["severity"], "note", "{:#?}", e[0]);
    let m = e[0]["message"].as_str().unwrap();
    assert!(
        m.contains("short enough for the compiler to predicate")
            && m.contains("each iteration of the loop at line"),
        "{m}"
    );
    let r = divergent("interleaved_is_the_loop");
    assert_eq!(r.len(), 1, "{:#?}", findings());
    assert_eq!(r[0]["severity"], "warning", "{:#?}", r[0]);
}

/// (audit 20261206 #28, reduction `tid < s`) A threshold on a counter the
/// loop halves: the message says only the iterations below 32 split a warp
/// (five when it goes down to 1), and none when the loop stops at 32.
#[test]
fn a_halving_bound_says_which_iterations_split() {
    let one = divergent("halving_to_one");
    assert_eq!(one.len(), 1, "{:#?}", findings());
    let m = one[0]["message"].as_str().unwrap();
    assert!(
        m.contains("halves each iteration") && m.contains("only the 5 iterations"),
        "{m}"
    );
    let to32 = divergent("halving_to_32");
    assert_eq!(to32.len(), 1, "{:#?}", findings());
    let m = to32[0]["message"].as_str().unwrap();
    assert!(
        m.contains("which runs only while `k > 32`") && m.contains("no warp splits"),
        "{m}"
    );
}

/// (heartwall's padding) `if (inside) p[e] = in[…]; else p[e] = 0;`: one
/// store of a selected value, not two paths.
#[test]
fn two_sides_storing_to_one_element_are_a_select() {
    assert!(divergent("pad_copy").is_empty(), "{:#?}", findings());
}

/// (audit 20261208 #61, softmax_forward) The race's witness is a pair of
/// threads of different warps when one exists: no warp-level shuffle
/// orders them.
#[test]
fn a_race_witness_prefers_threads_of_different_warps() {
    let r: Vec<_> = findings()
        .iter()
        .filter(|f| f["rule"] == "shared-race" && f["function"] == "slot_reuse")
        .collect();
    assert!(!r.is_empty(), "{:#?}", findings());
    for f in &r {
        let m = f["message"].as_str().unwrap();
        let threads: Vec<u64> = m
            .split("thread ")
            .skip(1)
            .filter_map(|t| t.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
            .collect();
        assert!(threads.len() >= 2, "{m}");
        assert_ne!(threads[0] / 32, threads[1] / 32, "{m}");
    }
}

/// (audit 20261209 #24, FDTD3d's halo loads) A part of a few accesses
/// that is at most a quarter of its loop's iteration is a note that states
/// the share.
#[test]
fn a_part_that_is_a_small_share_of_its_loop_is_a_note() {
    let h = divergent("halo_in_long_loop");
    assert_eq!(h.len(), 1, "{:#?}", findings());
    assert_eq!(h[0]["severity"], "note", "{:#?}", h[0]);
    let m = h[0]["message"].as_str().unwrap();
    assert!(m.contains("at most a quarter of the about"), "{m}");
}

/// (audit 20261209 #31, newdelete `push`) A callee's memory accesses count
/// as memory in the caller's divergent part.
#[test]
fn a_callee_with_memory_is_not_register_arithmetic() {
    let c = divergent("call_with_memory");
    assert_eq!(c.len(), 1, "{:#?}", findings());
    let m = c[0]["message"].as_str().unwrap();
    assert!(!m.contains("register arithmetic only"), "{m}");
    assert!(m.contains("memory access"), "{m}");
}

/// (audit 20261210 #26, volumeRender) `if (c) break;`: an early exit that
/// never makes a warp slower than the loop without it, a note that says so.
#[test]
fn a_break_only_branch_is_an_early_exit_note() {
    let e = divergent("early_exit");
    assert_eq!(e.len(), 1, "{:#?}", findings());
    assert_eq!(e[0]["severity"], "note", "{:#?}", e[0]);
    let m = e[0]["message"].as_str().unwrap();
    assert!(m.contains("an early exit from the loop at line"), "{m}");
}

/// (audit 20261210 #32, fluidsGL) A block given as `make_uint3(64, 4, 1)`
/// is known: a row test splits no warp of 64-wide rows.
#[test]
fn a_block_made_by_make_uint3_is_known() {
    assert!(divergent("rows_of_64").is_empty(), "{:#?}", findings());
    let col = findings()
        .iter()
        .find(|f| f["rule"] == "uncoalesced-global" && f["function"] == "rows_of_64")
        .expect("the column read is uncoalesced");
    assert_eq!(
        col["facts"]["block_dims"],
        serde_json::json!([64, 4, 1]),
        "{col:#?}"
    );
}
