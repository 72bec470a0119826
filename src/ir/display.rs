//! Rendering IR expressions back to C-like text (for messages and the store).

use super::{BinOp, Builtin, Dim, ExprId, ExprKind, Function, UnOp};

fn dim(d: Dim) -> &'static str {
    match d {
        Dim::X => "x",
        Dim::Y => "y",
        Dim::Z => "z",
    }
}

/// The C spelling of a binary operator.
pub fn binop_str(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Rem => "%",
        BinOp::Shl => "<<",
        BinOp::Shr => ">>",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::LogAnd => "&&",
        BinOp::LogOr => "||",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::Comma => ",",
    }
}

pub(super) fn write_expr(f: &Function, id: ExprId, out: &mut String) {
    use std::fmt::Write;
    match &f.expr(id).kind {
        ExprKind::Int(v) => {
            let _ = write!(out, "{v}");
        }
        ExprKind::Float(s) => out.push_str(s),
        ExprKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        ExprKind::Str => out.push_str("\"…\""),
        ExprKind::Var(v) => out.push_str(&f.var(*v).name),
        ExprKind::Name(n) => out.push_str(n),
        ExprKind::TemplateParam(i) => out.push_str(&f.template_params[*i as usize].name),
        ExprKind::Builtin(b) => {
            let _ = match b {
                Builtin::ThreadIdx(d) => write!(out, "threadIdx.{}", dim(*d)),
                Builtin::BlockIdx(d) => write!(out, "blockIdx.{}", dim(*d)),
                Builtin::BlockDim(d) => write!(out, "blockDim.{}", dim(*d)),
                Builtin::GridDim(d) => write!(out, "gridDim.{}", dim(*d)),
                Builtin::WarpSize => write!(out, "warpSize"),
            };
        }
        ExprKind::Unary(op, a) => {
            out.push_str(match op {
                UnOp::Neg => "-",
                UnOp::Plus => "+",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
                UnOp::Deref => "*",
                UnOp::AddrOf => "&",
            });
            write_operand(f, *a, out);
        }
        ExprKind::Binary(op, a, b) => {
            write_operand(f, *a, out);
            let _ = write!(out, " {} ", binop_str(*op));
            write_operand(f, *b, out);
        }
        ExprKind::Assign { op, lhs, rhs } => {
            write_expr(f, *lhs, out);
            let _ = write!(out, " {}= ", op.map(binop_str).unwrap_or(""));
            write_expr(f, *rhs, out);
        }
        ExprKind::IncDec {
            target,
            increment,
            prefix,
        } => {
            let op = if *increment { "++" } else { "--" };
            if *prefix {
                out.push_str(op);
            }
            write_operand(f, *target, out);
            if !*prefix {
                out.push_str(op);
            }
        }
        ExprKind::Cond(c, a, b) => {
            write_operand(f, *c, out);
            out.push_str(" ? ");
            write_operand(f, *a, out);
            out.push_str(" : ");
            write_operand(f, *b, out);
        }
        ExprKind::Cast(t, a) => {
            let _ = write!(out, "({})", t.render());
            write_operand(f, *a, out);
        }
        ExprKind::Call {
            callee,
            receiver,
            args,
        } => {
            if let Some(r) = receiver {
                write_operand(f, *r, out);
                out.push('.');
            }
            out.push_str(callee);
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_expr(f, *a, out);
            }
            out.push(')');
        }
        ExprKind::Index { base, index } => {
            write_operand(f, *base, out);
            out.push('[');
            write_expr(f, *index, out);
            out.push(']');
        }
        ExprKind::Member { base, field, arrow } => {
            write_operand(f, *base, out);
            out.push_str(if *arrow { "->" } else { "." });
            out.push_str(field);
        }
        ExprKind::SizeOf(Some(n)) => {
            let _ = write!(out, "{n}");
        }
        ExprKind::SizeOf(None) => out.push_str("sizeof(?)"),
        ExprKind::Unknown(t) => out.push_str(t),
    }
}

fn write_operand(f: &Function, id: ExprId, out: &mut String) {
    let atomic = matches!(
        f.expr(id).kind,
        ExprKind::Int(_)
            | ExprKind::Var(_)
            | ExprKind::Name(_)
            | ExprKind::Builtin(_)
            | ExprKind::TemplateParam(_)
            | ExprKind::Call { .. }
            | ExprKind::Index { .. }
            | ExprKind::Member { .. }
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
    );
    if atomic {
        write_expr(f, id, out);
    } else {
        out.push('(');
        write_expr(f, id, out);
        out.push(')');
    }
}
