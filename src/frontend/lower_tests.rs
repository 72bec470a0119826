//! Unit tests of the lowering (CST → IR) on small CUDA snippets.

use super::lower::lower_function;
use super::preproc::MacroTable;
use super::scan::{Scope, scan_file};
use super::syntax::parse;
use crate::ir::*;
use std::sync::Arc;

/// Scan `src` and lower the function called `name`.
/// (Sources below use `\\` line continuations, which drop indentation.)
fn lower(src: &str, name: &str) -> Function {
    let tree = parse(src);
    let init = Arc::new(Scope {
        macros: MacroTable::predefined(),
        ..Scope::default()
    });
    let scan = scan_file(src, &tree, init, &mut |_, _| None);
    let site = scan
        .functions
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no function {name}"));
    let mut f = lower_function(
        &site.text,
        site.start_col,
        &site.name,
        &site.scope_path,
        site.kind,
        &site.scope,
    );
    // Make spans absolute (1-based lines) for readable assertions.
    for a in &mut f.accesses {
        a.span.line += site.start_line + 1;
    }
    for b in &mut f.barriers {
        b.span.line += site.start_line + 1;
    }
    for l in &mut f.launches {
        l.span.line += site.start_line + 1;
    }
    f
}

fn access_summary(f: &Function) -> Vec<String> {
    f.accesses
        .iter()
        .map(|a| {
            format!(
                "{}:{} {} {} {} {}B{} {}",
                a.span.line,
                a.span.col,
                a.array,
                a.space.as_str(),
                if a.is_write { "W" } else { "R" },
                a.elem_bytes.map(|b| b.to_string()).unwrap_or("?".into()),
                match (a.access_bytes, a.field_offset) {
                    (Some(n), Some(o)) if Some(n) != a.elem_bytes || o != 0 =>
                        format!("(+{o}:{n})"),
                    _ => String::new(),
                },
                a.index_text
            )
        })
        .collect()
}

#[test]
fn kernel_accesses_with_spaces_sizes_and_modes() {
    let src = "#define TILE 32\n\
__global__ void k(float *A, const double* __restrict__ B, int n) {\n\
  __shared__ float tile[TILE][TILE + 1];\n\
  int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
  tile[threadIdx.y][threadIdx.x] = A[i];\n\
  A[i] += (float)B[i * n + 1];\n\
  float r[4]; r[0] = tile[threadIdx.x][threadIdx.y];\n\
}\n";
    let f = lower(src, "k");
    assert_eq!(f.kind, FunctionKind::Kernel);
    assert_eq!(
        access_summary(&f),
        vec![
            "5:34 A global R 4B [i]",
            "5:1 tile shared W 4B [threadIdx.y][threadIdx.x]",
            "6:16 B global R 8B [i * n + 1]",
            "6:1 A global R 4B [i]",
            "6:1 A global W 4B [i]",
            "7:20 tile shared R 4B [threadIdx.x][threadIdx.y]",
            "7:13 r local W 4B [0]",
        ]
    );
    let tile = f.accesses.iter().find(|a| a.array == "tile").unwrap();
    assert_eq!(tile.dims, vec![Some(32), Some(33)]);
    assert_eq!(tile.indices.len(), 2);
    assert!(matches!(
        f.expr(tile.indices[1]).kind,
        ExprKind::Builtin(Builtin::ThreadIdx(Dim::X))
    ));
}

#[test]
fn struct_fields_vectors_and_extern_shared() {
    let src = "struct P { float x, y, z, w; };\n\
__global__ void k(P* p, float4* v, float* out) {\n\
  extern __shared__ int dyn[];\n\
  int t = threadIdx.x;\n\
  out[t] = p[t].y + v[t].x;\n\
  float4 q = reinterpret_cast<float4*>(out)[t];\n\
  dyn[t] = 1;\n\
  p->w = 0.f;\n\
}\n";
    let f = lower(src, "k");
    assert_eq!(
        access_summary(&f),
        vec![
            "5:10 p global R 16B(+4:4) [t]",
            "5:19 v global R 16B(+0:4) [t]",
            "5:1 out global W 4B [t]",
            "6:12 out global R 16B [t]",
            "7:1 dyn shared W 4B [t]",
            "8:1 p global W 16B(+12:4) [0]",
        ]
    );
    let dyn_access = f.accesses.iter().find(|a| a.array == "dyn").unwrap();
    assert_eq!(dyn_access.dims, vec![None]);
}

