//! Launch dimensions through the real pipeline (files on disk → Indexer →
//! salsa queries): template argument values agreed by every launch site, and
//! device functions analysed with the block dimensions of the kernels that
//! call them.

use cudalog::config::Config;
use cudalog::db::{self, ExecutionLog};
use cudalog::facts::LaunchDims;
use cudalog::index::Indexer;
use std::path::Path;

/// Index `files` (path, text) in a fresh temporary workspace.
fn index(files: &[(&str, &str)]) -> (tempfile::TempDir, Indexer) {
    index_logged(files, None)
}

fn index_logged(files: &[(&str, &str)], log: Option<ExecutionLog>) -> (tempfile::TempDir, Indexer) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    let mut ix = Indexer::new(dir.path(), Config::default(), log);
    ix.load_all().unwrap();
    (dir, ix)
}

/// The launch dimensions `function_analysis` used for the function `name`.
fn launch_of(ix: &mut Indexer, name: &str) -> LaunchDims {
    ix.sync();
    let f = ix
        .find(name)
        .unwrap_or_else(|| panic!("no function named {name}"));
    db::function_analysis(ix.db(), f).launch
}

fn values(l: &LaunchDims, n: usize) -> Vec<Option<i64>> {
    l.template_values[..n].to_vec()
}

const TILE_KERNEL: &str =
    "template <int TILE> __global__ void k(float* a) { a[threadIdx.x * TILE] = 0; }\n";

#[test]
fn one_launch_site_gives_the_template_value() {
    let src = format!("{TILE_KERNEL}void run(float* p) {{ k<4><<<1, 32>>>(p); }}\n");
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    let l = launch_of(&mut ix, "k");
    assert_eq!(l.template_values[0], Some(4));
    assert_eq!(l.block, [Some(32), Some(1), Some(1)]);
    assert!(l.template_values[1..].iter().all(Option::is_none));
}

#[test]
fn sites_that_disagree_leave_the_value_unknown() {
    let src = format!(
        "{TILE_KERNEL}void run(float* p) {{ k<4><<<1, 32>>>(p); }}\n\
         void run2(float* p) {{ k<8><<<1, 32>>>(p); }}\n"
    );
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    let l = launch_of(&mut ix, "k");
    assert_eq!(l.template_values[0], None);
    assert_eq!(l.block, [Some(32), Some(1), Some(1)]);

    // Sites in different files that agree (one through a macro).
    let (_d, mut ix) = index(&[
        ("k.cu", TILE_KERNEL),
        ("a.cu", "void run(float* p) { k<4><<<1, 32>>>(p); }\n"),
        (
            "b.cu",
            "#define FOUR 4\nvoid run2(float* p) { k<FOUR><<<2, 32>>>(p); }\n",
        ),
    ]);
    assert_eq!(launch_of(&mut ix, "k").template_values[0], Some(4));

    // A kernel defined in a `.h` header: its definition still gives the
    // parameter positions.
    let (_d, mut ix) = index(&[
        ("k.h", TILE_KERNEL),
        (
            "a.cu",
            "#include \"k.h\"\nvoid run(float* p) { k<4><<<1, 32>>>(p); }\n",
        ),
    ]);
    assert_eq!(launch_of(&mut ix, "k").template_values[0], Some(4));
}

#[test]
fn constant_names_and_literals_as_arguments() {
    let cases = [
        ("#define T 16\n", "", "T"),
        ("const int T = 16;\n", "", "T"),
        ("constexpr int T = 16;\n", "", "T"),
        ("enum { T = 16 };\n", "", "T"),
        ("", "const int T = 16;", "T"),
        ("", "constexpr int T = 16;", "T"),
        ("#define T 8\n", "", "T * 2"),
        ("", "", "16u"),
        ("", "", "0x10"),
        ("", "", "(4 << 2)"),
    ];
    for (globals, locals, arg) in cases {
        let src = format!(
            "{globals}{TILE_KERNEL}void run(float* p) {{ {locals} k<{arg}><<<1, 32>>>(p); }}\n"
        );
        let (_d, mut ix) = index(&[("a.cu", &src)]);
        assert_eq!(
            launch_of(&mut ix, "k").template_values[0],
            Some(16),
            "{globals}|{locals}|{arg}"
        );
    }
    let src = "template <bool B> __global__ void k(float* a) { if (B) a[threadIdx.x] = 0; }\n\
               void run(float* p) { k<true><<<1, 32>>>(p); }\n";
    let (_d, mut ix) = index(&[("a.cu", src)]);
    assert_eq!(launch_of(&mut ix, "k").template_values[0], Some(1));
}

