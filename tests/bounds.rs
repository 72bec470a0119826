//! Resource bounds are sound: on random sizes, every bound (per warp and
//! whole launch, every metric) is at least what the lock-step simulator
//! counts, for cudalog's own fixtures of the seed's kernel shapes
//! (tests/fixtures/bounds) and every kernel of workspace-example.

use cudalog::bounds::exec::Shape;
use cudalog::bounds::kernel::{Limits, Scope, Status, kernel_bounds};
use cudalog::bounds::simulate::{ArrayInit, SimConfig, simulate};
use cudalog::cli::bounds::kernels_ir;
use cudalog::config::Config;
use cudalog::facts::cost::CostModel;
use cudalog::facts::{Analysis, LaunchDims};
use cudalog::ir::{Function, Type};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestRunner};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

thread_local! {
    /// Bounds compared with a simulated count on this test's thread (a
    /// test that compares nothing proves nothing).
    static COMPARED: Cell<usize> = const { Cell::new(0) };
}

fn kernels(dir: &str) -> Vec<(String, Function)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let config = Config::load(&root).expect("config");
    kernels_ir(&root, &config, None, None).expect("kernels")
}

/// One random launch of a kernel.
#[derive(Debug, Clone)]
struct Case {
    block: [u32; 3],
    grid: [u32; 3],
    ints: Vec<i64>,
    data: Vec<f64>,
    fill: f64,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        prop_oneof![
            Just([32u32, 1, 1]),
            Just([64, 1, 1]),
            Just([48, 1, 1]),
            Just([128, 1, 1]),
            Just([32, 2, 1]),
            Just([16, 4, 1]),
            Just([8, 8, 1]),
        ],
        (1u32..=3, 1u32..=2),
        proptest::collection::vec(0i64..=80, 6),
        proptest::collection::vec(0.0f64..300.0, 0..64),
        prop_oneof![Just(0.0), Just(1.0), Just(5.0)],
    )
        .prop_map(|(block, (gx, gy), ints, data, fill)| Case {
            block,
            grid: [gx, gy, 1],
            ints,
            data: data.into_iter().map(f64::floor).collect(),
            fill,
        })
}

/// Whether the symbolic lane layout's assumption holds for `b`.
fn symbolic_ok(b: [u32; 3]) -> bool {
    b[0].is_multiple_of(32) || (b[1] == 1 && b[2] == 1)
}

/// Check every bound of `f` against one simulated launch.
fn check(file: &str, f: &Function, c: &Case) -> Result<(), TestCaseError> {
    let mut scalars = BTreeMap::new();
    let mut arrays = BTreeMap::new();
    let mut k = 0;
    for p in &f.params {
        let v = f.var(*p);
        match &v.ty {
            Type::Scalar(s) if s.is_integral() => {
                scalars.insert(v.name.clone(), c.ints[k % c.ints.len()] as f64);
                k += 1;
            }
            Type::Scalar(_) => {
                scalars.insert(v.name.clone(), 0.05);
            }
            t if t.is_indexable() && !c.data.is_empty() => {
                arrays.insert(v.name.clone(), ArrayInit::Values(c.data.clone()));
            }
            _ => {}
        }
    }
    // Matrix tiles are 32x32 in the fixtures.
    let block = if f.name.starts_with("matrixMul") && f.name != "matrixMulNaive" {
        [32, 32, 1]
    } else {
        c.block
    };
    let cfg = SimConfig {
        block,
        grid: c.grid,
        scalars: scalars.clone(),
        arrays,
        fill: c.fill,
        blocks: None,
        max_steps: 50_000_000,
        cost: CostModel::default(),
    };
    let sim = match simulate(f, &cfg) {
        Ok(s) => s,
        Err(e) => return Err(TestCaseError::reject(format!("simulation: {e}"))),
    };
    let mut env: BTreeMap<String, f64> = scalars;
    // Template parameters: the simulator reads an unset one as 0.
    for tp in &f.template_params {
        env.entry(tp.name.clone()).or_insert(0.0);
    }
    for (d, n) in ["x", "y", "z"].iter().enumerate() {
        env.insert(format!("blockDim.{n}"), f64::from(block[d]));
        env.insert(format!("gridDim.{n}"), f64::from(c.grid[d]));
    }
    let a = Analysis::compute(f, LaunchDims::default(), &Default::default());
    let limits = Limits {
        per_kernel: Duration::from_secs(20),
    };
    let mut shapes = vec![Shape {
        block: Some(block),
        grid: Some(c.grid),
        values: BTreeMap::new(),
    }];
    if symbolic_ok(block) {
        shapes.push(Shape::default());
    }
    for shape in &shapes {
        let kb = kernel_bounds(f, &a, &CostModel::default(), shape, &limits);
        for b in &kb.bounds {
            let m = b.metric as usize;
            let measured = match b.scope {
                Scope::PerWarp => sim.max_warp[m],
                Scope::WholeLaunch => sim.total[m],
            } as f64;
            if b.status != Status::Ok {
                // No bound is honest; it must say why.
                prop_assert!(
                    b.reason.is_some(),
                    "{file}:{} {:?} without a reason",
                    f.name,
                    b.metric
                );
                continue;
            }
            let e = b.expr.as_ref().expect("an ok bound has an expression");
            let v = e.eval(&env).map_err(|err| {
                TestCaseError::fail(format!("{file}:{} {:?}: {e}: {err}", f.name, b.metric))
            })?;
            COMPARED.with(|c| c.set(c.get() + 1));
            prop_assert!(
                v + 1e-6 >= measured,
                "{file}:{} {:?} {:?} (block {:?}, shape block {:?}): bound {e} = {v} < simulated {measured} at {env:?}",
                f.name,
                b.metric,
                b.scope,
                block,
                shape.block
            );
        }
    }
    Ok(())
}

fn run_all(dir: &str, cases: u32) {
    let ks = kernels(dir);
    assert!(!ks.is_empty(), "no kernels in {dir}");
    for (file, f) in &ks {
        let before = COMPARED.with(Cell::get);
        let mut runner = TestRunner::new(PtConfig {
            cases,
            max_global_rejects: 200,
            failure_persistence: None,
            ..PtConfig::default()
        });
        let r = runner.run(&case_strategy(), |c| check(file, f, &c));
        if let Err(e) = r {
            panic!("{file}:{}: {e}", f.name);
        }
        assert!(
            COMPARED.with(Cell::get) > before,
            "{file}:{}: no bound was compared with a simulation",
            f.name
        );
    }
}

#[test]
fn fixture_bounds_are_at_least_the_simulated_counts() {
    run_all("tests/fixtures/bounds", 6);
}

#[test]
fn workspace_example_bounds_are_at_least_the_simulated_counts() {
    run_all("workspace-example", 4);
}

#[test]
fn fixture_kernels_all_get_bounds() {
    // Every metric of every fixture kernel is bounded (symbolic launch).
    let a_limits = Limits {
        per_kernel: Duration::from_secs(20),
    };
    let mut missing = Vec::new();
    for (file, f) in kernels("tests/fixtures/bounds") {
        let a = Analysis::compute(&f, LaunchDims::default(), &Default::default());
        let kb = kernel_bounds(&f, &a, &CostModel::default(), &Shape::default(), &a_limits);
        for b in kb.bounds {
            if b.status != Status::Ok {
                missing.push(format!("{file}:{} {:?}: {:?}", f.name, b.metric, b.reason));
            }
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}