#[test]
fn device_function_pointers_are_generic_and_host_has_no_accesses() {
    let src = "__device__ float get(const float* a, int i) { return a[i]; }\n\
void host(float* h) { h[0] = 1.0f; }\n";
    let f = lower(src, "get");
    assert_eq!(access_summary(&f), vec!["1:54 a generic R 4B [i]"]);
    assert!(lower(src, "host").accesses.is_empty());
}

#[test]
fn local_pointers_inherit_the_space_they_point_into() {
    let src = "__constant__ float c[8];\n\
__global__ void k(float* g, int w) {\n\
  __shared__ float s[64];\n\
  float* row = g + blockIdx.x * w;\n\
  float* sp = &s[4];\n\
  row[threadIdx.x] = sp[threadIdx.x] + c[threadIdx.x % 8];\n\
  *(row + 1) = 0;\n\
}\n";
    let f = lower(src, "k");
    assert_eq!(
        access_summary(&f),
        vec![
            "6:20 sp shared R 4B [threadIdx.x]",
            "6:38 c constant R 4B [threadIdx.x % 8]",
            "6:1 row global W 4B [threadIdx.x]",
            "7:1 row global W 4B [1]",
        ]
    );
}

#[test]
fn atomics_are_read_modify_write() {
    let src = "__global__ void h(const unsigned char* d, unsigned int* out) {\n\
  __shared__ unsigned int bins[256];\n\
  atomicAdd(&bins[d[threadIdx.x]], 1);\n\
  atomicAdd(out + blockIdx.x, bins[threadIdx.x]);\n\
}\n";
    let f = lower(src, "h");
    let atomics: Vec<_> = f
        .accesses
        .iter()
        .filter(|a| a.atomic)
        .map(|a| (a.array.as_str(), a.is_write))
        .collect();
    // (issue 8) `out + blockIdx.x`, a bare pointer, is an access too.
    assert_eq!(
        atomics,
        vec![
            ("bins", false),
            ("bins", true),
            ("out", false),
            ("out", true)
        ]
    );
    assert!(
        f.accesses
            .iter()
            .any(|a| a.array == "d" && !a.is_write && a.elem_bytes == Some(1))
    );
}

