//! Lowering of one function definition's CST to the IR.
//!
//! The definition's text is parsed on its own (so the result depends only on
//! that text and the scope visible at it: editing another function never
//! re-runs this), macros are expanded at their use sites, `#if` inside bodies
//! is evaluated, and every array/pointer access, barrier, launch and call is
//! recorded with its statement and a span relative to the function start.

use super::preproc::{self, BudgetReason, MacroTable};
use super::scan::Scope;
use super::syntax::{children, describe_error, errors, field, named_children, parse, text};
use super::types::{apply_declarator, base_type, substitute_consts, type_from_words};
use crate::ir::*;
use std::collections::HashMap;
use tree_sitter::Node;

/// Lower the definition `text` (which starts at 0-based column `start_col` of
/// its first line) of a function of kind `kind` named `name`.
pub fn lower_function(
    text_src: &str,
    start_col: u32,
    name: &str,
    scope_path: &str,
    kind: FunctionKind,
    scope: &Scope,
) -> Function {
    // Host code matters to the analyses only through its launches: a host
    // function without any is lowered from its signature alone (its body is
    // not parsed a second time).
    // Macro expansions of one function share a budget (see `preproc`).
    let _unit = preproc::enter_unit();
    let signature_only = !lowers_body(kind, text_src);
    let lowered_text = match (signature_only, text_src.find('{')) {
        (true, Some(brace)) => &text_src[..brace],
        _ => text_src,
    };
    // Pad the first line so columns match the file.
    let mut padded = String::with_capacity(lowered_text.len() + start_col as usize + 2);
    padded.extend(std::iter::repeat_n(' ', start_col as usize));
    padded.push_str(lowered_text);
    if signature_only && lowered_text.len() < text_src.len() {
        padded.push_str("{}");
    }
    let tree = parse(&padded);
    let src = padded.as_bytes();
    let mut l = Lower {
        scope,
        f: Function {
            name: name.to_string(),
            scope: scope_path.to_string(),
            kind,
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
        },
        locals: vec![HashMap::new()],
        cur_stmt: StmtId(0),
        expanding: Vec::new(),
        expansion_start: 0,
        expansion_exprs: 0,
        local_macros: None,
        record_accesses: kind != FunctionKind::Host,
        nesting: 0,
    };
    let root = tree.root_node();
    l.f.line_count = text_src.matches('\n').count() as u32 - u32::from(text_src.ends_with('\n'));
    let mut errs = Vec::new();
    errors(root, &mut errs);
    for e in errs {
        let span = l.span_of(e, &Cx::plain(src));
        l.f.syntax_errors.push(SyntaxError {
            span,
            message: describe_error(e, src),
            code: "parse-error",
        });
    }
    let Some(def) = find_definition(root) else {
        return l.f;
    };
    if let Some(parent) = def.parent()
        && parent.kind() == "template_declaration"
        && let Some(params) = field(parent, "parameters")
    {
        l.template_params(params, src);
    }
    let cx = Cx::plain(src);
    l.signature(def, &cx);
    l.budget_diagnostics(def, &cx);
    if let Some(body) = field(def, "body") {
        let id = l.block(body, &cx);
        l.f.body = Some(id);
    }
    l.budget_diagnostics(def, &cx);
    l.f
}

/// Whether [`lower_function`] lowers (and so reports syntax errors in) the
/// body of a definition: always for device code, for host code only when it
/// launches kernels.
pub fn lowers_body(kind: FunctionKind, text: &str) -> bool {
    kind != FunctionKind::Host || text.contains("<<<") || text.contains("cudaLaunch")
}

fn find_definition(root: Node<'_>) -> Option<Node<'_>> {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.kind() == "function_definition" {
            return Some(n);
        }
        let mut ch = children(n);
        ch.reverse();
        stack.extend(ch.into_iter().filter(|c| c.is_named()));
    }
    None
}

/// Where the nodes being lowered come from: the function text itself, or a
/// macro expansion (whose nodes all take the span of the use site).
#[derive(Clone, Copy)]
struct Cx<'s> {
    src: &'s [u8],
    site: Option<Span>,
}

impl<'s> Cx<'s> {
    fn plain(src: &'s [u8]) -> Self {
        Cx { src, site: None }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Read,
    Write,
    ReadWrite,
    Atomic,
    /// `&a[i]`: address computation, no memory access.
    Address,
}

struct Lower<'a> {
    scope: &'a Scope,
    f: Function,
    locals: Vec<HashMap<String, VarId>>,
    cur_stmt: StmtId,
    expanding: Vec<String>,
    /// `exprs.len()` when the outermost macro expansion under way began.
    expansion_start: usize,
    /// Expressions created by finished macro expansions.
    expansion_exprs: usize,
    local_macros: Option<MacroTable>,
    record_accesses: bool,
    /// Current syntactic nesting (statements + expressions), bounded so that
    /// pathological input cannot exhaust the stack.
    nesting: u32,
}

/// Deepest statement/expression nesting that is lowered; deeper parts become
/// `Unknown`/`Opaque` with a diagnostic.
const MAX_NESTING: u32 = 96;

const MAX_EXPANSION_DEPTH: usize = 24;

/// Most expressions the macro expansions of one function may create; later
/// macros are lowered as plain names, with a `macro-budget` diagnostic.
pub const MAX_EXPANSION_EXPRS: usize = 1 << 18;

impl<'a> Lower<'a> {
    // ---------- bookkeeping ----------

    fn span_of(&self, n: Node<'_>, cx: &Cx<'_>) -> Span {
        if let Some(s) = cx.site {
            return s;
        }
        let s = n.start_position();
        let e = n.end_position();
        Span {
            line: s.row as u32,
            col: s.column as u32 + 1,
            end_line: e.row as u32,
            end_col: e.column as u32 + 1,
        }
    }

    fn expr(&mut self, kind: ExprKind, span: Span) -> ExprId {
        self.f.exprs.push(Expr { kind, span });
        ExprId(self.f.exprs.len() as u32 - 1)
    }

    fn new_stmt(&mut self, span: Span) -> StmtId {
        self.f.stmts.push(Stmt {
            kind: StmtKind::Opaque(String::new()),
            span,
        });
        StmtId(self.f.stmts.len() as u32 - 1)
    }

    fn set_stmt(&mut self, id: StmtId, kind: StmtKind) {
        self.f.stmts[id.0 as usize].kind = kind;
    }

    fn macros(&self) -> &MacroTable {
        self.local_macros.as_ref().unwrap_or(&self.scope.macros)
    }

    fn tparam_names(&self) -> Vec<String> {
        self.f
            .template_params
            .iter()
            .map(|p| p.name.clone())
            .collect()
    }

    fn lookup(&self, name: &str) -> Option<VarId> {
        self.locals.iter().rev().find_map(|m| m.get(name).copied())
    }

    fn declare(
        &mut self,
        name: String,
        ty: Type,
        space: Option<MemSpace>,
        span: Span,
        param: Option<u32>,
    ) -> VarId {
        self.f.vars.push(Var {
            name: name.clone(),
            ty,
            param_position: param,
            space,
            span,
            by_ref: false,
        });
        let id = VarId(self.f.vars.len() as u32 - 1);
        if let Some(top) = self.locals.last_mut() {
            top.insert(name, id);
        }
        id
    }

    fn resolve_type(&self, n: Node<'_>, cx: &Cx<'_>) -> Type {
        let tp = self.tparam_names();
        match &self.local_macros {
            Some(m) => {
                let mut view = self.scope.clone();
                view.macros = m.clone();
                base_type(n, cx.src, &view, &tp)
            }
            None => base_type(n, cx.src, self.scope, &tp),
        }
    }

    fn const_of(&self, name: &str) -> Option<i64> {
        self.scope.constants.get(name).copied()
    }

    // ---------- signature ----------

    fn template_params(&mut self, params: Node<'_>, src: &[u8]) {
        for p in named_children(params) {
            let (name, is_type) = match p.kind() {
                "type_parameter_declaration" | "variadic_type_parameter_declaration" => (
                    named_children(p)
                        .into_iter()
                        .find(|c| c.kind() == "type_identifier")
                        .map(|c| text(c, src).to_string()),
                    true,
                ),
                "optional_type_parameter_declaration" => {
                    (field(p, "name").map(|c| text(c, src).to_string()), true)
                }
                "parameter_declaration" | "optional_parameter_declaration" => (
                    field(p, "declarator")
                        .and_then(|d| declared_name(d, src))
                        .map(str::to_string),
                    false,
                ),
                _ => (None, false),
            };
            if let Some(name) = name {
                self.f.template_params.push(TemplateParam { name, is_type });
            }
        }
    }

    fn signature(&mut self, def: Node<'_>, cx: &Cx<'_>) {
        for ch in children(def) {
            if ch.kind() == "launch_bounds"
                && let Some(first) = named_children(ch).into_iter().next()
            {
                let t = substitute_consts(text(first, cx.src), self.scope, &|_| None);
                self.f.launch_bounds = self.macros().eval_int(&t);
            }
        }
        let Some(mut d) = field(def, "declarator") else {
            return;
        };
        while d.kind() != "function_declarator" {
            match field(d, "declarator") {
                Some(inner) => d = inner,
                None => return,
            }
        }
        let Some(params) = field(d, "parameters") else {
            return;
        };
        let mut pos = 0u32;
        for p in named_children(params) {
            if !matches!(
                p.kind(),
                "parameter_declaration" | "optional_parameter_declaration"
            ) {
                continue;
            }
            let Some(tn) = field(p, "type") else { continue };
            let base = self.resolve_type(tn, cx);
            let Some(decl) = field(p, "declarator") else {
                pos += 1;
                continue;
            };
            let (name, ty) = apply_declarator(decl, base, cx.src, self.scope, &|_| None);
            let Some(name) = name else {
                pos += 1;
                continue;
            };
            let space = if ty.is_indexable() {
                Some(if self.f.kind == FunctionKind::Kernel {
                    MemSpace::Global
                } else {
                    MemSpace::Generic
                })
            } else {
                None
            };
            let span = self.span_of(p, cx);
            let by_ref = decl.kind() == "reference_declarator";
            let id = self.declare(text(name, cx.src).to_string(), ty, space, span, Some(pos));
            self.f.vars[id.0 as usize].by_ref = by_ref;
            self.f.params.push(id);
            pos += 1;
        }
    }

    // ---------- statements ----------

