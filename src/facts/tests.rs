//! Tests of the uniformity and barrier programs on small kernels, including
//! the seed papers' example shapes.

use super::barriers::{LaunchDims, divergent_barriers, warp_uniform};
use super::relations::{DIM_X, DIM_Y, VARIES, build};
use super::uniformity::Uniformity;
use crate::ir::{ExprKind, Function, StmtKind};

fn lower(src: &str) -> Function {
    crate::frontend::lower_last(src)
}

fn analyse(f: &Function) -> (super::relations::Relations, Uniformity) {
    let r = build(f, &Default::default());
    let u = Uniformity::compute(&r, f.exprs.len(), f.vars.len());
    (r, u)
}

fn var_dims(f: &Function, u: &Uniformity, name: &str) -> u8 {
    let v = f
        .vars
        .iter()
        .position(|v| v.name == name)
        .unwrap_or_else(|| panic!("{name}"));
    u.var_dims[v]
}

const X: u8 = 1 << DIM_X;
const Y: u8 = 1 << DIM_Y;

#[test]
fn thread_dependence_flows_through_assignments_and_loads() {
    let f = lower(
        "__global__ void k(float* a, const int* idx, int n, int w) {\n\
           int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
           int j = threadIdx.y * w;\n\
           int row = blockIdx.y;\n\
           int g = idx[i];\n\
           int h = idx[row];\n\
           float s = 0; for (int q = 0; q < n; q++) s += a[q];\n\
           int lane = __shfl_sync(0xffffffff, row, 0);\n\
         }\n",
    );
    let (_, u) = analyse(&f);
    assert_eq!(var_dims(&f, &u, "i"), X);
    assert_eq!(var_dims(&f, &u, "j"), Y);
    assert_eq!(var_dims(&f, &u, "row"), 0);
    assert_eq!(
        var_dims(&f, &u, "g"),
        X,
        "load through a thread-dependent address"
    );
    assert_eq!(
        var_dims(&f, &u, "h"),
        0,
        "load through a uniform address is uniform"
    );
    assert_eq!(
        var_dims(&f, &u, "s"),
        0,
        "loop-carried uniform accumulation"
    );
    assert_eq!(var_dims(&f, &u, "q"), 0);
    assert_eq!(var_dims(&f, &u, "lane"), 1 << VARIES);
    let g = f.vars.iter().position(|v| v.name == "g").unwrap();
    assert!(u.var_from_memory[g]);
}

#[test]
fn merge_rule_taints_values_assigned_under_thread_dependent_conditions() {
    // GPUDrano: y := (tid < N) ? 10 : 20 is thread-dependent though both arms are constants.
    let f = lower(
        "__global__ void k(int* a, int n) {\n\
           int y; if (threadIdx.x < n) y = 10; else y = 20;\n\
           int z = (threadIdx.x < n) ? 10 : 20;\n\
           int u; if (n > 4) u = 1; else u = 2;\n\
           int t = 0; for (int i = threadIdx.x; i < n; i += 32) t += 1;\n\
         }\n",
    );
    let (_, u) = analyse(&f);
    assert_eq!(var_dims(&f, &u, "y"), X);
    assert_eq!(var_dims(&f, &u, "z"), X);
    assert_eq!(var_dims(&f, &u, "u"), 0);
    assert_eq!(var_dims(&f, &u, "t"), X, "trip count differs per thread");
}

#[test]
fn thread_dependent_exits_taint_later_loop_values() {
    let f = lower(
        "__global__ void k(int* a, int n) {\n\
           int c = 0;\n\
           for (int i = 0; i < n; i++) { if (a[threadIdx.x] > i) break; c++; }\n\
           int d = c;\n\
         }\n",
    );
    let (_, u) = analyse(&f);
    assert_eq!(var_dims(&f, &u, "c"), X);
    assert_eq!(var_dims(&f, &u, "d"), X);
}

fn barrier_lines(src: &str, launch: LaunchDims) -> Vec<u32> {
    let f = lower(src);
    let (r, u) = analyse(&f);
    divergent_barriers(&f, &r, &u, &launch, &Default::default())
        .iter()
        .filter_map(|v| match v.site {
            super::barriers::BarrierSite::Barrier(b) => Some(f.barriers[b].span.line),
            super::barriers::BarrierSite::Call(_) => None,
        })
        .collect()
}

const BLOCK_128: LaunchDims = LaunchDims::with_block([Some(128), Some(1), Some(1)]);

