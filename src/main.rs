use clap::Parser;
use std::process::ExitCode;

/// mimalloc instead of glibc's allocator: a cold `check` spends about a third
/// of its time in malloc/free, and glibc's bins (consolidation, unlinking)
/// slow down as the heap grows (docs/performance.md, "Allocator").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
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
