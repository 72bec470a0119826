//! issue 8, session 16: warps kept out by an `if`'s own conjuncts, block
//! sizes named by undefined macros at the launch, short tree reductions,
//! and double operations outside the loops that repeat the work. Fixtures:
//! tests/fixtures/findings/s16/{kernels.cu,weights.cuh}.

mod common;

use std::sync::OnceLock;

fn findings() -> &'static [serde_json::Value] {
    static ALL: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    ALL.get_or_init(|| {
        common::check_fixtures(&["findings/s16/kernels.cu", "findings/s16/weights.cuh"])
    })
}

fn of(function: &str, rule: &str) -> Vec<&'static serde_json::Value> {
    common::rule_in(findings(), function, rule)
}

use common::message;

/// (audit 20261232 #25: shfl_scan's `warp_id == 0 && lane_id < n`) A
/// conjunct that thread indices decide per warp keeps the other warps out,
/// even with the block's width unknown: one warp can split, a note. The
/// lane test alone still splits every warp, a warning.
#[test]
fn a_warp_test_in_the_same_condition_keeps_other_warps_out() {
    let d = of("warp_sums", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(m.contains("in the one warp of the block"), "{m}");
    assert!(m.contains("every warp that reaches it can split"), "{m}");
    let l = of("lane_sums", "divergent-branch");
    assert_eq!(l.len(), 1, "{:#?}", findings());
    assert_eq!(l[0]["severity"], "warning", "{:#?}", l[0]);
    assert!(message(l[0]).contains("in every warp"), "{}", message(l[0]));
}

/// (audits 20261226, 20261232 #40: imageDenoising's kernel headers) A row
/// stride written as the undefined macro the launch also gives as the
/// block's width is blockDim.x: `ty * BLOCKDIM_X + tx` is the linear thread
/// index, conflict-free. The transposed read keeps its finding.
#[test]
fn a_row_stride_named_like_the_launch_width_is_the_linear_index() {
    let d = of("weights", "shared-bank-conflict");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["line"], 13, "{:#?}", d[0]);
}

/// (audits 20261231 #25, 20261232 #34: MonteCarlo's `tile32.thread_rank()
/// < i`, i = 16 … 1) A warp's halving reduction of eight operations, in a
/// loop of five known steps that sits in no loop: a note with the issue
/// slots in all.
#[test]
fn a_short_tree_reduction_states_its_total() {
    let d = of("tree_tail", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(m.contains("runs 5 times"), "{m}");
    assert!(m.contains("about 40 issue slots in all"), "{m}");
}

/// (audit 20261232 #35: vulkanImageCUDA's `1.0 / width` once per mip
/// level) Double operations in a loop but outside the loop it holds are a
/// note; one in the inner loop keeps the warning.
#[test]
fn double_operations_outside_the_inner_loops_are_a_note() {
    let d = of("mip_rows", "fp64_arithmetic");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("outside the loops it holds"),
        "{}",
        message(d[0])
    );
    let i = of("mip_rows_inner", "fp64_arithmetic");
    assert_eq!(i.len(), 1, "{:#?}", findings());
    assert_eq!(i[0]["severity"], "warning", "{:#?}", i[0]);
}

/// (audit 20261230 #54: llm.c's `idx < N` with `idx = (blockIdx.x *
/// blockDim.x + threadIdx.x) * x128::size`) A guard on the global index of
/// a 1-D launch, scaled by a factor cudalog does not know, is a grid-edge
/// guard (at most one warp of the grid splits): not reported. The same
/// test on a block-local index splits one warp per block: still a note.
#[test]
fn a_scaled_global_index_guard_is_a_grid_edge() {
    let d = of("scale8", "divergent-branch");
    assert!(d.is_empty(), "{d:#?}");
    let l = of("scale8_local", "divergent-branch");
    assert_eq!(l.len(), 1, "{:#?}", findings());
    assert!(
        message(l[0]).contains("one warp per block"),
        "{}",
        message(l[0])
    );
}

