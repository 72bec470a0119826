//! The store's single writer, on its own thread: one `BEGIN IMMEDIATE`
//! transaction for a whole run or batch, fed with jobs while the analyses
//! go on in parallel, so that SQLite's work overlaps the computation. Jobs
//! run in the order they are sent; the first failing job fails the run and
//! nothing is committed.

use super::{Store, StoreTx};
use anyhow::{Result, anyhow};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

type Job = Box<dyn FnOnce(&StoreTx<'_>) -> Result<()> + Send>;

/// Sends jobs to the writer thread.
pub struct WriteHandle {
    jobs: SyncSender<Job>,
}

impl WriteHandle {
    /// Queue a job (it runs after every job queued before it).
    pub fn exec(&self, job: impl FnOnce(&StoreTx<'_>) -> Result<()> + Send + 'static) {
        // A closed channel means the writer stopped on an error, which
        // `Store::with_writer` reports.
        let _ = self.jobs.send(Box::new(job));
    }

    /// Run a job and wait for its result.
    pub fn call<R: Send + 'static>(
        &self,
        job: impl FnOnce(&StoreTx<'_>) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = sync_channel(1);
        self.exec(move |t| {
            let r = job(t);
            let failed = r.as_ref().err().map(|e| anyhow!("{e:#}"));
            let _ = tx.send(r);
            match failed {
                Some(e) => Err(e),
                None => Ok(()),
            }
        });
        rx.recv().map_err(|_| anyhow!("the store writer stopped"))?
    }
}

fn run_jobs(store: &mut Store, jobs: Receiver<Job>) -> Result<()> {
    let tx = store.transaction()?;
    for job in jobs {
        job(&tx)?;
    }
    tx.commit()
}

impl Store {
    /// Run `f` with a handle to a writer thread that holds one write
    /// transaction (taken when the thread starts, so a second process waits
    /// here). The transaction commits when `f` and every job succeeded.
    pub fn with_writer<R>(&mut self, f: impl FnOnce(&WriteHandle) -> Result<R>) -> Result<R> {
        std::thread::scope(|s| {
            let (tx, rx) = sync_channel::<Job>(1024);
            let writer = s.spawn(move || run_jobs(self, rx));
            let handle = WriteHandle { jobs: tx };
            let out = f(&handle);
            if out.is_err() {
                // Roll back: the writer stops at this job without committing.
                handle.exec(|_| Err(anyhow!("the run failed; nothing was written")));
            }
            drop(handle);
            let written = writer
                .join()
                .map_err(|_| anyhow!("the store writer panicked"))?;
            match (out, written) {
                (Err(e), _) => Err(e),
                (Ok(_), Err(e)) => Err(e),
                (Ok(r), Ok(())) => Ok(r),
            }
        })
    }
}
