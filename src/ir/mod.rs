//! The miniCUDA-like intermediate representation.
//!
//! Plain data only: one [`Function`] per function definition, with arenas of
//! statements and expressions addressed by stable ids ([`StmtId`], [`ExprId`]).
//! Ids are assigned in source pre-order, so they are stable as long as the
//! function's own text does not change. Spans are *relative* to the
//! function's first line (see [`Span`]) so that editing one function never
//! changes the IR of the functions below it.

mod display;
pub mod types;

pub use types::{ScalarType, Type};

use serde::Serialize;

/// Index of a statement in [`Function::stmts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct StmtId(pub u32);

/// Index of an expression in [`Function::exprs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ExprId(pub u32);

/// Index of a variable (parameter or local) in [`Function::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct VarId(pub u32);

/// A source range relative to the start of its function.
///
/// `line` is 0-based and counted from the function's first line; `col` is the
/// 1-based column in the file (columns do not shift when lines above move).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Span {
    /// First line, relative to the function start (0-based).
    pub line: u32,
    /// First column, 1-based.
    pub col: u32,
    /// Last line, relative to the function start (0-based).
    pub end_line: u32,
    /// Column just past the end, 1-based.
    pub end_col: u32,
}

/// What kind of function a definition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum FunctionKind {
    /// `__global__`: a kernel launched from the host.
    Kernel,
    /// `__device__` (with or without `__host__`): callable from kernels.
    Device,
    /// Everything else: host code.
    Host,
}

impl FunctionKind {
    /// The name used in the store (`functions.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            FunctionKind::Kernel => "kernel",
            FunctionKind::Device => "device",
            FunctionKind::Host => "host",
        }
    }
}

/// CUDA memory spaces an access can target.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
pub enum MemSpace {
    /// Device global memory (kernel pointer parameters, `__device__` variables).
    Global,
    /// Block-shared memory (`__shared__`, `extern __shared__`).
    Shared,
    /// `__constant__` memory.
    Constant,
    /// Thread-local arrays.
    Local,
    /// A pointer whose space the front end cannot decide (e.g. a pointer
    /// parameter of a device function, which callers may bind to any space).
    Generic,
}

impl MemSpace {
    /// The name used in the store (`accesses.space`).
    pub fn as_str(self) -> &'static str {
        match self {
            MemSpace::Global => "global",
            MemSpace::Shared => "shared",
            MemSpace::Constant => "constant",
            MemSpace::Local => "local",
            MemSpace::Generic => "generic",
        }
    }
}

/// The three built-in index/dimension vectors plus their x/y/z component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Dim {
    /// `.x`
    X,
    /// `.y`
    Y,
    /// `.z`
    Z,
}

/// CUDA built-in variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Builtin {
    /// `threadIdx.d`
    ThreadIdx(Dim),
    /// `blockIdx.d`
    BlockIdx(Dim),
    /// `blockDim.d`
    BlockDim(Dim),
    /// `gridDim.d`
    GridDim(Dim),
    /// `warpSize`
    WarpSize,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum UnOp {
    /// `-e`
    Neg,
    /// `+e`
    Plus,
    /// `!e`
    Not,
    /// `~e`
    BitNot,
    /// `*e`
    Deref,
    /// `&e`
    AddrOf,
}

/// Binary operators (assignment excluded, see [`ExprKind::Assign`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    LogAnd,
    LogOr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Comma,
}

/// An expression node. Children are referenced by id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Expr {
    /// What the expression is.
    pub kind: ExprKind,
    /// Where it is (relative span).
    pub span: Span,
}