    fn block(&mut self, n: Node<'_>, cx: &Cx<'_>) -> StmtId {
        let id = self.new_stmt(self.span_of(n, cx));
        self.locals.push(HashMap::new());
        let mut items = Vec::new();
        for ch in named_children(n) {
            self.stmt_into(ch, cx, &mut items);
        }
        self.locals.pop();
        self.set_stmt(id, StmtKind::Block(items));
        id
    }

    /// Lower a statement that must be a single node (bodies of if/for/...).
    fn single(&mut self, n: Node<'_>, cx: &Cx<'_>) -> StmtId {
        if n.kind() == "compound_statement" {
            return self.block(n, cx);
        }
        self.locals.push(HashMap::new());
        let mut items = Vec::new();
        self.stmt_into(n, cx, &mut items);
        self.locals.pop();
        if items.len() == 1 {
            items[0]
        } else {
            let id = self.new_stmt(self.span_of(n, cx));
            self.set_stmt(id, StmtKind::Block(items));
            id
        }
    }

    fn opaque(&mut self, n: Node<'_>, cx: &Cx<'_>, what: &str) -> StmtId {
        let id = self.new_stmt(self.span_of(n, cx));
        self.set_stmt(id, StmtKind::Opaque(what.to_string()));
        id
    }

    /// Lower one statement node, appending the resulting statement(s).
    fn stmt_into(&mut self, n: Node<'_>, cx: &Cx<'_>, out: &mut Vec<StmtId>) {
        if self.nesting >= MAX_NESTING {
            self.too_deep(n, cx);
            out.push(self.opaque(n, cx, "nesting too deep"));
            return;
        }
        self.nesting += 1;
        self.stmt_into_inner(n, cx, out);
        self.nesting -= 1;
        self.budget_diagnostics(n, cx);
    }

    /// Record the macro-budget events of what was lowered so far at `n`.
    fn budget_diagnostics(&mut self, n: Node<'_>, cx: &Cx<'_>) {
        for ev in preproc::take_budget_events() {
            let span = self.span_of(n, cx);
            self.f.syntax_errors.push(SyntaxError {
                span,
                message: ev.message("function"),
                code: "macro-budget",
            });
        }
    }

    fn too_deep(&mut self, n: Node<'_>, cx: &Cx<'_>) {
        let span = self.span_of(n, cx);
        if !self
            .f
            .syntax_errors
            .iter()
            .any(|e| e.message.contains("nesting"))
        {
            self.f.syntax_errors.push(SyntaxError {
                span,
                message: format!("nesting deeper than {MAX_NESTING} levels is not analysed"),
                code: "parse-error",
            });
        }
    }

    fn stmt_into_inner(&mut self, n: Node<'_>, cx: &Cx<'_>, out: &mut Vec<StmtId>) {
        let span = self.span_of(n, cx);
        match n.kind() {
            "compound_statement" => out.push(self.block(n, cx)),
            "declaration" => self.declaration(n, cx, out),
            "expression_statement" => {
                let Some(e) = named_children(n).into_iter().next() else {
                    return;
                };
                if e.kind() == "gnu_asm_expression" {
                    out.push(self.asm(e, cx));
                    return;
                }
                if let Some(b) = self.barrier_call(e, cx) {
                    out.push(b);
                    return;
                }
                if self.template_declaration_misparse(e, cx, out) {
                    return;
                }
                let id = self.new_stmt(span);
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                let ex = self.expr_node(e, cx, Mode::Read);
                self.cur_stmt = prev;
                self.set_stmt(id, StmtKind::Expr(ex));
                out.push(id);
            }
            "if_statement" => {
                let id = self.new_stmt(span);
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                self.locals.push(HashMap::new());
                let mut pre = Vec::new();
                let cond = self.condition(field(n, "condition"), cx, &mut pre);
                self.cur_stmt = prev;
                let then = match field(n, "consequence") {
                    Some(c) => self.single(c, cx),
                    None => self.opaque(n, cx, "missing then-branch"),
                };
                let els = field(n, "alternative").map(|a| {
                    let inner = named_children(a).into_iter().next().unwrap_or(a);
                    self.single(inner, cx)
                });
                self.locals.pop();
                self.set_stmt(id, StmtKind::If { cond, then, els });
                out.extend(pre);
                out.push(id);
            }
            "for_statement" => {
                let id = self.new_stmt(span);
                self.locals.push(HashMap::new());
                let init = field(n, "initializer").map(|i| {
                    let mut v = Vec::new();
                    if i.kind() == "declaration" {
                        self.declaration(i, cx, &mut v);
                    } else {
                        let s = self.new_stmt(self.span_of(i, cx));
                        let prev = std::mem::replace(&mut self.cur_stmt, s);
                        let e = self.expr_node(i, cx, Mode::Read);
                        self.cur_stmt = prev;
                        self.set_stmt(s, StmtKind::Expr(e));
                        v.push(s);
                    }
                    if v.len() == 1 {
                        v[0]
                    } else {
                        let b = self.new_stmt(self.span_of(i, cx));
                        self.set_stmt(b, StmtKind::Block(v));
                        b
                    }
                });
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                let cond = field(n, "condition").map(|c| self.expr_node(c, cx, Mode::Read));
                let step = field(n, "update").map(|c| self.expr_node(c, cx, Mode::Read));
                self.cur_stmt = prev;
                let body = match field(n, "body") {
                    Some(b) => self.single(b, cx),
                    None => self.opaque(n, cx, "missing loop body"),
                };
                self.locals.pop();
                self.set_stmt(
                    id,
                    StmtKind::For {
                        init,
                        cond,
                        step,
                        body,
                    },
                );
                out.push(id);
            }
            "while_statement" => {
                let id = self.new_stmt(span);
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                self.locals.push(HashMap::new());
                let mut pre = Vec::new();
                let cond = self.condition(field(n, "condition"), cx, &mut pre);
                self.cur_stmt = prev;
                let body = match field(n, "body") {
                    Some(b) => self.single(b, cx),
                    None => self.opaque(n, cx, "missing loop body"),
                };
                self.locals.pop();
                self.set_stmt(id, StmtKind::While { cond, body });
                out.extend(pre);
                out.push(id);
            }
            "do_statement" => {
                let id = self.new_stmt(span);
                let body = match field(n, "body") {
                    Some(b) => self.single(b, cx),
                    None => self.opaque(n, cx, "missing loop body"),
                };
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                let cond = match field(n, "condition") {
                    Some(c) => self.expr_node(c, cx, Mode::Read),
                    None => self.expr(ExprKind::Unknown("missing".into()), span),
                };
                self.cur_stmt = prev;
                self.set_stmt(id, StmtKind::DoWhile { body, cond });
                out.push(id);
            }
            "switch_statement" => {
                let id = self.new_stmt(span);
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                let mut pre = Vec::new();
                let cond = self.condition(field(n, "condition"), cx, &mut pre);
                self.cur_stmt = prev;
                let body = match field(n, "body") {
                    Some(b) => self.block(b, cx),
                    None => self.opaque(n, cx, "missing switch body"),
                };
                self.set_stmt(id, StmtKind::Switch { cond, body });
                out.extend(pre);
                out.push(id);
            }
            "case_statement" => {
                let id = self.new_stmt(span);
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                let value = field(n, "value").map(|v| self.expr_node(v, cx, Mode::Read));
                self.cur_stmt = prev;
                self.set_stmt(id, StmtKind::Case(value));
                out.push(id);
                let mut c = n.walk();
                let kids: Vec<(usize, Node<'_>)> = n.children(&mut c).enumerate().collect();
                for (i, ch) in kids {
                    if ch.is_named() && n.field_name_for_child(i as u32) != Some("value") {
                        self.stmt_into(ch, cx, out);
                    }
                }
            }
            "break_statement" => {
                let id = self.new_stmt(span);
                self.set_stmt(id, StmtKind::Break);
                out.push(id);
            }
            "continue_statement" => {
                let id = self.new_stmt(span);
                self.set_stmt(id, StmtKind::Continue);
                out.push(id);
            }
            "return_statement" => {
                let id = self.new_stmt(span);
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                let v = named_children(n)
                    .into_iter()
                    .next()
                    .map(|e| self.expr_node(e, cx, Mode::Read));
                self.cur_stmt = prev;
                self.set_stmt(id, StmtKind::Return(v));
                out.push(id);
            }
            "labeled_statement" | "attributed_statement" => {
                for ch in named_children(n) {
                    if !matches!(ch.kind(), "statement_identifier" | "attribute_declaration") {
                        self.stmt_into(ch, cx, out);
                    }
                }
            }
            "preproc_if" | "preproc_ifdef" | "preproc_elif" | "preproc_elifdef" => {
                self.preproc_stmt(n, cx, out)
            }
            "preproc_else" => {
                for ch in named_children(n) {
                    self.stmt_into(ch, cx, out);
                }
            }
            "preproc_def" | "preproc_function_def" => self.local_define(n, cx),
            "preproc_call"
            | "preproc_include"
            | "comment"
            | "type_definition"
            | "static_assert_declaration"
            | "alias_declaration"
            | "using_declaration"
            | "empty_statement" => {}
            "try_statement" => {
                out.push(self.opaque(n, cx, "try"));
                if let Some(b) = field(n, "body") {
                    out.push(self.block(b, cx));
                }
            }
            "goto_statement" => out.push(self.opaque(n, cx, "goto")),
            "throw_statement" => out.push(self.opaque(n, cx, "throw")),
            "for_range_loop" => {
                // `for (auto x : range) body`: the trip count is unknown.
                let id = self.new_stmt(span);
                self.locals.push(HashMap::new());
                if let (Some(tn), Some(d)) = (field(n, "type"), field(n, "declarator")) {
                    let base = self.resolve_type(tn, cx);
                    let (name, ty) = apply_declarator(d, base, cx.src, self.scope, &|_| None);
                    if let Some(name) = name {
                        let s = self.span_of(d, cx);
                        self.declare(text(name, cx.src).to_string(), ty, None, s, None);
                    }
                }
                let cond = self.expr(ExprKind::Unknown("range-for".into()), span);
                let body = match field(n, "body") {
                    Some(b) => self.single(b, cx),
                    None => self.opaque(n, cx, "missing loop body"),
                };
                self.locals.pop();
                self.set_stmt(id, StmtKind::While { cond, body });
                out.push(id);
            }
            "function_definition"
            | "struct_specifier"
            | "class_specifier"
            | "enum_specifier"
            | "union_specifier" => {}
            "ERROR" => {
                // Recover statements tree-sitter kept inside the error node.
                out.push(self.opaque(n, cx, "syntax error"));
                for ch in named_children(n) {
                    if ch.kind().ends_with("_statement") || ch.kind() == "declaration" {
                        self.stmt_into(ch, cx, out);
                    }
                }
            }
            k if k.ends_with("expression") || k == "identifier" => {
                let id = self.new_stmt(span);
                let prev = std::mem::replace(&mut self.cur_stmt, id);
                let e = self.expr_node(n, cx, Mode::Read);
                self.cur_stmt = prev;
                self.set_stmt(id, StmtKind::Expr(e));
                out.push(id);
            }
            other => out.push(self.opaque(n, cx, other)),
        }
    }

    /// The condition of if/while/switch: `condition_clause` may declare a
    /// variable (`if (int x = f())`), which becomes a statement before it.
    fn condition(&mut self, n: Option<Node<'_>>, cx: &Cx<'_>, pre: &mut Vec<StmtId>) -> ExprId {
        let Some(n) = n else {
            return self.expr(
                ExprKind::Unknown("missing condition".into()),
                Span::default(),
            );
        };
        let inner = if n.kind() == "condition_clause" {
            match field(n, "value") {
                Some(v) => v,
                None => match named_children(n).into_iter().next() {
                    Some(d) if d.kind() == "declaration" => {
                        let before = pre.len();
                        self.declaration(d, cx, pre);
                        if let Some(StmtKind::Decl { var, .. }) =
                            pre.get(before).map(|s| self.f.stmt(*s).kind.clone())
                        {
                            let sp = self.span_of(d, cx);
                            return self.expr(ExprKind::Var(var), sp);
                        }
                        return self.expr(
                            ExprKind::Unknown(text(d, cx.src).into()),
                            self.span_of(d, cx),
                        );
                    }
                    Some(v) => v,
                    None => n,
                },
            }
        } else {
            n
        };
        self.expr_node(inner, cx, Mode::Read)
    }

    fn preproc_stmt(&mut self, n: Node<'_>, cx: &Cx<'_>, out: &mut Vec<StmtId>) {
        let (cond, cond_text) = match n.kind() {
            "preproc_ifdef" | "preproc_elifdef" => {
                let negate = children(n)
                    .first()
                    .map(|t| text(*t, cx.src).contains("ndef"))
                    .unwrap_or(false);
                let name = field(n, "name").map(|x| text(x, cx.src).trim().to_string());
                let c = name
                    .as_deref()
                    .and_then(|nm| self.macros().is_defined(nm))
                    .map(|d| d != negate);
                (
                    c,
                    format!(
                        "{}defined({})",
                        if negate { "!" } else { "" },
                        name.unwrap_or_default()
                    ),
                )
            }
            _ => {
                let t = field(n, "condition").map(|c| text(c, cx.src)).unwrap_or("");
                (self.macros().eval_condition(t), t.trim().to_string())
            }
        };
        let alt = field(n, "alternative");
        let body: Vec<Node<'_>> = {
            let mut c = n.walk();
            n.children(&mut c)
                .enumerate()
                .filter(|(i, ch)| {
                    ch.is_named()
                        && !matches!(
                            n.field_name_for_child(*i as u32),
                            Some("condition" | "name" | "alternative")
                        )
                })
                .map(|(_, ch)| ch)
                .collect()
        };
        match cond {
            Some(true) => {
                for ch in body {
                    self.stmt_into(ch, cx, out);
                }
            }
            Some(false) => {
                if let Some(a) = alt {
                    self.stmt_into(a, cx, out);
                }
            }
            None => {
                let span = self.span_of(n, cx);
                let id = self.new_stmt(span);
                let then = self.new_stmt(span);
                let mut items = Vec::new();
                for ch in body {
                    self.stmt_into(ch, cx, &mut items);
                }
                self.set_stmt(then, StmtKind::Block(items));
                let els = alt.map(|a| {
                    let e = self.new_stmt(self.span_of(a, cx));
                    let mut items = Vec::new();
                    self.stmt_into(a, cx, &mut items);
                    self.set_stmt(e, StmtKind::Block(items));
                    e
                });
                self.set_stmt(
                    id,
                    StmtKind::PreprocAlt {
                        cond: cond_text,
                        then,
                        els,
                    },
                );
                out.push(id);
            }
        }
    }

