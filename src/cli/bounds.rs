//! `cudalog simulate`: run one kernel under the lock-step cost semantics
//! ([`crate::bounds::simulate`]) and print the four metrics per warp and
//! for the launch.
//!
//! Integration: [`kernel_ir`] is the one place that turns a workspace and
//! a kernel name into IR; it reads and lowers the files itself (no store,
//! no include resolution), and is meant to be re-wired onto the salsa
//! database (`db::function_ir`) by the lead.

use crate::bounds::simulate::{ArrayInit, SimConfig, simulate};
use crate::config::Config;
use crate::facts::cost::CostModel;
use crate::frontend::lower::lower_function;
use crate::frontend::preproc::MacroTable;
use crate::frontend::scan::{Scope, scan_file};
use crate::frontend::syntax::parse;
use crate::ir::{Function, FunctionKind};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options of `cudalog simulate`.
#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// Workspace root (default: current directory).
    pub dir: Option<PathBuf>,
    /// The kernel to run (a name; `file:name` when several files define it).
    #[arg(long)]
    pub kernel: String,
    /// A scalar or template parameter's value, `name=value` (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Block dimensions `x[,y[,z]]`.
    #[arg(long, default_value = "32,1,1", value_parser = parse_dims)]
    pub block: [u32; 3],
    /// Grid dimensions `x[,y[,z]]`.
    #[arg(long, default_value = "1,1,1", value_parser = parse_dims)]
    pub grid: [u32; 3],
    /// The value of every array element not otherwise given.
    #[arg(long, default_value_t = 0.0)]
    pub fill: f64,
    /// An array's contents, `name=value` (every element) or `name=@FILE`
    /// (whitespace- or comma-separated numbers from index 0) (repeatable).
    #[arg(long = "array", value_name = "NAME=VALUE|NAME=@FILE")]
    pub arrays: Vec<String>,
    /// Most warp-steps to execute before giving up.
    #[arg(long, default_value_t = 200_000_000)]
    pub max_steps: u64,
    /// Print every warp's counts.
    #[arg(long)]
    pub per_warp: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimFormat::Table)]
    pub format: SimFormat,
}

/// Output format of `simulate`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimFormat {
    /// Aligned text.
    Table,
    /// One JSON object.
    Json,
}

