//! The `steps` metric: RaCUDA's abstract evaluation cost, one step per
//! operation, mapped onto cudalog's IR. The simulator and the bound
//! inference both charge exactly these amounts, so a bound can be checked
//! against a simulated count.
//!
//! The amounts follow RaCUDA's simulator (`source/CUDA_Eval.ml`,
//! `eval_cinstr`/`eval_cexpr` with `cmetric_steps` of `source/CUDA_Cost.ml`)
//! on the program its front end (`source/CUDA.ml`, `rev_cuda_of_expression`)
//! makes of the source. The costs are per warp: a step is charged once
//! to a warp with at least one active lane, whatever the number of lanes.
//!
//! | IR node | steps |
//! | --- | --- |
//! | literal, variable read, built-in (`threadIdx.x`…), parameter, name | 1 |
//! | `-e` | 2 + e (RaCUDA reads it as `0 - e`) |
//! | `!e`, `~e`, `&e` | 1 + e |
//! | `+e`, cast | e |
//! | binary operator (`&&`/`||`: see below) | 1 + a + b |
//! | `a, b` | a + b |
//! | `x = e` | e + 1 (local) or e + subscripts + access (array element) |
//! | `x op= e`, `x++` | `x = x op e` (the target is read and written) |
//! | an assignment's value, when used | the steps of the expression that stands for it (below) |
//! | `a[i]` read | subscripts + access cost (global: sectors; shared: wavefronts; others: 1) |
//! | `c ? a : b` | c + 1 + the arm(s) run |
//! | call `f(args)` | 1 + args (+ the access of an atomic) |
//! | declaration | 1 (+ 1 + initialiser) |
//! | `if`, loop test | condition + 1 |
//! | `break`, `continue`, barrier | 1 |
//! | `return e` | 1 + e |
//!
//! A global access costs its sectors, a shared access its wavefronts (the
//! most distinct words one bank serves). Divergence itself costs no step
//! (it is the `divwarps` metric).
//!
//! **Assignments used as values.** RaCUDA's front end hoists every
//! assignment out of its expression as a statement and leaves in its place
//! an expression that stands for its value, which is evaluated (and
//! charged) again where the value is used: `x = e` stands for `e` (its
//! value part: `e`'s own nested assignments are not repeated), `x op= e` for
//! `x op e`, `++x` for `x`, `x++` for `x - 1` (likewise `--`). So the chained
//! store of the SDK's reductions, `sdata[tid] = mySum = mySum +
//! sdata[tid + s]`, costs the sum twice (`mySum = mySum + sdata[tid + s];
//! sdata[tid] = mySum + sdata[tid + s]`: 6 more steps than a plain store of
//! `mySum`), and `a[k++] = v` pays `k - 1` (3 steps) for its subscript. A
//! value that is discarded (an expression statement, a `for` step, the left
//! operand of `,`) costs nothing more. This is the one place where the cost
//! depends on whether a value is used.
//!
//! **Known differences from RaCUDA's simulator**, all of them charging
//! more than RaCUDA, so a bound on our count bounds RaCUDA's:
//! - RaCUDA drops the value of an expression statement, so `f(x);` or
//!   `atomicAdd(&a[i], 1);` on its own costs nothing there (only the
//!   assignments inside); we charge the call, its arguments and its access.
//!   Likewise it drops the left operand of `,` (we charge its operators).
//! - RaCUDA evaluates both sides of `&&`/`||` on every lane; we evaluate
//!   the right side only on the lanes that need it (C's short circuit), so
//!   a warp on which no lane needs it is not charged for it. That one can
//!   charge less than RaCUDA; none of RaCUDA's kernels uses `&&` or `||`.
//! - RaCUDA's front end rejects `?:`, `switch` and `continue`; our costs
//!   for them follow the same one-step-per-operation rule.

/// A literal, variable, built-in, parameter or name read.
pub const LEAF: u64 = 1;
/// A unary operator other than `-`/`+`.
pub const UNARY: u64 = 1;
/// `-e` (`0 - e`: the constant and the subtraction).
pub const NEG: u64 = 2;
/// A binary operator.
pub const BINARY: u64 = 1;
/// Writing a local variable.
pub const LOCAL_WRITE: u64 = 1;
/// A declaration.
pub const DECL: u64 = 1;
/// The branch of an `if`, a loop test, `?:` or `switch`.
pub const TEST: u64 = 1;
/// A call.
pub const CALL: u64 = 1;
/// `break`, `continue`, `return`, a barrier.
pub const JUMP: u64 = 1;
/// An access to local or constant memory.
pub const OTHER_ACCESS: u64 = 1;
