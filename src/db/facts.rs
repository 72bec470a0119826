//! Per-function facts in the shape the store writes them.

use crate::ir::Function;
use std::hash::{Hash, Hasher};

/// A parameter row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamRow {
    /// Position (0-based).
    pub position: u32,
    /// Name.
    pub name: String,
    /// Type as rendered.
    pub ty: String,
    /// Element size for pointers and arrays.
    pub elem_bytes: Option<u64>,
}

/// Everything the store keeps about one function, with lines relative to
/// the function start.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionFacts {
    /// Hash of the lowered function (hex); changes iff any row would change
    /// (up to line shifts).
    pub content_hash: String,
    /// The lowered function.
    pub function: std::sync::Arc<Function>,
    /// Parameter rows.
    pub params: Vec<ParamRow>,
    /// House-rule facts (issue 9: `loops`, `loop_stmts`, `fp64_ops`,
    /// `launch_bounds_decls`), lines relative to the function (1 = its
    /// first line); written by `insert_function`.
    pub rule_facts: crate::rules::facts::RuleFacts,
}

struct Blake3Hasher(blake3::Hasher);

impl Hasher for Blake3Hasher {
    fn finish(&self) -> u64 {
        let h = self.0.finalize();
        u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap_or([0; 8]))
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// Stable hex hash of any `Hash` value (blake3 over the hash stream).
pub fn stable_hash<T: Hash + ?Sized>(v: &T) -> String {
    let mut h = Blake3Hasher(blake3::Hasher::new());
    v.hash(&mut h);
    h.0.finalize().to_hex()[..32].to_string()
}

impl FunctionFacts {
    /// Derive the facts of a lowered function; `text` is its definition's
    /// text (house-rule facts read `__launch_bounds__` as written).
    pub fn compute(f: &std::sync::Arc<Function>, start_col: u32, text: &str) -> FunctionFacts {
        let params = f
            .params
            .iter()
            .map(|v| {
                let var = f.var(*v);
                ParamRow {
                    position: var.param_position.unwrap_or(0),
                    name: var.name.clone(),
                    ty: var.ty.render(),
                    elem_bytes: var.ty.element().and_then(|e| e.bytes()),
                }
            })
            .collect();
        let rule_facts = crate::rules::facts::function_rule_facts_with_text(f, text);
        FunctionFacts {
            content_hash: stable_hash(&(
                &**f,
                start_col,
                crate::store::SCHEMA_VERSION,
                &rule_facts,
            )),
            function: f.clone(),
            params,
            rule_facts,
        }
    }
}

/// One row of the `bounds` table (a kernel's resource bound for one metric
/// and scope), derived with the function's other results.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BoundRow {
    /// `sectors`, `conflicts`, `divwarps` or `steps`.
    pub metric: &'static str,
    /// `per_warp` or `whole_launch`.
    pub scope: &'static str,
    /// The bound, when `status` is `ok`.
    pub expression: Option<String>,
    /// `ok`, `no_bound` or `timeout`.
    pub status: &'static str,
    /// Why there is no bound, or the bound's assumption.
    pub reason: Option<String>,
    /// Microseconds in the LP solver.
    pub solver_us: u64,
}

/// The `bounds` rows of a kernel (none for other functions): symbolic
/// launch, the analysis' cost model, the default time limit.
pub fn bound_rows(f: &Function, a: &crate::facts::Analysis) -> Vec<BoundRow> {
    if f.kind != crate::ir::FunctionKind::Kernel || f.body.is_none() {
        return Vec::new();
    }
    let kb = crate::bounds::kernel::kernel_bounds(
        f,
        a,
        &a.cost,
        &crate::bounds::exec::Shape::default(),
        &crate::bounds::kernel::Limits::default(),
    );
    kb.bounds
        .into_iter()
        .map(|b| BoundRow {
            metric: b.metric.as_str(),
            scope: b.scope.as_str(),
            expression: b.expr.map(|e| e.to_string()),
            status: b.status.as_str(),
            reason: b.reason,
            solver_us: (b.solver_ms * 1000.0) as u64,
        })
        .collect()
}