/// Parse `x[,y[,z]]`.
pub fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{s}`: expected x[,y[,z]]"));
    }
    let mut d = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        d[i] = p
            .parse()
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| format!("`{p}` is not a positive integer"))?;
    }
    Ok(d)
}

fn parse_set(s: &str) -> Result<(String, f64)> {
    let (k, v) = s
        .split_once('=')
        .with_context(|| format!("--set {s}: expected name=value"))?;
    let v: f64 = v
        .trim()
        .parse()
        .with_context(|| format!("--set {s}: `{v}` is not a number"))?;
    Ok((k.trim().to_string(), v))
}

fn parse_array(s: &str) -> Result<(String, ArrayInit)> {
    let (k, v) = s
        .split_once('=')
        .with_context(|| format!("--array {s}: expected name=value or name=@FILE"))?;
    let init = if let Some(path) = v.strip_prefix('@') {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--array {k}: cannot read {path}"))?;
        let mut vals = Vec::new();
        for (i, tok) in text
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty())
            .enumerate()
        {
            vals.push(
                tok.parse::<f64>()
                    .with_context(|| format!("{path}: value {} `{tok}` is not a number", i + 1))?,
            );
        }
        ArrayInit::Values(vals)
    } else {
        ArrayInit::Fill(
            v.trim()
                .parse()
                .with_context(|| format!("--array {s}: `{v}` is not a number"))?,
        )
    };
    Ok((k.trim().to_string(), init))
}

/// Integration point (to be re-wired onto the salsa database): the IR of
/// the kernel `spec` (`name` or `file:name`) in the workspace at `root`,
/// with its file relative to `root`.
pub fn kernel_ir(root: &Path, config: &Config, spec: &str) -> Result<(String, Function)> {
    let (file_filter, name) = match spec.rsplit_once(':') {
        Some((f, n)) if !f.is_empty() && !f.ends_with(':') => (Some(f), n),
        _ => (None, spec),
    };
    let mut found = kernels_ir(root, config, file_filter, Some(name))?;
    match found.len() {
        0 => bail!("no kernel `{name}` with a body in {}", root.display()),
        1 => Ok(found.pop().expect("one")),
        _ => bail!(
            "kernel `{name}` is defined in several places ({}): use --kernel FILE:{name}",
            found
                .iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Integration point (to be re-wired onto the salsa database, with
/// `db::function_ir` and `db::function_analysis`): every kernel with a
/// body in the workspace at `root` (only file `file` and kernel `name` when
/// given), with its file relative to `root`, in path order.
pub fn kernels_ir(
    root: &Path,
    config: &Config,
    file: Option<&str>,
    name: Option<&str>,
) -> Result<Vec<(String, Function)>> {
    let mut found = Vec::new();
    for rel in crate::workspace::discover(root, &config.index.exclude)? {
        let shown = crate::workspace::display_path(&rel);
        if file.is_some_and(|f| f != shown) {
            continue;
        }
        let path = root.join(&rel);
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let text = crate::workspace::decode(&bytes).text;
        if name.is_some_and(|n| !text.contains(n)) || !text.contains("__global__") {
            continue;
        }
        let init = initial_scope(config);
        let tree = parse(&text);
        let mut seen = vec![path.clone()];
        let scan = scan_file(&text, &tree, init.clone(), &mut |inc, _| {
            header_exports(&path, inc, &init, &mut seen)
        });
        for s in &scan.functions {
            if name.is_none_or(|n| s.name == n) && s.kind == FunctionKind::Kernel {
                let f = lower_function(
                    &s.text,
                    s.start_col,
                    &s.name,
                    &s.scope_path,
                    s.kind,
                    &s.scope,
                );
                if f.body.is_some() {
                    found.push((shown.clone(), f));
                }
            }
        }
    }
    Ok(found)
}

fn initial_scope(config: &Config) -> Arc<Scope> {
    let mut macros = MacroTable::predefined();
    for (k, v) in &config.preprocessor.defines {
        macros.define(k, None, v);
    }
    for k in &config.preprocessor.undefs {
        macros.undef(k);
    }
    Arc::new(Scope {
        macros,
        ..Scope::default()
    })
}

/// The scope a quoted include `name` of `from` exports: the header next to
/// `from`, scanned with its own includes (each header once per lookup
/// chain; a cycle sees nothing).
fn header_exports(
    from: &Path,
    name: &str,
    init: &Arc<Scope>,
    seen: &mut Vec<PathBuf>,
) -> Option<Arc<Scope>> {
    let path = from.parent()?.join(name);
    if seen.contains(&path) {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    let text = crate::workspace::decode(&bytes).text;
    seen.push(path.clone());
    let tree = parse(&text);
    let scan = scan_file(&text, &tree, init.clone(), &mut |inc, _| {
        header_exports(&path, inc, init, seen)
    });
    seen.pop();
    Some(scan.exports)
}

/// Run `cudalog simulate`.
pub fn run_simulate(args: SimulateArgs) -> Result<i32> {
    let root = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !root.is_dir() {
        bail!("{}: no such directory", root.display());
    }
    let config = Config::load(&root)?;
    let cost = CostModel::from(&config.cost);
    cost.validate()?;
    let (file, f) = kernel_ir(&root, &config, &args.kernel)?;
    let mut scalars = BTreeMap::new();
    for s in &args.set {
        let (k, v) = parse_set(s)?;
        scalars.insert(k, v);
    }
    let mut arrays = BTreeMap::new();
    for s in &args.arrays {
        let (k, v) = parse_array(s)?;
        arrays.insert(k, v);
    }
    let cfg = SimConfig {
        block: args.block,
        grid: args.grid,
        scalars,
        arrays,
        fill: args.fill,
        blocks: None,
        max_steps: args.max_steps,
        cost,
    };
    let r = simulate(&f, &cfg).with_context(|| format!("simulating `{}` ({file})", f.name))?;
    let names = crate::bounds::Metric::ALL.map(|m| m.as_str());
    match args.format {
        SimFormat::Json => {
            let per_metric = |c: &[u64; 4]| -> serde_json::Value {
                names
                    .iter()
                    .zip(c)
                    .map(|(n, v)| (n.to_string(), serde_json::json!(v)))
                    .collect()
            };
            let mut out = serde_json::json!({
                "file": file,
                "kernel": f.name,
                "block": args.block,
                "grid": args.grid,
                "whole_launch": per_metric(&r.total),
                "max_per_warp": per_metric(&r.max_warp),
            });
            if args.per_warp {
                out["warps"] = r
                    .warps
                    .iter()
                    .map(|w| serde_json::json!({"block": w.block, "warp": w.warp, "counts": per_metric(&w.counts)}))
                    .collect();
            }
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        SimFormat::Table => {
            println!(
                "{file}: {} block {:?} grid {:?} ({} warps)",
                f.name,
                args.block,
                args.grid,
                r.warps.len()
            );
            println!(
                "{:<14}{:>14}{:>14}{:>14}{:>14}",
                "", names[0], names[1], names[2], names[3]
            );
            let row = |label: &str, c: &[u64; 4]| {
                println!(
                    "{label:<14}{:>14}{:>14}{:>14}{:>14}",
                    c[0], c[1], c[2], c[3]
                );
            };
            row("whole_launch", &r.total);
            row("max_per_warp", &r.max_warp);
            if args.per_warp {
                for w in &r.warps {
                    row(
                        &format!("b{:?} w{}", w.block, w.warp).replace(' ', ""),
                        &w.counts,
                    );
                }
            }
        }
    }
    Ok(0)
}

/// Options of `cudalog bounds`.
#[derive(clap::Args, Debug)]
pub struct BoundsArgs {
    /// Workspace root (default: current directory).
    pub dir: Option<PathBuf>,
    /// Only this kernel (a name, or `file:name`).
    #[arg(long)]
    pub kernel: Option<String>,
    /// A parameter's value for evaluating the bounds, `name=value`
    /// (repeatable; `blockDim.x=256` works too).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Analyse for these block dimensions `x[,y[,z]]` (default: symbolic).
    #[arg(long, value_parser = parse_dims)]
    pub block: Option<[u32; 3]>,
    /// Analyse for these grid dimensions `x[,y[,z]]` (default: symbolic).
    #[arg(long, value_parser = parse_dims)]
    pub grid: Option<[u32; 3]>,
    /// Time limit per kernel in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
    /// Add each kernel's analysis time (`ms`) to the JSON records.
    #[arg(long)]
    pub timing: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimFormat::Table)]
    pub format: SimFormat,
}

/// One output record of `cudalog bounds`.
#[derive(serde::Serialize, Debug)]
pub struct BoundRecord {
    /// File relative to the workspace root.
    pub file: String,
    /// Kernel name.
    pub kernel: String,
    /// sectors, conflicts, divwarps or steps.
    pub metric: &'static str,
    /// per_warp or whole_launch.
    pub scope: &'static str,
    /// The bound expression, when there is one.
    pub bound: Option<String>,
    /// ok, no_bound or timeout.
    pub status: &'static str,
    /// Why there is no bound, or the assumptions of the bound.
    pub reason: Option<String>,
    /// The bound's value under `--set`/`--block`/`--grid` (only when some
    /// value was given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Milliseconds to bound the kernel (all metrics; with `--timing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
}

