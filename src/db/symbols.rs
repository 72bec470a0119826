//! What the rest of the workspace needs to know of one file: its
//! definitions, the kernels it launches (with the block dimensions and
//! template arguments written there), the device-side calls it makes and
//! the local includes it names. The driver folds these per-file summaries
//! into the name index ([`super::names`]); a restarted process reads them
//! back from the store instead of parsing the file.

use super::{Db, FuncRef, SourceFile, file_items, function_facts, function_ir};
use crate::facts::LaunchDims;
use crate::facts::barriers::MAX_TEMPLATE_VALUES;
use crate::frontend::Scope;
use crate::ir::{Function, FunctionKind};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One definition of a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DefSymbol {
    /// `scope::name#ordinal`.
    pub key: String,
    /// Unqualified name.
    pub name: String,
    /// Enclosing namespaces/classes.
    pub scope_path: String,
    /// Kernel, device or host.
    pub kind: FunctionKind,
    /// 0-based first line.
    pub start_line: u32,
    /// Hash of the lowered function ([`super::FunctionFacts::content_hash`]).
    pub content_hash: String,
    /// For kernels: which template argument positions give the value of a
    /// non-type template parameter
    /// ([`crate::facts::launch::template_value_slots`]).
    pub template_slots: [bool; MAX_TEMPLATE_VALUES],
    /// Distinct callees as written at its calls (kernels and device
    /// functions only), sorted.
    pub callees: Vec<String>,
}

/// A device-side call: who calls whom.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CallSymbol {
    /// The callee without `ns::` qualification.
    pub callee: String,
    /// The calling function's unqualified name.
    pub caller: String,
    /// Whether the caller is a kernel.
    pub caller_is_kernel: bool,
}

/// The per-file summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileSymbols {
    /// Definitions in source order.
    pub defs: Vec<DefSymbol>,
    /// Launch sites in source order: kernel name and what the site fixes
    /// (block dimensions, template argument values by position). Only
    /// source files (`.cu`, `.cuh`) launch.
    pub launches: Vec<(String, LaunchDims)>,
    /// Device-side calls, sorted and distinct.
    pub calls: Vec<CallSymbol>,
    /// Local includes as written (`#include "x.cuh"` → `x.cuh`).
    pub includes: Vec<String>,
}

impl FileSymbols {
    /// The definition with key `key`.
    pub fn def(&self, key: &str) -> Option<&DefSymbol> {
        self.defs.iter().find(|d| d.key == key)
    }
}