#[test]
fn barrier_divergence_under_conditions_and_after_exits() {
    let src = "__global__ void k(float* d, int n) {\n\
      __shared__ float s[256];\n\
      __syncthreads();\n\
      if (threadIdx.x < n) { __syncthreads(); }\n\
      if (n > 8) { __syncthreads(); }\n\
      for (int i = 0; i < n; i++) { __syncthreads(); }\n\
      for (int i = threadIdx.x; i < n; i += 32) { __syncthreads(); }\n\
      if (blockIdx.x * blockDim.x + threadIdx.x >= n) return;\n\
      __syncthreads();\n\
    }\n";
    // Relative lines: 0 is the signature.
    assert_eq!(barrier_lines(src, LaunchDims::default()), vec![3, 6, 8]);
}

#[test]
fn scan_kernel_with_thread_dependent_loop_bound_around_barriers() {
    // The RaCUDA/GPUVerify scan shape: the loop bound depends on the thread.
    let src = "__global__ void scan(int* a, int n) {\n\
      __shared__ int t[512];\n\
      for (int off = 1; off < threadIdx.x + 1; off *= 2) {\n\
        t[threadIdx.x] += t[threadIdx.x - off];\n\
        __syncthreads();\n\
      }\n\
      for (int off = 1; off < n; off *= 2) {\n\
        if (threadIdx.x >= off) t[threadIdx.x] += t[threadIdx.x - off];\n\
        __syncthreads();\n\
      }\n\
    }\n";
    assert_eq!(barrier_lines(src, LaunchDims::default()), vec![4]);
}

#[test]
fn break_and_continue_only_affect_their_loop() {
    let src = "__global__ void k(int* a, int n) {\n\
      for (int i = 0; i < n; i++) {\n\
        __syncthreads();\n\
        if (a[threadIdx.x] == i) continue;\n\
        __syncthreads();\n\
      }\n\
      for (int i = 0; i < n; i++) { if (a[threadIdx.x] == i) break; }\n\
      __syncthreads();\n\
    }\n";
    // The first barrier is reached by every thread in every iteration until
    // the (uniform) loop ends; the second is skipped by threads that continue.
    assert_eq!(barrier_lines(src, LaunchDims::default()), vec![2, 4]);
}

#[test]
fn named_barriers_need_only_warp_uniform_conditions() {
    let good = "__global__ void pc(float* o) {\n\
      int t = threadIdx.x;\n\
      if (t < 64) { asm volatile(\"bar.arrive 1, 128;\"); }\n\
      else { asm volatile(\"bar.sync 1, 128;\"); }\n\
    }\n";
    assert!(barrier_lines(good, BLOCK_128).is_empty());
    // Unknown block size: a warp may straddle t = 64.
    assert_eq!(barrier_lines(good, LaunchDims::default()), vec![2, 3]);
    let bad = "__global__ void pc(float* o) {\n\
      if (threadIdx.x < 48) { asm volatile(\"bar.arrive 1, 128;\"); }\n\
      else { asm volatile(\"bar.sync 1, 128;\"); }\n\
    }\n";
    assert_eq!(barrier_lines(bad, BLOCK_128), vec![1, 2]);
    // Without a thread count, bar.sync waits for the whole block.
    let whole = "__global__ void w(float* o) {\n\
      if (threadIdx.x < 64) { asm volatile(\"bar.sync 0;\"); }\n\
    }\n";
    assert_eq!(barrier_lines(whole, BLOCK_128), vec![1]);
}

#[test]
fn warp_uniform_conditions() {
    let f = lower(
        "__global__ void k(int* a) {\n\
           bool a1 = threadIdx.x < 32;\n\
           bool a2 = threadIdx.x / 32 == 1;\n\
           bool a3 = threadIdx.y == 0;\n\
           bool a4 = threadIdx.x < 16;\n\
           bool a5 = (threadIdx.x >> 5) != 2;\n\
         }\n",
    );
    let (_, u) = analyse(&f);
    let cond = |name: &str| {
        f.stmts
            .iter()
            .find_map(|s| match &s.kind {
                StmtKind::Decl { var, init: Some(e) } if f.var(*var).name == name => Some(*e),
                _ => None,
            })
            .unwrap()
    };
    let b32 = LaunchDims::with_block([Some(32), Some(8), Some(1)]);
    let b16 = LaunchDims::with_block([Some(16), Some(16), Some(1)]);
    for (name, expect32) in [
        ("a1", true),
        ("a2", true),
        ("a3", true),
        ("a4", false),
        ("a5", true),
    ] {
        assert_eq!(
            warp_uniform(&f, &u, cond(name), &b32),
            expect32,
            "{name} with blockDim.x = 32"
        );
    }
    // blockDim.x = 16: a warp spans two y rows, so threadIdx.y == 0 splits it.
    assert!(!warp_uniform(&f, &u, cond("a3"), &b16));
    assert!(matches!(f.expr(cond("a1")).kind, ExprKind::Binary(..)));
}

