//! `cudalog bounds`: the JSON record shape of issue 10, values under
//! `--set`/`--block`/`--grid`, and clear errors.

use std::process::Command;

fn cudalog(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cudalog"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs")
}

#[test]
fn json_records_have_the_issue_shape_and_values_when_set() {
    let out = cudalog(&[
        "bounds",
        "tests/fixtures/bounds",
        "--kernel",
        "vectorAdd",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let recs = v.as_array().expect("an array");
    assert_eq!(recs.len(), 8, "four metrics, two scopes");
    for r in recs {
        for k in [
            "file", "kernel", "metric", "scope", "bound", "status", "reason",
        ] {
            assert!(r.get(k).is_some(), "missing {k} in {r}");
        }
        assert_eq!(r["file"], "vector.cu");
        assert!(r.get("value").is_none(), "no values without --set");
        assert_eq!(r["status"], "ok");
    }
    let out = cudalog(&[
        "bounds",
        "tests/fixtures/bounds",
        "--kernel",
        "vector.cu:vectorAdd",
        "--block",
        "64",
        "--grid",
        "4",
        "--set",
        "n=200",
        "--format",
        "json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for r in v.as_array().expect("an array") {
        assert!(r["value"].is_number(), "a value for {r}");
    }
    // Two warps of 32 lanes, three 4-byte accesses of 128 aligned bytes each
    // (4 sectors), four blocks: at most 2 * 3 * 4 * 4 sectors.
    let whole = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "sectors" && r["scope"] == "whole_launch")
        .unwrap();
    assert!(whole["value"].as_f64().unwrap() <= 96.0, "{whole}");
}

#[test]
fn unknown_kernels_and_directories_are_clear_errors() {
    let out = cudalog(&["bounds", "tests/fixtures/bounds", "--kernel", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no kernel `nope`"));
    let out = cudalog(&["bounds", "no/such/dir"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such directory"));
}
