//! What this machine (or the container it runs in) can give a worker, and what this process has
//! used: its CPU time and its peak resident memory, read from `/proc` (Linux; elsewhere `None`).

/// The machine's memory, or its cgroup's limit when that is lower (a container with `--memory`
/// sees the host's memory in `/proc/meminfo`). `None` when neither can be read.
pub fn available_memory_bytes() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| mem_total(&s));
    let limit = CGROUP_LIMITS
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .find_map(|s| cgroup_limit(&s));
    match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    }
}

/// cgroup v2, then v1.
const CGROUP_LIMITS: [&str; 2] = [
    "/sys/fs/cgroup/memory.max",
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",
];

/// `MemTotal:  24576000 kB` in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A cgroup memory limit; `max` (v2) and the near-`i64::MAX` page-rounded value of v1 mean none.
fn cgroup_limit(text: &str) -> Option<u64> {
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

/// CPU seconds (user and system) this process has used, or `None` where `/proc` has no answer.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, in parentheses, may hold spaces: the fields are counted after it.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // USER_HZ, the unit of these fields, is 100 on every Linux ABI that can run this.
    Some(ticks / 100.0)
}

/// The highest resident memory of this process, in bytes, since it started or since the last
/// [`reset_peak_rss`].
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_kib(&status, "VmHWM:").map(|kib| kib * 1024)
}

/// The resident memory of this process now, in bytes.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_kib(&status, "VmRSS:").map(|kib| kib * 1024)
}

/// Sets this process's peak resident memory back to its current resident memory (Linux 4.0 and
/// later), so that [`peak_rss_bytes`] measures from now on; `false` where that cannot be done.
/// It measures the whole process: a job's peak only when the worker has its process to itself.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Returns the memory freed so far to the operating system, where the allocator can (glibc keeps
/// freed memory in its arenas otherwise).
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's free lists; it is safe from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The kibibytes of a `/proc/self/status` line such as `VmHWM:  123456 kB`.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_meminfo_and_cgroup_limits() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total(meminfo), Some(24_576_000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(cgroup_limit("max\n"), None);
        assert_eq!(cgroup_limit("9223372036854771712\n"), None);
        assert_eq!(cgroup_limit("2147483648\n"), Some(2 << 30));
        assert!(available_memory_bytes().is_some_and(|m| m > 1 << 20));
    }

    #[test]
    fn measures_this_process() {
        assert_eq!(
            status_kib("VmRSS:\t 1000 kB\nVmHWM:\t 2048 kB\n", "VmHWM:"),
            Some(2048)
        );
        assert_eq!(status_kib("VmRSS:\t 1000 kB\n", "VmHWM:"), None);
        let busy_until = std::time::Instant::now() + std::time::Duration::from_millis(50);
        while std::time::Instant::now() < busy_until {}
        assert!(cpu_seconds().is_some_and(|s| s > 0.0));
        // A fresh 64 MiB that is touched raises the peak above a mark reset before it.
        assert!(reset_peak_rss());
        let before = peak_rss_bytes().unwrap();
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        assert!(peak_rss_bytes().unwrap() >= before + (60 << 20));
        drop(block);
        assert!(reset_peak_rss());
        assert!(peak_rss_bytes().unwrap() < before + (60 << 20));
    }
}
