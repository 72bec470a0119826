//! Fuzz target run in CI with a fixed, small budget: generated CUDA-ish
//! text with macros (self-referential, nested, function-like), `#if`s,
//! unbalanced brackets and launches. The front end (scan + lowering of
//! every function) must not panic, must finish each input within a time
//! bound, and every `__global__` definition written outside a conditional
//! must be found or leave a diagnostic.

use cudalog::frontend::lower::lower_function;
use cudalog::frontend::preproc::MacroTable;
use cudalog::frontend::scan::{Scope, scan_source};
use cudalog::ir::FunctionKind;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One generated top-level piece.
#[derive(Clone, Debug)]
enum Piece {
    /// `#define` of an object-like macro (may use earlier ones, or itself).
    Define {
        name: usize,
        uses: Vec<usize>,
        copies: usize,
    },
    /// Function-like macro.
    DefineFn { name: usize, body_uses: Vec<usize> },
    /// A balanced conditional around a define or a declaration.
    Cond {
        kind: usize,
        name: usize,
        inner: usize,
    },
    /// A kernel using macros in an array size and an index.
    Kernel { uses: Vec<usize>, open: usize },
    /// A host function launching the earlier kernels.
    Launch { grid: usize, block: usize },
    /// Unclosed brackets (a half-saved file).
    Junk { brackets: Vec<bool> },
}

const MACROS: usize = 8;

fn macro_name(i: usize) -> String {
    format!("M{}", i % MACROS)
}

fn piece() -> impl Strategy<Value = Piece> {
    let uses = || proptest::collection::vec(0..MACROS, 0..5);
    prop_oneof![
        (0..MACROS, uses(), 1usize..5).prop_map(|(name, uses, copies)| Piece::Define {
            name,
            uses,
            copies
        }),
        (0..MACROS, uses()).prop_map(|(name, body_uses)| Piece::DefineFn { name, body_uses }),
        (0usize..4, 0..MACROS, 0usize..3).prop_map(|(kind, name, inner)| Piece::Cond {
            kind,
            name,
            inner
        }),
        (uses(), 0usize..3).prop_map(|(uses, open)| Piece::Kernel { uses, open }),
        (1usize..4096, 1usize..2048).prop_map(|(grid, block)| Piece::Launch { grid, block }),
        proptest::collection::vec(any::<bool>(), 1..12)
            .prop_map(|brackets| Piece::Junk { brackets }),
    ]
}

/// Render pieces to text; returns the text and the names of the kernels
/// written outside conditionals.
fn render(pieces: &[Piece]) -> (String, Vec<String>) {
    let mut s = String::new();
    let mut kernels = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        match p {
            Piece::Define { name, uses, copies } => {
                let mut body: Vec<String> = uses.iter().map(|u| macro_name(*u)).collect();
                body.push("2".into());
                let one = body.join(" + ");
                let all = vec![format!("({one})"); *copies].join(" * ");
                s.push_str(&format!("#define {} {all}\n", macro_name(*name)));
            }
            Piece::DefineFn { name, body_uses } => {
                let body: Vec<String> = body_uses
                    .iter()
                    .map(|u| format!("{}(x, y)", macro_name(*u)))
                    .collect();
                s.push_str(&format!(
                    "#define {}(x, y) ((x) + (y) {})\n",
                    macro_name(*name),
                    if body.is_empty() {
                        String::new()
                    } else {
                        format!("+ {}", body.join(" + "))
                    }
                ));
            }
            Piece::Cond { kind, name, inner } => {
                let n = macro_name(*name);
                let head = match kind {
                    0 => format!("#ifdef {n}"),
                    1 => format!("#ifndef {n}"),
                    2 => format!("#if defined({n}) && {n} > 3"),
                    _ => format!("#if {n} * {n} > 1"),
                };
                let body = match inner {
                    0 => format!("#define {} 7", macro_name(name + 1)),
                    1 => format!("__device__ int d{i}[{n}];"),
                    _ => format!("#undef {n}"),
                };
                s.push_str(&format!("{head}\n{body}\n#else\nint e{i};\n#endif\n"));
            }
            Piece::Kernel { uses, open } => {
                let size = if uses.is_empty() {
                    "32".to_string()
                } else {
                    uses.iter()
                        .map(|u| macro_name(*u))
                        .collect::<Vec<_>>()
                        .join(" + ")
                };
                let name = format!("k{i}");
                s.push_str(&format!(
                    "__global__ void {name}(float* a, int n) {{\n  __shared__ float t[{size}];\n  \
                     int j = threadIdx.x + {size};\n  if (j < n) {{ t[threadIdx.x] = a[j]; }}\n  \
                     __syncthreads();\n  a[j] = t[0];\n"
                ));
                // `open` > 0: the body is left open (a half-saved file).
                s.push_str(&"  if (n) { a[0] = (a[1]".repeat(*open));
                s.push_str("}\n");
                kernels.push(name);
            }
            Piece::Launch { grid, block } => {
                s.push_str(&format!("void h{i}(float* d, int n) {{\n"));
                for k in &kernels {
                    s.push_str(&format!("  {k}<<<{grid}, {block}>>>(d, n);\n"));
                }
                s.push_str("}\n");
            }
            Piece::Junk { brackets } => {
                for b in brackets {
                    s.push(if *b { '{' } else { '(' });
                }
                s.push('\n');
            }
        }
    }
    (s, kernels)
}

