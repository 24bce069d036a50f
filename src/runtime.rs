//! The async runtime of the networked commands (the cluster's and `serve`), and the signal
//! that stops them.

use anyhow::Result;

/// Threads tokio may start for blocking work (probes, sled, zstd), per core. That work is short
/// and CPU-bound (no call waits on a client there; a worker's solve holds one thread for its
/// job), so more threads than a few per core add no throughput; with tokio's default limit
/// (512) a burst of concurrent requests leaves a thread alive for each, with its stack and
/// thread-local caches, and the coordinator's memory would follow its largest burst of requests
/// in flight.
const BLOCKING_THREADS_PER_CORE: usize = 8;

/// The runtime of every networked command.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS_PER_CORE * cores)
        .build()?)
}

/// Resolves when SIGTERM or Ctrl-C arrives.
pub(crate) async fn termination() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