/// The shapes of expressions.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ExprKind {
    /// Integer literal (value after suffix removal).
    Int(i64),
    /// Floating literal, as written.
    Float(String),
    /// `true` / `false`.
    Bool(bool),
    /// String or character literal.
    Str,
    /// A parameter or local variable.
    Var(VarId),
    /// A name that is not a local: a global variable, enum constant,
    /// function name or an unexpanded macro.
    Name(String),
    /// A template parameter of the enclosing function (index into
    /// [`Function::template_params`]).
    TemplateParam(u32),
    /// A CUDA built-in variable.
    Builtin(Builtin),
    /// Unary operation.
    Unary(UnOp, ExprId),
    /// Binary operation.
    Binary(BinOp, ExprId, ExprId),
    /// Assignment `lhs op= rhs` (`op` is `None` for plain `=`).
    Assign {
        /// Compound operator, if any.
        op: Option<BinOp>,
        /// Target.
        lhs: ExprId,
        /// Value.
        rhs: ExprId,
    },
    /// `++`/`--`, prefix or postfix.
    IncDec {
        /// The operand.
        target: ExprId,
        /// `true` for `++`.
        increment: bool,
        /// `true` for `++x`.
        prefix: bool,
    },
    /// `c ? a : b`
    Cond(ExprId, ExprId, ExprId),
    /// A cast (C style, functional or `static_cast` & co).
    Cast(Type, ExprId),
    /// A call. `callee` is the textual callee (`atomicAdd`, `cg::sync`,
    /// `obj.method`), `receiver` the object of a method call.
    Call {
        /// The callee's name as written (qualified).
        callee: String,
        /// Receiver expression for `a.f(...)` / `a->f(...)`.
        receiver: Option<ExprId>,
        /// Arguments.
        args: Vec<ExprId>,
    },
    /// `base[index]`; `access` links to the recorded memory access, if the
    /// base is an array or pointer.
    Index {
        /// Array or pointer expression.
        base: ExprId,
        /// Subscript.
        index: ExprId,
    },
    /// `base.field` or `base->field`.
    Member {
        /// Object.
        base: ExprId,
        /// Field name.
        field: String,
        /// `true` for `->`.
        arrow: bool,
    },
    /// `sizeof(...)` with its value if the type size is known.
    SizeOf(Option<u64>),
    /// Anything the front end does not model, with its source text.
    Unknown(String),
}

/// A statement node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Stmt {
    /// What the statement is.
    pub kind: StmtKind,
    /// Where it is (relative span).
    pub span: Span,
}

/// The shapes of (structured) statements.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum StmtKind {
    /// `{ ... }`
    Block(Vec<StmtId>),
    /// A local declaration with optional initialiser.
    Decl {
        /// The declared variable.
        var: VarId,
        /// Initialiser (for `dim3 b(x, y)`, a call to `dim3`).
        init: Option<ExprId>,
    },
    /// An expression statement.
    Expr(ExprId),
    /// `if (cond) then else`
    If {
        /// Condition.
        cond: ExprId,
        /// Then branch.
        then: StmtId,
        /// Else branch.
        els: Option<StmtId>,
    },
    /// `for (init; cond; step) body`
    For {
        /// Init statement.
        init: Option<StmtId>,
        /// Loop condition (absent means `true`).
        cond: Option<ExprId>,
        /// Step expression.
        step: Option<ExprId>,
        /// Body.
        body: StmtId,
    },
    /// `while (cond) body`
    While {
        /// Condition.
        cond: ExprId,
        /// Body.
        body: StmtId,
    },
    /// `do body while (cond);`
    DoWhile {
        /// Body.
        body: StmtId,
        /// Condition.
        cond: ExprId,
    },
    /// `switch (cond) body`
    Switch {
        /// Scrutinee.
        cond: ExprId,
        /// Body (a block containing `Case` labels).
        body: StmtId,
    },
    /// `case v:` (`None` for `default:`), followed by its statements in the
    /// enclosing switch block.
    Case(Option<ExprId>),
    /// `break;`
    Break,
    /// `continue;`
    Continue,
    /// `return e;`
    Return(Option<ExprId>),
    /// A barrier (index into [`Function::barriers`]).
    Barrier(u32),
    /// Preprocessor conditional whose condition could not be decided: exactly
    /// one of the branches runs, the same one for every thread.
    PreprocAlt {
        /// The condition text.
        cond: String,
        /// Branch taken when the condition holds.
        then: StmtId,
        /// The other branch.
        els: Option<StmtId>,
    },
    /// Something the front end does not model (goto, try, inline asm other
    /// than barriers), with a short description.
    Opaque(String),
}

