//! Resolving C++ type syntax to [`Type`]s with sizes.

use super::scan::Scope;
use super::syntax::{children, field, named_children, text};
use crate::ir::types::builtin_record;
use crate::ir::{ScalarType, Type};
use tree_sitter::Node;

/// Resolve a type name written as words (`unsigned int`, `float4`, `size_t`,
/// a typedef or struct name, a template type parameter).
pub fn type_from_words(words: &str, scope: &Scope, tparams: &[String]) -> Type {
    type_from_words_depth(words, scope, tparams, 0)
}

fn type_from_words_depth(words: &str, scope: &Scope, tparams: &[String], depth: u32) -> Type {
    let cleaned: Vec<&str> = words
        .split(|c: char| c.is_whitespace())
        .filter(|w| {
            !w.is_empty()
                && !matches!(
                    *w,
                    "const"
                        | "volatile"
                        | "struct"
                        | "class"
                        | "union"
                        | "enum"
                        | "typename"
                        | "static"
                        | "extern"
                        | "register"
                        | "inline"
                        | "__restrict__"
                        | "__restrict"
                        | "restrict"
                        | "__shared__"
                        | "__constant__"
                        | "__device__"
                        | "__managed__"
                        | "constexpr"
                )
        })
        .collect();
    if cleaned.is_empty() {
        return Type::Named(words.trim().to_string());
    }
    let joined = cleaned.join(" ");
    let stripped = joined
        .strip_prefix("std::")
        .or_else(|| joined.strip_prefix("::"))
        .unwrap_or(&joined);
    if let Some(t) = scalar_from_words(stripped) {
        return t;
    }
    if let Some(pos) = tparams.iter().position(|p| p == stripped) {
        return Type::TemplateParam(tparams[pos].clone());
    }
    if let Some(t) = scope.types.get(stripped) {
        return t.clone();
    }
    if let Some(t) = builtin_record(stripped) {
        return t;
    }
    if depth < 8
        && let Some(m) = scope.macros.get(stripped)
        && m.params.is_none()
        && !m.body.is_empty()
    {
        return type_from_words_depth(&m.body, scope, tparams, depth + 1);
    }
    Type::Named(stripped.to_string())
}

fn scalar_from_words(w: &str) -> Option<Type> {
    use ScalarType::*;
    let s = match w {
        "void" => return Some(Type::Void),
        "bool" | "_Bool" => Bool,
        "char" | "signed char" | "unsigned char" | "int8_t" | "uint8_t" | "uchar" => Char,
        "short" | "unsigned short" | "short int" | "unsigned short int" | "int16_t"
        | "uint16_t" | "ushort" => Short,
        "int" | "unsigned" | "unsigned int" | "signed" | "signed int" | "int32_t" | "uint32_t"
        | "uint" | "float" => {
            if w == "float" {
                Float
            } else {
                Int
            }
        }
        "long" | "unsigned long" | "long int" | "unsigned long int" | "size_t" | "ssize_t"
        | "ptrdiff_t" | "intptr_t" | "uintptr_t" | "int64_t" | "uint64_t" | "ulong" => Long,
        "long long" | "unsigned long long" | "long long int" | "unsigned long long int" => LongLong,
        "double" | "long double" => Double,
        "half" | "__half" | "__nv_bfloat16" | "nv_bfloat16" | "__nv_fp8_e4m3" => {
            if w == "__nv_fp8_e4m3" { Char } else { Half }
        }
        _ => return None,
    };
    Some(Type::Scalar(s))
}

/// Resolve the `type` field of a declaration-like node.
pub fn base_type(node: Node<'_>, src: &[u8], scope: &Scope, tparams: &[String]) -> Type {
    match node.kind() {
        "primitive_type" | "sized_type_specifier" | "type_identifier" | "qualified_identifier" => {
            type_from_words(text(node, src), scope, tparams)
        }
        "struct_specifier" | "class_specifier" | "union_specifier" => match field(node, "name") {
            Some(n) => type_from_words(text(n, src), scope, tparams),
            None => match field(node, "body") {
                Some(body) => record_layout("<anonymous>", body, src, scope, tparams),
                None => Type::Named("<anonymous>".into()),
            },
        },
        "template_type" => {
            let name = field(node, "name").map(|n| text(n, src)).unwrap_or("");
            Type::Named(format!(
                "{}<{}>",
                name,
                field(node, "arguments")
                    .map(|a| text(a, src).trim_matches(['<', '>']).to_string())
                    .unwrap_or_default()
            ))
        }
        _ => Type::Named(text(node, src).to_string()),
    }
}