#[test]
fn shared_scalars_are_block_uniform() {
    // Rodinia leukocyte shape: thread 0 sets a shared flag, all threads loop on it.
    let src = "__global__ void k(float* d, int max_it) {\n\
      __shared__ int converged;\n\
      if (threadIdx.x == 0) converged = 0;\n\
      __syncthreads();\n\
      int it = 0;\n\
      while (!converged && it < max_it) {\n\
        if (threadIdx.x == 0 && d[0] < 1.0f) converged = 1;\n\
        it++;\n\
        __syncthreads();\n\
      }\n\
    }\n";
    assert!(barrier_lines(src, LaunchDims::default()).is_empty());
    let f = lower(src);
    let (_, u) = analyse(&f);
    assert_eq!(var_dims(&f, &u, "it"), 0);
}

#[test]
fn reused_variables_are_tracked_per_definition() {
    // Rodinia srad reduce shape: `i` first holds a thread index, later a
    // uniform loop counter around barriers.
    let src = "__global__ void k(float* d, int n) {\n\
      int tx = threadIdx.x;\n\
      int i = blockIdx.x * blockDim.x + tx;\n\
      d[i] = 0;\n\
      __syncthreads();\n\
      for (i = 2; i <= 256; i = 2 * i) {\n\
        if ((tx + 1) % i == 0) d[tx] += d[tx - i / 2];\n\
        __syncthreads();\n\
      }\n\
    }\n";
    assert!(barrier_lines(src, LaunchDims::default()).is_empty());
}

#[test]
fn values_inside_a_thread_dependent_branch_are_uniform_there() {
    let f = lower(
        "__global__ void k(int* a, int n) {\n\
           int x = 0;\n\
           if (threadIdx.x == 0) { x = 5; a[x] = 1; }\n\
           a[x] = 2;\n\
         }\n",
    );
    let (_, u) = analyse(&f);
    let idx: Vec<u8> = f
        .accesses
        .iter()
        .map(|a| u.expr_dims[a.indices[0].0 as usize])
        .collect();
    assert_eq!(
        idx,
        vec![0, X],
        "uniform inside the branch, thread-dependent after the merge"
    );
}

use super::coalescing::Sectors;

/// Coalescing verdicts of `f`'s global accesses: (access index text, verdict).
fn costs(src: &str, block: [u32; 3]) -> Vec<(String, bool, String)> {
    let f = lower(src);
    let launch = LaunchDims::with_block(block.map(Some));
    let a = super::Analysis::compute(&f, launch, &Default::default());
    a.global
        .iter()
        .map(|g| {
            let acc = &f.accesses[g.access];
            let uncoalesced = match &g.sectors {
                Sectors::Exact { aligned, .. } => *aligned > g.min_sectors,
                Sectors::UpTo(..) | Sectors::DataDependent => true,
                Sectors::Unknown => false,
            };
            (
                format!("{}{}", acc.array, acc.index_text),
                uncoalesced,
                format!("{:?}", g.sectors),
            )
        })
        .collect()
}

fn flagged(src: &str, block: [u32; 3]) -> Vec<String> {
    let mut v: Vec<String> = costs(src, block)
        .into_iter()
        .filter(|c| c.1)
        .map(|c| c.0)
        .collect();
    v.dedup();
    v
}

#[test]
fn racuda_addsub_variants() {
    let add_sub0 = "__global__ void addSub0(int* A, int* B, int w, int h) {\n\
      for (int i = 0; i < w; i++) {\n\
        int j = blockIdx.x * blockDim.x + threadIdx.x;\n\
        if (j % 2 == 0) { B[j * w + i] += A[i]; } else { B[j * w + i] -= A[i]; }\n\
      }\n\
    }\n";
    assert_eq!(flagged(add_sub0, [256, 1, 1]), vec!["B[j * w + i]"]);
    let add_sub1 = "__global__ void addSub1(int* A, int* B, int w, int h) {\n\
      for (int i = 0; i < w; i++) {\n\
        int j = blockIdx.x * blockDim.x + threadIdx.x;\n\
        B[2 * j * w + i] += A[i];\n\
        B[(2 * j + 1) * w + i] -= A[i];\n\
      }\n\
    }\n";
    assert_eq!(
        flagged(add_sub1, [256, 1, 1]),
        vec!["B[2 * j * w + i]", "B[(2 * j + 1) * w + i]"]
    );
    let add_sub2 = "__global__ void addSub2(int* A, int* B, int w, int h) {\n\
      int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
      for (int j = 0; j < h; j += 2) {\n\
        B[j * w + i] += A[i];\n\
        B[(j + 1) * w + i] -= A[i];\n\
      }\n\
    }\n";
    assert!(flagged(add_sub2, [256, 1, 1]).is_empty());
    let add_sub3 = "__global__ void addSub3(int* A, int* B, int w, int h) {\n\
      __shared__ int As[32];\n\
      int tid = blockIdx.x * blockDim.x + threadIdx.x;\n\
      As[tid % 32] = A[tid];\n\
      for (int j = 0; j < h; j += 2) {\n\
        B[j * w + tid] += As[tid % 32];\n\
        B[(j + 1) * w + tid] -= As[tid % 32];\n\
      }\n\
    }\n";
    assert!(flagged(add_sub3, [256, 1, 1]).is_empty());
}

