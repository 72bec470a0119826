//! Device functions analysed with what their callers pass: thread
//! dependence of the arguments, their affine forms, and the memory space and
//! offset of pointer arguments — through the real pipeline.

use cudalog::config::Config;
use cudalog::db;
use cudalog::facts::Analysis;
use cudalog::facts::affine::Coef;
use cudalog::index::Indexer;
use cudalog::ir::Function;
use std::sync::Arc;

fn index(src: &str) -> (tempfile::TempDir, Indexer) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.cu"), src).unwrap();
    let mut ix = Indexer::new(dir.path(), Config::default(), None);
    ix.load_all().unwrap();
    ix.sync();
    (dir, ix)
}

fn analysis(ix: &Indexer, name: &str) -> (Arc<Function>, Arc<Analysis>) {
    let db = ix.db();
    let f = ix
        .find(name)
        .unwrap_or_else(|| panic!("no function named {name}"));
    (db::function_ir(db, f), db::function_analysis(db, f))
}

const SRC: &str = "\
__device__ float row_sum(const float* row, int n) {\n\
  float s = 0;\n\
  for (int j = 0; j < n; j++) s += row[j];\n\
  return s;\n\
}\n\
__device__ void put(float* out, int i, float v) {\n\
  if (i < 100) out[i * 2] = v;\n\
}\n\
__device__ void stage(float* tile, int t) { tile[t * 32] = 0; }\n\
__global__ void k(const float* m, float* out, int w, int n) {\n\
  __shared__ float sm[32 * 32];\n\
  int t = threadIdx.x;\n\
  float s = row_sum(&m[t * w], n);\n\
  put(out, t, s);\n\
  stage(sm, t);\n\
}\n\
void host(const float* m, float* o, int w) { k<<<1, 32>>>(m, o, w, 64); }\n";

#[test]
fn parameters_carry_the_callers_thread_dependence() {
    let (_d, ix) = index(SRC);
    let (f, a) = analysis(&ix, "put");
    let i = f.vars.iter().position(|v| v.name == "i").unwrap();
    assert_eq!(
        a.uniformity.var_dims[i] & 1,
        1,
        "i is threadIdx.x in the caller"
    );
    assert!(
        a.branches.iter().any(|b| matches!(
            b.kind,
            cudalog::facts::divergence::BranchKind::Divergent { .. }
                | cudalog::facts::divergence::BranchKind::BoundaryGuard
                // (issue 8) i = threadIdx.x < 100 holds for every thread of
                // the 32-thread block: thread-dependent, yet warp-uniform.
                | cudalog::facts::divergence::BranchKind::WarpUniform
        )),
        "`i < 100` depends on the thread"
    );
}

#[test]
fn pointer_arguments_give_space_and_offset() {
    let (_d, ix) = index(SRC);
    // row = &m[t * w]: global, each thread its own row of w elements.
    let (f, a) = analysis(&ix, "row_sum");
    assert_eq!(a.access_space, vec![cudalog::ir::MemSpace::Global]);
    let g = &a.global[0];
    assert_eq!(g.form.coef[0], Coef::Sym("w".into()), "{:?}", g.form);
    assert_eq!(f.accesses[g.access].array, "row");
    // out[i * 2] with i = threadIdx.x: stride 2.
    let (_, a) = analysis(&ix, "put");
    assert_eq!(a.global[0].form.coef[0], Coef::Int(2));
    // tile[t * 32] on the shared array: a 32-way conflict.
    let (_, a) = analysis(&ix, "stage");
    assert_eq!(a.access_space, vec![cudalog::ir::MemSpace::Shared]);
    assert_eq!(a.shared[0].degree, Some(32));
}

#[test]
fn without_callers_or_with_recursion_parameters_stay_invariant() {
    let src = "__device__ int f(int* a, int i) { return i > 0 ? f(a, i - 1) + a[i] : 0; }\n\
               __global__ void k(int* a) { a[0] = f(a, threadIdx.x); }\n\
               __device__ void lonely(float* p, int i) { p[i] = 0; }\n";
    let (_d, ix) = index(src);
    let (_, a) = analysis(&ix, "f");
    assert!(a.params.dims.is_empty(), "recursive: no caller facts");
    assert!(a.global.is_empty(), "the pointer's space stays generic");
    let (_, a) = analysis(&ix, "lonely");
    assert!(a.params.dims.is_empty());
    assert_eq!(a.access_space, vec![cudalog::ir::MemSpace::Generic]);
}

