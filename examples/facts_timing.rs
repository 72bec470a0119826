//! Time the per-function fact derivation (uniformity, dataflow, affine
//! forms, coalescing, banks, divergence, barriers) for every kernel of a
//! directory, after lowering. Usage:
//!
//! ```sh
//! cargo run --release --example facts_timing -- DIR [KERNEL]
//! ```
//!
//! With KERNEL, also prints the time of each program for that kernel.

use cudalog::config::Config;
use cudalog::db;
use cudalog::facts::Analysis;
use cudalog::index::Indexer;
use cudalog::ir::FunctionKind;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "workspace-example".into());
    let phases_of = std::env::args().nth(2);
    let root = std::path::Path::new(&dir);
    let mut ix = Indexer::new(root, Config::load(root)?, None);
    ix.load_all()?;
    ix.sync();
    let dbase = ix.db();
    let mut times = Vec::new();
    for (f, sym) in ix.functions() {
        if sym.kind != FunctionKind::Kernel {
            continue;
        }
        let ir = db::function_ir(dbase, f);
        // The block dimensions `check` uses (from the launch sites).
        let launch = db::function_inputs(dbase, f).launch;
        let t = Instant::now();
        let a = Analysis::compute(&ir, launch, &Default::default());
        times.push((
            t.elapsed().as_secs_f64() * 1e3,
            sym.name.clone(),
            ir.stmts.len(),
        ));
        std::hint::black_box(a);
        if phases_of.as_deref() == Some(sym.name.as_str()) {
            phases(&ir, launch);
        }
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = times.len().max(1);
    let mean = times.iter().map(|t| t.0).sum::<f64>() / n as f64;
    let median = times.get(n / 2).map(|t| t.0).unwrap_or(0.0);
    let p99 = times.get(n * 99 / 100).map(|t| t.0).unwrap_or(0.0);
    let max = times.last().cloned().unwrap_or((0.0, String::new(), 0));
    println!(
        "{} kernels: mean {mean:.3} ms, median {median:.3} ms, p99 {p99:.3} ms, max {:.3} ms ({}, {} statements)",
        times.len(),
        max.0,
        max.1,
        max.2
    );
    Ok(())
}

/// Time each program of the analysis separately for one function.
fn phases(f: &cudalog::ir::Function, launch: cudalog::facts::LaunchDims) {
    use cudalog::facts::{Callees, Uniformity, intervals, relations, stride};
    let none = Callees::new();
    let t = Instant::now();
    let r = relations::build(f, &none);
    let relations_t = t.elapsed();
    let t = Instant::now();
    let u = Uniformity::compute(&r, f.exprs.len(), f.vars.len());
    let uniformity_t = t.elapsed();
    let t = Instant::now();
    let cx = stride::AffineCx::new(f, &r, &u, launch, &none);
    let stride_t = t.elapsed();
    std::hint::black_box(cx);
    let t = Instant::now();
    std::hint::black_box(intervals::compute(f));
    let intervals_t = t.elapsed();
    println!(
        "  {} ({} expressions): relations+dataflow {relations_t:?}, uniformity {uniformity_t:?}, \
         stride {stride_t:?}, intervals {intervals_t:?}",
        f.name,
        f.exprs.len()
    );
}