#[test]
fn barriers_including_inline_ptx_and_cooperative_groups() {
    let src = "namespace cg = cooperative_groups;\n\
__global__ void k(int n) {\n\
  __syncthreads();\n\
  if (__syncthreads_or(n > 0)) {}\n\
  __syncwarp();\n\
  asm volatile(\"bar.sync 1, 64;\");\n\
  asm volatile(\"bar.arrive %0, %1;\" :: \"r\"(2), \"r\"(n));\n\
  asm volatile(\"barrier.sync.aligned 3;\");\n\
  cg::thread_block block = cg::this_thread_block();\n\
  block.sync();\n\
  cg::sync(block);\n\
  cg::grid_group grid = cg::this_grid();\n\
  grid.sync();\n\
  asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(n));\n\
}\n";
    let f = lower(src, "k");
    let got: Vec<String> = f
        .barriers
        .iter()
        .map(|b| {
            format!(
                "{} {} {:?} {:?} {:?}",
                b.span.line,
                b.kind.as_str(),
                b.barrier_id,
                b.thread_count,
                b.thread_count_text
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            "3 syncthreads None None None",
            "5 syncwarp None Some(32) None",
            "6 bar.sync Some(1) Some(64) None",
            "7 bar.arrive Some(2) None Some(\"n\")",
            "8 bar.sync Some(3) None None",
            "10 cg.block.sync None None None",
            "11 cg.block.sync None None None",
            "13 cg.grid.sync None None None",
        ]
    );
    // The barrier in the `if` condition is not a statement of its own; the
    // non-barrier asm is opaque.
    assert!(
        f.stmts
            .iter()
            .any(|s| matches!(&s.kind, StmtKind::Opaque(t) if t.starts_with("asm: mov")))
    );
}

#[test]
fn syncs_on_group_parameters() {
    // A generic `thread_group` parameter is whatever group the caller
    // passes: not known to be the block. A `thread_block` parameter is.
    let src = "namespace cg = cooperative_groups;\n\
__device__ void f(cg::thread_group g, cg::thread_block b) {\n\
  cg::sync(g);\n\
  g.sync();\n\
  b.sync();\n\
}\n";
    let f = lower(src, "f");
    let kinds: Vec<&str> = f.barriers.iter().map(|b| b.kind.as_str()).collect();
    assert_eq!(kinds, vec!["cg.tile.sync", "cg.tile.sync", "cg.block.sync"]);
}

#[test]
fn launches_triple_chevron_and_api() {
    let src = "#define TILE 32\n#define ROWS 8\ntemplate <int B> __global__ void k(float* a) {}\n\
void host(float* d, int n, cudaStream_t s) {\n\
  dim3 grid(n / 256), block(256);\n\
  dim3 tile(TILE, ROWS);\n\
  k<256><<<grid, block, 256 * sizeof(float), s>>>(d);\n\
  void* args[] = {&d};\n\
  cudaLaunchKernel((const void*)&k<128>, dim3(4), dim3(128), args, 0, s);\n\
}\n";
    let f = lower(src, "host");
    assert_eq!(f.launches.len(), 2);
    // `dim3 tile(TILE, ROWS)` parses as a function declaration; it is a variable.
    let tile = f
        .vars
        .iter()
        .position(|v| v.name == "tile")
        .expect("tile declared");
    let init = f.stmts.iter().find_map(|s| match &s.kind {
        StmtKind::Decl { var, init: Some(e) } if var.0 as usize == tile => Some(*e),
        _ => None,
    });
    assert_eq!(f.expr_text(init.unwrap()), "dim3(32, 8)");
    let l = &f.launches[0];
    assert_eq!(
        (
            l.kernel.as_str(),
            l.template_args.clone(),
            l.grid_text.as_str(),
            l.block_text.as_str(),
            l.shmem_text.as_str()
        ),
        (
            "k",
            vec!["256".to_string()],
            "grid",
            "block",
            "256 * sizeof(float)"
        )
    );
    assert_eq!(l.span.line, 7);
    let shmem = l.shmem.unwrap();
    assert!(matches!(
        f.expr(shmem).kind,
        ExprKind::Binary(BinOp::Mul, _, _)
    ));
    let api = &f.launches[1];
    assert!(api.via_api);
    assert_eq!(
        (api.kernel.as_str(), api.template_args.clone()),
        ("k", vec!["128".to_string()])
    );
    assert_eq!(api.block_text, "dim3(128)");
}

#[test]
fn templates_macros_and_preprocessor_in_bodies() {
    let src = "#define IDX(i, j, ld) ((i) * (ld) + (j))\n#define W 64\n\
template <typename T, int BS>\n\
__global__ void __launch_bounds__(BS) t(T* a, int n) {\n\
#ifdef __CUDA_ARCH__\n\
  a[IDX(threadIdx.y, threadIdx.x, W)] = a[BS];\n\
#else\n\
  a[0] = 0;\n\
#endif\n\
#if W > 32\n\
  a[1] = 1;\n\
#else\n\
  a[2] = 2;\n\
#endif\n\
}\n";
    let f = lower(src, "t");
    assert_eq!(f.template_params.len(), 2);
    assert!(f.template_params[0].is_type && !f.template_params[1].is_type);
    assert_eq!(f.launch_bounds, None, "BS is symbolic");
    let texts: Vec<String> = f.accesses.iter().map(|a| a.index_text.clone()).collect();
    assert_eq!(
        texts,
        vec!["[BS]", "[IDX(threadIdx.y, threadIdx.x, W)]", "[0]", "[1]"]
    );
    // The macro was expanded in the IR: (threadIdx.y * 64) + threadIdx.x.
    let idx = f.accesses[1].indices[0];
    assert_eq!(f.expr_text(idx), "(threadIdx.y * 64) + threadIdx.x");
    assert_eq!(f.accesses[0].elem_bytes, None, "T is a template type");
    assert!(f.stmts.iter().any(
        |s| matches!(&s.kind, StmtKind::PreprocAlt { cond, .. } if cond == "defined(__CUDA_ARCH__)")
    ));
}

#[test]
fn structured_statements() {
    let src = "__global__ void k(int* a, int n) {\n\
  for (int i = 0; i < n; i++) { if (i % 2) continue; else break; }\n\
  while (n > 0) n--;\n\
  do { n++; } while (n < 4);\n\
  switch (n) { case 1: a[0] = 1; break; default: return; }\n\
}\n";
    let f = lower(src, "k");
    let kinds: Vec<&str> = f
        .stmts
        .iter()
        .map(|s| match s.kind {
            StmtKind::For { .. } => "for",
            StmtKind::While { .. } => "while",
            StmtKind::DoWhile { .. } => "do",
            StmtKind::Switch { .. } => "switch",
            StmtKind::Case(_) => "case",
            StmtKind::If { .. } => "if",
            StmtKind::Break => "break",
            StmtKind::Continue => "continue",
            StmtKind::Return(_) => "return",
            _ => "",
        })
        .filter(|k| !k.is_empty())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "for", "if", "continue", "break", "while", "do", "switch", "case", "break", "case",
            "return"
        ]
    );
    assert!(f.syntax_errors.is_empty());
}

