//! `cudalog simulate` on workspace-example, against counts computed by hand.

use assert_cmd::Command;

fn example() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace-example")
}

#[test]
fn naive_transpose_sectors_by_hand() {
    // 64×64 floats, block (32, 8), grid (2, 2): every warp runs the loop
    // 4 times (j = 0, 8, 16, 24); a row read is 32 consecutive floats (4
    // sectors), a column write 32 rows apart (32 sectors): 4 × 36 = 144 per
    // warp, 32 warps. TILE_DIM and BLOCK_ROWS come from the included header.
    let out = Command::cargo_bin("cudalog")
        .unwrap()
        .args(["simulate", "--kernel", "transpose_naive", "--block", "32,8"])
        .args(["--grid", "2,2", "--set", "width=64", "--set", "height=64"])
        .args(["--format", "json"])
        .arg(example())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["whole_launch"]["sectors"], 4608);
    assert_eq!(v["max_per_warp"]["sectors"], 144);
    assert_eq!(v["whole_launch"]["conflicts"], 0);
    assert_eq!(v["file"], "transpose.cu");
}

#[test]
fn unknown_kernel_and_bad_dims_are_clear_errors() {
    let out = Command::cargo_bin("cudalog")
        .unwrap()
        .args(["simulate", "--kernel", "no_such_kernel"])
        .arg(example())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no kernel `no_such_kernel`"));
    let out = Command::cargo_bin("cudalog")
        .unwrap()
        .args(["simulate", "--kernel", "transpose_naive", "--block", "0,1"])
        .arg(example())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a positive integer"));
}
