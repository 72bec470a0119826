//! The SQLite store: schema migrations, incremental writes, read-only queries.
//!
//! Contract: the DDL in `schema/*.sql` defines the user-facing tables. Writes
//! go through a [`StoreTx`] (one `BEGIN IMMEDIATE` transaction: a second
//! writer waits for the first to commit), touching only the rows of the
//! functions whose hashes changed (rows of functions that only moved are
//! shifted in place). A crash mid-run leaves the previous state; readers
//! (WAL) always see a committed snapshot.

mod facts;
mod findings;
mod packed;
mod query;
mod state;
mod write;
mod writer;

pub use findings::load_findings;
pub use packed::PackedCache;
pub use query::{QueryBounds, QueryFormat, QueryResult, run_query, stream_query};
pub use state::{StoreState, StoredFile, StoredFunction, path_key};
pub use write::{FileRow, StoreTx};
pub use writer::WriteHandle;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// Migrations, applied in order; `PRAGMA user_version` is the number applied.
const MIGRATIONS: &[&str] = &[
    include_str!("../../schema/001_init.sql"),
    include_str!("../../schema/002_findings.sql"),
    include_str!("../../schema/003_facts.sql"),
    include_str!("../../schema/004_params.sql"),
    include_str!("../../schema/005_incremental.sql"),
    include_str!("../../schema/006_rule_facts.sql"),
    include_str!("../../schema/007_bounds.sql"),
    include_str!("../../schema/008_launch_args.sql"),
    include_str!("../../schema/009_traffic_share.sql"),
];

/// Prepared statements kept per connection (more than the writer's
/// distinct statements, so none is prepared twice in a run).
const STATEMENT_CACHE: usize = 256;

/// Current schema version (number of migrations).
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// A writable store.
pub struct Store {
    conn: Connection,
}

impl Store {
    /// Open (creating if needed) the database at `path` and migrate it.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open database {}", path.display()))?;
        Self::from_connection(conn).with_context(|| format!("database {}", path.display()))
    }

    /// An in-memory store (tests).
    pub fn open_in_memory() -> Result<Store> {
        Self::from_connection(Connection::open_in_memory()?)
    }

    fn from_connection(mut conn: Connection) -> Result<Store> {
        // Another cudalog process may hold the write lock for a whole run:
        // wait for it (its run ends with a commit) rather than fail.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Switching a new database to WAL can meet another process doing
        // the same; SQLite then answers "locked" without waiting.
        retry_busy(|| conn.pragma_update(None, "journal_mode", "WAL"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A run writes one transaction; once its dirty pages outgrow the
        // page cache SQLite spills them to the WAL and reads them back, a
        // cost that grows faster than the store (docs/performance.md,
        // session 7). 128 MB holds the store of ~16 copies of the three
        // evaluation corpora (the cache columns are packed, see
        // `packed`); SQLite's default is 2 MB (negative = KiB).
        conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
        // A function's rows go through some 50 distinct statements; with
        // rusqlite's default of 16 cached statements every one of them was
        // parsed and planned again for every function.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        migrate(&mut conn)?;
        Ok(Store { conn })
    }

    /// Begin a write transaction (`BEGIN IMMEDIATE`: takes the write lock
    /// now, waiting up to [`BUSY_TIMEOUT`] for another writer to finish).
    pub fn transaction(&mut self) -> Result<StoreTx<'_>> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .context("cannot take the database write lock (another cudalog process?)")?;
        Ok(StoreTx::new(tx))
    }

    /// The underlying connection (read access for tests and reports).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

/// Run `f` again while SQLite reports the database busy or locked (for
/// the statements where SQLite does not call the busy handler), up to
/// [`BUSY_TIMEOUT`].
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            r => return r,
        }
    }
}

/// SQLite page cache per connection, in KiB.
pub const PAGE_CACHE_KIB: i64 = 128 * 1024;

/// How long a writer waits for another one.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

fn migrate(conn: &mut Connection) -> Result<()> {
    let too_new = |version: u32| {
        anyhow::anyhow!(
            "schema version {version} is newer than this cudalog supports ({SCHEMA_VERSION}); \
             upgrade cudalog or delete the database"
        )
    };
    let version: u32 = retry_busy(|| conn.pragma_query_value(None, "user_version", |r| r.get(0)))?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    if version > SCHEMA_VERSION {
        return Err(too_new(version));
    }
    // Read the version again under the write lock: another process may
    // have migrated in between.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: u32 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(too_new(version));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(sql)
            .with_context(|| format!("applying schema migration {}", i + 1))?;
        tx.pragma_update(None, "user_version", i as u32 + 1)?;
    }
    tx.commit()?;
    Ok(())
}

/// Open an existing database read-only (for `cudalog query`).
pub fn open_read_only(path: &Path) -> Result<Connection> {
    if !path.exists() {
        bail!(
            "no database at {} (run `cudalog index` first)",
            path.display()
        );
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let first = Connection::open_with_flags(path, flags)
        .map_err(anyhow::Error::from)
        .and_then(|c| {
            // Reading the schema touches the WAL index (`-shm`), which a
            // read-only directory cannot create: find out now.
            c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
            Ok(c)
        });
    let conn = match first {
        Ok(c) => c,
        Err(e) => {
            // (harden) A database in a directory we cannot write (a
            // read-only mount, another user's checkout): open it immutable,
            // which reads the file as it is, without the WAL index. Nobody
            // can be writing it there, so this sees a consistent state.
            tracing::debug!("read-only open failed ({e:#}); trying immutable");
            open_immutable(path, flags).with_context(|| {
                format!(
                    "cannot open database {} for reading ({e:#}); if its directory is read-only, \
                     a writer's uncommitted WAL file may be missing — copy the .cudalog \
                     directory somewhere writable",
                    path.display()
                )
            })?
        }
    };
    conn.pragma_update(None, "query_only", "ON")?;
    Ok(conn)
}

fn open_immutable(path: &Path, flags: OpenFlags) -> Result<Connection> {
    let abs = std::fs::canonicalize(path)?;
    let mut uri = String::from("file:");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    let c = Connection::open_with_flags(&uri, flags | OpenFlags::SQLITE_OPEN_URI)?;
    c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_once_and_set_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x/cudalog.db");
        {
            let s = Store::open(&p).unwrap();
            let v: u32 = s
                .connection()
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            assert_eq!(v, SCHEMA_VERSION);
        }
        // Re-opening does not re-run migrations (would fail on CREATE TABLE).
        Store::open(&p).unwrap();
        let ro = open_read_only(&p).unwrap();
        let mode: String = Store::open(&p)
            .unwrap()
            .connection()
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert!(ro.execute("DELETE FROM files", []).is_err());
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.db");
        {
            let c = Connection::open(&p).unwrap();
            c.pragma_update(None, "user_version", 999).unwrap();
        }
        let err = Store::open(&p).err().expect("refused");
        assert!(format!("{err:#}").contains("newer"));
    }
}