#[test]
fn syntax_errors_inside_a_function_are_recorded_not_fatal() {
    let src = "__global__ void k(int* a) {\n  a[0] = ;\n  a[1] = 2;\n}\n";
    let f = lower(src, "k");
    assert!(!f.syntax_errors.is_empty());
    assert_eq!(f.syntax_errors[0].span.line, 1);
    assert!(f.accesses.iter().any(|a| a.index_text == "[1]"));
}

#[test]
fn macro_expansion_bombs_are_bounded_with_a_diagnostic() {
    // 13 macros, each using the previous one four times (4^13 uses), in
    // code and as an array size; `X` expands to itself three times.
    let mut src = String::from("#define M0 threadIdx.x\n");
    for i in 1..=13 {
        let p = format!("M{}", i - 1);
        src.push_str(&format!("#define M{i} ({p} + {p} + {p} + {p})\n"));
    }
    src.push_str(
        "#define X X X X\n\
         __global__ void k(float *a) {\n  __shared__ float s[X];\n  float t[M13];\n  \
         a[M2] = s[0];\n  a[M13] = t[0];\n  a[threadIdx.x] = 1;\n}\n",
    );
    let start = std::time::Instant::now();
    let f = lower(&src, "k");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(f.exprs.len() <= super::lower::MAX_EXPANSION_EXPRS + 1000);
    let budget: Vec<_> = f
        .syntax_errors
        .iter()
        .filter(|e| e.code == "macro-budget")
        .collect();
    assert!(!budget.is_empty(), "{:?}", f.syntax_errors);
    assert!(budget.iter().all(|e| e.severity() == "warning"));
    assert_eq!(f.parse_error_count(), 0);
    // What precedes and follows the bomb is still lowered.
    assert!(f.accesses.iter().any(|a| a.index_text == "[M2]"));
    assert!(f.accesses.iter().any(|a| a.index_text == "[threadIdx.x]"));
}

/// (issue 8) An atomic on a bare pointer (`atomicCAS(flag, …)`, `atomicAdd(p
/// + i, …)`) accesses `*flag` / `p[i]` like `&a[i]` forms do.
#[test]
fn atomic_on_a_bare_pointer_is_an_access() {
    let src = "__global__ void k(int *flag, float *p, int n) {\n\
  int i = threadIdx.x;\n\
  atomicCAS(flag, 0, 1);\n\
  atomicAdd(p + i, 1.0f);\n\
  atomicAdd(&p[n], 2.0f);\n\
}\n";
    let f = lower(src, "k");
    let s = access_summary(&f);
    assert!(
        s.iter().any(|x| x.contains("flag global R 4B [0]")),
        "{s:?}"
    );
    assert!(
        s.iter().any(|x| x.contains("flag global W 4B [0]")),
        "{s:?}"
    );
    assert!(s.iter().any(|x| x.contains("p global W 4B [i]")), "{s:?}");
    assert!(s.iter().any(|x| x.contains("p global W 4B [n]")), "{s:?}");
    assert!(f.accesses.iter().all(|a| a.atomic), "{s:?}");
    // A cast `&a[i]` is recorded once; a user's `atomic…` function is not
    // an atomic.
    let src = "__device__ int atomicAggInc(int *c);\n\
__global__ void k(float *p, int *n) {\n\
  int i = threadIdx.x;\n\
  atomicCAS((unsigned int*)&p[i], 0u, 1u);\n\
  atomicAggInc(n);\n\
}\n";
    let f = lower(src, "k");
    let s = access_summary(&f);
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(s.iter().all(|x| x.contains(" p global ")), "{s:?}");
}

/// (issue 8, session 11) `f128::size` of llm.c's `Packed128` through its
/// typedef lowers to the constant.
#[test]
fn a_static_member_of_a_template_instance_is_its_value() {
    let f = lower(
        "template<class ElementType>\nstruct alignas(16) Packed128 {\n  static constexpr const size_t size = sizeof(int4) / sizeof(ElementType);\n  ElementType payload[size];\n};\ntypedef Packed128<float> f128;\n__global__ void k(float *out) { int i = threadIdx.x * f128::size; out[i] = 0; }\n",
        "k",
    );
    let kinds: Vec<String> = f.exprs.iter().map(|e| format!("{:?}", e.kind)).collect();
    assert!(kinds.iter().any(|k| k == "Int(4)"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k.contains("f128")), "{kinds:?}");
}
