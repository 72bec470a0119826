//! Incrementality: salsa re-executes only the edited function's queries, and
//! the store rewrites only that function's rows.

use cudalog::config::Config;
use cudalog::db::ExecutionLog;
use cudalog::index::Indexer;
use cudalog::store::Store;
use std::path::Path;

const THREE_KERNELS: &str = "#define N 256
__global__ void first(float* a) {
  a[threadIdx.x] = 1.0f;
}

__global__ void second(float* a, int w) {
  a[blockIdx.x * w + threadIdx.x] = 2.0f;
}

__global__ void third(float* a) {
  __syncthreads();
  a[threadIdx.x + N] = 3.0f;
}
";

fn count(log: &[String], query: &str) -> usize {
    log.iter()
        .filter(|q| q.starts_with(&format!("{query}(")))
        .count()
}

#[test]
fn editing_one_kernel_reexecutes_only_its_queries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("multi.cu"), THREE_KERNELS).unwrap();
    let log = ExecutionLog::default();
    let mut ix = Indexer::new(dir.path(), Config::default(), Some(log.clone()));
    ix.load_all().unwrap();
    let files = ix.indexed_files();
    let first = ix.records(&files);
    let l = log.take();
    assert_eq!(count(&l, "function_ir"), 3, "{l:?}");
    assert_eq!(count(&l, "function_facts"), 3);

    // Edit the body of `second` and add a line (which moves `third` down).
    let edited = THREE_KERNELS.replace(
        "  a[blockIdx.x * w + threadIdx.x] = 2.0f;",
        "  int i = blockIdx.x * w + threadIdx.x;\n  a[i] = 2.5f;",
    );
    ix.set_file_bytes(Path::new("multi.cu"), edited.as_bytes());
    let second = ix.records(&files);
    let l = log.take();
    assert_eq!(count(&l, "parse"), 1, "{l:?}");
    assert_eq!(count(&l, "scan"), 1, "{l:?}");
    assert_eq!(count(&l, "items"), 1, "{l:?}");
    assert_eq!(
        count(&l, "function_ir"),
        1,
        "only `second` is lowered again: {l:?}"
    );
    assert_eq!(count(&l, "function_facts"), 1, "{l:?}");

    // The facts of `first` and `third` are the very same values.
    let f1 = &first[0].functions;
    let f2 = &second[0].functions;
    assert!(std::sync::Arc::ptr_eq(&f1[0].facts, &f2[0].facts));
    assert!(std::sync::Arc::ptr_eq(&f1[2].facts, &f2[2].facts));
    assert_ne!(f1[1].facts.content_hash, f2[1].facts.content_hash);
    assert_eq!(f2[2].start_line, f1[2].start_line + 1);

    // No edit: nothing runs.
    ix.set_file_bytes(Path::new("multi.cu"), edited.as_bytes());
    ix.records(&files);
    assert!(log.take().is_empty());
}

#[test]
fn editing_a_header_macro_reaches_includers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("defs.cuh"), "#define STRIDE 1\n").unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "#include \"defs.cuh\"\n__global__ void k(float* a) { a[threadIdx.x * STRIDE] = 0; }\n",
    )
    .unwrap();
    let mut ix = Indexer::new(dir.path(), Config::default(), None);
    ix.load_all().unwrap();
    let files = ix.indexed_files();
    let text = |ix: &Indexer| {
        let r = ix.records(&files);
        let k = r.iter().find(|f| f.path == "k.cu").unwrap();
        let f = &k.functions[0].facts.function;
        f.expr_text(f.accesses[0].indices[0])
    };
    assert_eq!(text(&ix), "threadIdx.x * 1");
    ix.set_file_bytes(Path::new("defs.cuh"), b"#define STRIDE 32\n");
    assert_eq!(text(&ix), "threadIdx.x * 32");
}

