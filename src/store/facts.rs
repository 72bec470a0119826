//! The rows of the derived-fact tables of one function.

use crate::facts::Analysis;
use crate::facts::affine::Coef;
use crate::facts::coalescing::Sectors;
use crate::facts::divergence::BranchKind;
use crate::ir::Function;
use anyhow::Result;
use rusqlite::params;

fn coef_text(c: &Coef) -> String {
    match c {
        Coef::Int(v) => v.to_string(),
        Coef::Sym(s) => s.clone(),
        Coef::Unknown => "?".into(),
    }
}

/// `block`, `warp` or `thread` for a dimension mask under launch dims.
fn uniformity_class(mask: u8, launch: &crate::facts::LaunchDims) -> &'static str {
    if mask == 0 {
        "block"
    } else if mask & 0b1001 == 0 && launch.block[0].is_some_and(|x| x % 32 == 0) {
        "warp"
    } else {
        "thread"
    }
}

/// Insert the derived-fact rows of function `fid` (first line `base`,
/// 1-based) from its IR and analysis.
pub(super) fn insert_fact_rows(
    tx: &rusqlite::Transaction<'_>,
    fid: i64,
    base: u32,
    f: &Function,
    a: &Analysis,
) -> Result<()> {
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO var_facts(function_id, var_index, name, depends_x, depends_y, depends_z, varies, from_memory, uniformity) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for (i, v) in f.vars.iter().enumerate() {
            let m = a.uniformity.var_dims.get(i).copied().unwrap_or(0);
            st.execute(params![
                fid,
                i as i64,
                v.name,
                m & 1 != 0,
                m & 2 != 0,
                m & 4 != 0,
                m & 8 != 0,
                a.uniformity
                    .var_from_memory
                    .get(i)
                    .copied()
                    .unwrap_or(false),
                uniformity_class(m, &a.launch),
            ])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO access_facts(function_id, access_index, line, col, array, space, is_write, \
             stride_x, stride_y, stride_z, const_offset, data_dependent, sectors_kind, sectors, \
             sectors_with_offset, min_sectors, lines, bank_degree, single_thread, traffic_share_permille) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
        )?;
        for (i, acc) in f.accesses.iter().enumerate() {
            let g = a.global.iter().find(|g| g.access == i);
            let sh = a.shared.iter().find(|s| s.access == i);
            let form = g.map(|g| &g.form);
            let data_dep = acc.indices.iter().any(|e| {
                a.uniformity
                    .expr_from_memory
                    .get(e.0 as usize)
                    .copied()
                    .unwrap_or(false)
            });
            let (kind, sectors, with_off, lines) = match g.map(|g| &g.sectors) {
                Some(Sectors::Exact {
                    actual,
                    aligned,
                    lines,
                    ..
                }) => (Some("exact"), Some(*aligned), Some(*actual), Some(*lines)),
                Some(Sectors::UpTo(n, _)) => (Some("up_to"), Some(*n), None, None),
                Some(Sectors::DataDependent) => (Some("data_dependent"), None, None, None),
                Some(Sectors::Unknown) => (Some("unknown"), None, None, None),
                None => (None, None, None, None),
            };
            st.execute(params![
                fid,
                i as i64,
                base + acc.span.line,
                acc.span.col,
                acc.array,
                a.access_space.get(i).copied().unwrap_or(acc.space).as_str(),
                acc.is_write,
                form.map(|f| coef_text(&f.coef[0])),
                form.map(|f| coef_text(&f.coef[1])),
                form.map(|f| coef_text(&f.coef[2])),
                form.and_then(|f| f.offset),
                data_dep,
                kind,
                sectors,
                with_off,
                g.map(|g| g.min_sectors),
                lines,
                sh.and_then(|s| s.degree),
                a.single_thread.contains(&acc.stmt.0),
                g.and_then(|g| g.share_permille),
            ])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO branch_facts(function_id, line, col, condition, kind, in_expression, memory, loops) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for b in &a.branches {
            let span = if b.in_expression {
                f.expr(b.cond).span
            } else {
                f.stmt(b.stmt).span
            };
            let (kind, memory, looping) = match b.kind {
                BranchKind::Uniform => ("uniform", false, false),
                BranchKind::WarpUniform => ("warp_uniform", false, false),
                BranchKind::SingleThread => ("single_thread", false, false),
                BranchKind::BoundaryGuard => ("boundary_guard", false, false),
                // findings (issue 8): a block-/grid-stride loop's tail is
                // stored as a divergent loop (the schema's kinds are fixed).
                BranchKind::StrideTail { memory, .. } => ("divergent", memory, true),
                BranchKind::Divergent { memory, looping } => ("divergent", memory, looping),
            };
            st.execute(params![
                fid,
                base + span.line,
                span.col,
                f.expr_text(b.cond),
                kind,
                b.in_expression,
                memory,
                looping,
            ])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO barrier_intervals(function_id, stmt_id, interval_start) VALUES (?1, ?2, ?3)",
        )?;
        for (s, start) in &a.intervals.interval {
            let start = if *start == crate::facts::intervals::ENTRY {
                -1
            } else {
                *start as i64
            };
            st.execute(params![fid, s, start])?;
        }
        let mut st = tx.prepare_cached(
            "INSERT INTO stmt_order(function_id, from_stmt, to_stmt, ordered) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (x, y) in &a.intervals.happens_before {
            st.execute(params![fid, x, y, 1])?;
        }
        for (x, y) in &a.intervals.concurrent {
            st.execute(params![fid, x, y, 0])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO param_facts(function_id, param_index, name, depends_x, depends_y, depends_z, \
             varies, stride_x, stride_y, stride_z, pointer_space, pointer_offset_x) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        let p = &a.params;
        for v in f.vars.iter() {
            let Some(i) = v.param_position.map(|i| i as usize) else {
                continue;
            };
            let Some(m) = p.dims.get(i).copied() else {
                continue;
            };
            let form = p.forms.get(i).and_then(Option::as_ref);
            st.execute(params![
                fid,
                i as i64,
                v.name,
                m & 1 != 0,
                m & 2 != 0,
                m & 4 != 0,
                m & 8 != 0,
                form.map(|f| coef_text(&f.coef[0])),
                form.map(|f| coef_text(&f.coef[1])),
                form.map(|f| coef_text(&f.coef[2])),
                p.spaces.get(i).copied().flatten().map(|s| s.as_str()),
                p.pointer_forms
                    .get(i)
                    .and_then(Option::as_ref)
                    .map(|f| coef_text(&f.coef[0])),
            ])?;
        }
    }
    Ok(())
}
