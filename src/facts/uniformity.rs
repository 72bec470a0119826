//! Uniformity: which thread dimensions each expression and variable depends
//! on, as a crepe Datalog program over [`Relations`].
//!
//! Rules (the abstract domain of GPUDrano, per dimension):
//! - `threadIdx.d` depends on `d`; shuffles, atomics and votes on `VARIES`;
//! - an expression depends on what its operands depend on — including a load,
//!   whose value depends on its address (a load through a uniform address is
//!   uniform);
//! - a read of a variable depends on the definitions that reach it
//!   ([`super::dataflow`], iterated to a fixpoint around loops);
//! - the merge rule: a read after a branch on a condition that depends on
//!   `d`, of a value assigned inside that branch, depends on `d` — even when
//!   every branch assigns a constant; inside the branch it does not;
//! - a value computed from memory read through a thread-dependent address is
//!   data-dependent (`from_memory`).

use super::relations::{DimId, Relations};
/// The Datalog program (crepe generates undocumented items).
#[allow(missing_docs)]
mod program {
    use crepe::crepe;

    crepe! {
        @input
        pub struct ThreadSrc(pub u32, pub u8);
        @input
        pub struct Child(pub u32, pub u32);
        @input
        pub struct Load(pub u32);
        @input
        pub struct DefVar(pub u32, pub u32);
        @input
        pub struct DefValue(pub u32, pub u32);
        @input
        pub struct Reaches(pub u32, pub u32);
        @input
        pub struct DefUnder(pub u32, pub u32);
        @input
        pub struct UseUnder(pub u32, pub u32);
        @input
        pub struct ParamSrc(pub u32, pub u8);

        @output
        pub struct Dep(pub u32, pub u8);
        @output
        pub struct VarDep(pub u32, pub u8);
        @output
        pub struct FromMemory(pub u32);
        @output
        pub struct VarFromMemory(pub u32);

        struct DefDep(u32, u8);
        struct DefFromMemory(u32);

        // Each recursive rule starts from its derived relation: crepe
        // evaluates clauses in the order written, so a new fact is joined
        // with the inputs through their indices instead of every round
        // scanning an input (`Reaches` is large) in full.
        Dep(e, d) <- ThreadSrc(e, d);
        Dep(p, d) <- Dep(c, d), Child(p, c);
        DefDep(x, d) <- Dep(e, d), DefValue(x, e);
        // Parameters carry what the callers pass.
        DefDep(x, d) <- ParamSrc(x, d);
        Dep(u, d) <- DefDep(x, d), Reaches(u, x);
        // The merge rule: a read after the merge of a branch on a
        // thread-dependent condition sees values some threads assigned and
        // others did not.
        Dep(u, d) <- Dep(c, d), DefUnder(x, c), Reaches(u, x), !UseUnder(u, c);
        VarDep(v, d) <- DefDep(x, d), DefVar(x, v);
        VarDep(v, d) <- Dep(c, d), DefUnder(x, c), DefVar(x, v);

        FromMemory(e) <- Dep(e, _), Load(e);
        FromMemory(p) <- FromMemory(c), Child(p, c);
        DefFromMemory(x) <- FromMemory(e), DefValue(x, e);
        FromMemory(u) <- DefFromMemory(x), Reaches(u, x);
        VarFromMemory(v) <- DefFromMemory(x), DefVar(x, v);
    }
}

use program::*;

/// Per-expression and per-variable thread dependence of one function.
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash)]
pub struct Uniformity {
    /// Bit set of [`DimId`]s per expression id.
    pub expr_dims: Vec<u8>,
    /// Bit set of [`DimId`]s per variable id.
    pub var_dims: Vec<u8>,
    /// Whether an expression's value comes from a thread-dependent load.
    pub expr_from_memory: Vec<bool>,
    /// Whether a variable holds such a value.
    pub var_from_memory: Vec<bool>,
}

impl Uniformity {
    /// Run the program.
    pub fn compute(r: &Relations, n_exprs: usize, n_vars: usize) -> Uniformity {
        let mut rt = Crepe::new();
        rt.extend(r.thread_src.iter().map(|&(e, d)| ThreadSrc(e, d)));
        rt.extend(r.child.iter().map(|&(p, c)| Child(p, c)));
        rt.extend(r.loads.iter().map(|&e| Load(e)));
        rt.extend(r.flow.def_var.iter().map(|&(x, v)| DefVar(x, v)));
        rt.extend(r.flow.def_value.iter().map(|&(x, e)| DefValue(x, e)));
        rt.extend(r.flow.reaches.iter().map(|&(u, x)| Reaches(u, x)));
        rt.extend(r.flow.def_under.iter().map(|&(x, c)| DefUnder(x, c)));
        rt.extend(r.flow.use_under.iter().map(|&(u, c)| UseUnder(u, c)));
        rt.extend(r.param_src.iter().map(|&(x, d)| ParamSrc(x, d)));
        let (dep, var_dep, from_mem, var_from_mem) =
            rt.run_with_hasher::<rustc_hash::FxBuildHasher>();
        let mut u = Uniformity {
            expr_dims: vec![0; n_exprs],
            var_dims: vec![0; n_vars],
            expr_from_memory: vec![false; n_exprs],
            var_from_memory: vec![false; n_vars],
        };
        for Dep(e, d) in dep {
            if let Some(x) = u.expr_dims.get_mut(e as usize) {
                *x |= 1 << d;
            }
        }
        for VarDep(v, d) in var_dep {
            if let Some(x) = u.var_dims.get_mut(v as usize) {
                *x |= 1 << d;
            }
        }
        for FromMemory(e) in from_mem {
            if let Some(x) = u.expr_from_memory.get_mut(e as usize) {
                *x = true;
            }
        }
        for VarFromMemory(v) in var_from_mem {
            if let Some(x) = u.var_from_memory.get_mut(v as usize) {
                *x = true;
            }
        }
        u
    }

    /// Whether expression `e` depends on dimension `d`.
    pub fn depends(&self, e: u32, d: DimId) -> bool {
        self.expr_dims
            .get(e as usize)
            .is_some_and(|m| m & (1 << d) != 0)
    }

    /// Whether expression `e` is the same for all threads of a block.
    pub fn is_uniform(&self, e: u32) -> bool {
        self.expr_dims.get(e as usize).is_none_or(|m| *m == 0)
    }
}