/// The bounds of every kernel (the records `cudalog bounds` prints).
pub fn bound_records(args: &BoundsArgs) -> Result<Vec<BoundRecord>> {
    use crate::bounds::exec::Shape;
    use crate::bounds::kernel::{Limits, kernel_bounds};
    let root = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !root.is_dir() {
        bail!("{}: no such directory", root.display());
    }
    let config = Config::load(&root)?;
    let cost = CostModel::from(&config.cost);
    cost.validate()?;
    let (file_filter, name) = args
        .kernel
        .as_deref()
        .map(|k| match k.rsplit_once(':') {
            Some((f, n)) if !f.is_empty() && !f.ends_with(':') => (Some(f), Some(n)),
            _ => (None, Some(k)),
        })
        .unwrap_or_default();
    let kernels = kernels_ir(&root, &config, file_filter, name)?;
    if kernels.is_empty() {
        match name {
            Some(n) => bail!("no kernel `{n}` with a body in {}", root.display()),
            None => bail!("no kernel with a body in {}", root.display()),
        }
    }
    let mut env: BTreeMap<String, f64> = BTreeMap::new();
    for s in &args.set {
        let (k, v) = parse_set(s)?;
        env.insert(k, v);
    }
    const D: [&str; 3] = ["x", "y", "z"];
    for d in 0..3 {
        if let Some(b) = args.block {
            env.insert(format!("blockDim.{}", D[d]), f64::from(b[d]));
        }
        if let Some(g) = args.grid {
            env.insert(format!("gridDim.{}", D[d]), f64::from(g[d]));
        }
    }
    let evaluate = !env.is_empty();
    let shape = Shape {
        block: args.block,
        grid: args.grid,
        values: BTreeMap::new(),
    };
    let limits = Limits {
        per_kernel: std::time::Duration::from_millis(args.timeout_ms),
    };
    let mut out = Vec::new();
    for (file, f) in kernels {
        let analysis = crate::facts::Analysis::compute(
            &f,
            crate::facts::LaunchDims::default(),
            &Default::default(),
        );
        let t0 = std::time::Instant::now();
        let kb = kernel_bounds(&f, &analysis, &cost, &shape, &limits);
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        for b in kb.bounds {
            let value = if evaluate {
                Some(match &b.expr {
                    Some(e) => match e.eval(&env) {
                        Ok(v) => serde_json::json!(v.ceil()),
                        Err(err) => serde_json::json!(err.to_string()),
                    },
                    None => serde_json::Value::Null,
                })
            } else {
                None
            };
            out.push(BoundRecord {
                file: file.clone(),
                kernel: f.name.clone(),
                metric: b.metric.as_str(),
                scope: b.scope.as_str(),
                bound: b.expr.map(|e| e.to_string()),
                status: b.status.as_str(),
                reason: b.reason,
                value,
                ms: args.timing.then_some(ms),
            });
        }
    }
    Ok(out)
}