/// A variable: a parameter or a local.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Var {
    /// Name as written.
    pub name: String,
    /// Declared type.
    pub ty: Type,
    /// `Some(position)` for parameters.
    pub param_position: Option<u32>,
    /// Memory space the variable itself lives in (`__shared__` arrays) or,
    /// for pointers, the space they point into, when known.
    pub space: Option<MemSpace>,
    /// Where it is declared.
    pub span: Span,
    /// A reference parameter (`T& x`): writes reach the caller's variable.
    pub by_ref: bool,
}

/// A template parameter of a function.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TemplateParam {
    /// Name.
    pub name: String,
    /// `true` for `typename T` / `class T`, `false` for values (`int N`).
    pub is_type: bool,
}

/// One memory access: a read or write of an array element or pointee.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Access {
    /// The `Index` (or deref) expression performing the access.
    pub expr: ExprId,
    /// The statement containing it.
    pub stmt: StmtId,
    /// Name of the array or pointer (the base variable), or its text.
    pub array: String,
    /// The base variable, when it is a local or parameter.
    pub var: Option<VarId>,
    /// Memory space accessed.
    pub space: MemSpace,
    /// Write (`true`) or read (`false`). A compound assignment yields two accesses.
    pub is_write: bool,
    /// Size of one array element in bytes, when known.
    pub elem_bytes: Option<u64>,
    /// Bytes actually transferred per thread (differs from `elem_bytes` for
    /// a field of an array-of-structs element), when known.
    pub access_bytes: Option<u64>,
    /// Byte offset of the accessed field inside the element (0 for whole elements).
    pub field_offset: Option<u64>,
    /// Index expressions, outermost first (`tile[y][x]` → `[y, x]`).
    pub indices: Vec<ExprId>,
    /// Declared dimensions of a multi-dimensional array, outermost first
    /// (`None` for unknown extents, e.g. `extern __shared__`).
    pub dims: Vec<Option<u64>>,
    /// Whether this access is an atomic read-modify-write.
    pub atomic: bool,
    /// Source text of the subscripts, e.g. `[threadIdx.y][threadIdx.x]`.
    pub index_text: String,
    /// Where it is.
    pub span: Span,
}

/// What a barrier synchronises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum BarrierKind {
    /// `__syncthreads()`
    SyncThreads,
    /// `__syncthreads_count/_and/_or(pred)`
    SyncThreadsReduce,
    /// `__syncwarp(mask)`
    SyncWarp,
    /// PTX `bar.sync` / `barrier.sync` (named barrier, wait)
    BarSync,
    /// PTX `bar.arrive` / `barrier.arrive` (named barrier, no wait)
    BarArrive,
    /// PTX `bar.red` / `barrier.red`
    BarRed,
    /// Cooperative groups `g.sync()` / `cg::sync(g)` on a thread block.
    CgBlockSync,
    /// Cooperative groups grid-wide sync.
    CgGridSync,
    /// Cooperative groups sync on a tile or coalesced group (warp-level).
    CgTileSync,
}

impl BarrierKind {
    /// The name used in the store (`barriers.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            BarrierKind::SyncThreads => "syncthreads",
            BarrierKind::SyncThreadsReduce => "syncthreads_reduce",
            BarrierKind::SyncWarp => "syncwarp",
            BarrierKind::BarSync => "bar.sync",
            BarrierKind::BarArrive => "bar.arrive",
            BarrierKind::BarRed => "bar.red",
            BarrierKind::CgBlockSync => "cg.block.sync",
            BarrierKind::CgGridSync => "cg.grid.sync",
            BarrierKind::CgTileSync => "cg.tile.sync",
        }
    }
}