/// (audit 20261231 #60: llm.c's matmul_backward_bias reorder) An 8-way
/// conflict outside every loop, in a kernel whose loop of unknown length
/// does the global memory work, is paid once per thread: a note with the
/// extra wavefronts. In the loop it stays a warning.
#[test]
fn a_conflict_once_per_thread_next_to_the_work_loop_is_a_note() {
    let d = of("reorder", "shared-bank-conflict");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("7 extra wavefront(s) per warp in all"),
        "{}",
        message(d[0])
    );
    let e = of("reorder_each", "shared-bank-conflict");
    assert_eq!(e.len(), 1, "{:#?}", findings());
    assert_eq!(e[0]["severity"], "warning", "{:#?}", e[0]);
}

/// (audits 20261230 #27, 20261232 #25: shfl_scan's `if (lane_id >= i)`
/// after `__shfl_up_sync(…, i)`) The guard of a shuffle scan is the scan
/// itself: not reported.
#[test]
fn a_shuffle_scan_guard_is_not_divergence() {
    let d = of("warp_scan", "divergent-branch");
    assert!(d.is_empty(), "{d:#?}");
}

/// (audit 20261232 #52: llm.c's attention_forward causal mask) `t2 = idx %
/// T` tested against `t = (idx / T) % T`, which is the same in each group
/// of T consecutive threads: one run per group, a note. A bound that
/// changes within the group (`idx / 7`) keeps the warning.
#[test]
fn a_bound_fixed_per_group_of_the_modulus_splits_one_warp_per_group() {
    let d = of("causal_mask", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("at most one warp per group"),
        "{}",
        message(d[0])
    );
    let s = of("causal_skew", "divergent-branch");
    assert_eq!(s.len(), 1, "{:#?}", findings());
    assert_eq!(s[0]["severity"], "warning", "{:#?}", s[0]);
}

/// (audit 20261233 #30: cuda-samples' FDTD3d, whose `src/` file includes
/// `"FDTD3dGPU.h"` from `inc/`) A quoted include not beside its includer is
/// looked for in the conventional `../inc` directory: the block width it
/// defines (32) makes `threadIdx.y < 4` the same in every lane of a warp.
/// Without that header the width is unknown and the branch is reported.
#[test]
fn a_header_in_the_sibling_inc_directory_is_included() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let inc = dir.path().join("inc");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&inc).unwrap();
    std::fs::write(inc.join("halo.h"), "#define TILE_X 32\n").unwrap();
    let kernel = "#include \"halo.h\"\n\
        __global__ void halo(float *o, const float *in, int stride) {\n\
        \x20   __shared__ float tile[24][32];\n\
        \x20   int i = blockIdx.x * 32 + threadIdx.y * stride + threadIdx.x;\n\
        \x20   if (threadIdx.y < 4) {\n\
        \x20       tile[threadIdx.y][threadIdx.x] = in[i - 4 * stride];\n\
        \x20       tile[threadIdx.y + 20][threadIdx.x] = in[i + 16 * stride];\n\
        \x20   }\n\
        \x20   __syncthreads();\n\
        \x20   o[i] = tile[threadIdx.y + 4][threadIdx.x];\n\
        }\n\
        void run(float *o, const float *in, int stride, int rows) {\n\
        \x20   dim3 b;\n\
        \x20   b.x = TILE_X;\n\
        \x20   b.y = rows;\n\
        \x20   halo<<<64, b>>>(o, in, stride);\n\
        }\n";
    std::fs::write(src.join("halo.cu"), kernel).unwrap();
    let all = common::check_json(dir.path());
    let d = common::rule_in(&all, "halo", "divergent-branch");
    assert!(d.is_empty(), "{d:#?}");
    std::fs::remove_file(inc.join("halo.h")).unwrap();
    let all = common::check_json(dir.path());
    let d = common::rule_in(&all, "halo", "divergent-branch");
    assert_eq!(d.len(), 1, "{all:#?}");
}

