//! Per-kernel bounds: the symbolic warp execution ([`super::exec`]) builds
//! a cost program, the LP stage ([`super::aara`]) bounds each metric per
//! warp, block and warp indices are replaced by their worst values, and the
//! whole-launch bound multiplies by the warps per block and the blocks.

use super::Metric;
use super::aara::{Aara, Base, Failure, Solution};
use super::exec::{Exec, Lanes, Shape, extremum};
use super::expr::Bx;
use super::poly::{AtomId, Atoms, Poly};
use crate::facts::Analysis;
use crate::facts::cost::CostModel;
use crate::ir::Function;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// Analysis limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget per kernel (all metrics together).
    pub per_kernel: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_kernel: Duration::from_secs(2),
        }
    }
}

/// Whether a bound was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A bound.
    Ok,
    /// No bound (see the reason).
    NoBound,
    /// The time limit passed.
    Timeout,
}

impl Status {
    /// As in the JSON output and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NoBound => "no_bound",
            Status::Timeout => "timeout",
        }
    }
}

/// What a bound is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The worst warp.
    PerWarp,
    /// Every warp of the launch.
    WholeLaunch,
}

impl Scope {
    /// As in the JSON output and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::PerWarp => "per_warp",
            Scope::WholeLaunch => "whole_launch",
        }
    }
}

/// One bound.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricBound {
    /// The metric.
    pub metric: Metric,
    /// Its scope.
    pub scope: Scope,
    /// The bound (`None` unless `status` is ok).
    pub expr: Option<Bx>,
    /// Ok, no bound or timeout.
    pub status: Status,
    /// Why there is no bound, or the assumptions of a bound.
    pub reason: Option<String>,
    /// Milliseconds in the LP solver.
    pub solver_ms: f64,
}

/// The bounds of one kernel: per metric, per-warp then whole-launch.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelBounds {
    /// Eight bounds: every metric per warp and for the whole launch.
    pub bounds: Vec<MetricBound>,
    /// Milliseconds for the whole kernel.
    pub ms: f64,
}

/// Bound every metric of kernel `f` (pure: the IR, its facts, the cost
/// model, what is known of the launch and the time limit).
pub fn kernel_bounds(
    f: &Function,
    a: &Analysis,
    cost: &CostModel,
    shape: &Shape,
    limits: &Limits,
) -> KernelBounds {
    let start = Instant::now();
    let deadline = start + limits.per_kernel;
    let warp = cost.warp.max(1) as usize;
    // Lane layouts: one symbolic warp, or every warp of a known block whose
    // warps do not start a row of threadIdx.x.
    let mut assumption = None;
    let layouts: Vec<Lanes> = match shape.block {
        Some(b) => {
            let threads = (b[0] * b[1] * b[2]) as usize;
            (0..threads.div_ceil(warp))
                .map(|w| {
                    Lanes::Concrete(
                        (w * warp..((w + 1) * warp).min(threads))
                            .map(|t| {
                                let t = t as i64;
                                let (bx, by) = (i64::from(b[0]), i64::from(b[1]));
                                [t % bx, (t / bx) % by, t / (bx * by)]
                            })
                            .collect(),
                    )
                })
                .collect()
        }
        None => {
            assumption = Some(format!(
                "assumes a 1-D block or blockDim.x a multiple of {warp}"
            ));
            vec![Lanes::Symbolic]
        }
    };
    let mut per: Vec<Vec<Result<(Bx, f64), Failure>>> = vec![Vec::new(); 4];
    for lanes in layouts {
        let Some(built) = Exec::run(f, *cost, shape, lanes, &a.loops) else {
            for p in per.iter_mut() {
                p.push(Err(Failure::NoBound(format!("`{}` has no body", f.name))));
            }
            break;
        };
        for (m, p) in per.iter_mut().enumerate() {
            if Instant::now() > deadline {
                p.push(Err(Failure::Timeout));
                continue;
            }
            let typical = |_: AtomId| 100.0;
            let r = Aara::solve(&built.atoms, &built.prog, m, deadline, &typical).and_then(|s| {
                let ms = s.solver_ms;
                render(&s, &built.atoms, &built.upper)
                    .map(|b| (b, ms))
                    .ok_or_else(|| {
                        Failure::NoBound(
                            "the bound depends on a value no bound may name (a loaded value, or blockIdx/threadIdx in a non-monotone way)"
                                .into(),
                        )
                    })
            });
            p.push(r);
        }
    }
    let mut bounds = Vec::new();
    for (m, metric) in Metric::ALL.iter().enumerate() {
        let rs = &per[m];
        let failure = rs.iter().find_map(|r| r.as_ref().err().cloned());
        let (expr, status, reason, ms) = match failure {
            Some(Failure::Timeout) => (None, Status::Timeout, Some("time limit".to_string()), 0.0),
            Some(Failure::NoBound(why)) => (None, Status::NoBound, Some(why), 0.0),
            None => {
                let exprs: Vec<Bx> = rs
                    .iter()
                    .filter_map(|r| r.as_ref().ok().map(|x| x.0.clone()))
                    .collect();
                let ms: f64 = rs.iter().filter_map(|r| r.as_ref().ok().map(|x| x.1)).sum();
                let whole = if exprs.len() > 1 {
                    // Every warp of a known block: their sum, per block.
                    Some(
                        Bx::Mul(vec![Bx::Add(exprs.clone()).simplify(), grid_product(shape)])
                            .simplify(),
                    )
                } else {
                    None
                };
                (
                    Some((Bx::Max(exprs).simplify(), whole)),
                    Status::Ok,
                    assumption.clone(),
                    ms,
                )
            }
        };
        let (expr, whole) = match expr {
            Some((e, Some(w))) => (Some(e), Some(w)),
            Some((e, None)) => {
                let w = whole_launch(&e, shape, warp);
                (Some(e), Some(w))
            }
            None => (None, None),
        };
        bounds.push(MetricBound {
            metric: *metric,
            scope: Scope::PerWarp,
            expr,
            status,
            reason: reason.clone(),
            solver_ms: ms,
        });
        bounds.push(MetricBound {
            metric: *metric,
            scope: Scope::WholeLaunch,
            expr: whole,
            status,
            reason,
            solver_ms: 0.0,
        });
    }
    KernelBounds {
        bounds,
        ms: start.elapsed().as_secs_f64() * 1000.0,
    }
}