#[test]
fn arguments_that_are_not_constant_stay_unknown() {
    let cases = [
        // A parameter of the launching function hides the global constant.
        "const int T = 16;\nvoid run(float* p, int T) { k<T><<<1, 32>>>(p); }\n",
        // A local that is assigned again.
        "void run(float* p) { int T = 16; T += 1; k<T><<<1, 32>>>(p); }\n",
        // A template parameter of a launching host template.
        "const int T = 16;\ntemplate <int T> void run(float* p) { k<T><<<1, 32>>>(p); }\n",
        // Unknown name, and something that is not an integer expression.
        "void run(float* p) { k<SOMEWHERE><<<1, 32>>>(p); }\n",
        "void run(float* p) { k<sizeof(float)><<<1, 32>>>(p); }\n",
    ];
    for host in cases {
        let src = format!("{TILE_KERNEL}{host}");
        let (_d, mut ix) = index(&[("a.cu", &src)]);
        assert_eq!(launch_of(&mut ix, "k").template_values[0], None, "{host}");
    }
    // One site that cannot be evaluated makes the position unknown.
    let src = format!(
        "{TILE_KERNEL}void run(float* p) {{ k<4><<<1, 32>>>(p); }}\n\
         void run2(float* p, int n) {{ k<n><<<1, 32>>>(p); }}\n"
    );
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    assert_eq!(launch_of(&mut ix, "k").template_values[0], None);
}

#[test]
fn type_parameters_are_none_and_keep_positions() {
    let src = "template <typename F, int N> __global__ void k(F* a) { a[threadIdx.x * N] = 0; }\n\
               void run(float* p) { k<float, 64><<<1, 32>>>(p); }\n";
    let (_d, mut ix) = index(&[("a.cu", src)]);
    assert_eq!(
        values(&launch_of(&mut ix, "k"), 3),
        vec![None, Some(64), None]
    );

    // A defaulted trailing parameter without an argument stays unknown.
    let src = "template <int A, int B = 2> __global__ void k(float* a) { a[threadIdx.x * A * B] = 0; }\n\
               void run(float* p) { k<3><<<1, 32>>>(p); k<3, 2><<<1, 32>>>(p); }\n";
    let (_d, mut ix) = index(&[("a.cu", src)]);
    assert_eq!(values(&launch_of(&mut ix, "k"), 2), vec![Some(3), None]);

    // An unnamed parameter would shift positions: nothing after it is trusted.
    let src = "template <int, int N> __global__ void k(float* a) { a[threadIdx.x * N] = 0; }\n\
               void run(float* p) { k<3, 4><<<1, 32>>>(p); }\n";
    let (_d, mut ix) = index(&[("a.cu", src)]);
    assert_eq!(values(&launch_of(&mut ix, "k"), 2), vec![None, None]);

    // A pack takes every further argument.
    let src = "template <int N, int... Ms> __global__ void k(float* a) { a[threadIdx.x * N] = 0; }\n\
               void run(float* p) { k<5, 6, 7><<<1, 32>>>(p); }\n";
    let (_d, mut ix) = index(&[("a.cu", src)]);
    assert_eq!(
        values(&launch_of(&mut ix, "k"), 3),
        vec![Some(5), None, None]
    );
}

#[test]
fn block_from_a_local_constant_of_the_launching_function() {
    let src =
        format!("{TILE_KERNEL}void run(float* p) {{ const int BS = 128; k<BS><<<4, BS>>>(p); }}\n");
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    let l = launch_of(&mut ix, "k");
    assert_eq!(l.block, [Some(128), Some(1), Some(1)]);
    assert_eq!(l.template_values[0], Some(128));

    let src = format!(
        "{TILE_KERNEL}void run(float* p) {{ const int BS = 16; dim3 b(BS, 2); k<BS><<<4, b>>>(p); }}\n"
    );
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    let l = launch_of(&mut ix, "k");
    assert_eq!(l.block, [Some(16), Some(2), Some(1)]);
    assert_eq!(l.template_values[0], Some(16));
}

const DEVICE: &str = "__device__ void store(float* a) { a[threadIdx.y * blockDim.x + threadIdx.x] = 0; }\n\
                      __device__ void mid(float* a, int n) { if (n > 0) mid(a, n - 1); store(a); }\n";

