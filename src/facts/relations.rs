//! Input relations for the Datalog programs, built from one function's IR.
//!
//! Ids are the IR's own: expression ids, statement ids, variable ids. The
//! builder is structural (one walk over the statement tree); every
//! propagation over these relations happens in the Datalog programs.

use crate::ir::{BinOp, Builtin, Dim, ExprId, ExprKind, Function, StmtId, StmtKind, UnOp};

/// Thread dimensions plus one pseudo-dimension, [`VARIES`], for values that
/// differ between threads for reasons other than an affine index (results
/// of shuffles, atomics, warp votes).
pub type DimId = u8;
/// `threadIdx.x`
pub const DIM_X: DimId = 0;
/// `threadIdx.y`
pub const DIM_Y: DimId = 1;
/// `threadIdx.z`
pub const DIM_Z: DimId = 2;
/// Varies per thread, not through an index.
pub const VARIES: DimId = 3;

/// The relations the uniformity and control programs read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Relations {
    /// (expr, dim): the expression is `threadIdx.dim` (or varies per thread).
    pub thread_src: Vec<(u32, DimId)>,
    /// (parent, child): the parent's value depends on the child's.
    pub child: Vec<(u32, u32)>,
    /// Reaching definitions (flow-sensitive value flow through variables).
    pub flow: super::dataflow::DataFlow,
    /// (stmt, cond): the statement executes only where `cond` allows it
    /// (enclosing if/loop/switch/`?:` conditions, transitively).
    pub under: Vec<(u32, u32)>,
    /// (stmt, cond): an exit (`return`, `break`, `continue`) guarded by
    /// `cond` can make some threads skip the statement.
    pub skipped_by: Vec<(u32, u32)>,
    /// Expressions that load from memory (subscripts and dereferences).
    pub loads: Vec<u32>,
    /// Branch points: (stmt, cond expr).
    pub branches: Vec<(u32, u32)>,
    /// (entry definition of a parameter, dim): the callers pass values that
    /// depend on `dim` (device functions).
    pub param_src: Vec<(u32, DimId)>,
}

/// Calls whose result differs per thread whatever their arguments.
fn varies_per_thread(callee: &str) -> bool {
    let base = callee.rsplit("::").next().unwrap_or(callee);
    base.starts_with("__shfl")
        || base.starts_with("atomic")
        || base.starts_with("__atomic")
        || base.starts_with("__ballot")
        || base.starts_with("__activemask")
        || base.starts_with("__match")
        || base == "__lane_id"
        || base == "thread_rank"
        || base == "__reduce_add_sync"
        || base == "curand"
        || base.starts_with("curand_")
        || base == "clock"
        || base == "clock64"
}

struct Builder<'f> {
    f: &'f Function,
    callees: &'f super::Callees,
    r: Relations,
    /// Conditions of the enclosing branches/loops.
    conds: Vec<u32>,
    /// Guards of the `return`s seen so far: every later statement is
    /// skipped by the threads that took one.
    func_exits: Vec<u32>,
    /// Per enclosing loop: the statements inside it so far, and the guards
    /// of exits (`break`, `continue`, `return`) taken inside it.
    loops: Vec<(Vec<u32>, Vec<u32>)>,
}

/// Build the relations of `f`; `callees` summarises the device functions it calls.
pub fn build(f: &Function, callees: &super::Callees) -> Relations {
    build_with(f, callees, &[])
}

/// [`build`], with the thread dependence of each parameter (by position) as
/// the callers pass it.
pub fn build_with(f: &Function, callees: &super::Callees, param_dims: &[u8]) -> Relations {
    let mut b = Builder {
        f,
        callees,
        r: Relations::default(),
        conds: Vec::new(),
        func_exits: Vec::new(),
        loops: Vec::new(),
    };
    for (i, e) in f.exprs.iter().enumerate() {
        b.expr_facts(ExprId(i as u32), &e.kind);
    }
    if let Some(body) = f.body {
        b.stmt(body);
    }
    b.r.flow = super::dataflow::compute_with(f, &|callee: &str| {
        callees.get(callee).map(|s| s.ref_writes).unwrap_or(0)
    });
    for (i, var) in f.vars.iter().enumerate() {
        let Some(p) = var.param_position else {
            continue;
        };
        let dims = param_dims.get(p as usize).copied().unwrap_or(0);
        let def = super::dataflow::param_def(f, crate::ir::VarId(i as u32));
        for d in 0..4u8 {
            if dims & (1 << d) != 0 {
                b.r.param_src.push((def, d));
            }
        }
    }
    b.r.under.sort_unstable();
    b.r.under.dedup();
    b.r.skipped_by.sort_unstable();
    b.r.skipped_by.dedup();
    b.r
}

