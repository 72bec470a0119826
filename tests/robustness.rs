//! No input makes the front end panic: truncated, mutated and random text,
//! derived from the workspace example's real CUDA files and from snippets.

use cudalog::frontend::lower::lower_function;
use cudalog::frontend::preproc::MacroTable;
use cudalog::frontend::scan::{Scope, scan_file};
use cudalog::frontend::syntax::parse;
use proptest::prelude::*;
use std::sync::Arc;

fn seeds() -> Vec<String> {
    let mut out = vec![
        "#define T 16\ntemplate <int B> __global__ void k(float* a, int n) {\n  __shared__ float s[T][T+1];\n  for (int i = threadIdx.x; i < n; i += B) { s[threadIdx.y][threadIdx.x] = a[i]; __syncthreads(); }\n  asm volatile(\"bar.sync 1, 64;\");\n}\nvoid h(){ k<32><<<1, dim3(16,16), 0, 0>>>(0, 4); }\n".to_string(),
        "#if defined(X) && Y > 2\n#define M(a, b) ((a) * (b))\n#else\n#define M(a, b) 0\n#endif\nstruct S { float3 p; int q; };\n__device__ S g[10];\n__global__ void f(S* s) { s[threadIdx.x].q = M(1, 2) + g[0].q; }\n".to_string(),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workspace-example");
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if matches!(p.extension().and_then(|e| e.to_str()), Some("cu" | "cuh"))
                && let Ok(t) = std::fs::read_to_string(&p)
            {
                out.push(t);
            }
        }
    }
    out
}

/// Run the whole front end on `text`: scan, then lower every function.
fn front_end(text: &str) -> usize {
    let tree = parse(text);
    let init = Arc::new(Scope {
        macros: MacroTable::predefined(),
        ..Scope::default()
    });
    let scan = scan_file(text, &tree, init, &mut |_, _| None);
    let mut n = 0;
    for s in &scan.functions {
        let f = lower_function(
            &s.text,
            s.start_col,
            &s.name,
            &s.scope_path,
            s.kind,
            &s.scope,
        );
        n += f.accesses.len() + f.stmts.len();
        // Every recorded id resolves.
        for a in &f.accesses {
            let _ = f.expr(a.expr);
            let _ = f.stmt(a.stmt);
            for i in &a.indices {
                let _ = f.expr_text(*i);
            }
        }
    }
    n
}

fn char_floor(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

const NOISE: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    "#if 1\n",
    "#endif\n",
    "#define Q(",
    "<<<",
    ">>>",
    "\"",
    "'",
    "/*",
    "*/",
    "\\\n",
    "template <",
    "__global__",
    "asm(\"bar.sync",
    "\u{0}",
    "é",
    "\r\n",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn truncated_files_never_panic(seed in 0usize..64, cut in 0.0f64..1.0) {
        let seeds = seeds();
        let s = &seeds[seed % seeds.len()];
        let at = char_floor(s, (s.len() as f64 * cut) as usize);
        front_end(&s[..at]);
    }

    #[test]
    fn mutated_files_never_panic(
        seed in 0usize..64,
        edits in proptest::collection::vec((0.0f64..1.0, 0usize..NOISE.len(), 0usize..8, any::<bool>()), 1..12)
    ) {
        let seeds = seeds();
        let mut s = seeds[seed % seeds.len()].clone();
        for (pos, noise, del, insert) in edits {
            let at = char_floor(&s, (s.len() as f64 * pos) as usize);
            if insert {
                s.insert_str(at, NOISE[noise]);
            } else {
                let end = char_floor(&s, at + del);
                s.replace_range(at..end, "");
            }
        }
        front_end(&s);
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
        front_end(&s);
    }
}

#[test]
fn deeply_nested_and_self_referential_macros_terminate() {
    let mut src = String::from("#define A B\n#define B A\n#define F(x) F(x)\n");
    src.push_str("__global__ void k(int* p) { p[A] = F(1); ");
    for _ in 0..2000 {
        src.push_str("if (p[0]) { ");
    }
    for _ in 0..2000 {
        src.push('}');
    }
    src.push_str(" int x = ");
    for _ in 0..5000 {
        src.push('(');
    }
    src.push('1');
    for _ in 0..5000 {
        src.push(')');
    }
    src.push_str("; }\n");
    assert!(front_end(&src) > 0);
}

#[test]
fn deeply_nested_namespaces_and_conditionals_terminate() {
    let mut src = String::new();
    for i in 0..3000 {
        src.push_str(&format!("namespace n{i} {{\n#if 1\n"));
    }
    src.push_str("__global__ void k(int* p) { p[0] = 1; }\n");
    for _ in 0..3000 {
        src.push_str("#endif\n}\n");
    }
    front_end(&src);
}
