//! The `steps` metric: RaCUDA's abstract evaluation cost, one step per
//! operation, mapped onto cudalog's IR. The simulator and the bound
//! inference both charge exactly these amounts, so a bound can be checked
//! against a simulated count.
//!
//! | IR node | steps |
//! | --- | --- |
//! | literal, variable read, built-in (`threadIdx.x`…), parameter, name | 1 |
//! | `-e` | 2 + e (RaCUDA reads it as `0 - e`) |
//! | `!e`, `~e`, `&e` | 1 + e |
//! | `+e`, cast | e |
//! | binary operator (`&&`/`||` count both sides, as RaCUDA) | 1 + a + b |
//! | `a, b` | a + b |
//! | `x = e` | e + 1 (local) or e + subscripts + access (array element) |
//! | `x op= e`, `x++` | `x = x op e` (the target is read and written) |
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