impl Builder<'_> {
    fn expr_facts(&mut self, id: ExprId, kind: &ExprKind) {
        let e = id.0;
        match kind {
            ExprKind::Builtin(Builtin::ThreadIdx(d)) => {
                let dim = match d {
                    Dim::X => DIM_X,
                    Dim::Y => DIM_Y,
                    Dim::Z => DIM_Z,
                };
                self.r.thread_src.push((e, dim));
            }
            // Reads of variables flow through `flow` (reaching definitions).
            ExprKind::Var(_) => {}
            ExprKind::Index { .. } | ExprKind::Unary(UnOp::Deref, _) => {
                self.r.loads.push(e);
                for c in self.f.child_exprs(id) {
                    self.r.child.push((e, c.0));
                }
            }
            ExprKind::Member { arrow: true, .. } => {
                self.r.loads.push(e);
                for c in self.f.child_exprs(id) {
                    self.r.child.push((e, c.0));
                }
            }
            ExprKind::Assign { op, lhs, rhs } => {
                self.r.child.push((e, rhs.0));
                if op.is_some() {
                    self.r.child.push((e, lhs.0));
                }
            }
            ExprKind::IncDec { target, .. } => self.r.child.push((e, target.0)),
            ExprKind::Call { callee, .. } => {
                // (issue 8, class 2) Ranks of recognised cooperative groups
                // are thread indices (x, y, z), not opaque per-thread data;
                // sizes and a warp-multiple tile's rank among tiles are
                // not per-thread.
                let method = super::coop::group_method(self.f, id);
                match method {
                    Some((g, "thread_rank")) => {
                        let _ = g;
                        self.r
                            .thread_src
                            .extend([(e, DIM_X), (e, DIM_Y), (e, DIM_Z)]);
                    }
                    Some((super::coop::Group::Tile(n), "meta_group_rank")) if n % 32 != 0 => {
                        self.r
                            .thread_src
                            .extend([(e, DIM_X), (e, DIM_Y), (e, DIM_Z)]);
                    }
                    Some(_) => {}
                    None if varies_per_thread(callee) => self.r.thread_src.push((e, VARIES)),
                    None => {}
                }
                // (audit 20261208 #26) A recognised group method is not the
                // workspace's function of the same name (`thread_rank` of
                // some header's own class).
                if let Some(s) = self.callees.get(callee).filter(|_| method.is_none()) {
                    for d in 0..4u8 {
                        if s.dims & (1 << d) != 0 {
                            self.r.thread_src.push((e, d));
                        }
                    }
                }
                for c in self.f.child_exprs(id) {
                    self.r.child.push((e, c.0));
                }
            }
            ExprKind::Binary(BinOp::Comma, _, b) => self.r.child.push((e, b.0)),
            _ => {
                for c in self.f.child_exprs(id) {
                    self.r.child.push((e, c.0));
                }
            }
        }
    }

    /// Record that statement `s` is controlled by the enclosing conditions,
    /// by earlier exits, and define what it assigns.
    fn enter(&mut self, s: StmtId) {
        for c in &self.conds {
            self.r.under.push((s.0, *c));
        }
        for c in &self.func_exits {
            self.r.skipped_by.push((s.0, *c));
        }
        for (inside, exits) in &mut self.loops {
            inside.push(s.0);
            for c in exits.iter() {
                self.r.skipped_by.push((s.0, *c));
            }
        }
    }

    fn stmt(&mut self, s: StmtId) {
        self.enter(s);
        let kind = self.f.stmt(s).kind.clone();
        match kind {
            StmtKind::Block(items) => {
                for i in items {
                    self.stmt(i);
                }
            }
            StmtKind::Expr(e) => self.cond_exprs(s, e),
            StmtKind::Return(_) => {
                // Threads that return here skip everything after, and every
                // later iteration of the enclosing loops.
                let guards = self.conds.clone();
                self.func_exits.extend(guards.iter().copied());
                for (_, exits) in &mut self.loops {
                    exits.extend(guards.iter().copied());
                }
            }
            StmtKind::Break | StmtKind::Continue => {
                // Only the innermost loop is left (or its iteration cut short).
                let guards = self.conds.clone();
                if let Some((_, exits)) = self.loops.last_mut() {
                    exits.extend(guards);
                }
            }
            StmtKind::If { cond, then, els } => {
                self.r.branches.push((s.0, cond.0));
                self.conds.push(cond.0);
                self.stmt(then);
                if let Some(e) = els {
                    self.stmt(e);
                }
                self.conds.pop();
            }
            StmtKind::Switch { cond, body } => {
                self.r.branches.push((s.0, cond.0));
                self.conds.push(cond.0);
                self.stmt(body);
                self.conds.pop();
            }
            StmtKind::PreprocAlt { then, els, .. } => {
                self.stmt(then);
                if let Some(e) = els {
                    self.stmt(e);
                }
            }
            StmtKind::For {
                init, cond, body, ..
            } => {
                if let Some(i) = init {
                    self.stmt(i);
                }
                self.loop_body(s, cond, body);
            }
            StmtKind::While { cond, body } => self.loop_body(s, Some(cond), body),
            StmtKind::DoWhile { body, cond } => self.loop_body(s, Some(cond), body),
            _ => {}
        }
    }

    fn loop_body(&mut self, s: StmtId, cond: Option<ExprId>, body: StmtId) {
        if let Some(c) = cond {
            self.r.branches.push((s.0, c.0));
            self.conds.push(c.0);
        }
        self.loops.push((Vec::new(), Vec::new()));
        self.stmt(body);
        let (inside, exits) = self.loops.pop().unwrap_or_default();
        // An exit taken in one iteration skips the whole body in later ones.
        for st in &inside {
            for c in &exits {
                self.r.skipped_by.push((*st, *c));
            }
        }
        // Variables assigned in the loop header depend on how many
        // iterations a thread ran: the loop condition controls the loop
        // statement itself too.
        if let Some(c) = cond {
            self.r.under.push((s.0, c.0));
            self.conds.pop();
        }
        // Assignments in the body under a thread-dependent exit also differ
        // after the loop: they are controlled by the exit guards.
        for st in &inside {
            for c in &exits {
                self.r.under.push((*st, *c));
            }
        }
    }

    /// Conditions inside an expression statement: `a ? b : c`, `&&`, `||`.
    fn cond_exprs(&mut self, s: StmtId, e: ExprId) {
        let mut stack = vec![e];
        while let Some(x) = stack.pop() {
            match &self.f.expr(x).kind {
                ExprKind::Cond(c, _, _) | ExprKind::Binary(BinOp::LogAnd | BinOp::LogOr, c, _) => {
                    self.r.branches.push((s.0, c.0));
                }
                _ => {}
            }
            stack.extend(self.f.child_exprs(x));
        }
    }
}
