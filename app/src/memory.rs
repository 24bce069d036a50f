//! Handing freed memory back to the operating system, after the work that frees much of it
//! (checking and committing an upload) and on the server's tick.

use std::time::Duration;

/// How often the tick sweeps the store's page cache and returns freed memory to the operating
/// system.
pub(crate) const TRIM_INTERVAL: Duration = Duration::from_secs(30);

/// Returns the memory freed so far to the operating system, where the allocator can.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's free lists; it is safe from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}
