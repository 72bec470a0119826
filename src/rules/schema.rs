//! The store's tables as input relations, read from the database at run time
//! (so columns added by later schema versions are visible to rules at once).

use anyhow::{Context, Result};
use rusqlite::Connection;

/// Value types of the rule language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ty {
    /// 64-bit signed integers (Soufflé's `number`; `unsigned` maps here too).
    Number,
    /// 64-bit floats.
    Float,
    /// Strings.
    Symbol,
}

impl Ty {
    /// The type's name in rule files.
    pub fn as_str(self) -> &'static str {
        match self {
            Ty::Number => "number",
            Ty::Float => "float",
            Ty::Symbol => "symbol",
        }
    }

    /// The type of an SQLite column from its declared type (SQLite's
    /// affinity rules: INT → number; CHAR, CLOB, TEXT → symbol; REAL, FLOA,
    /// DOUB → float; anything else, including no type, → symbol).
    pub fn of_sql(decl: &str) -> Ty {
        let d = decl.to_ascii_uppercase();
        if d.contains("INT") {
            Ty::Number
        } else if d.contains("CHAR") || d.contains("CLOB") || d.contains("TEXT") {
            Ty::Symbol
        } else if d.contains("REAL") || d.contains("FLOA") || d.contains("DOUB") {
            Ty::Float
        } else if d.contains("NUM") || d.contains("DEC") || d.contains("BOOL") {
            Ty::Number
        } else {
            Ty::Symbol
        }
    }
}

/// One column of a store table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Column {
    /// Name.
    pub name: String,
    /// Rule-language type.
    pub ty: Ty,
    /// The SQL declared type.
    pub sql_type: String,
    /// Declared `NOT NULL` (or a primary key column).
    #[serde(skip)]
    pub not_null: bool,
}

/// One store table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Table {
    /// Name (= the relation's name in rules).
    pub name: String,
    /// Columns in schema order (= positional argument order).
    pub columns: Vec<Column>,
}

/// All tables of a store.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreSchema {
    /// Tables by name order.
    pub tables: Vec<Table>,
}

impl StoreSchema {
    /// Read the tables and columns of the database behind `conn`.
    pub fn read(conn: &Connection) -> Result<StoreSchema> {
        let mut names: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
            )?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()
            .context("reading the store's table list")?;
        names.retain(|n| is_identifier(n));
        let mut tables = Vec::new();
        for name in names {
            let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", quote(&name)))?;
            let columns: Vec<Column> = stmt
                .query_map([], |r| {
                    let name: String = r.get(1)?;
                    let sql_type: String = r.get(2)?;
                    let not_null: bool = r.get(3)?;
                    let pk: i64 = r.get(5)?;
                    Ok(Column {
                        ty: Ty::of_sql(&sql_type),
                        name,
                        sql_type,
                        not_null: not_null || pk > 0,
                    })
                })?
                .collect::<rusqlite::Result<_>>()
                .with_context(|| format!("reading the columns of {name}"))?;
            tables.push(Table { name, columns });
        }
        Ok(StoreSchema { tables })
    }

    /// The schema of a new store of this cudalog version (no database at hand).
    pub fn current() -> Result<StoreSchema> {
        let store = crate::store::Store::open_in_memory()?;
        StoreSchema::read(store.connection())
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// Whether `name` can be written as a relation or column name in a rule.
pub fn is_identifier(name: &str) -> bool {
    let mut c = name.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// An SQL identifier in double quotes.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_schema_has_the_fact_tables_with_types() {
        let s = StoreSchema::current().unwrap();
        let acc = s.table("accesses").unwrap();
        assert_eq!(acc.columns[0].name, "id");
        let col = |t: &Table, n: &str| t.columns.iter().find(|c| c.name == n).unwrap().ty;
        assert_eq!(col(acc, "function_id"), Ty::Number);
        assert_eq!(col(acc, "space"), Ty::Symbol);
        for t in [
            "files",
            "functions",
            "accesses",
            "barriers",
            "launches",
            "calls",
            "var_facts",
            "access_facts",
            "branch_facts",
            "findings",
            "loops",
            "loop_stmts",
            "fp64_ops",
        ] {
            assert!(s.table(t).is_some(), "{t}");
        }
    }

    #[test]
    fn sql_types_map_by_affinity() {
        assert_eq!(Ty::of_sql("INTEGER"), Ty::Number);
        assert_eq!(Ty::of_sql("varchar(10)"), Ty::Symbol);
        assert_eq!(Ty::of_sql("REAL"), Ty::Float);
        assert_eq!(Ty::of_sql(""), Ty::Symbol);
    }
}
