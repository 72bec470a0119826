//! issue 8, class 5: cost-model honesty. Fields of one element used by one
//! statement are fetched once; symbolic row strides with a constant offset
//! are misaligned rows ("up to", worst alignment); a thread index times a
//! uniform parameter is a symbolic stride; `[cost] sector_bytes = 128`
//! changes the findings; and (for the GPUDrano comparison) a kernel file
//! `#include`d after its definitions, with a pointer assigned after its
//! declaration, is analysed in its includer's scope.
//! Fixtures: tests/fixtures/findings/cost/.

mod common;

use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn findings(config: Option<&str>) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/findings/cost");
    copy_dir(&src, dir.path());
    if let Some(c) = config {
        std::fs::write(dir.path().join("cudalog.toml"), c).unwrap();
    }
    common::check_json(dir.path())
}

#[test]
fn fields_read_by_one_statement_are_fetched_once() {
    let all = findings(None);
    // p[i].x + p[i].y: every byte of the 8-byte element is used.
    assert!(
        common::global_in(&all, "both_fields").is_empty(),
        "{all:#?}"
    );
    // uchar4 .x/.y/.z: the skipped component is not waste worth a warning.
    assert!(common::global_in(&all, "rgb").is_empty(), "{all:#?}");
    // One field of two: reported, once.
    let one = common::global_in(&all, "one_field");
    assert_eq!(one.len(), 1, "{one:#?}");
    assert_eq!(one[0]["rule"], "uncoalesced-global");
    // Two small fields of a 32-byte element: one finding for the statement,
    // its minimum counting the 12 bytes the two fields span.
    let two = common::global_in(&all, "two_of_four");
    assert_eq!(two.len(), 1, "{two:#?}");
    assert_eq!(two[0]["facts"]["min_sectors"], 12);
    assert!(
        two[0]["message"].as_str().unwrap().contains("using 12 B"),
        "{two:#?}"
    );
}

#[test]
fn symbolic_rows_with_a_constant_offset_are_misaligned_up_to() {
    let all = findings(None);
    let rows = common::global_in(&all, "rows");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["rule"], "misaligned-global");
    let m = rows[0]["message"].as_str().unwrap();
    // Two rows of 16 floats: 4 sectors aligned, up to 6 misaligned.
    assert!(
        m.contains("up to 6 sectors") && m.contains("where 4"),
        "{m}"
    );
    assert_eq!(rows[0]["facts"]["cost"]["up_to"], 6);
}

#[test]
fn thread_index_times_a_uniform_parameter_is_a_symbolic_stride() {
    let all = findings(None);
    let s = common::global_in(&all, "sym_factor");
    assert_eq!(s.len(), 1, "{s:#?}");
    let m = s[0]["message"].as_str().unwrap();
    assert!(m.contains("up to") && m.contains("stride `m`"), "{m}");
}

#[test]
fn sector_bytes_128_changes_the_findings() {
    let all = findings(Some("[cost]\nsector_bytes = 128\n"));
    // Two rows of 64 bytes: 2 lines where 1 would hold them, for the
    // aligned write as well as the offset read.
    let rows = common::global_in(&all, "rows");
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(rows.iter().all(|r| r["rule"] == "uncoalesced-global"));
    assert_eq!(rows[0]["rule"], "uncoalesced-global");
    let m = rows[0]["message"].as_str().unwrap();
    assert!(
        m.contains("sectors of 128 B") && m.contains("where 1"),
        "{m}"
    );
    let one = common::global_in(&all, "one_field");
    assert!(
        one[0]["message"]
            .as_str()
            .unwrap()
            .contains("2 sectors of 128 B"),
        "{one:#?}"
    );
}

#[test]
fn an_included_kernel_file_sees_its_includers_definitions() {
    let all = findings(None);
    // `fp`, FOUR and THREADS come from defs.c, included by main.cu before
    // kern.cu; `fA` is assigned after its declaration.
    let k = common::global_in(&all, "kern");
    assert_eq!(k.len(), 1, "{all:#?}");
    assert_eq!(k[0]["file"], "inc/kern.cu");
    assert_eq!(k[0]["facts"]["elem_bytes"], 32);
    assert_eq!(k[0]["facts"]["bytes_per_thread"], 8);
    assert_eq!(k[0]["facts"]["block_dims"][0], 128);
}

#[test]
fn every_addend_of_a_dereferenced_sum_is_the_index() {
    let all = findings(None);
    let d = common::global_in(&all, "deref_sum");
    // *(m + size * tid + t): stride `size`; *(m + 128 * bid + tid): coalesced.
    assert_eq!(d.len(), 1, "{d:#?}");
    let m = d[0]["message"].as_str().unwrap();
    assert!(m.contains("stride `size`"), "{m}");
}

#[test]
fn fields_read_in_nearby_statements_are_fetched_once() {
    let all = findings(None);
    // Audit C1: `.x` in one statement, `.y` in the next: one fetch.
    assert!(
        common::global_in(&all, "fields_nearby").is_empty(),
        "{all:#?}"
    );
    // Fields read under two different `if`s: each read is costed on its
    // own. (Session 5, audit C1b: a write to the same element between two
    // field reads, `a = p[i].x; p[i].x = 0; b = p[i].y;`, no longer splits
    // them: the two reads use the whole element and are not reported.)
    let split = common::global_in(&all, "fields_split");
    let reads: Vec<u64> = split
        .iter()
        .filter(|f| f["facts"]["access"] == "read")
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(reads, vec![65, 66], "{split:#?}");
}