/// Run `cudalog bounds`.
pub fn run_bounds(args: BoundsArgs) -> Result<i32> {
    let recs = bound_records(&args)?;
    match args.format {
        SimFormat::Json => println!("{}", serde_json::to_string_pretty(&recs)?),
        SimFormat::Table => {
            let mut last = (String::new(), String::new());
            for r in &recs {
                if (r.file.as_str(), r.kernel.as_str()) != (last.0.as_str(), last.1.as_str()) {
                    println!("{}: {}", r.file, r.kernel);
                    last = (r.file.clone(), r.kernel.clone());
                }
                let what = match (&r.bound, r.status) {
                    (Some(b), _) => b.clone(),
                    (None, s) => format!(
                        "{s}{}",
                        r.reason
                            .as_deref()
                            .map(|x| format!(" ({x})"))
                            .unwrap_or_default()
                    ),
                };
                let val = match &r.value {
                    Some(serde_json::Value::Number(n)) => format!("  = {n}"),
                    Some(serde_json::Value::String(e)) => format!("  ({e})"),
                    _ => String::new(),
                };
                println!("  {:<10} {:<13} {what}{val}", r.metric, r.scope);
            }
            if let Some(a) = recs
                .iter()
                .find_map(|r| r.reason.as_ref().filter(|_| r.status == "ok"))
            {
                println!("note: bounds {a}");
            }
        }
    }
    Ok(0)
}