    fn local_define(&mut self, n: Node<'_>, cx: &Cx<'_>) {
        let Some(name) = field(n, "name") else { return };
        let name = text(name, cx.src).to_string();
        let body = field(n, "value")
            .map(|v| text(v, cx.src))
            .unwrap_or("")
            .to_string();
        let params = field(n, "parameters").map(|p| {
            named_children(p)
                .into_iter()
                .map(|x| text(x, cx.src).to_string())
                .collect()
        });
        let mut t = self.macros().clone();
        t.define(&name, params, &body);
        self.local_macros = Some(t);
    }

    fn declaration(&mut self, n: Node<'_>, cx: &Cx<'_>, out: &mut Vec<StmtId>) {
        let Some(tn) = field(n, "type") else {
            out.push(self.opaque(n, cx, "declaration"));
            return;
        };
        let prefix = std::str::from_utf8(&cx.src[n.start_byte()..tn.start_byte()]).unwrap_or("");
        let is_shared = prefix.split_whitespace().any(|w| w == "__shared__");
        let base = self.resolve_type(tn, cx);
        let mut c = n.walk();
        let decls: Vec<Node<'_>> = n
            .children(&mut c)
            .enumerate()
            .filter(|(i, _)| n.field_name_for_child(*i as u32) == Some("declarator"))
            .map(|(_, ch)| ch)
            .collect();
        for d in decls {
            if d.kind() == "function_declarator" {
                // Inside a body, `dim3 block(TILE, ROWS);` is a variable with
                // constructor arguments that C++'s grammar reads as a function
                // declaration (the "most vexing parse").
                self.vexing_parse(d, &base, cx, out);
                continue;
            }
            let (name, ty) = apply_declarator(d, base.clone(), cx.src, self.scope, &|_| None);
            let Some(name) = name else { continue };
            let name = text(name, cx.src).to_string();
            let span = self.span_of(d, cx);
            let id = self.new_stmt(span);
            let prev = std::mem::replace(&mut self.cur_stmt, id);
            let init = if d.kind() == "init_declarator" {
                field(d, "value").map(|v| self.initializer(v, cx, &ty))
            } else {
                None
            };
            self.cur_stmt = prev;
            let space = if is_shared {
                Some(MemSpace::Shared)
            } else if ty.is_indexable() {
                match ty {
                    Type::Array(..) => Some(MemSpace::Local),
                    _ => init.and_then(|e| self.pointer_space(e)),
                }
            } else {
                None
            };
            let var = self.declare(name, ty, space, span, None);
            self.set_stmt(id, StmtKind::Decl { var, init });
            out.push(id);
        }
    }

    /// `ns::T<32> x = init;` after another statement is sometimes parsed by
    /// tree-sitter as the expression `(ns::T < 32) > (x = init)`. When the
    /// leftmost name is not a variable, it is a declaration: lower it as one.
    fn template_declaration_misparse(
        &mut self,
        e: Node<'_>,
        cx: &Cx<'_>,
        out: &mut Vec<StmtId>,
    ) -> bool {
        if e.kind() != "binary_expression"
            || field(e, "operator").map(|o| text(o, cx.src)) != Some(">")
        {
            return false;
        }
        let (Some(l), Some(r)) = (field(e, "left"), field(e, "right")) else {
            return false;
        };
        if l.kind() != "binary_expression"
            || field(l, "operator").map(|o| text(o, cx.src)) != Some("<")
        {
            return false;
        }
        let (Some(ty_node), Some(arg)) = (field(l, "left"), field(l, "right")) else {
            return false;
        };
        let ty_name = text(ty_node, cx.src);
        if !matches!(ty_node.kind(), "identifier" | "qualified_identifier")
            || self.lookup(ty_name).is_some()
            || self.scope.globals.contains_key(ty_name)
        {
            return false;
        }
        let (name, init) = match r.kind() {
            "identifier" => (r, None),
            "assignment_expression"
                if field(r, "operator").map(|o| text(o, cx.src)) == Some("=")
                    && field(r, "left").is_some_and(|x| x.kind() == "identifier") =>
            {
                (field(r, "left").unwrap_or(r), field(r, "right"))
            }
            _ => return false,
        };
        let tp = self.tparam_names();
        let ty = type_from_words(
            &format!("{}<{}>", ty_name, text(arg, cx.src)),
            self.scope,
            &tp,
        );
        let span = self.span_of(e, cx);
        let id = self.new_stmt(span);
        let prev = std::mem::replace(&mut self.cur_stmt, id);
        let init = init.map(|v| self.expr_node(v, cx, Mode::Read));
        self.cur_stmt = prev;
        let var = self.declare(text(name, cx.src).to_string(), ty, None, span, None);
        self.set_stmt(id, StmtKind::Decl { var, init });
        out.push(id);
        true
    }

    /// `T name(a, b);` parsed as a function declaration: declare `name` of
    /// type `T` initialised by `T(a, b)`, each argument re-parsed as an
    /// expression.
    fn vexing_parse(&mut self, d: Node<'_>, ty: &Type, cx: &Cx<'_>, out: &mut Vec<StmtId>) {
        let (Some(name), Some(params)) = (field(d, "declarator"), field(d, "parameters")) else {
            return;
        };
        if name.kind() != "identifier" {
            return;
        }
        let span = self.span_of(d, cx);
        let id = self.new_stmt(span);
        let prev = std::mem::replace(&mut self.cur_stmt, id);
        let mut args = Vec::new();
        for p in named_children(params) {
            let t = text(p, cx.src).to_string();
            let e = self
                .expand("<constructor argument>", &t, span, Mode::Read)
                .unwrap_or_else(|| self.expr(ExprKind::Unknown(t.clone()), span));
            args.push(e);
        }
        self.cur_stmt = prev;
        let init = self.expr(
            ExprKind::Call {
                callee: ty.render(),
                receiver: None,
                args,
            },
            span,
        );
        let var = self.declare(text(name, cx.src).to_string(), ty.clone(), None, span, None);
        self.set_stmt(
            id,
            StmtKind::Decl {
                var,
                init: Some(init),
            },
        );
        out.push(id);
    }

