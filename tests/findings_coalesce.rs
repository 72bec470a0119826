//! issue 8 audit (seed 20261126), coalescing and bank classes C1b, C1c, C3,
//! C4, C5, C6, M1, B2: accesses that reuse sectors the same thread already
//! touched, chunks filled by a loop, halo columns, once-per-launch guards
//! and two-word shared reads. Each test has a control that must still be
//! reported. Fixtures: tests/fixtures/findings/coalesce/.

mod common;

fn findings(file: &str) -> Vec<serde_json::Value> {
    common::check_fixtures(&[&format!("findings/coalesce/{file}")])
}

#[test]
fn a_reread_of_the_threads_own_element_is_not_reported_again() {
    let all = findings("reuse.cu");
    // rec[0]: reported on its first read (line 12), not on the re-read (13).
    let r = common::global_in(&all, "reread");
    let lines: Vec<u64> = r
        .iter()
        .filter(|f| f["facts"]["array"] == "rec")
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![12], "{r:#?}");
    // d[o5]: both stores are reported, the read-back between them is not.
    let b = common::global_in(&all, "readback");
    assert!(b.iter().all(|f| f["facts"]["access"] == "write"), "{b:#?}");
    assert_eq!(b.len(), 2, "{b:#?}");
}

#[test]
fn fields_updated_by_consecutive_statements_use_the_whole_element() {
    let all = findings("reuse.cu");
    assert!(common::global_in(&all, "accumulate").is_empty(), "{all:#?}");
}

#[test]
fn bytes_of_one_record_stored_one_by_one_are_one_access() {
    let all = findings("reuse.cu");
    assert!(common::global_in(&all, "flags3").is_empty(), "{all:#?}");
}

#[test]
fn stencil_neighbours_share_the_centres_sectors() {
    let all = findings("reuse.cu");
    assert!(common::global_in(&all, "smooth").is_empty(), "{all:#?}");
}

#[test]
fn a_loop_filling_each_lanes_chunk_is_coalesced() {
    let all = findings("layout.cu");
    assert!(common::global_in(&all, "scale4").is_empty(), "{all:#?}");
    // Control: chunks 8 apart still waste half of each sector.
    let h = common::global_in(&all, "half_chunk");
    assert_eq!(h.len(), 2, "{h:#?}");
    assert!(
        h.iter().all(|f| f["rule"] == "uncoalesced-global"),
        "{h:#?}"
    );
}

#[test]
fn a_halo_column_broadcast_to_wide_rows_is_not_reported() {
    let all = findings("layout.cu");
    let img: Vec<_> = common::global_in(&all, "halo")
        .into_iter()
        .filter(|f| f["facts"]["array"] == "img")
        .collect();
    assert!(img.is_empty(), "{img:#?}");
    // Control: 16 rows of 2 lanes read a 16-element column.
    let col: Vec<_> = common::global_in(&all, "narrow")
        .into_iter()
        .filter(|f| f["facts"]["array"] == "col")
        .collect();
    assert_eq!(col.len(), 1, "{col:#?}");
}

#[test]
fn a_guard_one_row_of_one_block_passes_is_not_reported() {
    let all = findings("layout.cu");
    assert!(common::global_in(&all, "edge").is_empty(), "{all:#?}");
    // Control: one row of every block, misaligned by one float.
    assert!(!common::global_in(&all, "edge_all").is_empty(), "{all:#?}");
}

#[test]
fn two_adjacent_words_of_one_statement_are_one_wide_shared_access() {
    let all = findings("layout.cu");
    let b: Vec<_> = all
        .iter()
        .filter(|f| f["function"] == "pairs" && f["rule"] == "shared-bank-conflict")
        .collect();
    assert!(b.is_empty(), "{b:#?}");
}

/// With `sector_bytes = 128` (GPUDrano's unit) the model counts each
/// instruction's transactions: reuse across statements does not apply.
#[test]
fn per_instruction_model_costs_each_statement() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_fixtures(dir.path(), &["findings/coalesce/reuse.cu"]);
    std::fs::write(
        dir.path().join("cudalog.toml"),
        "[cost]\nsector_bytes = 128\n",
    )
    .unwrap();
    let all = common::check_json(dir.path());
    assert_eq!(common::global_in(&all, "accumulate").len(), 4, "{all:#?}");
    let r: Vec<_> = common::global_in(&all, "reread")
        .into_iter()
        .filter(|f| f["facts"]["array"] == "rec")
        .collect();
    assert_eq!(r.len(), 2, "{r:#?}");
}