#[test]
fn device_functions_get_their_calling_kernels_block() {
    // Directly and through a recursive device function.
    let src = format!(
        "{DEVICE}__global__ void k1(float* a) {{ store(a); }}\n\
         __global__ void k2(float* a) {{ mid(a, 3); }}\n\
         void run(float* p) {{ k1<<<1, dim3(16, 16)>>>(p); k2<<<1, dim3(16, 16)>>>(p); }}\n"
    );
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    assert_eq!(
        launch_of(&mut ix, "store").block,
        [Some(16), Some(16), Some(1)]
    );
    assert_eq!(
        launch_of(&mut ix, "mid").block,
        [Some(16), Some(16), Some(1)]
    );
    assert!(
        launch_of(&mut ix, "store")
            .template_values
            .iter()
            .all(Option::is_none)
    );
}

#[test]
fn device_functions_called_by_kernels_that_disagree() {
    let src = format!(
        "{DEVICE}__global__ void k1(float* a) {{ store(a); }}\n\
         __global__ void k2(float* a) {{ mid(a, 3); }}\n\
         void run(float* p) {{ k1<<<1, dim3(16, 16)>>>(p); k2<<<1, dim3(16, 8)>>>(p); }}\n"
    );
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    assert_eq!(launch_of(&mut ix, "store").block, [Some(16), None, Some(1)]);
    // `mid` is reached from k2 only.
    assert_eq!(
        launch_of(&mut ix, "mid").block,
        [Some(16), Some(8), Some(1)]
    );
}

#[test]
fn device_functions_without_calling_kernels_get_the_default_block() {
    let src = format!("{DEVICE}void host_only(float* p) {{ store(p); }}\n");
    let (_d, mut ix) = index(&[("a.cu", &src)]);
    let default = Config::default().launch.block.map(Some);
    assert_eq!(launch_of(&mut ix, "store").block, default);
    assert_eq!(launch_of(&mut ix, "mid").block, default);
}

#[test]
fn editing_a_kernel_body_does_not_reanalyse_its_device_callees() {
    let src = format!(
        "{DEVICE}__global__ void k1(float* a) {{ store(a); }}\n\
         void run(float* p) {{ k1<<<1, dim3(16, 16)>>>(p); }}\n"
    );
    let log = ExecutionLog::default();
    let other = "__global__ void k2(float* a) { a[threadIdx.x] = 0; }\n\
                 void run2(float* p) { k2<<<1, 64>>>(p); }\n";
    let (dir, mut ix) = index_logged(&[("a.cu", &src), ("b.cu", other)], Some(log.clone()));
    assert_eq!(
        launch_of(&mut ix, "store").block,
        [Some(16), Some(16), Some(1)]
    );
    assert_eq!(launch_of(&mut ix, "k2").block, [Some(64), Some(1), Some(1)]);
    let count =
        |l: &[String], q: &str| l.iter().filter(|e| e.starts_with(&format!("{q}("))).count();

    // Edit k1's body without touching its calls: only k1 is analysed again.
    log.take();
    let edited = src.replace("{ store(a); }", "{ float* b = a; store(b); }");
    assert_ne!(edited, src);
    ix.set_file_bytes(Path::new("a.cu"), edited.as_bytes());
    assert_eq!(
        launch_of(&mut ix, "store").block,
        [Some(16), Some(16), Some(1)]
    );
    launch_of(&mut ix, "k1");
    assert_eq!(launch_of(&mut ix, "k2").block, [Some(64), Some(1), Some(1)]);
    let l = log.take();
    assert_eq!(count(&l, "function_analysis"), 1, "{l:?}");
    // Launches and calls are unchanged: the edited file's symbols are
    // derived again, but no name entry changes, so no cross-function query
    // runs again; k1's call arguments are recomputed and found equal, so
    // its callee's parameter facts are not re-derived either.
    assert_eq!(count(&l, "file_symbols"), 1, "{l:?}");
    assert_eq!(count(&l, "function_call_args"), 1, "{l:?}");
    assert_eq!(count(&l, "launch_dims"), 0, "{l:?}");
    assert_eq!(count(&l, "param_facts"), 0, "{l:?}");
    assert_eq!(count(&l, "device_launch_dims"), 0, "{l:?}");
    assert_eq!(count(&l, "device_summary"), 0, "{l:?}");

    // Change the launch: the device function follows.
    let relaunched = edited.replace("dim3(16, 16)", "dim3(32, 4)");
    ix.set_file_bytes(Path::new("a.cu"), relaunched.as_bytes());
    assert_eq!(
        launch_of(&mut ix, "store").block,
        [Some(32), Some(4), Some(1)]
    );
    drop(dir);
}
