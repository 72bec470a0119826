//! Front end: tree-sitter-cuda parsing, preprocessor-lite, and lowering of the
//! concrete syntax tree to the [`crate::ir`].
//!
//! Two entry points, both pure functions so that the `db` layer can cache them:
//! - [`scan::scan_file`] walks a file's top level in order (macros, includes,
//!   structs, typedefs, globals, `#if`) and returns its function definitions,
//!   each with the text of the definition and the scope visible at its start;
//! - [`lower::lower_function`] re-parses one definition's text alone and
//!   lowers it to an [`crate::ir::Function`].

pub mod lower;
pub mod preproc;
pub mod scan;
pub mod syntax;
mod types;

#[cfg(test)]
mod lower_tests;

pub use scan::{FileScan, FunctionSite, GlobalVar, Scope, SourceDiagnostic};

/// (tests) Lower the last function of `src`, scanned with nvcc's predefined
/// macros and no includes.
#[cfg(test)]
pub(crate) fn lower_last(src: &str) -> crate::ir::Function {
    let tree = syntax::parse(src);
    let init = std::sync::Arc::new(Scope {
        macros: preproc::MacroTable::predefined(),
        ..Scope::default()
    });
    let scan = scan::scan_file(src, &tree, init, &mut |_, _| None);
    let s = scan.functions.last().expect("a function");
    lower::lower_function(
        &s.text,
        s.start_col,
        &s.name,
        &s.scope_path,
        s.kind,
        &s.scope,
    )
}