#[test]
fn callers_that_disagree_join() {
    let src = "__device__ void put(float* p, int i) { p[i] = 0; }\n\
               __global__ void k1(float* a) { put(a, threadIdx.x); }\n\
               __global__ void k2(float* a) { __shared__ float s[64]; put(s, threadIdx.x * 2); }\n";
    let (_d, ix) = index(src);
    let (_, a) = analysis(&ix, "put");
    assert_eq!(
        a.params.spaces,
        vec![None, None],
        "global and shared callers"
    );
    assert_eq!(a.access_space, vec![cudalog::ir::MemSpace::Generic]);
    let form = a.params.forms[1].as_ref().unwrap();
    assert_eq!(
        form.coef[0],
        Coef::Unknown,
        "strides 1 and 2 join to unknown"
    );
}

/// (function, parameter, depends_x, stride_x, pointer_space, pointer_offset_x)
type ParamRow = (
    String,
    String,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
);

#[test]
fn param_facts_are_a_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.cu"), SRC).unwrap();
    let db = dir.path().join("c.db");
    assert_cmd::Command::cargo_bin("cudalog")
        .unwrap()
        .arg("check")
        .arg(dir.path())
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<ParamRow> = conn
        .prepare(
            "SELECT fn.name, p.name, p.depends_x, p.stride_x, p.pointer_space, p.pointer_offset_x \
             FROM param_facts p JOIN functions fn ON fn.id = p.function_id \
             ORDER BY fn.name, p.param_index",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let find = |f: &str, p: &str| {
        rows.iter()
            .find(|r| r.0 == f && r.1 == p)
            .unwrap_or_else(|| panic!("{f}.{p} in {rows:?}"))
            .clone()
    };
    let row = find("row_sum", "row");
    assert_eq!(row.2, 1);
    assert_eq!(row.4.as_deref(), Some("global"));
    assert_eq!(row.5.as_deref(), Some("w"));
    let n = find("row_sum", "n");
    assert_eq!((n.2, n.3.as_deref()), (0, Some("0")));
    let i = find("put", "i");
    assert_eq!((i.2, i.3.as_deref()), (1, Some("1")));
    assert_eq!(find("stage", "tile").4.as_deref(), Some("shared"));
    // The device function's accesses carry the resolved space.
    let spaces: Vec<String> = conn
        .prepare(
            "SELECT a.space FROM access_facts a JOIN functions fn ON fn.id = a.function_id \
             WHERE fn.name IN ('row_sum', 'stage') ORDER BY fn.name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(spaces, vec!["global", "shared"]);
}

#[test]
fn barriers_reached_through_nested_calls_and_mutual_recursion() {
    let src = "__device__ void inner(float* s) { s[threadIdx.x] = 0; __syncthreads(); }\n\
               __device__ void outer(float* s) { inner(s); }\n\
               __device__ int ping(int n);\n\
               __device__ int pong(int n) { return n > 0 ? ping(n - 1) : 0; }\n\
               __device__ int ping(int n) { return n > 0 ? pong(n - 1) : threadIdx.x; }\n\
               __global__ void k(float* a, int n) {\n\
                 __shared__ float s[128];\n\
                 if (threadIdx.x >= n) return;\n\
                 outer(s);\n\
                 a[threadIdx.x] = ping(n);\n\
               }\n";
    let (_d, ix) = index(src);
    let (f, a) = analysis(&ix, "k");
    let sites: Vec<&str> = a
        .divergent_barriers
        .iter()
        .map(|v| match v.site {
            cudalog::facts::barriers::BarrierSite::Call(i) => f.calls[i].callee.as_str(),
            cudalog::facts::barriers::BarrierSite::Barrier(_) => "barrier",
        })
        .collect();
    assert_eq!(
        sites,
        vec!["outer"],
        "outer reaches inner's __syncthreads()"
    );
    // Mutual recursion: summaries exist, no query cycle panics.
    let (_, p) = analysis(&ix, "pong");
    assert!(p.params.dims.is_empty());
}

#[test]
fn default_arguments_do_not_hide_other_call_sites() {
    // One site passes the thread index for `i`, the other uses the default:
    // `i` still depends on the thread.
    let src = "__device__ void put(float* p, int i = 0) { if (i < 3) p[0] = 0; }\n\
               __global__ void k1(float* a) { put(a); }\n\
               __global__ void k2(float* a) { put(a, threadIdx.x); }\n";
    let (_d, ix) = index(src);
    let (_, a) = analysis(&ix, "put");
    assert_eq!(a.params.dims.len(), 2, "{:?}", a.params);
    assert_eq!(a.params.dims[1] & 1, 1);
    assert_eq!(a.params.forms[1], None, "default value and threadIdx.x");
}
