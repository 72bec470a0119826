//! issue 8, session 10 (audit 20261203 #14, myocyte `finavalu[i] =
//! 0.0001` under `isnan(finavalu[i])`): an uncoalesced access that runs only
//! for lanes whose value is NaN or infinite is a note that says so; one
//! under an ordinary data test stays a warning. Fixture:
//! tests/fixtures/findings/coalesce_s10/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/coalesce_s10/kernels.cu"]))
}

fn writes_at(line: u64) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| {
            f["rule"] == "uncoalesced-global"
                && f["line"] == line
                && f["message"].as_str().unwrap().starts_with("write")
        })
        .collect()
}

#[test]
fn a_fix_up_for_non_finite_values_is_a_note() {
    for (line, cond) in [(9, "isnan(rate["), (11, "isinf(rate[")] {
        let f = writes_at(line);
        assert_eq!(f.len(), 1, "line {line}: {:#?}", findings());
        assert_eq!(f[0]["severity"], "note", "{:#?}", f[0]);
        let m = f[0]["message"].as_str().unwrap();
        assert!(m.contains(&format!("where `{cond}")), "{m}");
        assert!(m.contains("holds, a fix-up"), "{m}");
        assert!(m.contains("non-finite"), "{m}");
    }
}

#[test]
fn a_store_under_an_ordinary_data_test_stays_a_warning() {
    let f = writes_at(17);
    assert_eq!(f.len(), 1, "{:#?}", findings());
    assert_eq!(f[0]["severity"], "warning", "{:#?}", f[0]);
    // The reads in the tests themselves run on every lane.
    let reads: Vec<_> = findings()
        .iter()
        .filter(|f| {
            f["rule"] == "uncoalesced-global"
                && f["line"] == 8
                && f["message"].as_str().unwrap().starts_with("read")
        })
        .collect();
    assert!(
        reads.iter().all(|f| f["severity"] == "warning"),
        "{reads:#?}"
    );
}

fn banks() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/coalesce_s10/banks.cu"]))
}

fn bank_at(line: u64) -> Vec<&'static serde_json::Value> {
    banks()
        .iter()
        .filter(|f| f["rule"] == "shared-bank-conflict" && f["line"] == line)
        .collect()
}

/// (audit 20261205 #11, lavaMD `rA_shared[wtx]` in the `j` loop) A shared
/// read that no iteration of its loop can change is loaded once before the
/// loop: a note naming the loop; a read whose index moves with the loop
/// stays a warning.
#[test]
fn a_loop_invariant_shared_read_is_a_note_naming_its_loop() {
    let f = bank_at(15);
    assert_eq!(f.len(), 1, "{:#?}", banks());
    assert_eq!(f[0]["severity"], "note", "{:#?}", f[0]);
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.contains("loop at line 14"), "{m}");
    assert!(m.contains("once per entry of the loop"), "{m}");
    let f = bank_at(18);
    assert_eq!(f.len(), 1, "{:#?}", banks());
    assert_eq!(f[0]["severity"], "warning", "{:#?}", f[0]);
}

/// (audit 20261205 #37, dwtHaar1D `shared[2 * tid + 1]`) A 2-way conflict
/// once per thread outside every loop is a note that says so; a wider one
/// outside loops, and the same 2-way read in a loop, stay warnings.
#[test]
fn a_two_way_conflict_once_per_thread_is_a_note() {
    let f = bank_at(31);
    assert_eq!(f.len(), 1, "{:#?}", banks());
    assert_eq!(f[0]["severity"], "note", "{:#?}", f[0]);
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("once per thread, outside every loop"),
        "{:#?}",
        f[0]
    );
    for line in [32, 35] {
        let f = bank_at(line);
        assert_eq!(f.len(), 1, "line {line}: {:#?}", banks());
        assert_eq!(f[0]["severity"], "warning", "{:#?}", f[0]);
    }
}

fn rows() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/coalesce_s10/rows.cu"]))
}

/// (audit 20261205 #38, postProcessGL `SMEM(tx, r + ty)`) Rows of
/// consecutive words a symbolic pitch apart, in a block whose width no
/// launch cudalog sees gives: the degree is the rows per warp, so a note
/// that gives the bound per block width instead of a bare "up to 32-way"
/// warning; a column read (lanes a pitch apart) stays a warning.
#[test]
fn rows_of_unknown_width_state_their_bound_per_block_width() {
    let at = |line: u64| -> Vec<&serde_json::Value> {
        rows()
            .iter()
            .filter(|f| f["rule"] == "shared-bank-conflict" && f["line"] == line)
            .collect()
    };
    let f = at(6);
    assert_eq!(f.len(), 1, "{:#?}", rows());
    assert_eq!(f[0]["severity"], "note", "{:#?}", f[0]);
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.contains("32 / blockDim.x rows"), "{m}");
    assert!(m.contains("2 for 16-wide blocks"), "{m}");
    let f = at(8);
    assert_eq!(f.len(), 1, "{:#?}", rows());
    assert_eq!(f[0]["severity"], "warning", "{:#?}", f[0]);
}

fn compaction() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/coalesce_s10/compaction.cu"]))
}

/// (audit 20261205 #44, marchingCubes `pos[numVertsScanned[voxel] + i]`)
/// A loaded base plus the counter of a unit-step loop around the access:
/// each lane writes a contiguous run across the loop, so a note that names
/// the loop; a gather through a loaded index stays a warning.
#[test]
fn a_loaded_base_plus_a_loop_counter_is_a_per_lane_run() {
    let at = |line: u64| -> Vec<&serde_json::Value> {
        compaction()
            .iter()
            .filter(|f| f["rule"] == "uncoalesced-global" && f["line"] == line)
            .collect()
    };
    let f = at(9);
    let run: Vec<_> = f
        .iter()
        .filter(|f| f["message"].as_str().unwrap().starts_with("write of `out"))
        .collect();
    assert_eq!(run.len(), 1, "{:#?}", compaction());
    assert_eq!(run[0]["severity"], "note", "{:#?}", run[0]);
    let m = run[0]["message"].as_str().unwrap();
    assert!(m.contains("loop at line 7"), "{m}");
    assert!(m.contains("each lane writes a contiguous run"), "{m}");
    // (Session 14) The gather through the loaded index is a note that says
    // its cost is the loaded values.
    let g = at(12);
    assert!(
        g.iter().any(|f| f["severity"] == "note"
            && f["message"].as_str().unwrap().contains("`g[")
            && f["message"].as_str().unwrap().contains("as a gather")),
        "{:#?}",
        compaction()
    );
}
