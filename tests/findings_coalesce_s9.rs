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

#[test]
fn a_one_off_access_of_another_array_stays_a_warning() {
    let f = at(20);
    let first: Vec<_> = f
        .iter()
        .filter(|f| f["message"].as_str().unwrap().contains("`first["))
        .collect();
    assert_eq!(first.len(), 1, "{:#?}", findings());
    assert_eq!(first[0]["severity"], "warning", "{:#?}", first[0]);
}
