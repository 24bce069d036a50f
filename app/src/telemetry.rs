//! The names and descriptions of the metrics the application layer records (the gauges are set
//! from the status, in the status module; counters and histograms where their events happen).
//! Recorded through the `metrics` facade: they go wherever the binary installs a recorder (the
//! Prometheus exporter of `--metrics-listen`), and nowhere without one.

/// Describes the metrics of the commit-time checks; [`App::open`](crate::App::open) calls it.
pub(crate) fn describe_check_metrics() {
    use metrics::{Unit, describe_counter, describe_histogram};
    describe_counter!(
        "xqtb_sample_check_failures_total",
        "Uploads whose values failed the sample check, by worker (the worker is quarantined)"
    );
    describe_histogram!(
        "xqtb_sample_check_seconds",
        Unit::Seconds,
        "Time to decode an upload and check its sample"
    );
}

/// Describes the other metrics the application layer records and creates its counters at zero,
/// so that a scrape shows every series from the start (not only after its first event). Call it
/// once the recorder is installed (the coordinator's server does, at start).
pub fn register_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!("xqtb_jobs", "Jobs by state");
    describe_gauge!(
        "xqtb_tables",
        "Planned tables by state (waiting, ready, solving, finished, failed)"
    );
    describe_gauge!(
        "xqtb_slice_jobs",
        "Pawn-slice jobs of tables solved in slices: finished, or open (waiting, ready or leased)"
    );
    describe_gauge!("xqtb_leases_active", "Jobs currently leased");
    describe_gauge!(
        "xqtb_jobs_unholdable",
        "Jobs no registered worker has the memory to hold (see status)"
    );
    describe_counter!("xqtb_leases_granted_total", "Leases granted");
    describe_counter!(
        "xqtb_lease_expiries_total",
        "Leases that expired without a result"
    );
    describe_counter!(
        "xqtb_job_retries_total",
        "Leases granted for a job that was leased before"
    );
    describe_counter!("xqtb_uploads_total", "Uploads by result");
    describe_counter!(
        "xqtb_upload_bytes_total",
        Unit::Bytes,
        "Bytes of accepted uploads"
    );
    describe_gauge!(
        "xqtb_solve_entries_per_second",
        "Index entries finished per second"
    );
    describe_gauge!("xqtb_workers", "Registered workers");
    describe_counter!("xqtb_probes_total", "Probes served");
    describe_histogram!("xqtb_probe_seconds", Unit::Seconds, "Probe latency");
    describe_counter!(
        "xqtb_searches_total",
        "Mate searches by result: win, loss, draw or unknown for the side to move, failed (an \
         error), or busy (refused: as many searches as the server runs at once were running)"
    );
    describe_histogram!(
        "xqtb_search_seconds",
        Unit::Seconds,
        "Time a mate search took, its proof's check and main line included"
    );
    describe_counter!("xqtb_block_cache_hits_total", "Block cache hits");
    describe_counter!(
        "xqtb_block_cache_misses_total",
        "Block cache misses (blocks read and decompressed)"
    );
    describe_gauge!("xqtb_block_cache_hit_ratio", "Block cache hits / lookups");
    describe_gauge!(
        "xqtb_block_cache_bytes",
        Unit::Bytes,
        "Decompressed table blocks held in the probe cache"
    );
    describe_gauge!(
        "xqtb_tables_open",
        "Tables whose header and index the prober holds"
    );
    for name in [
        "xqtb_leases_granted_total",
        "xqtb_lease_expiries_total",
        "xqtb_job_retries_total",
        "xqtb_upload_bytes_total",
        "xqtb_probes_total",
        "xqtb_block_cache_hits_total",
        "xqtb_block_cache_misses_total",
    ] {
        metrics::counter!(name).increment(0);
    }
    for result in ["accepted", "refused"] {
        metrics::counter!("xqtb_uploads_total", "result" => result).increment(0);
    }
    for result in ["win", "loss", "draw", "unknown", "failed", "busy"] {
        metrics::counter!("xqtb_searches_total", "result" => result).increment(0);
    }
}
