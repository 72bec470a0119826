//! issue 8 audit (seed 20261127), coalescing classes of session 6: rows of
//! wide elements (#42), a two-sided stencil halo in one statement (#36), a
//! read-back after stores on both sides of an `if` (#18), gathers through
//! a loaded index (#14) and small strided accesses next to a streamed
//! matrix (#43, #46). Each test has a control that must still be reported.
//! Fixture: tests/fixtures/findings/coalesce/session6.cu.

mod common;

fn findings() -> Vec<serde_json::Value> {
    common::check_fixtures(&["findings/coalesce/session6.cu"])
}

use common::message;

#[test]
fn one_field_of_wide_elements_is_blamed_on_the_layout_not_the_rows() {
    let all = findings();
    let r = common::global_in(&all, "field_rows");
    assert_eq!(r.len(), 1, "{r:#?}");
    let m = message(r[0]);
    assert_eq!(r[0]["rule"], "uncoalesced-global", "{r:#?}");
    // 8 sectors (two per row of 8 `cplx`), not "up to 12" from rows.
    assert_eq!(r[0]["facts"]["cost"]["sectors"], 8, "{r:#?}");
    assert!(
        m.contains("using 4 B (at offset 4) of each 8-byte element"),
        "{m}"
    );
    assert!(!m.contains("each a separate run"), "{m}");
    assert!(m.contains("when `width` is a multiple of 4"), "{m}");
    // Control: rows of 4 lanes of 4-byte elements are the cause.
    let n = common::global_in(&all, "narrow_rows");
    let read = n
        .iter()
        .find(|f| f["facts"]["access"] == "read")
        .expect("narrow_rows read reported");
    assert!(message(read).contains("each a separate run"), "{n:#?}");
}

#[test]
fn a_two_sided_halo_in_one_statement_is_not_misaligned() {
    let all = findings();
    assert!(common::global_in(&all, "halo_pair").is_empty(), "{all:#?}");
    // Control: the shifted read alone stays a misaligned note.
    let s = common::global_in(&all, "shifted");
    assert_eq!(s.len(), 1, "{s:#?}");
    assert_eq!(s[0]["rule"], "misaligned-global", "{s:#?}");
}

#[test]
fn a_read_back_after_stores_on_both_sides_of_an_if_is_not_reported() {
    let all = findings();
    let reads = |func: &str| -> Vec<u64> {
        common::global_in(&all, func)
            .iter()
            .filter(|f| f["facts"]["array"] == "w" && f["facts"]["access"] == "read")
            .map(|f| f["line"].as_u64().unwrap())
            .collect()
    };
    assert!(reads("store_both_sides").is_empty(), "{all:#?}");
    // The stores keep the layout's cost.
    let stores = common::global_in(&all, "store_both_sides")
        .iter()
        .filter(|f| f["facts"]["array"] == "w" && f["facts"]["access"] == "write")
        .count();
    assert_eq!(stores, 2, "{all:#?}");
    // Control: a store on one side only.
    assert_eq!(reads("store_one_side").len(), 1, "{all:#?}");
}

#[test]
fn a_gather_says_when_it_is_coalesced() {
    let all = findings();
    let g = common::global_in(&all, "gather_table");
    assert_eq!(g.len(), 1, "{g:#?}");
    let m = message(g[0]);
    assert!(m.contains("loaded for `next[i]`"), "{m}");
    assert!(
        m.contains("consecutive lanes at consecutive positions"),
        "{m}"
    );
}

#[test]
fn a_small_share_of_the_traffic_is_a_note_with_its_share() {
    let all = findings();
    let d = common::global_in(&all, "diag_small");
    let diag: Vec<_> = d
        .iter()
        .filter(|f| f["facts"]["index"] == "[i * 513]")
        .collect();
    assert_eq!(diag.len(), 1, "{d:#?}");
    assert_eq!(diag[0]["severity"], "note", "{d:#?}");
    assert!(
        message(diag[0]).contains("% of the kernel's estimated"),
        "{d:#?}"
    );
    let share = diag[0]["facts"]["traffic_share_permille"].as_u64().unwrap();
    assert!(share <= 50, "{d:#?}");
    // Control: the same access as the kernel's main traffic.
    let o = common::global_in(&all, "diag_only");
    assert_eq!(o.len(), 1, "{o:#?}");
    assert_eq!(o[0]["severity"], "warning", "{o:#?}");
}

#[test]
fn the_share_threshold_is_a_cost_key() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_fixtures(dir.path(), &["findings/coalesce/session6.cu"]);
    std::fs::write(
        dir.path().join("cudalog.toml"),
        "[cost]\nsmall_access_percent = 0\n",
    )
    .unwrap();
    let all = common::check_json(dir.path());
    let d = common::global_in(&all, "diag_small");
    assert!(
        d.iter()
            .filter(|f| f["facts"]["index"] == "[i * 513]")
            .all(|f| f["severity"] == "warning"),
        "{d:#?}"
    );
}

#[test]
fn a_sparse_sample_says_what_share_of_its_range_it_fetches() {
    let all = findings();
    let t = common::global_in(&all, "segment_tops");
    let reads: Vec<_> = t
        .iter()
        .filter(|f| f["facts"]["access"] == "read")
        .collect();
    assert_eq!(reads.len(), 1, "{t:#?}");
    let m = message(reads[0]);
    assert!(m.contains("a sparse sample"), "{m}");
    assert!(m.contains("1/128 of the sectors"), "{m}");
    // Control: other blocks read the elements between the lanes'.
    let c = common::global_in(&all, "column_read");
    assert_eq!(c.len(), 1, "{c:#?}");
    assert!(!message(c[0]).contains("sparse"), "{c:#?}");
}