#[test]
fn div_mul_merge_and_single_thread_shapes() {
    let src = "__global__ void k(float* A, float* B, int n) {\n\
      int tid = blockIdx.x * blockDim.x + threadIdx.x;\n\
      A[(tid / 32) * 32] = 0;\n\
      A[(tid / 2) * 2] = 0;\n\
      int k = (threadIdx.x < n) ? threadIdx.x : 0;\n\
      B[k] = 1;\n\
      if (threadIdx.x == 0) { B[blockIdx.x * n] = 2; B[tid * n] = 3; }\n\
      A[__mul24(blockIdx.x, blockDim.x) + threadIdx.x] = 4;\n\
    }\n";
    // (tid/32)*32 is one word per warp (broadcast); (tid/2)*2 is not affine
    // and the merge rule makes `k` unknown: no claim either way (a precise
    // "unknown", not a finding); the single-thread region is skipped.
    assert!(flagged(src, [256, 1, 1]).is_empty());
    let c = costs(src, [256, 1, 1]);
    let verdict = |name: &str| c.iter().find(|x| x.0 == name).map(|x| x.2.clone()).unwrap();
    assert_eq!(verdict("A[(tid / 2) * 2]"), "Unknown");
    assert_eq!(verdict("B[k]"), "Unknown");
    assert!(verdict("A[(tid / 32) * 32]").contains("aligned: 1"));
    assert!(
        c.iter()
            .all(|x| !x.0.starts_with("B[blockIdx.x") && !x.0.starts_with("B[tid"))
    );
}

#[test]
fn two_dimensional_blocks_of_16_and_32() {
    let src = "__global__ void k(float* A, int w) {\n\
      A[threadIdx.y * w + threadIdx.x] = 0;\n\
      A[threadIdx.x * w + threadIdx.y] = 1;\n\
    }\n";
    // blockDim.x = 32: a warp is one row; 16: two half rows, each 64 B.
    assert_eq!(
        flagged(src, [32, 8, 1]),
        vec!["A[threadIdx.x * w + threadIdx.y]"]
    );
    assert_eq!(
        flagged(src, [16, 16, 1]),
        vec!["A[threadIdx.x * w + threadIdx.y]"]
    );
    let c = costs(src, [16, 16, 1]);
    assert!(c[0].2.contains("Exact"), "{:?}", c[0]);
}

#[test]
fn element_sizes_vectors_structs_and_offsets() {
    let src = "struct S { float a, b, c, d; };\n\
    __global__ void k(float4* v, S* s, double* d, float* f, float* g) {\n\
      int t = blockIdx.x * blockDim.x + threadIdx.x;\n\
      float4 x = v[t];\n\
      float y = s[t].b;\n\
      double z = d[t];\n\
      float u = f[t + 1];\n\
      float q = g[t + 8];\n\
    }\n";
    let c = costs(src, [128, 1, 1]);
    let get = |name: &str| c.iter().find(|x| x.0.starts_with(name)).unwrap().clone();
    assert!(
        !get("v[").1 && get("v[").2.contains("aligned: 16"),
        "{:?}",
        get("v[")
    );
    assert!(
        get("s[").1 && get("s[").2.contains("aligned: 16"),
        "{:?}",
        get("s[")
    );
    assert!(
        !get("d[").1 && get("d[").2.contains("aligned: 8"),
        "{:?}",
        get("d[")
    );
    // f[t + 1]: 5 sectors with the offset, 4 aligned; g[t + 8]: 32 B offset, 4.
    // (Two arrays: `f[t + 8]` after `f[t + 1]` would reuse its sectors.)
    let f1 = &c.iter().find(|x| x.0 == "f[t + 1]").unwrap().2;
    assert!(
        f1.contains("actual: 5") && f1.contains("aligned: 4"),
        "{f1}"
    );
    let f8 = &c.iter().find(|x| x.0 == "g[t + 8]").unwrap().2;
    assert!(f8.contains("actual: 4"), "{f8}");
}