/// A barrier occurrence.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Barrier {
    /// Kind.
    pub kind: BarrierKind,
    /// The statement that performs it.
    pub stmt: StmtId,
    /// Named-barrier id: constant value when known.
    pub barrier_id: Option<i64>,
    /// Named-barrier id as written (operand text), when not constant.
    pub barrier_id_text: Option<String>,
    /// Thread count for `bar.sync id, count`: constant when known.
    pub thread_count: Option<i64>,
    /// Thread count as written, when not constant.
    pub thread_count_text: Option<String>,
    /// Where it is.
    pub span: Span,
}

/// A kernel launch site.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Launch {
    /// The launched kernel's name (without template arguments).
    pub kernel: String,
    /// Template arguments as written (`k<256, float>` → `["256", "float"]`).
    pub template_args: Vec<String>,
    /// Grid dimension expression.
    pub grid: Option<ExprId>,
    /// Block dimension expression.
    pub block: Option<ExprId>,
    /// Dynamic shared memory bytes.
    pub shmem: Option<ExprId>,
    /// Stream.
    pub stream: Option<ExprId>,
    /// Kernel arguments.
    pub args: Vec<ExprId>,
    /// Source text of grid, block and shared-memory expressions.
    pub grid_text: String,
    /// See `grid_text`.
    pub block_text: String,
    /// See `grid_text`.
    pub shmem_text: String,
    /// `true` for `cudaLaunchKernel`-style calls (args passed as `void**`).
    pub via_api: bool,
    /// The statement containing the launch.
    pub stmt: StmtId,
    /// Where it is.
    pub span: Span,
}

/// A call to another function (device function, intrinsic or host API).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Call {
    /// Callee as written.
    pub callee: String,
    /// The call expression.
    pub expr: ExprId,
    /// The statement containing it.
    pub stmt: StmtId,
    /// Where it is.
    pub span: Span,
}

/// A problem inside a function: a parse problem (an ERROR or MISSING node,
/// code `parse-error`) or a limit of the front end (`macro-budget`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SyntaxError {
    /// Where it is.
    pub span: Span,
    /// What went wrong.
    pub message: String,
    /// Diagnostic code (`parse-error`, `macro-budget`).
    pub code: &'static str,
}

impl SyntaxError {
    /// `error` for parse errors, `warning` for limits of the front end.
    pub fn severity(&self) -> &'static str {
        if self.code == "parse-error" {
            "error"
        } else {
            "warning"
        }
    }
}

/// One lowered function definition.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Function {
    /// Unqualified name.
    pub name: String,
    /// Enclosing namespaces/classes joined with `::` (empty at file scope).
    pub scope: String,
    /// Kernel, device or host.
    pub kind: FunctionKind,
    /// `__launch_bounds__(max_threads, ...)` if given and constant.
    pub launch_bounds: Option<i64>,
    /// Template parameters (empty for non-templates).
    pub template_params: Vec<TemplateParam>,
    /// Parameters (ids into `vars`, in order).
    pub params: Vec<VarId>,
    /// All variables: parameters first, then locals in declaration order.
    pub vars: Vec<Var>,
    /// Statement arena.
    pub stmts: Vec<Stmt>,
    /// Expression arena.
    pub exprs: Vec<Expr>,
    /// The body block (`None` if the body could not be parsed at all).
    pub body: Option<StmtId>,
    /// Memory accesses in source order.
    pub accesses: Vec<Access>,
    /// Barriers in source order.
    pub barriers: Vec<Barrier>,
    /// Kernel launches in source order.
    pub launches: Vec<Launch>,
    /// Calls in source order (barriers and launches excluded).
    pub calls: Vec<Call>,
    /// Parse problems inside this function.
    pub syntax_errors: Vec<SyntaxError>,
    /// Number of lines the definition spans (relative end line).
    pub line_count: u32,
}

