//! issue 8, session 7: coalescing and bank-conflict precision (audit
//! 20261128 #45 and the coalescing self-audit, seed 7001): rows of
//! multi-element records per lane, pointer casts between element sizes,
//! channels written through `*(p + 3x + k)`, chunk loops through a local
//! sum, and shared tiles with a run-time row pitch. Each test has a
//! control that must still be reported.
//! Fixture: tests/fixtures/findings/coalesce/session7.cu.

mod common;

fn findings() -> Vec<serde_json::Value> {
    common::check_fixtures(&["findings/coalesce/session7.cu"])
}

use common::message;

fn banks_in<'a>(all: &'a [serde_json::Value], function: &str) -> Vec<&'a serde_json::Value> {
    all.iter()
        .filter(|f| f["function"] == function && f["rule"] == "shared-bank-conflict")
        .collect()
}

#[test]
fn rows_of_multi_element_pixels_are_not_blamed_on_the_rows() {
    let all = findings();
    let r = common::global_in(&all, "rgba_rows");
    // The four writes are one 16-byte pixel per lane: not reported.
    assert!(r.iter().all(|f| f["facts"]["access"] == "read"), "{r:#?}");
    assert_eq!(r.len(), 1, "{r:#?}");
    let m = message(r[0]);
    assert_eq!(r[0]["rule"], "uncoalesced-global", "{r:#?}");
    // Two rows of 16 pixels of 16 B: 16 sectors, as one run of 32 would
    // take; not "up to 18 … 2 rows of the warp, each a separate run".
    assert_eq!(r[0]["facts"]["cost"]["sectors"], 16, "{r:#?}");
    assert!(!m.contains("each a separate run"), "{m}");
    assert!(m.contains("the rows are not the cause"), "{m}");
    assert!(m.contains("16 B apart"), "{m}");
    // The byte pitch counts floats after the cast: `(pitch)/4`.
    assert!(m.contains("`(pitch)/4` is a multiple of 8"), "{m}");
    assert!(
        m.contains("stride 4 element(s) of 4 B per threadIdx.x"),
        "{m}"
    );
    // Control: runs of 16 B (rows of 4 lanes) are shorter than a sector.
    let n = common::global_in(&all, "narrow_pixel_rows");
    assert_eq!(n.len(), 2, "{n:#?}");
    assert!(
        n.iter()
            .all(|f| message(f).contains("8 rows of the warp, each a separate run")),
        "{n:#?}"
    );
}

#[test]
fn channels_written_through_pointer_sums_are_one_record() {
    let all = findings();
    let g = common::global_in(&all, "deref_channels");
    assert!(g.is_empty(), "{g:#?}");
    // Control: one channel alone is a stride-3 store.
    let c = common::global_in(&all, "deref_one_channel");
    assert_eq!(c.len(), 1, "{c:#?}");
    assert!(message(c[0]).contains("stride 3 element(s)"), "{c:#?}");
}

#[test]
fn a_chunk_loop_through_a_local_sum_is_one_chunk() {
    let all = findings();
    let g = common::global_in(&all, "chunk_through_local");
    assert!(g.is_empty(), "{g:#?}");
    // Control: without the counter the store is strided.
    let c = common::global_in(&all, "stride_through_local");
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!(c[0]["facts"]["cost"]["sectors"], 16, "{c:#?}");
}

#[test]
fn a_runtime_row_pitch_bounds_bank_conflicts_by_the_rows() {
    let all = findings();
    let t = banks_in(&all, "pitched_tile");
    assert_eq!(t.len(), 2, "{t:#?}");
    for f in &t {
        assert_eq!(f["facts"]["degree"], 2, "{f:#?}");
        assert_eq!(f["facts"]["rows"], 2, "{f:#?}");
        assert!(message(f).contains("up to a 2-way"), "{f:#?}");
        assert!(message(f).contains("replayed up to 2 times"), "{f:#?}");
    }
    // Control: the run-time factor on the lanes of one row.
    let s = banks_in(&all, "strided_tile");
    assert_eq!(s.len(), 2, "{s:#?}");
    for f in &s {
        assert_eq!(f["facts"]["degree"], 32, "{f:#?}");
        assert!(f["facts"]["rows"].is_null(), "{f:#?}");
    }
}

#[test]
fn warp_votes_do_not_split_a_record() {
    let all = findings();
    let g = common::global_in(&all, "flags_around_votes");
    assert!(g.is_empty(), "{g:#?}");
    // Control: a block barrier does.
    let c = common::global_in(&all, "flags_around_barrier");
    assert_eq!(c.len(), 2, "{c:#?}");
}