fn degrees(src: &str, block: [u32; 3]) -> Vec<(String, Option<u32>)> {
    let f = lower(src);
    let a = super::Analysis::compute(
        &f,
        LaunchDims::with_block(block.map(Some)),
        &Default::default(),
    );
    a.shared
        .iter()
        .map(|s| {
            let acc = &f.accesses[s.access];
            (format!("{}{}", acc.array, acc.index_text), s.degree)
        })
        .collect()
}

#[test]
fn bank_conflict_degrees() {
    let src = "__global__ void k(const int* idx) {\n\
      __shared__ float t[32][32];\n\
      __shared__ float p[32][33];\n\
      __shared__ float s[1024];\n\
      __shared__ double d[64];\n\
      float a = t[threadIdx.x][0];\n\
      float b = p[threadIdx.x][0];\n\
      float c = s[2 * threadIdx.x];\n\
      float e = s[0];\n\
      double g = d[threadIdx.x];\n\
      float h = s[idx[threadIdx.x]];\n\
      float q = t[threadIdx.y][threadIdx.x];\n\
    }\n";
    assert_eq!(
        degrees(src, [32, 8, 1]),
        vec![
            ("t[threadIdx.x][0]".into(), Some(32)),
            ("p[threadIdx.x][0]".into(), Some(1)),
            ("s[2 * threadIdx.x]".into(), Some(2)),
            ("s[0]".into(), Some(1)),
            ("d[threadIdx.x]".into(), Some(2)),
            ("s[idx[threadIdx.x]]".into(), None),
            ("t[threadIdx.y][threadIdx.x]".into(), Some(1)),
        ]
    );
    // With blockDim.x = 16 a warp covers two rows of the unpadded tile:
    // t[ty][tx] rows 32 words apart land in the same banks: 2-way.
    let d16 = degrees(src, [16, 16, 1]);
    assert_eq!(d16.last().unwrap().1, Some(2));
}

#[test]
fn grid_stride_loops_are_boundary_guards() {
    let src = "__global__ void h(const unsigned char* data, unsigned int* hist, int n) {\n\
      for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {\n\
        atomicAdd(&hist[data[i]], 1);\n\
      }\n\
    }\n";
    let f = lower(src);
    let a = super::Analysis::compute(
        &f,
        LaunchDims::with_block([Some(256), Some(1), Some(1)]),
        &Default::default(),
    );
    let kinds: Vec<_> = a.branches.iter().map(|b| b.kind.clone()).collect();
    assert_eq!(kinds, vec![super::divergence::BranchKind::BoundaryGuard]);
}

#[test]
fn accesses_through_local_pointers_include_the_pointer_offset() {
    // Rodinia nn shape: a pointer to this thread's struct, then a field.
    let src = "struct LatLong { float lat; float lng; };\n\
    __global__ void k(LatLong* d, float* out, int n, int w) {\n\
      int g = blockIdx.x * blockDim.x + threadIdx.x;\n\
      LatLong* p = d + g;\n\
      float* row = out + g * w;\n\
      float* col = out + g;\n\
      out[g] = p->lat + row[0] + col[0];\n\
    }\n";
    let c = costs(src, [256, 1, 1]);
    let get = |name: &str| c.iter().find(|x| x.0.starts_with(name)).unwrap().clone();
    assert!(
        get("p[").1,
        "8-byte stride for 4-byte reads: {:?}",
        get("p[")
    );
    assert!(get("row[").1, "stride w: {:?}", get("row["));
    assert!(!get("col[").1, "unit stride: {:?}", get("col["));
}