fn initial() -> Arc<Scope> {
    Arc::new(Scope {
        macros: MacroTable::predefined(),
        ..Scope::default()
    })
}

/// Each input's bound: generous for a loaded CI machine (a budget-respecting
/// front end takes milliseconds on these inputs; a macro bomb takes minutes).
const PER_INPUT: Duration = Duration::from_secs(5);

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_cuda_with_macros_is_bounded_and_loses_no_kernel(
        pieces in proptest::collection::vec(piece(), 1..16)
    ) {
        let (text, kernels) = render(&pieces);
        let start = Instant::now();
        let scan = scan_source(&text, initial(), &BTreeSet::new(), &mut |_, _| None);
        let mut lowered = 0usize;
        for f in &scan.functions {
            let ir = lower_function(&f.text, f.start_col, &f.name, &f.scope_path, f.kind, &f.scope);
            lowered += ir.stmts.len();
        }
        let took = start.elapsed();
        prop_assert!(took < PER_INPUT, "took {took:?} on\n{text}");
        let found: BTreeSet<&str> = scan
            .functions
            .iter()
            .filter(|f| f.kind == FunctionKind::Kernel)
            .map(|f| f.name.as_str())
            .collect();
        for k in &kernels {
            prop_assert!(
                found.contains(k.as_str()) || !scan.diagnostics.is_empty(),
                "kernel {k} neither indexed nor diagnosed in\n{text}"
            );
        }
        let _ = lowered;
    }
}

/// The two bombs of issue 8, through the same path, each within the bound
/// and with a `macro-budget` diagnostic.
#[test]
fn macro_bombs_finish_with_a_diagnostic() {
    let mut nested = String::from("#define A0 1\n");
    for i in 1..=13 {
        let p = format!("A{}", i - 1);
        nested.push_str(&format!("#define A{i} ({p} + {p} + {p} + {p})\n"));
    }
    nested.push_str("__global__ void k(float* a) { __shared__ float s[A13]; a[0] = s[0]; }\n");
    let self_ref =
        "#define X X X X\n__global__ void k(float* a) { __shared__ float s[X]; a[0] = s[0]; }\n";
    for text in [nested.as_str(), self_ref] {
        let start = Instant::now();
        let scan = scan_source(text, initial(), &BTreeSet::new(), &mut |_, _| None);
        let mut codes: Vec<&str> = scan.diagnostics.iter().map(|d| d.code).collect();
        for f in &scan.functions {
            let ir = lower_function(
                &f.text,
                f.start_col,
                &f.name,
                &f.scope_path,
                f.kind,
                &f.scope,
            );
            codes.extend(ir.syntax_errors.iter().map(|e| e.code));
        }
        assert!(start.elapsed() < PER_INPUT, "{:?}", start.elapsed());
        assert!(scan.functions.iter().any(|f| f.name == "k"), "{text}");
        if text == self_ref {
            // C's rule: `X` is not re-expanded inside its own expansion, so
            // the array size is the identifier sequence `X X X` (unknown),
            // and nothing blows up.
            continue;
        }
        assert!(codes.contains(&"macro-budget"), "{codes:?}");
    }
}