    fn initializer(&mut self, v: Node<'_>, cx: &Cx<'_>, ty: &Type) -> ExprId {
        match v.kind() {
            // `dim3 b(x, y)` → a constructor call.
            "argument_list" => {
                let args = named_children(v)
                    .into_iter()
                    .map(|a| self.expr_node(a, cx, Mode::Read))
                    .collect();
                let span = self.span_of(v, cx);
                self.expr(
                    ExprKind::Call {
                        callee: ty.render(),
                        receiver: None,
                        args,
                    },
                    span,
                )
            }
            "initializer_list" => {
                let args: Vec<ExprId> = named_children(v)
                    .into_iter()
                    .map(|a| self.expr_node(a, cx, Mode::Read))
                    .collect();
                let span = self.span_of(v, cx);
                self.expr(
                    ExprKind::Call {
                        callee: format!("{}{{}}", ty.render()),
                        receiver: None,
                        args,
                    },
                    span,
                )
            }
            _ => self.expr_node(v, cx, Mode::Read),
        }
    }

    /// The memory space a pointer-valued expression points into.
    fn pointer_space(&self, e: ExprId) -> Option<MemSpace> {
        match &self.f.expr(e).kind {
            ExprKind::Var(v) => self.f.var(*v).space,
            ExprKind::Name(n) => self.scope.globals.get(n).map(|g| g.space),
            ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
                self.pointer_space(*a).or_else(|| self.pointer_space(*b))
            }
            ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::AddrOf, a) => self.pointer_space(*a),
            ExprKind::Index { base, .. } => self.pointer_space(*base),
            ExprKind::Cond(_, a, b) => {
                let (x, y) = (self.pointer_space(*a), self.pointer_space(*b));
                if x == y { x } else { Some(MemSpace::Generic) }
            }
            ExprKind::Assign { rhs, .. } => self.pointer_space(*rhs),
            // (issue 8, session 12) `SharedMemory<T>()`: a class whose
            // conversion to a pointer returns `__shared__` memory.
            ExprKind::Call {
                callee,
                receiver: None,
                ..
            } => {
                let base = callee.split('<').next().unwrap_or(callee).trim();
                let base = base.rsplit("::").next().unwrap_or(base);
                self.scope
                    .shared_views
                    .contains(base)
                    .then_some(MemSpace::Shared)
            }
            _ => None,
        }
    }

    // ---------- barriers and inline PTX ----------

    fn barrier_call(&mut self, e: Node<'_>, cx: &Cx<'_>) -> Option<StmtId> {
        if e.kind() != "call_expression" {
            return None;
        }
        let func = field(e, "function")?;
        let args = field(e, "arguments")
            .map(named_children)
            .unwrap_or_default();
        let name = text(func, cx.src);
        let kind = match name {
            "__syncthreads" => BarrierKind::SyncThreads,
            "__syncthreads_count" | "__syncthreads_and" | "__syncthreads_or" => {
                BarrierKind::SyncThreadsReduce
            }
            "__syncwarp" => BarrierKind::SyncWarp,
            "__barrier_sync" => BarrierKind::BarSync,
            _ => self.cg_sync_kind(func, &args, cx)?,
        };
        // For tile syncs, the tile size is the number of threads that meet;
        // when it is not known here, the group as written (a `thread_group`
        // parameter: the callers say which tile it is). `__syncwarp()` with
        // the full mask meets the 32 lanes of the warp; another mask is kept
        // as written.
        let (tile, tile_text) = match kind {
            BarrierKind::CgTileSync => match self.tile_size(func, &args, cx) {
                Some(t) => (Some(t), None),
                None => {
                    let recv = if func.kind() == "field_expression" {
                        field(func, "argument")
                    } else {
                        args.first().copied()
                    };
                    (None, recv.map(|r| text(r, cx.src).trim().to_string()))
                }
            },
            BarrierKind::SyncWarp => match args.first() {
                None => (Some(32), None),
                Some(m) => {
                    let t = text(*m, cx.src).trim().to_string();
                    match self.const_operand(&t).0 {
                        Some(v) if v & 0xffff_ffff == 0xffff_ffff => (Some(32), None),
                        _ => (None, Some(t)),
                    }
                }
            },
            _ => (None, None),
        };
        let span = self.span_of(e, cx);
        let id = self.new_stmt(span);
        let prev = std::mem::replace(&mut self.cur_stmt, id);
        // Lower arguments for their accesses (the predicate of __syncthreads_or).
        for a in &args {
            self.expr_node(*a, cx, Mode::Read);
        }
        self.cur_stmt = prev;
        let (bid, bid_text) = if kind == BarrierKind::BarSync {
            args.first()
                .map(|a| self.const_operand(text(*a, cx.src)))
                .unwrap_or((None, None))
        } else {
            (None, None)
        };
        self.push_barrier(id, kind, (bid, bid_text), (tile, tile_text), span);
        Some(id)
    }

    /// The size of the cooperative-groups tile a sync is called on:
    /// `thread_block_tile<N>`, `tiled_partition<N>(…)`, `tiled_partition(g, N)`.
    fn tile_size(&self, func: Node<'_>, args: &[Node<'_>], cx: &Cx<'_>) -> Option<i64> {
        let recv = if func.kind() == "field_expression" {
            field(func, "argument")?
        } else {
            *args.first()?
        };
        let g = self.group_description(recv, cx);
        for marker in ["thread_block_tile<", "tiled_partition<"] {
            if let Some(i) = g.find(marker) {
                let rest = &g[i + marker.len()..];
                let end = rest.find('>')?;
                return self.const_operand(&rest[..end]).0;
            }
        }
        let i = g.find("tiled_partition(")?;
        let rest = &g[i + "tiled_partition(".len()..];
        let end = rest.find(')')?;
        let last = rest[..end].rsplit(',').next()?;
        self.const_operand(last).0
    }

    /// Cooperative-groups syncs: `g.sync()`, `cg::sync(g)`,
    /// `this_thread_block().sync()`, `grid.sync()`, `tile.sync()`.
    fn cg_sync_kind(&self, func: Node<'_>, args: &[Node<'_>], cx: &Cx<'_>) -> Option<BarrierKind> {
        let recv = if func.kind() == "field_expression" {
            let f = field(func, "field")?;
            let method = text(f, cx.src);
            // (issue 8, session 13, simpleAWBarrier) A block-scoped
            // `cuda::barrier`: `bar.wait(token)` after `bar.arrive()`, or
            // `bar.arrive_and_wait()`, waits for the block.
            if (method == "wait" && args.len() == 1)
                || (method == "arrive_and_wait" && args.is_empty())
            {
                let g = self
                    .group_description(field(func, "argument")?, cx)
                    .to_ascii_lowercase();
                return (g.contains("barrier") && g.contains("thread_scope_block"))
                    .then_some(BarrierKind::CgBlockSync);
            }
            if method != "sync" || !args.is_empty() {
                return None;
            }
            field(func, "argument")?
        } else {
            let name = text(func, cx.src);
            let base = name.rsplit("::").next().unwrap_or(name);
            if !(base == "sync" || base == "synchronize") || args.len() != 1 {
                return None;
            }
            args[0]
        };
        let group_text = self.group_description(recv, cx);
        let g = group_text.to_ascii_lowercase();
        // A generic `thread_group` parameter is whatever group the caller
        // passes (often a tile): not known to be the whole block.
        let generic_param = self
            .lookup(text(recv, cx.src).trim())
            .is_some_and(|v| self.f.var(v).param_position.is_some())
            && g.contains("thread_group");
        Some(if generic_param {
            BarrierKind::CgTileSync
        } else if g.contains("grid") {
            BarrierKind::CgGridSync
        } else if g.contains("tile") || g.contains("coalesced") || g.contains("partition") {
            BarrierKind::CgTileSync
        } else if g.contains("block") || g.contains("group") {
            BarrierKind::CgBlockSync
        } else {
            return None;
        })
    }

    fn group_description(&self, recv: Node<'_>, cx: &Cx<'_>) -> String {
        let t = text(recv, cx.src);
        if let Some(v) = self.lookup(t.trim()) {
            let var = self.f.var(v);
            return format!("{} {}", var.ty.render(), self.init_text_of(v));
        }
        t.to_string()
    }

    fn init_text_of(&self, v: VarId) -> String {
        for s in &self.f.stmts {
            if let StmtKind::Decl { var, init: Some(e) } = &s.kind
                && *var == v
            {
                return self.f.expr_text(*e);
            }
        }
        String::new()
    }

    fn const_operand(&self, t: &str) -> (Option<i64>, Option<String>) {
        let t = t.trim();
        let sub = substitute_consts(t, self.scope, &|_| None);
        match self.macros().eval_int(&sub) {
            Some(v) => (Some(v), None),
            None => (None, Some(t.to_string())),
        }
    }

    fn push_barrier(
        &mut self,
        stmt: StmtId,
        kind: BarrierKind,
        id: (Option<i64>, Option<String>),
        count: (Option<i64>, Option<String>),
        span: Span,
    ) {
        self.f.barriers.push(Barrier {
            kind,
            stmt,
            barrier_id: id.0,
            barrier_id_text: id.1,
            thread_count: count.0,
            thread_count_text: count.1,
            span,
        });
        let idx = self.f.barriers.len() as u32 - 1;
        self.set_stmt(stmt, StmtKind::Barrier(idx));
    }

    /// Inline assembly: recognise `bar.sync`, `bar.arrive`, `bar.red`,
    /// `barrier.sync` (with `.aligned`) and their operands; anything else is opaque.
    fn asm(&mut self, n: Node<'_>, cx: &Cx<'_>) -> StmtId {
        let span = self.span_of(n, cx);
        let code: String = field(n, "assembly_code")
            .map(|c| {
                let mut s = String::new();
                collect_string(c, cx.src, &mut s);
                s
            })
            .unwrap_or_default();
        let inputs: Vec<String> = children(n)
            .into_iter()
            .filter(|c| c.kind() == "gnu_asm_input_operand_list")
            .flat_map(named_children)
            .filter(|c| c.kind() == "gnu_asm_input_operand")
            .map(|op| {
                field(op, "value")
                    .map(|v| text(v, cx.src).to_string())
                    .unwrap_or_default()
            })
            .collect();
        let outputs = children(n)
            .into_iter()
            .filter(|c| c.kind() == "gnu_asm_output_operand_list")
            .flat_map(named_children)
            .filter(|c| c.kind() == "gnu_asm_output_operand")
            .count();
        let id = self.new_stmt(span);
        for instr in code.split(';') {
            let instr = instr.trim();
            let mut words = instr.splitn(2, char::is_whitespace);
            let op = words.next().unwrap_or("");
            let operands = words.next().unwrap_or("");
            let kind = if op.starts_with("bar.sync")
                || op.starts_with("barrier.sync")
                || op == "bar"
                || op.starts_with("bar.cta.sync")
                || op.starts_with("barrier.cta.sync")
            {
                BarrierKind::BarSync
            } else if op.starts_with("bar.arrive")
                || op.starts_with("barrier.arrive")
                || op.starts_with("bar.cta.arrive")
                || op.starts_with("barrier.cta.arrive")
            {
                BarrierKind::BarArrive
            } else if op.starts_with("bar.red") || op.starts_with("barrier.red") {
                BarrierKind::BarRed
            } else {
                continue;
            };
            let mut ops: Vec<&str> = operands
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            if kind == BarrierKind::BarRed && ops.len() >= 2 {
                // bar.red.op.type d, a{, b}, {!}c: id is the second operand.
                ops.remove(0);
            }
            let resolve = |s: Option<&&str>| -> (Option<i64>, Option<String>) {
                let Some(s) = s else { return (None, None) };
                let s = s.trim();
                if let Some(k) = s.strip_prefix('%').and_then(|k| k.parse::<usize>().ok()) {
                    // `%k` numbers outputs first, then inputs.
                    let text = k
                        .checked_sub(outputs)
                        .and_then(|i| inputs.get(i))
                        .cloned()
                        .unwrap_or_else(|| s.to_string());
                    let t = text.trim().trim_start_matches('(').trim_end_matches(')');
                    return self.const_operand(t);
                }
                self.const_operand(s)
            };
            let bid = resolve(ops.first());
            let count = if kind == BarrierKind::BarRed {
                (None, None)
            } else {
                resolve(ops.get(1))
            };
            self.push_barrier(id, kind, bid, count, span);
            return id;
        }
        let first = code
            .split([';', '\n'])
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        self.set_stmt(id, StmtKind::Opaque(format!("asm: {first}")));
        id
    }

    // ---------- expressions ----------

    fn expr_node(&mut self, n: Node<'_>, cx: &Cx<'_>, mode: Mode) -> ExprId {
        if self.nesting >= MAX_NESTING {
            self.too_deep(n, cx);
            let span = self.span_of(n, cx);
            return self.expr(ExprKind::Unknown("nesting too deep".into()), span);
        }
        self.nesting += 1;
        let e = self.expr_node_inner(n, cx, mode);
        self.nesting -= 1;
        e
    }

    fn expr_node_inner(&mut self, n: Node<'_>, cx: &Cx<'_>, mode: Mode) -> ExprId {
        let span = self.span_of(n, cx);
        let src = cx.src;
        match n.kind() {
            "number_literal" => {
                let t = text(n, src);
                match parse_number(t) {
                    Some(v) => self.expr(ExprKind::Int(v), span),
                    None => self.expr(ExprKind::Float(t.to_string()), span),
                }
            }
            "true" => self.expr(ExprKind::Bool(true), span),
            "false" => self.expr(ExprKind::Bool(false), span),
            "null" | "nullptr" => self.expr(ExprKind::Int(0), span),
            "char_literal" => {
                let t = text(n, src);
                let v = t.trim_matches('\'').chars().next().map(|c| c as i64);
                match v {
                    Some(v) if t.len() == 3 => self.expr(ExprKind::Int(v), span),
                    _ => self.expr(ExprKind::Str, span),
                }
            }
            "string_literal" | "concatenated_string" | "raw_string_literal" => {
                self.expr(ExprKind::Str, span)
            }
            "identifier" => self.identifier(n, cx, mode),
            "qualified_identifier" => {
                let t = text(n, src).to_string();
                let short = t.rsplit("::").next().unwrap_or(&t).to_string();
                // (issue 8, session 11) `f128::size`: a class's static
                // member, by its qualified name first.
                let compact: String = t.chars().filter(|c| !c.is_whitespace()).collect();
                if let Some(v) = self.scope.constants.get(&compact) {
                    return self.expr(ExprKind::Int(*v), span);
                }
                if let Some(v) = self.scope.constants.get(&short) {
                    return self.expr(ExprKind::Int(*v), span);
                }
                self.expr(ExprKind::Name(t), span)
            }
            "parenthesized_expression" => match named_children(n).into_iter().next() {
                Some(inner) => self.expr_node(inner, cx, mode),
                None => self.expr(ExprKind::Unknown("()".into()), span),
            },
            "field_expression" => self.field_expr(n, cx, mode),
            "subscript_expression" => self.subscript(n, cx, mode),
            "pointer_expression" => {
                let op = field(n, "operator").map(|o| text(o, src)).unwrap_or("*");
                let Some(arg) = field(n, "argument") else {
                    return self.expr(ExprKind::Unknown(text(n, src).into()), span);
                };
                if op == "&" {
                    let inner_mode = if mode == Mode::Atomic {
                        Mode::Atomic
                    } else {
                        Mode::Address
                    };
                    let a = self.expr_node(arg, cx, inner_mode);
                    self.expr(ExprKind::Unary(UnOp::AddrOf, a), span)
                } else {
                    let a = self.expr_node(arg, cx, Mode::Read);
                    let id = self.expr(ExprKind::Unary(UnOp::Deref, a), span);
                    self.deref_access(id, a, mode, n, cx);
                    id
                }
            }
            "unary_expression" => {
                let op = field(n, "operator").map(|o| text(o, src)).unwrap_or("");
                let Some(arg) = field(n, "argument") else {
                    return self.expr(ExprKind::Unknown(text(n, src).into()), span);
                };
                let a = self.expr_node(arg, cx, Mode::Read);
                let op = match op {
                    "-" => UnOp::Neg,
                    "+" => UnOp::Plus,
                    "!" | "not" => UnOp::Not,
                    "~" | "compl" => UnOp::BitNot,
                    _ => return a,
                };
                self.expr(ExprKind::Unary(op, a), span)
            }
            "binary_expression" => {
                let op = field(n, "operator").map(|o| text(o, src)).unwrap_or("");
                let (Some(l), Some(r)) = (field(n, "left"), field(n, "right")) else {
                    return self.expr(ExprKind::Unknown(text(n, src).into()), span);
                };
                let a = self.expr_node(l, cx, Mode::Read);
                let b = self.expr_node(r, cx, Mode::Read);
                match binop(op) {
                    Some(op) => self.expr(ExprKind::Binary(op, a, b), span),
                    None => self.expr(ExprKind::Unknown(text(n, src).into()), span),
                }
            }
            "comma_expression" => {
                let (Some(l), Some(r)) = (field(n, "left"), field(n, "right")) else {
                    return self.expr(ExprKind::Unknown(text(n, src).into()), span);
                };
                let a = self.expr_node(l, cx, Mode::Read);
                let b = self.expr_node(r, cx, mode);
                self.expr(ExprKind::Binary(BinOp::Comma, a, b), span)
            }
            "assignment_expression" => {
                let op = field(n, "operator").map(|o| text(o, src)).unwrap_or("=");
                let (Some(l), Some(r)) = (field(n, "left"), field(n, "right")) else {
                    return self.expr(ExprKind::Unknown(text(n, src).into()), span);
                };
                let op = if op == "=" {
                    None
                } else {
                    binop(op.trim_end_matches('='))
                };
                // Source order of effects: the right side is evaluated first.
                let rhs = self.expr_node(r, cx, Mode::Read);
                let lhs_mode = if op.is_some() {
                    Mode::ReadWrite
                } else {
                    Mode::Write
                };
                let lhs = self.expr_node(l, cx, lhs_mode);
                // (issue 8) `T* p; … p = &g[off];`: a local pointer declared
                // without an initializer points where it is first assigned
                // (lavaMD's `fA = &d_fv_gpu[first_i]`); a later assignment
                // into another space makes it generic.
                if op.is_none()
                    && let ExprKind::Var(v) = self.f.expr(lhs).kind
                    && self.f.var(v).param_position.is_none()
                    && matches!(self.f.var(v).ty, Type::Pointer(..))
                    && let Some(sp) = self.pointer_space(rhs)
                {
                    let var = &mut self.f.vars[v.0 as usize];
                    var.space = match var.space {
                        None => Some(sp),
                        Some(old) if old == sp => Some(sp),
                        Some(_) => Some(MemSpace::Generic),
                    };
                }
                self.expr(ExprKind::Assign { op, lhs, rhs }, span)
            }
            "update_expression" => {
                let op = field(n, "operator").map(|o| text(o, src)).unwrap_or("++");
                let Some(arg) = field(n, "argument") else {
                    return self.expr(ExprKind::Unknown(text(n, src).into()), span);
                };
                let prefix = children(n).first().map(|c| !c.is_named()).unwrap_or(false);
                let t = self.expr_node(arg, cx, Mode::ReadWrite);
                self.expr(
                    ExprKind::IncDec {
                        target: t,
                        increment: op == "++",
                        prefix,
                    },
                    span,
                )
            }
            "conditional_expression" => {
                let c = field(n, "condition").map(|x| self.expr_node(x, cx, Mode::Read));
                let a = field(n, "consequence").map(|x| self.expr_node(x, cx, mode));
                let b = field(n, "alternative").map(|x| self.expr_node(x, cx, mode));
                match (c, a, b) {
                    (Some(c), Some(a), Some(b)) => self.expr(ExprKind::Cond(c, a, b), span),
                    _ => self.expr(ExprKind::Unknown(text(n, src).into()), span),
                }
            }
            "cast_expression" => {
                let ty = field(n, "type")
                    .map(|t| self.type_descriptor(t, cx))
                    .unwrap_or(Type::Named("?".into()));
                match field(n, "value") {
                    Some(v) => {
                        let a = self.expr_node(v, cx, mode);
                        self.expr(ExprKind::Cast(ty, a), span)
                    }
                    None => self.expr(ExprKind::Unknown(text(n, src).into()), span),
                }
            }
            "sizeof_expression" => {
                let bytes = if let Some(t) = field(n, "type") {
                    self.type_descriptor(t, cx).bytes()
                } else if let Some(v) = field(n, "value") {
                    let inner = named_children(v).into_iter().next().unwrap_or(v);
                    let vt = text(inner, src).trim();
                    self.lookup(vt)
                        .and_then(|id| self.f.var(id).ty.bytes())
                        .or_else(|| {
                            let tp = self.tparam_names();
                            type_from_words(vt, self.scope, &tp).bytes()
                        })
                } else {
                    None
                };
                self.expr(ExprKind::SizeOf(bytes), span)
            }
            "call_expression" => self.call(n, cx, mode),
            "initializer_list" => {
                let args = named_children(n)
                    .into_iter()
                    .map(|a| self.expr_node(a, cx, Mode::Read))
                    .collect();
                self.expr(
                    ExprKind::Call {
                        callee: "{}".into(),
                        receiver: None,
                        args,
                    },
                    span,
                )
            }
            "compound_literal_expression" => {
                let ty = field(n, "type")
                    .map(|t| self.type_descriptor(t, cx))
                    .unwrap_or(Type::Named("?".into()));
                let args = field(n, "value")
                    .map(named_children)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| self.expr_node(a, cx, Mode::Read))
                    .collect();
                self.expr(
                    ExprKind::Call {
                        callee: ty.render(),
                        receiver: None,
                        args,
                    },
                    span,
                )
            }
            "this" => self.expr(ExprKind::Name("this".into()), span),
            "gnu_asm_expression" => {
                let _ = self.asm(n, cx);
                self.expr(ExprKind::Unknown("asm".into()), span)
            }
            // (issue 8, session 13; audit 20261216 #53, llm.c's
            // `auto launch = [&](auto c) { k<c.value><<<g, b>>>(…); }`) In
            // host code, a lambda's body is lowered for its launches and the
            // locals they read; it stays outside the function's statement
            // tree, since when (and how often) it runs is not known.
            "lambda_expression" if self.f.kind == FunctionKind::Host => {
                if let Some(body) = field(n, "body") {
                    self.block(body, cx);
                }
                let t: String = text(n, src).chars().take(80).collect();
                self.expr(ExprKind::Unknown(t), span)
            }
            _ => {
                // Lower sub-expressions for their effects (accesses, launches).
                for ch in named_children(n) {
                    if ch.kind().ends_with("expression") {
                        self.expr_node(ch, cx, Mode::Read);
                    }
                }
                let t: String = text(n, src).chars().take(80).collect();
                self.expr(ExprKind::Unknown(t), span)
            }
        }
    }

    fn type_descriptor(&self, t: Node<'_>, cx: &Cx<'_>) -> Type {
        let base = field(t, "type")
            .map(|b| self.resolve_type(b, cx))
            .unwrap_or(Type::Named(text(t, cx.src).into()));
        match field(t, "declarator") {
            Some(d) => apply_declarator(d, base, cx.src, self.scope, &|_| None).1,
            None => base,
        }
    }

    fn identifier(&mut self, n: Node<'_>, cx: &Cx<'_>, mode: Mode) -> ExprId {
        let span = self.span_of(n, cx);
        let name = text(n, cx.src);
        if let Some(v) = self.lookup(name) {
            return self.expr(ExprKind::Var(v), span);
        }
        if let Some(i) = self.f.template_params.iter().position(|p| p.name == name) {
            return self.expr(ExprKind::TemplateParam(i as u32), span);
        }
        if name == "warpSize" {
            return self.expr(ExprKind::Builtin(Builtin::WarpSize), span);
        }
        if self.scope.globals.contains_key(name) {
            return self.expr(ExprKind::Name(name.to_string()), span);
        }
        if let Some(v) = self.const_of(name) {
            return self.expr(ExprKind::Int(v), span);
        }
        if let Some(m) = self.macros().get(name).cloned()
            && m.params.is_none()
            && let Some(e) = self.expand(name, &m.body, span, mode)
        {
            return e;
        }
        self.expr(ExprKind::Name(name.to_string()), span)
    }

    /// Parse a macro's replacement text as an expression and lower it with
    /// every node at the use-site span.
    fn expand(&mut self, name: &str, body: &str, site: Span, mode: Mode) -> Option<ExprId> {
        if body.trim().is_empty()
            || self.expanding.len() >= MAX_EXPANSION_DEPTH
            || self.expanding.iter().any(|m| m == name)
        {
            return None;
        }
        // The budget: expressions created by this function's expansions, and
        // the unit's tokens and time (charged by body length).
        let created = self.expansion_exprs
            + if self.expanding.is_empty() {
                0
            } else {
                self.f.exprs.len() - self.expansion_start
            };
        // Named after the macro written in the function.
        let outer = self.expanding.first().map(String::as_str).unwrap_or(name);
        if created >= MAX_EXPANSION_EXPRS {
            preproc::report_budget(outer, BudgetReason::TooManyExprs);
            return None;
        }
        if preproc::charge_unit(outer, body.len() / 4 + 1).is_err() {
            return None;
        }
        let (wrapped, tree) = expansion_tree(body);
        let root = tree.root_node();
        if root.has_error() {
            return None;
        }
        let decl = named_children(root).into_iter().next()?;
        let init = named_children(decl)
            .into_iter()
            .find(|c| c.kind() == "init_declarator")?;
        let value = field(init, "value")?;
        let cx = Cx {
            src: wrapped.as_bytes(),
            site: Some(site),
        };
        if self.expanding.is_empty() {
            self.expansion_start = self.f.exprs.len();
        }
        self.expanding.push(name.to_string());
        let e = self.expr_node(value, &cx, mode);
        self.expanding.pop();
        if self.expanding.is_empty() {
            self.expansion_exprs += self.f.exprs.len() - self.expansion_start;
        }
        Some(e)
    }

    fn field_expr(&mut self, n: Node<'_>, cx: &Cx<'_>, mode: Mode) -> ExprId {
        let span = self.span_of(n, cx);
        let (Some(arg), Some(fld)) = (field(n, "argument"), field(n, "field")) else {
            return self.expr(ExprKind::Unknown(text(n, cx.src).into()), span);
        };
        let fname = text(fld, cx.src).to_string();
        let arrow = field(n, "operator")
            .map(|o| text(o, cx.src) == "->")
            .unwrap_or(false);
        if arg.kind() == "identifier" && !arrow {
            let a = text(arg, cx.src);
            if self.lookup(a).is_none() {
                let d = match fname.as_str() {
                    "x" => Some(Dim::X),
                    "y" => Some(Dim::Y),
                    "z" => Some(Dim::Z),
                    _ => None,
                };
                if let Some(d) = d {
                    let b = match a {
                        "threadIdx" => Some(Builtin::ThreadIdx(d)),
                        "blockIdx" => Some(Builtin::BlockIdx(d)),
                        "blockDim" => Some(Builtin::BlockDim(d)),
                        "gridDim" => Some(Builtin::GridDim(d)),
                        _ => None,
                    };
                    if let Some(b) = b {
                        return self.expr(ExprKind::Builtin(b), span);
                    }
                }
            }
        }
        // (issue 8, session 11) `packed.size` with `packed` a `x128`: a
        // static member read through an object is the class's constant.
        if arg.kind() == "identifier"
            && !arrow
            && let Some(v) = self.lookup(text(arg, cx.src))
            && let crate::ir::Type::Named(t) = &self.f.var(v).ty
        {
            let t: String = t.chars().filter(|c| !c.is_whitespace()).collect();
            if let Some(c) = self.scope.constants.get(&format!("{t}::{fname}")) {
                return self.expr(ExprKind::Int(*c), span);
            }
        }
        // `p[i].x` / `p->x`: the access is to one field of the element.
        let base_mode = if arrow { Mode::Read } else { mode };
        let base = self.expr_node(arg, cx, base_mode);
        let id = self.expr(
            ExprKind::Member {
                base,
                field: fname.clone(),
                arrow,
            },
            span,
        );
        if arrow {
            self.deref_access(id, base, mode, n, cx);
            let elem = self.type_of(base).and_then(|t| t.element().cloned());
            self.narrow_accesses(id, elem, &fname);
        } else if matches!(self.f.expr(base).kind, ExprKind::Index { .. }) {
            let elem = self.type_of(base);
            self.narrow_accesses(base, elem, &fname);
        }
        id
    }

    /// After `a[i].f` or `p->f`, shrink the accesses just recorded for the
    /// element expression `elem` (whose type is `elem_ty`) to field `f`.
    fn narrow_accesses(&mut self, access_expr: ExprId, elem_ty: Option<Type>, fname: &str) {
        let fld = elem_ty.as_ref().and_then(|t| t.field(fname));
        let n = self.f.accesses.len();
        for a in self.f.accesses[n.saturating_sub(2)..].iter_mut() {
            if a.expr != access_expr {
                continue;
            }
            match fld {
                Some((off, size)) => {
                    a.field_offset = Some(off);
                    a.access_bytes = Some(size);
                }
                None => {
                    a.field_offset = None;
                    a.access_bytes = None;
                }
            }
        }
    }

    fn subscript(&mut self, n: Node<'_>, cx: &Cx<'_>, mode: Mode) -> ExprId {
        let span = self.span_of(n, cx);
        let Some(arg) = field(n, "argument") else {
            return self.expr(ExprKind::Unknown(text(n, cx.src).into()), span);
        };
        let idx_nodes: Vec<Node<'_>> = field(n, "indices")
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.kind() != "comment")
            .collect();
        let base = self.expr_node(arg, cx, Mode::Address);
        let index = match idx_nodes.first() {
            Some(i) => self.expr_node(*i, cx, Mode::Read),
            None => self.expr(ExprKind::Unknown("".into()), span),
        };
        let id = self.expr(ExprKind::Index { base, index }, span);
        let index_text = field(n, "indices")
            .map(|i| text(i, cx.src).to_string())
            .unwrap_or_default();
        self.record_access(id, mode, span, index_text);
        id
    }

    /// The static type of a (pointer- or array-valued) expression, when known.
    fn type_of(&self, e: ExprId) -> Option<Type> {
        match &self.f.expr(e).kind {
            ExprKind::Var(v) => Some(self.f.var(*v).ty.clone()),
            ExprKind::Name(n) => self.scope.globals.get(n).map(|g| g.ty.clone()),
            ExprKind::Index { base, .. } => self.type_of(*base).and_then(|t| t.element().cloned()),
            ExprKind::Unary(UnOp::Deref, a) => self.type_of(*a).and_then(|t| t.element().cloned()),
            ExprKind::Unary(UnOp::AddrOf, a) => {
                self.type_of(*a).map(|t| Type::Pointer(Box::new(t)))
            }
            ExprKind::Cast(t, _) => Some(t.clone()),
            ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
                let ta = self.type_of(*a);
                match ta {
                    Some(t) if t.is_indexable() => Some(decay(t)),
                    _ => self.type_of(*b).filter(|t| t.is_indexable()).map(decay),
                }
            }
            ExprKind::Cond(_, a, b) => self.type_of(*a).or_else(|| self.type_of(*b)),
            ExprKind::Assign { lhs, .. } => self.type_of(*lhs),
            ExprKind::IncDec { target, .. } => self.type_of(*target),
            ExprKind::Member { base, field, arrow } => {
                let bt = self.type_of(*base)?;
                let rec = if *arrow { bt.element()?.clone() } else { bt };
                match rec {
                    Type::Record { fields, .. } => {
                        let f = fields.iter().find(|f| &f.0 == field)?;
                        Some(Type::Named(format!("{}-byte field", f.2)))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn root_var(&self, mut e: ExprId) -> (Option<VarId>, String) {
        loop {
            match &self.f.expr(e).kind {
                ExprKind::Var(v) => return (Some(*v), self.f.var(*v).name.clone()),
                ExprKind::Name(n) => return (None, n.clone()),
                ExprKind::Cast(_, a) | ExprKind::Unary(UnOp::AddrOf, a) => e = *a,
                ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
                    let a_ptr = self.type_of(*a).map(|t| t.is_indexable()).unwrap_or(false);
                    e = if a_ptr { *a } else { *b };
                }
                ExprKind::Index { base, .. } => e = *base,
                ExprKind::Member { .. } => return (None, self.f.expr_text(e)),
                _ => return (None, self.f.expr_text(e)),
            }
        }
    }

    fn space_of_root(&self, root: ExprId) -> Option<MemSpace> {
        match &self.f.expr(root).kind {
            ExprKind::Member {
                base, arrow: false, ..
            } => self.space_of_root(*base).or_else(|| {
                // A pointer field of a kernel's by-value struct parameter
                // points into global memory (races need these accesses).
                let mut b = *base;
                while let ExprKind::Member { base, .. } | ExprKind::Index { base, .. } =
                    &self.f.expr(b).kind
                {
                    b = *base;
                }
                match self.f.expr(b).kind {
                    ExprKind::Var(v)
                        if self.f.kind == FunctionKind::Kernel
                            && self.f.var(v).param_position.is_some()
                            && !self.f.var(v).ty.is_indexable() =>
                    {
                        Some(MemSpace::Global)
                    }
                    _ => None,
                }
            }),
            ExprKind::Member { base, .. } => self.space_of_root(*base),
            _ => self.pointer_space(root),
        }
    }

    fn record_access(&mut self, id: ExprId, mode: Mode, span: Span, mut index_text: String) {
        if !self.record_accesses || mode == Mode::Address {
            // An address computation may still be the outer part of a
            // multi-dimensional access; the enclosing subscript records it.
            return;
        }
        // Intermediate subscript of a multi-dimensional array: no access.
        if let Some(Type::Array(..)) = self.type_of(id) {
            return;
        }
        let (root, indices) = self.f.index_chain(id);
        let root_ty = self.type_of(root);
        let Some(space) = self.space_of_root(root) else {
            return;
        };
        let dims = match &root_ty {
            Some(t @ Type::Array(..)) => t.array_dims(),
            _ => Vec::new(),
        };
        let elem_ty = self.type_of(id);
        let elem_bytes = elem_ty.as_ref().and_then(|t| t.bytes());
        if indices.len() > 1 {
            // Rebuild the full subscript text, `[y][x]`.
            index_text = indices
                .iter()
                .map(|i| format!("[{}]", self.f.expr_text(*i)))
                .collect();
        }
        let (var, array) = self.root_var(root);
        let base = Access {
            expr: id,
            stmt: self.cur_stmt,
            array,
            var,
            space,
            is_write: false,
            elem_bytes,
            access_bytes: elem_bytes,
            field_offset: Some(0),
            indices,
            dims,
            atomic: mode == Mode::Atomic,
            index_text,
            span,
        };
        self.push_access(base, mode);
    }

    /// Record `base` as a read, a write, or both, as `mode` says.
    fn push_access(&mut self, base: Access, mode: Mode) {
        let (read, write) = match mode {
            Mode::Read => (true, false),
            Mode::Write => (false, true),
            Mode::ReadWrite | Mode::Atomic => (true, true),
            Mode::Address => (false, false),
        };
        if read {
            self.f.accesses.push(base.clone());
        }
        if write {
            self.f.accesses.push(Access {
                is_write: true,
                ..base
            });
        }
    }

    /// `*p`, `*(p + i)` and `p->f` are accesses with index `i` (or 0).
    fn deref_access(&mut self, id: ExprId, ptr: ExprId, mode: Mode, n: Node<'_>, cx: &Cx<'_>) {
        if !self.record_accesses || mode == Mode::Address {
            return;
        }
        let Some(pt) = self.type_of(ptr) else { return };
        if !pt.is_indexable() {
            return;
        }
        let Some(space) = self.space_of_root(ptr) else {
            return;
        };
        let (mut root, mut index) = match &self.f.expr(ptr).kind {
            ExprKind::Binary(BinOp::Add, a, b)
                if self.type_of(*a).map(|t| t.is_indexable()).unwrap_or(false) =>
            {
                (*a, *b)
            }
            _ => {
                let span = self.span_of(n, cx);
                (ptr, self.expr(ExprKind::Int(0), span))
            }
        };
        // (issue 8) `*(p + a + b)` parses as `*((p + a) + b)`: every addend
        // is part of the index, not only the last (gaussian's
        // `*(m_cuda + Size * (… + threadIdx.x …) + t)`).
        while let ExprKind::Binary(BinOp::Add, a, b) = self.f.expr(root).kind.clone()
            && self.type_of(a).map(|t| t.is_indexable()).unwrap_or(false)
            && self.type_of(a) == Some(pt.clone())
        {
            let span = self.f.expr(index).span;
            index = self.expr(ExprKind::Binary(BinOp::Add, b, index), span);
            root = a;
        }
        let elem_bytes = pt.element().and_then(|t| t.bytes());
        let (var, array) = self.root_var(root);
        let span = self.span_of(n, cx);
        let base = Access {
            expr: id,
            stmt: self.cur_stmt,
            array,
            var,
            space,
            is_write: false,
            elem_bytes,
            access_bytes: elem_bytes,
            field_offset: Some(0),
            indices: vec![index],
            dims: Vec::new(),
            atomic: mode == Mode::Atomic,
            index_text: format!("[{}]", self.f.expr_text(index)),
            span,
        };
        self.push_access(base, mode);
    }

    fn call(&mut self, n: Node<'_>, cx: &Cx<'_>, mode: Mode) -> ExprId {
        let span = self.span_of(n, cx);
        let Some(func) = field(n, "function") else {
            return self.expr(ExprKind::Unknown(text(n, cx.src).into()), span);
        };
        let arg_nodes: Vec<Node<'_>> = field(n, "arguments")
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.kind() != "comment")
            .collect();
        let launch_cfg = children(n)
            .into_iter()
            .find(|c| c.kind() == "kernel_call_syntax");

        // C++ casts: static_cast<T>(x) and friends.
        if func.kind() == "template_function" && launch_cfg.is_none() {
            let name = field(func, "name").map(|x| text(x, cx.src)).unwrap_or("");
            if matches!(
                name,
                "static_cast" | "reinterpret_cast" | "const_cast" | "dynamic_cast"
            ) && arg_nodes.len() == 1
            {
                let ty = field(func, "arguments")
                    .and_then(|a| named_children(a).into_iter().next())
                    .map(|t| {
                        if t.kind() == "type_descriptor" {
                            self.type_descriptor(t, cx)
                        } else {
                            type_from_words(text(t, cx.src), self.scope, &self.tparam_names())
                        }
                    })
                    .unwrap_or(Type::Named("?".into()));
                let a = self.expr_node(arg_nodes[0], cx, mode);
                return self.expr(ExprKind::Cast(ty, a), span);
            }
        }

        let callee_text = match func.kind() {
            "template_function" => field(func, "name").map(|x| text(x, cx.src)).unwrap_or(""),
            _ => text(func, cx.src),
        }
        .to_string();

        // Function-like macros.
        if func.kind() == "identifier"
            && self.lookup(&callee_text).is_none()
            && let Some(m) = self.macros().get(&callee_text).cloned()
            && let Some(params) = &m.params
        {
            let args: Vec<String> = arg_nodes
                .iter()
                .map(|a| text(*a, cx.src).to_string())
                .collect();
            if let Some(body) = substitute_params(&m.body, params, &args)
                && let Some(e) = self.expand(&callee_text, &body, span, mode)
            {
                return e;
            }
        }

        // Functional casts `float(x)`, `int(x)`.
        if func.kind() == "primitive_type" && arg_nodes.len() == 1 {
            let ty = type_from_words(&callee_text, self.scope, &[]);
            let a = self.expr_node(arg_nodes[0], cx, Mode::Read);
            return self.expr(ExprKind::Cast(ty, a), span);
        }

        let base_name = callee_text
            .rsplit("::")
            .next()
            .unwrap_or(&callee_text)
            .to_string();
        let receiver = if func.kind() == "field_expression" {
            field(func, "argument").map(|r| self.expr_node(r, cx, Mode::Read))
        } else {
            None
        };
        let callee = if func.kind() == "field_expression" {
            field(func, "field")
                .map(|x| text(x, cx.src).to_string())
                .unwrap_or(callee_text.clone())
        } else {
            callee_text.clone()
        };

        let is_atomic = base_name.starts_with("atomic") || base_name.starts_with("__atomic");
        let mut args = Vec::with_capacity(arg_nodes.len());
        for (i, a) in arg_nodes.iter().enumerate() {
            let m = if is_atomic && i == 0 {
                Mode::Atomic
            } else {
                Mode::Read
            };
            let e = self.expr_node(*a, cx, m);
            // (issue 8) `atomicCAS(addr, …)` with a pointer (`p`, `p + i`,
            // `(unsigned*)p`) rather than `&a[i]`: the atomic accesses
            // `*addr`. CUDA's own atomics only (a user's `atomicAggInc(p)`
            // is a function like any other). The access hangs on a `*addr`
            // node outside the tree (nothing parses it).
            if m == Mode::Atomic && i == 0 && cuda_atomic(&base_name) {
                let mut inner = e;
                while let ExprKind::Cast(_, x) = self.f.expr(inner).kind {
                    inner = x;
                }
                match self.f.expr(inner).kind.clone() {
                    // `&a[i]` (under casts too) was recorded by the subscript.
                    ExprKind::Unary(UnOp::AddrOf, _) => {}
                    _ if self.type_of(inner).is_some_and(|t| t.is_indexable()) => {
                        let span = self.f.expr(inner).span;
                        let deref = self.expr(ExprKind::Unary(UnOp::Deref, inner), span);
                        self.deref_access(deref, inner, Mode::Atomic, *a, cx);
                    }
                    _ => {}
                }
            }
            args.push(e);
        }
        let id = self.expr(
            ExprKind::Call {
                callee: callee.clone(),
                receiver,
                args: args.clone(),
            },
            span,
        );

        if let Some(cfg) = launch_cfg {
            let cfg_args: Vec<Node<'_>> = named_children(cfg)
                .into_iter()
                .filter(|c| c.kind() != "comment")
                .collect();
            let lowered: Vec<ExprId> = cfg_args
                .iter()
                .map(|a| self.expr_node(*a, cx, Mode::Read))
                .collect();
            let txt = |i: usize| {
                cfg_args
                    .get(i)
                    .map(|a| text(*a, cx.src).to_string())
                    .unwrap_or_default()
            };
            let template_args = template_args_of(func, cx.src);
            self.f.launches.push(Launch {
                kernel: base_name,
                template_args,
                grid: lowered.first().copied(),
                block: lowered.get(1).copied(),
                shmem: lowered.get(2).copied(),
                stream: lowered.get(3).copied(),
                args,
                grid_text: txt(0),
                block_text: txt(1),
                shmem_text: txt(2),
                via_api: false,
                stmt: self.cur_stmt,
                span,
            });
            return id;
        }

        if matches!(
            base_name.as_str(),
            "cudaLaunchKernel" | "cudaLaunchCooperativeKernel" | "cudaLaunchKernelExC"
        ) && arg_nodes.len() >= 3
        {
            let (kname, targs) = kernel_name_in(arg_nodes[0], cx.src);
            let txt = |i: usize| {
                arg_nodes
                    .get(i)
                    .map(|a| text(*a, cx.src).to_string())
                    .unwrap_or_default()
            };
            self.f.launches.push(Launch {
                kernel: kname,
                template_args: targs,
                grid: args.get(1).copied(),
                block: args.get(2).copied(),
                shmem: args.get(4).copied(),
                stream: args.get(5).copied(),
                args: args.get(3).copied().into_iter().collect(),
                grid_text: txt(1),
                block_text: txt(2),
                shmem_text: txt(4),
                via_api: true,
                stmt: self.cur_stmt,
                span,
            });
            return id;
        }

        self.f.calls.push(Call {
            callee,
            expr: id,
            stmt: self.cur_stmt,
            span,
        });
        id
    }
}

/// A macro replacement wrapped as a declaration, and its parse.
type Expansion = (std::rc::Rc<String>, std::rc::Rc<tree_sitter::Tree>);

thread_local! {
    /// Parsed macro replacement texts: a macro is typically used many times,
    /// and its parse does not depend on the use site. With the bytes of text
    /// held.
    static EXPANSIONS: std::cell::RefCell<(HashMap<String, Expansion>, usize)> =
        std::cell::RefCell::new((HashMap::new(), 0));
}

/// Most macro-replacement text the per-thread parse cache holds.
const EXPANSION_CACHE_BYTES: usize = 8 << 20;

/// The wrapped text and parse tree of a macro replacement, cached per thread.
fn expansion_tree(body: &str) -> Expansion {
    EXPANSIONS.with(|cache| {
        let (cache, bytes) = &mut *cache.borrow_mut();
        if let Some(hit) = cache.get(body) {
            return hit.clone();
        }
        let wrapped = format!("int __cudalog_expansion__ = ({body});");
        let tree = parse(&wrapped);
        let entry = (std::rc::Rc::new(wrapped), std::rc::Rc::new(tree));
        // Bounded by entries and by text (substituted function-like macro
        // bodies can be long).
        if cache.len() > 8192 || *bytes + body.len() > EXPANSION_CACHE_BYTES {
            cache.clear();
            *bytes = 0;
        }
        *bytes += body.len();
        cache.insert(body.to_string(), entry.clone());
        entry
    })
}

fn decay(t: Type) -> Type {
    match t {
        Type::Array(inner, _) => Type::Pointer(inner),
        t => t,
    }
}

fn declared_name<'s>(d: Node<'_>, src: &'s [u8]) -> Option<&'s str> {
    match d.kind() {
        "identifier" => Some(text(d, src)),
        _ => field(d, "declarator").and_then(|i| declared_name(i, src)),
    }
}

fn collect_string(n: Node<'_>, src: &[u8], out: &mut String) {
    match n.kind() {
        "string_content" => out.push_str(text(n, src)),
        "escape_sequence" => match text(n, src) {
            "\\n" => out.push('\n'),
            "\\t" => out.push(' '),
            other => out.push_str(other),
        },
        _ => {
            for ch in children(n) {
                collect_string(ch, src, out);
            }
        }
    }
}

fn template_args_of(func: Node<'_>, src: &[u8]) -> Vec<String> {
    if func.kind() != "template_function" {
        return Vec::new();
    }
    field(func, "arguments")
        .map(named_children)
        .unwrap_or_default()
        .into_iter()
        .map(|a| text(a, src).trim().to_string())
        .collect()
}

/// The kernel named by the first argument of `cudaLaunchKernel`:
/// `(void*)k`, `(const void*)&k<256>`, `reinterpret_cast<void*>(k)`.
fn kernel_name_in(n: Node<'_>, src: &[u8]) -> (String, Vec<String>) {
    match n.kind() {
        "identifier" => (text(n, src).to_string(), Vec::new()),
        "qualified_identifier" => {
            let t = text(n, src);
            (t.rsplit("::").next().unwrap_or(t).to_string(), Vec::new())
        }
        "template_function" => {
            let name = field(n, "name")
                .map(|x| text(x, src))
                .unwrap_or("")
                .to_string();
            (name, template_args_of(n, src))
        }
        "cast_expression" => field(n, "value")
            .map(|v| kernel_name_in(v, src))
            .unwrap_or_default(),
        "pointer_expression" | "parenthesized_expression" => named_children(n)
            .into_iter()
            .last()
            .map(|v| kernel_name_in(v, src))
            .unwrap_or_default(),
        "call_expression" => field(n, "arguments")
            .and_then(|a| named_children(a).into_iter().next())
            .map(|v| kernel_name_in(v, src))
            .unwrap_or_default(),
        _ => (text(n, src).to_string(), Vec::new()),
    }
}

/// Substitute macro parameters by argument text (parenthesised), honouring
/// `#x` stringification by leaving a string and `a##b` by pasting.
fn substitute_params(body: &str, params: &[String], args: &[String]) -> Option<String> {
    let variadic = params.last().map(|p| p == "...").unwrap_or(false);
    if (!variadic && params.len() != args.len()) || (variadic && args.len() + 1 < params.len()) {
        return None;
    }
    let mut out = String::with_capacity(body.len() * 2);
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let w = &body[st..i];
            if w == "__VA_ARGS__" && variadic {
                out.push_str(&args[params.len() - 1..].join(", "));
            } else if let Some(k) = params.iter().position(|p| p == w) {
                let pasted =
                    out.trim_end().ends_with("##") || body[i..].trim_start().starts_with("##");
                if pasted {
                    out.push_str(args[k].trim());
                } else {
                    out.push('(');
                    out.push_str(&args[k]);
                    out.push(')');
                }
            } else {
                out.push_str(w);
            }
        } else if c == b'#' && i + 1 < b.len() && b[i + 1] == b'#' {
            while out.ends_with(' ') {
                out.pop();
            }
            i += 2;
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
        } else if c == b'#' {
            // Stringification: the result is a string literal.
            out.push_str("\"\"");
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b' ') {
                i += 1;
            }
        } else {
            let ch = body[i..].chars().next()?;
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    Some(out)
}