/// Wrap `base` according to a declarator (pointers, arrays, references) and
/// return the declared name with the full type.
pub fn apply_declarator<'t>(
    decl: Node<'t>,
    base: Type,
    src: &[u8],
    scope: &Scope,
    extra_consts: &dyn Fn(&str) -> Option<i64>,
) -> (Option<Node<'t>>, Type) {
    match decl.kind() {
        "identifier" | "field_identifier" | "type_identifier" => (Some(decl), base),
        "pointer_declarator" | "abstract_pointer_declarator" => match field(decl, "declarator") {
            Some(inner) => apply_declarator(
                inner,
                Type::Pointer(Box::new(base)),
                src,
                scope,
                extra_consts,
            ),
            None => (None, Type::Pointer(Box::new(base))),
        },
        "reference_declarator" | "abstract_reference_declarator" => {
            // `T& x` behaves as a `T` for our purposes.
            match named_children(decl).into_iter().last() {
                Some(inner) => apply_declarator(inner, base, src, scope, extra_consts),
                None => (None, base),
            }
        }
        "array_declarator" | "abstract_array_declarator" => {
            let size = field(decl, "size").and_then(|s| {
                let t = text(s, src);
                scope
                    .macros
                    .eval_int(&substitute_consts(t, scope, extra_consts))
                    .filter(|v| *v >= 0)
                    .map(|v| v as u64)
            });
            // Tree-sitter nests `a[2][3]` as (a[2])[3]: wrapping the base with
            // the outer extent first yields Array(Array(T, 3), 2), C's meaning.
            match field(decl, "declarator") {
                Some(inner) => apply_declarator(
                    inner,
                    Type::Array(Box::new(base), size),
                    src,
                    scope,
                    extra_consts,
                ),
                None => (None, Type::Array(Box::new(base), size)),
            }
        }
        "init_declarator" => match field(decl, "declarator") {
            Some(inner) => apply_declarator(inner, base, src, scope, extra_consts),
            None => (None, base),
        },
        "parenthesized_declarator" | "attributed_declarator" => {
            match named_children(decl).into_iter().next() {
                Some(inner) => apply_declarator(inner, base, src, scope, extra_consts),
                None => (None, base),
            }
        }
        _ => (None, base),
    }
}

/// Replace identifiers that are known integer constants (enumerators,
/// `const int` globals, constant template arguments) by their values.
pub fn substitute_consts(t: &str, scope: &Scope, extra: &dyn Fn(&str) -> Option<i64>) -> String {
    let mut out = String::with_capacity(t.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            if let Some(v) = extra(word).or_else(|| scope.constants.get(word.as_str()).copied()) {
                out.push_str(&v.to_string());
            } else {
                out.push_str(word);
            }
            word.clear();
        }
    };
    for c in t.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Lay out a struct body (C rules: each field at its alignment, size rounded
/// to the largest alignment). Unknown field sizes make the record unsized.
pub fn record_layout(
    name: &str,
    body: Node<'_>,
    src: &[u8],
    scope: &Scope,
    tparams: &[String],
) -> Type {
    let mut fields = Vec::new();
    let mut offset = 0u64;
    let mut max_align = 1u64;
    let mut known = true;
    for fd in named_children(body) {
        if fd.kind() != "field_declaration" {
            continue;
        }
        let Some(tn) = field(fd, "type") else {
            continue;
        };
        let base = base_type(tn, src, scope, tparams);
        let mut any = false;
        for ch in children(fd) {
            if fd.field_name_for_child(child_index(fd, ch)) != Some("declarator") {
                continue;
            }
            any = true;
            let (n, ty) = apply_declarator(ch, base.clone(), src, scope, &|_| None);
            let (Some(size), Some(align)) = (ty.bytes(), ty.align()) else {
                known = false;
                continue;
            };
            offset = offset.div_ceil(align) * align;
            if let Some(n) = n {
                fields.push((text(n, src).to_string(), offset, size));
            }
            offset += size;
            max_align = max_align.max(align);
        }
        if !any {
            known = false;
        }
    }
    if !known {
        return Type::Named(name.to_string());
    }
    Type::Record {
        name: name.to_string(),
        bytes: offset.div_ceil(max_align) * max_align,
        fields,
    }
}

fn child_index(parent: Node<'_>, child: Node<'_>) -> u32 {
    let mut c = parent.walk();
    parent
        .children(&mut c)
        .position(|x| x.id() == child.id())
        .unwrap_or(0) as u32
}