#[test]
fn barrier_intervals_and_happens_before() {
    use super::intervals::{ENTRY, compute};
    let src = "__global__ void k(float* out, const float* in) {\n\
      __shared__ float s[257];\n\
      int t = threadIdx.x;\n\
      s[t] = in[t];\n\
      out[t] = s[t + 1];\n\
      __syncthreads();\n\
      out[t] = s[t + 1];\n\
      for (int i = 0; i < 4; i++) {\n\
        s[t] = out[i];\n\
        __syncthreads();\n\
        out[t] = s[t + 1];\n\
      }\n\
    }\n";
    let f = lower(src);
    let iv = compute(&f);
    let stmt_of_line = |line: u32| {
        f.accesses
            .iter()
            .find(|a| a.span.line == line)
            .unwrap()
            .stmt
            .0
    };
    let (w1, r1, r2, w3, r3) = (
        stmt_of_line(3),
        stmt_of_line(4),
        stmt_of_line(6),
        stmt_of_line(8),
        stmt_of_line(10),
    );
    let barrier = |i: usize| f.barriers[i].stmt.0;
    // Lines 3-4 run in the entry interval; line 6 after the first barrier.
    assert!(iv.interval.contains(&(w1, ENTRY)) && iv.interval.contains(&(r1, ENTRY)));
    assert!(iv.interval.contains(&(r2, barrier(0))));
    assert!(!iv.interval.contains(&(r2, ENTRY)));
    // Missing barrier between the write and the read on lines 3-4.
    assert!(iv.concurrent.contains(&(w1, r1)));
    assert!(!iv.happens_before.contains(&(w1, r1)));
    // The barrier orders line 3 before line 6.
    assert!(iv.happens_before.contains(&(w1, r2)));
    // In the loop, the write of line 8 and the read of line 10 are ordered by
    // the barrier in the same iteration, and the read of line 10 reaches the
    // next iteration's write of line 8 without a barrier: the interval
    // changes around the back edge.
    assert!(iv.happens_before.contains(&(w3, r3)));
    assert!(iv.concurrent.contains(&(r3, w3)));
    assert!(iv.interval.contains(&(w3, barrier(0))) && iv.interval.contains(&(w3, barrier(1))));
}

#[test]
fn tile_syncs_need_uniformity_only_within_their_tile() {
    // cuda-samples dxtc shape: a 16-thread tile synchronised under `idx < 16`.
    let src = "__global__ void k(const unsigned* image) {\n\
      cg::thread_block cta = cg::this_thread_block();\n\
      cg::thread_group tile = cg::tiled_partition(cta, 16);\n\
      int idx = threadIdx.x;\n\
      if (idx < 16) { cg::sync(tile); }\n\
      if (idx < 8) { cg::sync(tile); }\n\
      cg::thread_block_tile<32> t32 = cg::tiled_partition<32>(cta);\n\
      if (idx < 16) { t32.sync(); }\n\
    }\n";
    let f = lower(src);
    assert_eq!(
        f.barriers
            .iter()
            .map(|b| b.thread_count)
            .collect::<Vec<_>>(),
        vec![Some(16), Some(16), Some(32)]
    );
    // Lines (relative): 4 is uniform per 16-thread tile; 5 splits a tile; 7 splits a warp.
    assert_eq!(barrier_lines(src, BLOCK_128), vec![5, 7]);
}

/// The affine form of the index of the access whose text is `text`.
fn index_form_of(src: &str, launch: LaunchDims, text: &str) -> super::affine::Affine {
    let f = lower(src);
    let (r, u) = analyse(&f);
    let none = super::Callees::new();
    let cx = super::stride::AffineCx::new(&f, &r, &u, launch, &none);
    let a = f
        .accesses
        .iter()
        .find(|a| format!("{}{}", a.array, a.index_text) == text)
        .unwrap_or_else(|| panic!("no access {text}"));
    super::coalescing::index_form(&cx, a).expect("an index")
}

#[test]
fn stride_program_loops_merges_and_parameters() {
    use super::affine::Coef;
    let src = "__global__ void k(float* a, int n, int p, int w) {\n\
      for (int i = threadIdx.x; i < n; i += blockDim.x) a[i] = 0;\n\
      for (int j = threadIdx.x; j < n; j += threadIdx.x + 1) a[j] = 1;\n\
      int s = threadIdx.x * 2;\n\
      for (int q = 0; q < n; q++) { a[s] = 2; s = s * 2; }\n\
      if (n > 4) p = threadIdx.x;\n\
      a[p] = 3;\n\
      int r = threadIdx.x;\n\
      for (int q = 0; q < n; q++) { a[r * w] = 4; r = r + w; }\n\
    }\n";
    let b = LaunchDims::with_block([Some(256), Some(1), Some(1)]);
    let i = index_form_of(src, b, "a[i]");
    assert_eq!(
        i.coef[0],
        Coef::Int(1),
        "grid-stride induction keeps stride 1"
    );
    assert_eq!(i.offset, None, "offset varies per iteration");
    let j = index_form_of(src, b, "a[j]");
    assert_eq!(j.coef[0], Coef::Unknown, "thread-dependent increment");
    let s = index_form_of(src, b, "a[s]");
    assert_eq!(s.coef[0], Coef::Unknown, "doubling changes the coefficient");
    let p = index_form_of(src, b, "a[p]");
    assert_eq!(
        p.coef[0],
        Coef::Unknown,
        "the parameter's own value or threadIdx.x: no single stride"
    );
    let r = index_form_of(src, b, "a[r * w]");
    assert_eq!(
        r.coef[0],
        Coef::Sym("w".into()),
        "invariant step keeps r's coefficient"
    );
}

