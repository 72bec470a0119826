//! issue 8, session 9 (audit 20261203 #45, boxFilter `od[y * w]`): an
//! uncoalesced access outside a loop whose pattern (same array, same lane
//! strides) a loop beside it repeats is a note that names the loop's
//! access; a one-off access of another array stays a warning. Fixture:
//! tests/fixtures/findings/coalesce_s9/kernels.cu.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| common::check_fixtures(&["findings/coalesce_s9/kernels.cu"]))
}

fn at(line: u64) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "uncoalesced-global" && f["line"] == line)
        .collect()
}

#[test]
fn a_one_off_access_repeated_by_a_loop_beside_it_is_a_note() {
    for (line, repeat) in [(6, 9), (7, 10)] {
        let f = at(line);
        assert_eq!(f.len(), 1, "line {line}: {:#?}", findings());
        assert_eq!(f[0]["severity"], "note", "{:#?}", f[0]);
        let m = f[0]["message"].as_str().unwrap();
        assert!(m.contains(&format!("at line {repeat}")), "{m}");
        assert!(m.contains("carries the cost"), "{m}");
    }
    // The loop's accesses stay warnings.
    for line in [9, 10] {
        let f = at(line);
        assert_eq!(f.len(), 1, "line {line}: {:#?}", findings());
        assert_eq!(f[0]["severity"], "warning", "{:#?}", f[0]);
    }
}

/// The one-off store to another array is not repeated by the loop's
/// accesses. (Session 14) It is a note for another reason: it runs once per
/// thread next to a loop that moves more sectors than it after a few
/// iterations, and the message says so.
#[test]
fn a_one_off_access_of_another_array_is_not_repeated_by_the_loop() {
    let f = at(20);
    let first: Vec<_> = f
        .iter()
        .filter(|f| f["message"].as_str().unwrap().contains("`first["))
        .collect();
    assert_eq!(first.len(), 1, "{:#?}", findings());
    let m = first[0]["message"].as_str().unwrap();
    assert!(!m.contains("carries the cost"), "{m}");
    assert!(m.contains("once per thread, outside every loop"), "{m}");
}

fn banks(line: u64) -> Vec<&'static serde_json::Value> {
    findings()
        .iter()
        .filter(|f| f["rule"] == "shared-bank-conflict" && f["line"] == line)
        .collect()
}

/// (audit 20261203 #11, lavaMD `rA_shared[wtx].y`) 8-byte elements take
/// two wavefronts per warp without any conflict: the message gives the
/// wavefronts against that baseline (8 where 2: a 4-fold replay), not an
/// "8-way" conflict.
#[test]
fn wide_elements_state_their_conflict_against_their_own_passes() {
    let b = banks(44);
    assert_eq!(b.len(), 1, "{:#?}", findings());
    let m = b[0]["message"].as_str().unwrap();
    assert!(m.contains("8 wavefronts where 2"), "{m}");
    assert!(m.contains("a 4-fold replay"), "{m}");
    assert!(!m.contains("8-way"), "{m}");
}

/// A second read of the same shared element by the same thread, nothing
/// written in between, is kept in a register: no second finding.
#[test]
fn a_shared_re_read_is_not_another_conflict() {
    assert!(banks(45).is_empty(), "{:#?}", banks(45));
}