#[test]
fn store_rewrites_only_changed_functions_and_drops_deleted_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("multi.cu"), THREE_KERNELS).unwrap();
    std::fs::write(
        dir.path().join("other.cu"),
        "__global__ void o(int* p) { p[0] = 1; }\n",
    )
    .unwrap();
    let mut store = Store::open_in_memory().unwrap();
    let mut ix = Indexer::new(dir.path(), Config::default(), None);
    ix.load_all().unwrap();
    let files = ix.indexed_files();
    let s = store.sync(&ix.records(&files), true, &[]).unwrap();
    assert_eq!(s.functions_written, 4);
    let id_of = |store: &Store, name: &str| -> i64 {
        store
            .connection()
            .query_row("SELECT id FROM functions WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .unwrap()
    };
    let first_id = id_of(&store, "first");
    let third_id = id_of(&store, "third");

    let edited = THREE_KERNELS.replace(
        "  a[blockIdx.x * w + threadIdx.x] = 2.0f;",
        "  int i = blockIdx.x * w + threadIdx.x;\n  a[i] = 2.5f;",
    );
    std::fs::write(dir.path().join("multi.cu"), &edited).unwrap();
    std::fs::remove_file(dir.path().join("other.cu")).unwrap();
    let mut ix = Indexer::new(dir.path(), Config::default(), None);
    ix.load_all().unwrap();
    let files = ix.indexed_files();
    let s = store.sync(&ix.records(&files), true, &[]).unwrap();
    assert_eq!(
        (
            s.functions_written,
            s.functions_moved,
            s.functions_unchanged,
            s.files_deleted
        ),
        (1, 1, 1, 1)
    );
    // Untouched rows keep their ids; the moved function's rows moved.
    assert_eq!(id_of(&store, "first"), first_id);
    assert_eq!(id_of(&store, "third"), third_id);
    let c = store.connection();
    let (line, bline): (i64, i64) = c
        .query_row(
            "SELECT a.line, b.line FROM accesses a JOIN barriers b ON b.function_id = a.function_id \
             WHERE a.function_id = ?1",
            [third_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((line, bline), (13, 12));
    let fline: i64 = c
        .query_row(
            "SELECT line FROM functions WHERE id = ?1",
            [third_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(fline, 11);
    let others: i64 = c
        .query_row(
            "SELECT (SELECT count(*) FROM files WHERE path = 'other.cu') + \
             (SELECT count(*) FROM functions WHERE name = 'o')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(others, 0);
    // No orphans anywhere.
    let orphans: i64 = c
        .query_row(
            "SELECT (SELECT count(*) FROM accesses WHERE function_id NOT IN (SELECT id FROM functions)) + \
             (SELECT count(*) FROM params WHERE function_id NOT IN (SELECT id FROM functions))",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
}

#[test]
fn derived_facts_are_rewritten_only_when_they_change() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("multi.cu"), THREE_KERNELS).unwrap();
    let mut store = Store::open_in_memory().unwrap();
    let mut ix = Indexer::new(dir.path(), Config::default(), None);
    ix.load_all().unwrap();
    let files = ix.indexed_files();
    store.sync(&ix.records(&files), true, &[]).unwrap();
    assert_eq!(
        cudalog::check::persist_facts(&ix, &files, &mut store).unwrap(),
        3
    );
    assert_eq!(
        cudalog::check::persist_facts(&ix, &files, &mut store).unwrap(),
        0
    );
    let edited = THREE_KERNELS.replace("a[threadIdx.x] = 1.0f;", "a[2 * threadIdx.x] = 1.0f;");
    ix.set_file_bytes(Path::new("multi.cu"), edited.as_bytes());
    store.sync(&ix.records(&files), true, &[]).unwrap();
    assert_eq!(
        cudalog::check::persist_facts(&ix, &files, &mut store).unwrap(),
        1
    );
    let stride: String = store
        .connection()
        .query_row(
            "SELECT stride_x FROM access_facts a JOIN functions fn ON fn.id = a.function_id WHERE fn.name = 'first'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stride, "2");
}