#[test]
fn stride_of_loop_counters_in_anti_diagonal_tiles() {
    // Needleman-Wunsch's anti-diagonal sweep over a 17x17 tile with 16
    // threads: the word stride between lanes is 1 - 17 = -16, so the 16
    // lanes fall into two banks (8-way).
    let src = "__global__ void k(int* g) {\n\
      __shared__ int temp[17][17];\n\
      int tx = threadIdx.x;\n\
      for (int m = 0; m < 16; m++) {\n\
        if (tx <= m) {\n\
          int x = tx + 1;\n\
          int y = m - tx + 1;\n\
          temp[y][x] = temp[y - 1][x - 1] + 1;\n\
        }\n\
        __syncthreads();\n\
      }\n\
    }\n";
    let d = degrees(src, [16, 1, 1]);
    assert!(d.contains(&("temp[y][x]".to_string(), Some(8))), "{d:?}");
    assert!(
        d.contains(&("temp[y - 1][x - 1]".to_string(), Some(8))),
        "{d:?}"
    );
}

#[test]
fn stride_candidates_are_capped() {
    // Each `if` doubles the candidate forms of `x`; past the cap the index
    // is unknown rather than enumerated.
    let mut body = String::from("int x = 0;\n");
    for k in 0..12 {
        body += &format!("if (n > {k}) x = x + {};\n", 1 << k);
    }
    let src =
        format!("__global__ void k(float* a, int n) {{\n{body} a[threadIdx.x + x] = 0;\n}}\n");
    let b = LaunchDims::with_block([Some(128), Some(1), Some(1)]);
    let form = index_form_of(&src, b, "a[threadIdx.x + x]");
    assert_eq!(form.coef[0], super::affine::Coef::Int(1));
    assert_eq!(form.offset, None, "many possible offsets: unknown");
}

#[test]
fn template_values_from_launch_sites_are_constants() {
    use super::affine::Coef;
    let src = "template <typename T, int TILE> __global__ void k(T* a) {\n\
      a[threadIdx.x * TILE] = 0;\n\
    }\n";
    let mut b = LaunchDims::with_block([Some(128), Some(1), Some(1)]);
    let sym = index_form_of(src, b, "a[threadIdx.x * TILE]");
    assert_eq!(sym.coef[0], Coef::Sym("TILE".into()));
    b.template_values[1] = Some(4);
    let known = index_form_of(src, b, "a[threadIdx.x * TILE]");
    assert_eq!(known.coef[0], Coef::Int(4));
}

#[test]
fn bank_degrees_count_only_the_lanes_a_branch_lets_through() {
    // LU decomposition's perimeter kernel: 32 threads, the upper half walks
    // columns of a 16x16 tile. 16 active lanes over 2 banks: 8-way, not the
    // 16-way a full warp with that stride would give.
    let src = "__global__ void k(float* m) {\n\
      __shared__ float col[16][16];\n\
      int idx;\n\
      if (threadIdx.x < 16) { idx = threadIdx.x; col[0][idx] = 1; }\n\
      else { idx = threadIdx.x - 16; col[idx][3] = 2; }\n\
      if (threadIdx.x >= 8 && threadIdx.x < 12) col[threadIdx.x][0] = 3;\n\
      col[threadIdx.x % 16][1] = 4;\n\
    }\n";
    let d = degrees(src, [32, 1, 1]);
    assert!(d.contains(&("col[0][idx]".to_string(), Some(1))), "{d:?}");
    assert!(d.contains(&("col[idx][3]".to_string(), Some(8))), "{d:?}");
    assert!(
        d.contains(&("col[threadIdx.x][0]".to_string(), Some(2))),
        "4 lanes, stride 16 words: banks 0 and 16 twice each: {d:?}"
    );
}