/// Derive the symbols of a file from its definitions.
pub(super) fn compute(db: &dyn Db, file: SourceFile) -> Arc<FileSymbols> {
    let items = file_items(db, file);
    let is_source = crate::workspace::is_source(file.path(db));
    let mut out = FileSymbols {
        includes: super::scan(db, file).includes.clone(),
        ..FileSymbols::default()
    };
    // (issue 8 audit #13, session 7; integration point of
    // `facts::launch::block_dims_in`) The file's host functions, to resolve
    // a launching function's parameters through their callers.
    // Host functions are lowered from their signature alone unless they
    // launch: a caller's body is lowered here (as device code would be)
    // when it names a launching function.
    let mut launchers: Vec<&str> = items
        .by_key
        .values()
        .filter(|s| {
            s.kind == FunctionKind::Host && crate::frontend::lower::lowers_body(s.kind, &s.text)
        })
        .map(|s| s.name.as_str())
        .collect();
    // (issue 8, session 12, softmax `main` → `softmax_forward` →
    // `softmax_forward7`) Callers of callers too, a few levels up, so a
    // constant passed two calls above the launch reaches it.
    let calls_one =
        |text: &str, names: &[&str]| names.iter().any(|n| text.contains(&format!("{n}(")));
    for _ in 0..4 {
        let more: Vec<&str> = items
            .by_key
            .values()
            .filter(|s| s.kind == FunctionKind::Host && !launchers.contains(&s.name.as_str()))
            .filter(|s| calls_one(&s.text, &launchers))
            .map(|s| s.name.as_str())
            .collect();
        if more.is_empty() {
            break;
        }
        launchers.extend(more);
    }
    let host_fns: Vec<Arc<crate::ir::Function>> = if is_source && !launchers.is_empty() {
        items
            .order
            .iter()
            .filter_map(|(key, _)| items.by_key.get(key).map(|s| (key, s)))
            .filter(|(_, s)| s.kind == FunctionKind::Host)
            .filter_map(|(key, s)| {
                if crate::frontend::lower::lowers_body(s.kind, &s.text) {
                    Some(function_ir(db, FuncRef::new(db, file, key.clone())))
                } else if calls_one(&s.text, &launchers) {
                    // Lowered as device code would be (to get its body),
                    // then marked host again: its own parameters resolve
                    // through its callers in turn.
                    let mut g = crate::frontend::lower::lower_function(
                        &s.text,
                        s.start_col,
                        &s.name,
                        &s.scope_path,
                        FunctionKind::Device,
                        &s.scope,
                    );
                    g.kind = FunctionKind::Host;
                    Some(Arc::new(g))
                } else {
                    None
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let host_refs: Vec<&crate::ir::Function> = host_fns.iter().map(|f| &**f).collect();
    for (key, start_line) in &items.order {
        let Some(src) = items.by_key.get(key) else {
            continue;
        };
        let fref = FuncRef::new(db, file, key.clone());
        let f = function_ir(db, fref);
        let facts = function_facts(db, fref);
        if is_source {
            for l in &f.launches {
                let block = l
                    .block
                    .map(|b| crate::facts::launch::block_dims_in(&f, b, &host_refs))
                    .unwrap_or([None; 3]);
                let template_values = std::array::from_fn(|i| {
                    l.template_args
                        .get(i)
                        .and_then(|a| template_arg_value(a, &f, &src.scope))
                });
                let grid = l
                    .grid
                    .map(|g| crate::facts::launch::block_dims_in(&f, g, &host_refs))
                    .unwrap_or([None; 3]);
                out.launches.push((
                    l.kernel.clone(),
                    LaunchDims {
                        block,
                        grid,
                        warp_lockstep: false,
                        template_values,
                        param_block_dims: crate::facts::launch::param_block_dims(&f, l),
                        unlaunched: false,
                        param_values: crate::facts::launch::launch_arg_values(&f, l, &host_refs),
                        template_block_dims: crate::facts::launch::template_block_dims(
                            &f,
                            l,
                            &block,
                            &template_values,
                        ),
                        name_block_dims: crate::facts::launch::name_block_dims(&f, l, &block),
                    },
                ));
            }
        }
        let mut callees = Vec::new();
        if src.kind != FunctionKind::Host {
            for c in &f.calls {
                let callee = c.callee.rsplit("::").next().unwrap_or(&c.callee);
                out.calls.push(CallSymbol {
                    callee: callee.to_string(),
                    caller: src.name.clone(),
                    caller_is_kernel: src.kind == FunctionKind::Kernel,
                });
                callees.push(c.callee.clone());
            }
        }
        callees.sort();
        callees.dedup();
        let template_slots = if src.kind == FunctionKind::Kernel {
            crate::facts::launch::template_value_slots(&src.text, &f.template_params)
        } else {
            [false; MAX_TEMPLATE_VALUES]
        };
        out.defs.push(DefSymbol {
            key: key.clone(),
            name: src.name.clone(),
            scope_path: src.scope_path.clone(),
            kind: src.kind,
            start_line: *start_line,
            content_hash: facts.content_hash.clone(),
            template_slots,
            callees,
        });
    }
    out.calls.sort();
    out.calls.dedup();
    Arc::new(out)
}

/// The integer value of a template argument `arg` (its text as written at a
/// launch site) in the launching function `f`, whose definition sees
/// `scope`: object-like macros are expanded first (as the preprocessor
/// would), then each remaining name is replaced by its value — a local of
/// `f` defined once by a constant expression (`const int BS = 128;`), else a
/// file-scope `const`/`constexpr` integer or enumerator — and the result is
/// evaluated as a constant integer expression (literals with suffixes and
/// bases, `true`/`false`, arithmetic, comparisons, `?:`). A name that is a
/// parameter, template parameter or non-constant local of `f` makes the
/// value unknown, as does anything else that is not an integer constant
/// (types, `sizeof`, casts, function calls, qualified names).
pub fn template_arg_value(arg: &str, f: &Function, scope: &Scope) -> Option<i64> {
    use crate::facts::launch::{LocalName, local_name};
    let expanded = scope.macros.expand_text(arg);
    let mut out = String::with_capacity(expanded.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| -> Option<()> {
        if word.is_empty() {
            return Some(());
        }
        let starts_ident = word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if starts_ident && word != "true" && word != "false" {
            match local_name(f, word) {
                LocalName::Const(v) => out.push_str(&format!("({v})")),
                LocalName::Unknown => return None,
                LocalName::NotLocal => match scope.constants.get(word.as_str()) {
                    Some(v) => out.push_str(&format!("({v})")),
                    None => out.push_str(word),
                },
            }
        } else {
            out.push_str(word);
        }
        word.clear();
        Some(())
    };
    for c in expanded.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out)?;
            out.push(c);
        }
    }
    flush(&mut word, &mut out)?;
    scope.macros.eval_int(&out)
}