/// `gridDim.x * gridDim.y * gridDim.z` (numbers when the grid is known).
fn grid_product(shape: &Shape) -> Bx {
    const D: [&str; 3] = ["x", "y", "z"];
    Bx::Mul(
        (0..3)
            .map(|d| match shape.grid {
                Some(g) => Bx::Int(i64::from(g[d])),
                None => Bx::Name(format!("gridDim.{}", D[d])),
            })
            .collect(),
    )
    .simplify()
}

/// `per_warp × ceil(threads per block / warp) × blocks`.
fn whole_launch(per_warp: &Bx, shape: &Shape, warp: usize) -> Bx {
    const D: [&str; 3] = ["x", "y", "z"];
    let dim = |fixed: Option<[u32; 3]>, name: &str, d: usize| match fixed {
        Some(v) => Bx::Int(i64::from(v[d])),
        None => Bx::Name(format!("{name}.{}", D[d])),
    };
    let threads = Bx::Mul((0..3).map(|d| dim(shape.block, "blockDim", d)).collect()).simplify();
    let warps = Bx::Ceil(Box::new(Bx::div(threads, Bx::Int(warp as i64)))).simplify();
    let blocks = Bx::Mul((0..3).map(|d| dim(shape.grid, "gridDim", d)).collect()).simplify();
    Bx::Mul(vec![per_warp.clone(), warps, blocks]).simplify()
}

/// The solution as an expression, every base at its worst over the block
/// and warp indices.
fn render(s: &Solution, atoms: &Atoms, upper: &HashMap<AtomId, Poly>) -> Option<Bx> {
    let fix = |b: &Base| -> Option<Base> {
        Some(match b {
            Base::Interval { d, k } => Base::Interval {
                d: extremum(d, atoms, upper, true)?,
                k: *k,
            },
            Base::LogUp { x, hi, k } => Base::LogUp {
                x: extremum(x, atoms, upper, false)?,
                hi: extremum(hi, atoms, upper, true)?,
                k: *k,
            },
            Base::LogDown { x, k } => Base::LogDown {
                x: extremum(x, atoms, upper, true)?,
                k: *k,
            },
            Base::Atom(a) => {
                if upper.contains_key(a) {
                    return None;
                }
                Base::Atom(*a)
            }
        })
    };
    let terms: Option<Vec<_>> = s
        .terms
        .iter()
        .map(|(c, bases)| Some((*c, bases.iter().map(fix).collect::<Option<Vec<_>>>()?)))
        .collect();
    Solution {
        terms: terms?,
        solver_ms: s.solver_ms,
    }
    .to_bx(atoms)
}

/// Evaluate a bound with values for its names.
pub fn evaluate(b: &Bx, values: &BTreeMap<String, f64>) -> Result<f64, super::expr::EvalError> {
    b.eval(values)
}