#[test]
fn warp_indices_are_warp_uniform_through_arithmetic() {
    // llm.c's softmax: one row per warp, `idx = block * warps + warp_id`.
    let src = "__global__ void k(float* a, int n, int d) {\n\
      int warp_id = threadIdx.x / 32;\n\
      int idx = blockIdx.x * (blockDim.x / 32) + warp_id;\n\
      if (idx >= n) return;\n\
      float v = a[threadIdx.x];\n\
      float r = 1.0f / v;\n\
      if (r < 0.5f) a[idx] = 0;\n\
      if (d / (threadIdx.x + 1) > 2) a[idx] = 1;\n\
    }\n";
    let f = lower(src);
    let a = super::Analysis::compute(
        &f,
        LaunchDims::with_block([Some(128), Some(1), Some(1)]),
        &Default::default(),
    );
    let kinds: Vec<String> = a
        .branches
        .iter()
        .map(|b| format!("{} {:?}", f.expr_text(b.cond), b.kind))
        .collect();
    assert!(kinds[0].starts_with("idx >= n WarpUniform"), "{kinds:?}");
    assert!(kinds[1].contains("Divergent"), "data-dependent: {kinds:?}");
    assert!(
        kinds[2].contains("Divergent"),
        "a constant divided by a thread index is not invariant: {kinds:?}"
    );
}

#[test]
fn sectors_count_only_the_active_lanes() {
    // Half a warp stores with stride 2: 16 lanes x 8 bytes = 4 sectors
    // where the 64 bytes need 2 (a full warp would be 8 for 4).
    let src = "__global__ void k(float* out) {\n\
      if (threadIdx.x < 16) out[threadIdx.x * 2] = 0;\n\
      out[threadIdx.x * 2 + 1] = 1;\n\
    }\n";
    let c = costs(src, [32, 1, 1]);
    assert!(c[0].2.contains("aligned: 4") && c[0].1, "half warp: {c:?}");
    assert!(c[1].2.contains("aligned: 8"), "full warp: {c:?}");
}

#[test]
fn warp_divisions_need_warp_aligned_values() {
    // `(threadIdx.x + 5) / 32` takes two values in every warp;
    // `(threadIdx.x + 64) / 32` and the grid-wide `/ 32` take one.
    let src = "__global__ void k(float* a, int n) {\n\
      if ((threadIdx.x + 5) / 32 < n) a[0] = 0;\n\
      if ((threadIdx.x + 64) / 32 < n) a[1] = 0;\n\
      if ((blockIdx.x * blockDim.x + threadIdx.x) / 32 < n) a[2] = 0;\n\
    }\n";
    let f = lower(src);
    let a = super::Analysis::compute(
        &f,
        LaunchDims::with_block([Some(128), Some(1), Some(1)]),
        &Default::default(),
    );
    let kinds: Vec<String> = a.branches.iter().map(|b| format!("{:?}", b.kind)).collect();
    assert!(kinds[0].starts_with("Divergent"), "{kinds:?}");
    assert_eq!(kinds[1], "WarpUniform", "{kinds:?}");
    assert_eq!(kinds[2], "WarpUniform", "{kinds:?}");
}

#[test]
fn pointer_offsets_are_rescaled_through_casts() {
    // A uint8_t pointer advanced by 4 bytes per thread, read as uint32_t:
    // unit stride in the accessed type (4 sectors), not 4 elements apart.
    // A short pointer advanced by 2 shorts per thread, read as int: the same.
    let src = "__global__ void k(const unsigned char* src, short* s, int* out) {\n\
      const unsigned char* p = src + (threadIdx.x << 2);\n\
      out[threadIdx.x] = *(const unsigned int*)p;\n\
      short* q = s + threadIdx.x * 2;\n\
      out[threadIdx.x + 1] = ((int*)q)[0];\n\
    }\n";
    let c = costs(src, [32, 1, 1]);
    let reads: Vec<_> = c
        .iter()
        .filter(|x| x.0.starts_with('p') || x.0.starts_with('q'))
        .collect();
    assert_eq!(reads.len(), 2, "{c:?}");
    for r in reads {
        assert!(!r.1 && r.2.contains("aligned: 4"), "{r:?}");
    }
}

#[test]
fn method_calls_are_not_parameterless_summaries() {
    // `y.upper()` depends on the object `y` (per thread here), even if a
    // device function `upper()` without parameters is uniform.
    let src = "__global__ void k(float* a, const float* v) {\n\
      float y = v[threadIdx.x];\n\
      if (y.upper() < 0) a[0] = 0;\n\
    }\n";
    let f = lower(src);
    let mut callees = super::Callees::new();
    callees.insert(
        "upper".to_string(),
        super::CalleeSummary {
            form: Some(super::affine::invariant()),
            ..Default::default()
        },
    );
    callees.insert("y.upper".to_string(), callees["upper"].clone());
    let a = super::Analysis::compute(
        &f,
        LaunchDims::with_block([Some(32), Some(1), Some(1)]),
        &callees,
    );
    assert!(
        matches!(
            a.branches[0].kind,
            super::divergence::BranchKind::Divergent { .. }
        ),
        "{:?}",
        a.branches[0].kind
    );
}