impl Function {
    /// The root array/pointer of a subscript chain (`a[i][j]` → `a`) and
    /// every subscript, outermost first.
    pub fn index_chain(&self, mut e: ExprId) -> (ExprId, Vec<ExprId>) {
        let mut idx = Vec::new();
        while let ExprKind::Index { base, index } = &self.expr(e).kind {
            idx.push(*index);
            e = *base;
        }
        idx.reverse();
        (e, idx)
    }

    /// Number of parse errors among [`Function::syntax_errors`].
    pub fn parse_error_count(&self) -> usize {
        self.syntax_errors
            .iter()
            .filter(|e| e.code == "parse-error")
            .count()
    }

    /// An empty host function named `name` (no body): stands for a
    /// definition that no longer exists.
    pub fn placeholder(name: &str) -> Function {
        Function {
            name: name.to_string(),
            scope: String::new(),
            kind: FunctionKind::Host,
            launch_bounds: None,
            template_params: Vec::new(),
            params: Vec::new(),
            vars: Vec::new(),
            stmts: Vec::new(),
            exprs: Vec::new(),
            body: None,
            accesses: Vec::new(),
            barriers: Vec::new(),
            launches: Vec::new(),
            calls: Vec::new(),
            syntax_errors: Vec::new(),
            line_count: 0,
        }
    }

    /// The expression with id `id`.
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.exprs[id.0 as usize]
    }

    /// The statement with id `id`.
    pub fn stmt(&self, id: StmtId) -> &Stmt {
        &self.stmts[id.0 as usize]
    }

    /// The variable with id `id`.
    pub fn var(&self, id: VarId) -> &Var {
        &self.vars[id.0 as usize]
    }

    /// `id` with any casts around it removed (`(int)(unsigned)x` → `x`).
    pub fn strip_casts(&self, mut id: ExprId) -> ExprId {
        while let ExprKind::Cast(_, x) = &self.expr(id).kind {
            id = *x;
        }
        id
    }

    /// Render an expression back to (normalised) C-like text.
    pub fn expr_text(&self, id: ExprId) -> String {
        let mut s = String::new();
        display::write_expr(self, id, &mut s);
        s
    }

    /// Direct child statements of `id`, in order.
    pub fn child_stmts(&self, id: StmtId) -> Vec<StmtId> {
        match &self.stmt(id).kind {
            StmtKind::Block(v) => v.clone(),
            StmtKind::If { then, els, .. } | StmtKind::PreprocAlt { then, els, .. } => {
                let mut v = vec![*then];
                v.extend(*els);
                v
            }
            StmtKind::For { init, body, .. } => {
                let mut v: Vec<StmtId> = init.iter().copied().collect();
                v.push(*body);
                v
            }
            StmtKind::While { body, .. }
            | StmtKind::DoWhile { body, .. }
            | StmtKind::Switch { body, .. } => vec![*body],
            _ => Vec::new(),
        }
    }

    /// Direct child expressions of expression `id`, in order.
    pub fn child_exprs(&self, id: ExprId) -> Vec<ExprId> {
        match &self.expr(id).kind {
            ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => vec![*a],
            ExprKind::Binary(_, a, b) => vec![*a, *b],
            ExprKind::Assign { lhs, rhs, .. } => vec![*lhs, *rhs],
            ExprKind::IncDec { target, .. } => vec![*target],
            ExprKind::Cond(a, b, c) => vec![*a, *b, *c],
            ExprKind::Call { receiver, args, .. } => receiver
                .iter()
                .copied()
                .chain(args.iter().copied())
                .collect(),
            ExprKind::Index { base, index } => vec![*base, *index],
            ExprKind::Member { base, .. } => vec![*base],
            _ => Vec::new(),
        }
    }
}
