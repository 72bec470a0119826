//! issue 8, class 1: thread-index facts through host code. Block sizes
//! reach the kernel through `int` locals (non-const, assigned once), `dim3`
//! members and simple arithmetic; where the value stays unknown, the launch's
//! dimensionality is still known (an `int` block size leaves y = z = 1).

mod common;

use cudalog::config::Config;
use cudalog::db;
use cudalog::facts::LaunchDims;
use cudalog::index::Indexer;

fn launch_of(files: &[(&str, &str)], name: &str) -> LaunchDims {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    let mut ix = Indexer::new(dir.path(), Config::default(), None);
    ix.load_all().unwrap();
    ix.sync();
    let f = ix
        .find(name)
        .unwrap_or_else(|| panic!("no function named {name}"));
    db::function_analysis(ix.db(), f).launch
}

const K: &str = "__global__ void k(float* a) { a[threadIdx.x] = 0; }\n";

fn block(host: &str) -> [Option<u32>; 3] {
    let src = format!("{K}{host}");
    launch_of(&[("a.cu", &src)], "k").block
}

#[test]
fn block_size_through_a_plain_int_local() {
    assert_eq!(
        block("void run(float* p) { int bs = 256; k<<<10, bs>>>(p); }\n"),
        [Some(256), Some(1), Some(1)]
    );
}

#[test]
fn block_size_through_arithmetic_on_constants() {
    assert_eq!(
        block("#define T 64\nvoid run(float* p) { const int w = 2; k<<<10, T * w>>>(p); }\n"),
        [Some(128), Some(1), Some(1)]
    );
    assert_eq!(
        block("void run(float* p) { int bs = 16; k<<<10, bs << 2>>>(p); }\n"),
        [Some(64), Some(1), Some(1)]
    );
}

#[test]
fn block_size_through_dim3_members() {
    assert_eq!(
        block("void run(float* p) { dim3 b; b.x = 32; b.y = 8; k<<<10, b>>>(p); }\n"),
        [Some(32), Some(8), Some(1)]
    );
    assert_eq!(
        block("void run(float* p) { dim3 b(16, 16); b.y = 4; k<<<10, b>>>(p); }\n"),
        [Some(16), Some(4), Some(1)]
    );
}

#[test]
fn an_int_parameter_is_one_dimensional() {
    // An `int` block size has y = z = 1; its value comes from the callers
    // in the file (session 7), when they all pass the same constant.
    let host = "void run(float* p, int bs) { k<<<10, bs>>>(p); }\n\
                void main2(float* p) { run(p, 128); }\n";
    assert_eq!(block(host), [Some(128), Some(1), Some(1)]);
    let disagree = "void run(float* p, int bs) { k<<<10, bs>>>(p); }\n\
                    void main2(float* p) { run(p, 128); run(p, 64); }\n";
    assert_eq!(block(disagree), [None, Some(1), Some(1)]);
}

#[test]
fn unknown_values_keep_the_dimensionality() {
    assert_eq!(
        block("int f();\nvoid run(float* p) { int bs = f(); k<<<10, bs>>>(p); }\n"),
        [None, Some(1), Some(1)]
    );
    assert_eq!(
        block("int f();\nvoid run(float* p) { dim3 b(f(), f()); k<<<10, b>>>(p); }\n"),
        [None, None, Some(1)]
    );
}

fn divergent(function: &str) -> usize {
    let all = common::check_fixtures(&["findings/warps.cu"]);
    all.iter()
        .filter(|f| f["function"] == function && f["rule"] == "divergent-branch")
        .count()
}

#[test]
fn conditions_that_hold_for_whole_warps_are_not_divergence() {
    // Audit D3: threadIdx.y < 2 with 16 x 4 blocks.
    assert_eq!(divergent("rows_of_warps"), 0);
    // Audit D6: threadIdx.x / 32 in a one-dimensional block of unknown size.
    assert_eq!(divergent("warp_index"), 0);
    // threadIdx.y < 1 with 16-wide rows splits every first warp.
    assert_eq!(divergent("rows_split"), 1);
}