fn parse_number(t: &str) -> Option<i64> {
    let lower = t.to_ascii_lowercase();
    let is_hex = lower.starts_with("0x");
    if !is_hex && (lower.contains('.') || lower.contains('e') || lower.ends_with('f')) {
        return None;
    }
    let digits = lower.trim_end_matches(['u', 'l']).replace('\'', "");
    if let Some(h) = digits.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(bn) = digits.strip_prefix("0b") {
        i64::from_str_radix(bn, 2).ok()
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse().ok()
    }
}

fn binop(op: &str) -> Option<BinOp> {
    Some(match op {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "%" => BinOp::Rem,
        "<<" => BinOp::Shl,
        ">>" => BinOp::Shr,
        "&" | "bitand" => BinOp::BitAnd,
        "|" | "bitor" => BinOp::BitOr,
        "^" | "xor" => BinOp::BitXor,
        "&&" | "and" => BinOp::LogAnd,
        "||" | "or" => BinOp::LogOr,
        "==" => BinOp::Eq,
        "!=" | "not_eq" => BinOp::Ne,
        "<" => BinOp::Lt,
        "<=" => BinOp::Le,
        ">" => BinOp::Gt,
        ">=" => BinOp::Ge,
        _ => return None,
    })
}

/// (issue 8) CUDA's atomic functions (`atomicAdd`, `atomicCAS_system`, …).
fn cuda_atomic(name: &str) -> bool {
    let base = name
        .strip_suffix("_system")
        .or_else(|| name.strip_suffix("_block"))
        .unwrap_or(name);
    matches!(
        base,
        "atomicAdd"
            | "atomicSub"
            | "atomicExch"
            | "atomicMin"
            | "atomicMax"
            | "atomicInc"
            | "atomicDec"
            | "atomicCAS"
            | "atomicAnd"
            | "atomicOr"
            | "atomicXor"
    )
}