/// (audits 20261230 #39/#40/#42, 20261234 #40: SobelFilter's and
/// FunctionPointers' tex2D staging copies) A 2-way store of a value the
/// same statement loads from global memory is bounded by the load: a note
/// that says so. A 2-way store of a computed value stays a warning.
#[test]
fn a_two_way_staging_store_is_bounded_by_its_load() {
    let d = of("stage_rows", "shared-bank-conflict");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(message(d[0]).contains("staging copy"), "{}", message(d[0]));
    let w = of("scale_rows", "shared-bank-conflict");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (audits 20261227 #1/#2, 20261229 #3, 20261231 #1, 20261234 #3:
/// particlefilter's CDF search) A taken side that records where the search
/// stopped in a register and leaves the loop is an early exit: a note that
/// says so. One that stores to memory before leaving is not.
#[test]
fn a_search_exit_that_records_a_register_is_an_early_exit() {
    let d = of("find_index", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("a search's exit"),
        "{}",
        message(d[0])
    );
    let s = of("find_index_store", "divergent-branch");
    assert_eq!(s.len(), 1, "{:#?}", findings());
    assert!(!message(s[0]).contains("early exit"), "{}", message(s[0]));
}

/// (audits 20261237 #24, 20261238 #24: convolutionFFT2D's `x == 0` with
/// `x` a thread index modulo `DX / 2`) A test picking one thread per group
/// of a uniform size splits only the warp holding it: a note with the
/// condition. An interleaved pick whose group a loop doubles from 2 splits
/// every warp: still a warning.
#[test]
fn a_pick_of_one_thread_per_group_splits_one_warp_per_group() {
    let d = of("nyquist_fix", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    assert!(
        message(d[0]).contains("picks one thread in every group of `half`"),
        "{}",
        message(d[0])
    );
    let w = of("interleaved_sum", "divergent-branch");
    assert_eq!(w.len(), 1, "{:#?}", findings());
    assert_eq!(w[0]["severity"], "warning", "{:#?}", w[0]);
}

/// (audits 20261233 #23, 20261235 #23: nbody's early `return` before
/// `computeBodyAccel`) A call whose body waits at a block barrier, after a
/// thread-dependent `return`: since sm_70 the barrier waits only for the
/// threads that have not exited, as for a barrier in the kernel itself: a
/// warning that says so, not an error.
#[test]
fn a_callee_barrier_after_an_early_return_is_a_warning() {
    let d = of("bodies", "barrier-divergence");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "warning", "{:#?}", d[0]);
    assert!(message(d[0]).contains("since sm_70"), "{}", message(d[0]));
}

/// (audits 20261234 #2, 20261235 #1, 20261237 #5: hybridsort's merge step)
/// An `if` whose sides only move values between registers or `break` is an
/// early exit with selects: a note that says the exit splits the warp, not
/// "both paths one after the other".
#[test]
fn register_moves_around_a_break_are_an_early_exit() {
    let d = of("merge_step", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert_eq!(d[0]["severity"], "note", "{:#?}", d[0]);
    let m = message(d[0]);
    assert!(m.contains("the exit is what splits the warp"), "{m}");
    assert!(!m.contains("both paths one after the other"), "{m}");
}

/// (found reviewing session 16: volumeFiltering's d_integrate_trapezoidal)
/// A loop bound that is a float made from the global index (`cur < x *
/// step`) is a per-thread trip count, not a grid-edge guard: still
/// reported.
#[test]
fn a_float_bound_from_the_global_index_is_not_a_grid_edge() {
    let d = of("integrate", "divergent-branch");
    assert_eq!(d.len(), 1, "{:#?}", findings());
    assert!(message(d[0]).contains("cur <"), "{}", message(d[0]));
}
