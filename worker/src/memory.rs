//! How much memory this machine (or the container it runs in) can give a worker.

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
}
