//! The coordinator's upload check (`App::commit_upload`): arbitrary bytes uploaded under a
//! valid lease.
//!
//! An in-process `App` over a sled store (in `/dev/shm` where there is one) holding KRvK, with
//! KRvKA submitted and leased to a worker; the input, made a shard file by
//! `shard_input::shard_file`, is uploaded for that lease. The upload must be refused with an
//! error, the job handed back to the queue and the store left without the table, unless the
//! shard holds exactly the right table: whatever is committed must decode and equal the solved
//! table, value for value, with the header's counts. Never a panic.

use super::fixtures::{UPLOADED, fixtures, id};
use super::shard_input::shard_file;
use app::scheduler::{JobState, SchedulerConfig};
use app::{Access, App};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use storage_format::store::{SledStore, TableStore};
use xiangqi::Color;
use xqtb_core::TableId;

struct Coordinator {
    app: App,
    worker: String,
    _dir: tempfile::TempDir,
}

/// Prefix of the store directories; the process id follows.
const PREFIX: &str = "xqtb-fuzz-upload-";

/// A directory for the store, in `/dev/shm` where there is one. The last coordinator of a
/// process is never dropped (it lives in a static until the process exits), so the
/// directories of processes that are gone are removed first.
fn store_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    if let Ok(entries) = std::fs::read_dir(&base) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next());
            let gone = |p: &&str| {
                !p.is_empty()
                    && p.bytes().all(|b| b.is_ascii_digit())
                    && !Path::new("/proc").join(p).exists()
            };
            if pid.filter(gone).is_some() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir_in(base)
        .expect("temporary directory")
}

/// Drops the coordinator (and its directory).
pub fn reset() {
    *state().lock().unwrap_or_else(|p| p.into_inner()) = None;
}

fn open() -> Coordinator {
    let f = fixtures();
    let dir = store_dir();
    let store = Arc::new(SledStore::open(dir.path()).expect("sled store"));
    let target = id(UPLOADED);
    for dep in target.dependencies() {
        store.put_table(f.encoded(&dep)).expect("dependency stored");
    }
    let config = SchedulerConfig {
        lease_ttl_ms: 3_600_000,
        max_attempts: u32::MAX,
        ..SchedulerConfig::default()
    };
    let app = App::open(store, Access::default(), config, super::fixtures::RULES).expect("app");
    app.submit(&[target]).expect("submit");
    let worker = app.register("fuzz", 1, None, "fuzz").worker_id;
    Coordinator {
        app,
        worker,
        _dir: dir,
    }
}

fn state() -> &'static Mutex<Option<Coordinator>> {
    static S: OnceLock<Mutex<Option<Coordinator>>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(None))
}

pub fn run(data: &[u8]) {
    let file = shard_file(data);
    let target: TableId = id(UPLOADED);
    let mut guard = state().lock().unwrap_or_else(|p| p.into_inner());
    let mut c = guard.get_or_insert_with(open);
    let grant = match c.app.lease(&c.worker, 0).expect("lease").grant {
        Some(g) => g,
        None => {
            // A worker whose upload failed the sample check is quarantined: a new one comes.
            c.worker = c.app.register("fuzz", 1, None, "fuzz").worker_id;
            match c.app.lease(&c.worker, 0).expect("lease").grant {
                Some(g) => g,
                // Only after a failed run (the replay test goes on after a failure).
                None => {
                    c = guard.insert(open());
                    c.app
                        .lease(&c.worker, 0)
                        .expect("lease")
                        .grant
                        .expect("a fresh job")
                }
            }
        }
    };
    assert_eq!(grant.key.table, target);
    match c.app.commit_upload(&grant.lease.id, &grant.key, &file) {
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert!(
                c.app.store().header(&target).unwrap().is_none(),
                "a refused upload left a table in the store: {e}"
            );
            let status = c.app.status();
            let job = status.jobs.iter().find(|j| j.key == grant.key).unwrap();
            assert_eq!(
                job.state,
                JobState::Ready,
                "a refused upload is handed back"
            );
        }
        Ok(_) => {
            check_committed(c.app.store(), &target);
            // The job is finished: start again from a fresh coordinator.
            *guard = None;
        }
    }
}

/// The committed table must be the solved one.
fn check_committed(store: &SledStore, target: &TableId) {
    let truth = fixtures().tables.get(target).unwrap();
    let table = store
        .load_decoded(target)
        .unwrap_or_else(|e| panic!("committed garbage: the stored {target} does not decode: {e}"));
    for side in Color::ALL {
        assert!(
            table.codes(side) == truth.codes(side),
            "committed garbage: the stored {target} has wrong values for {side} to move"
        );
    }
}
