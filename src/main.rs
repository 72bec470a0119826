use clap::Parser;
use std::process::ExitCode;

/// mimalloc instead of glibc's allocator: a cold `check` spends about a third
/// of its time in malloc/free, and glibc's bins (consolidation, unlinking)
/// slow down as the heap grows (docs/performance.md, "Allocator").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// tree-sitter's C core allocates every subtree and parse-stack node with
/// libc's `malloc`; routed to mimalloc as well, its allocations stop
/// growing slower with the heap (glibc's `_int_malloc` share rose from 1.6 %
/// to 2.6 % of a cold `check` between 8 and 16 copies; docs/performance.md).
mod ts_alloc {
    use std::ffi::c_void;

    fn non_null(p: *mut c_void, size: usize) -> *mut c_void {
        if p.is_null() && size != 0 {
            // tree-sitter's own default allocator aborts here too.
            std::process::abort();
        }
        p
    }
    unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
        // SAFETY: plain allocation; mimalloc aligns to 16 B like malloc.
        non_null(unsafe { libmimalloc_sys::mi_malloc(size) }, size)
    }
    unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
        let Some(bytes) = n.checked_mul(size) else {
            std::process::abort();
        };
        // SAFETY: `malloc` returns `bytes` writable bytes (or aborts).
        unsafe {
            let p = malloc(bytes);
            std::ptr::write_bytes(p.cast::<u8>(), 0, bytes);
            p
        }
    }
    unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: `p` came from mi_malloc/mi_calloc/mi_realloc (same family).
        non_null(unsafe { libmimalloc_sys::mi_realloc(p, size) }, size)
    }
    unsafe extern "C" fn free(p: *mut c_void) {
        // SAFETY: `p` came from this family or is null.
        unsafe { libmimalloc_sys::mi_free(p) }
    }

    /// Installs the allocator; call before any tree-sitter object exists.
    pub fn install() {
        // SAFETY: called first thing in `main`, before any thread starts and
        // before any tree-sitter object is created; the four functions are
        // one allocator family, never return null for non-zero sizes, and
        // align like malloc.
        unsafe {
            tree_sitter::set_allocator(Some(tree_sitter::Allocator {
                malloc,
                calloc,
                realloc,
                free,
            }));
        }
    }
}

fn main() -> ExitCode {
    ts_alloc::install();
    // A closed pipe (`cudalog query … | head`) ends the program quietly, as
    // it ends other Unix tools, instead of a panic in `print!`.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default disposition before any thread
    // starts; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = cudalog::cli::Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CUDALOG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    // Lowering recursion is bounded, but give deep (generated) code room.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || cudalog::cli::run(cli));
    let result = match worker {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("internal error (see the message above)"))),
        Err(e) => Err(anyhow::anyhow!("cannot start worker thread: {e}")),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        // Elsewhere a closed pipe is an error: end quietly all the same.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
