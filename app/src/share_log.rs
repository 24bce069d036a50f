//! The coordinator's log of a shared job on its local disk: the batches every seat has taken,
//! kept for a replacement to catch up from ([`solver::LogStore`]), so that the coordinator's
//! memory holds only the passes in progress whatever the size of the table. Two files per
//! job's session: `N.log` holds the batches, `N.idx` the index of each pass stored, by which
//! a restarted coordinator resumes the session ([`solver::Relay::resume`]).

use solver::{LogRef, LogStore};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A shared job's log: its batches' file and its index file, appended to, removed when the
/// job's session ends.
pub(crate) struct FileLog {
    file: File,
    path: PathBuf,
    len: u64,
    index: File,
    index_path: PathBuf,
    index_len: u64,
}

/// The paths of log `n`'s two files in `dir`.
fn paths(dir: &Path, n: u64) -> (PathBuf, PathBuf) {
    (dir.join(format!("{n}.log")), dir.join(format!("{n}.idx")))
}

fn open_file(path: &Path, truncate: bool) -> io::Result<File> {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(truncate)
        .open(path)
}

impl FileLog {
    /// A new, empty log numbered `n` in `dir` (created if missing).
    pub(crate) fn create(dir: &Path, n: u64) -> io::Result<FileLog> {
        std::fs::create_dir_all(dir)?;
        let (path, index_path) = paths(dir, n);
        Ok(FileLog {
            file: open_file(&path, true)?,
            path,
            len: 0,
            index: open_file(&index_path, true)?,
            index_path,
            index_len: 0,
        })
    }

    /// Log `n` in `dir` as a coordinator that stopped left it, with its indexes in the order
    /// they were put. An index cut short (the coordinator stopped while writing it) is dropped.
    pub(crate) fn open(dir: &Path, n: u64) -> io::Result<(FileLog, Vec<Vec<u8>>)> {
        let (path, index_path) = paths(dir, n);
        let file = File::options().read(true).write(true).open(&path)?;
        let index = File::options().read(true).write(true).open(&index_path)?;
        let bytes = std::fs::read(&index_path)?;
        let mut indexes = Vec::new();
        let mut at = 0;
        while let Some(len) = bytes.get(at..at + 4) {
            let len = u32::from_le_bytes(len.try_into().expect("four bytes")) as usize;
            let Some(record) = bytes.get(at + 4..at + 4 + len) else {
                break;
            };
            indexes.push(record.to_vec());
            at += 4 + len;
        }
        index.set_len(at as u64)?;
        let len = file.metadata()?.len();
        let log = FileLog {
            file,
            path,
            len,
            index,
            index_path,
            index_len: at as u64,
        };
        Ok((log, indexes))
    }

    /// Removes the files in `dir` of the logs not numbered in `keep`: their sessions ended
    /// with a coordinator that stopped.
    pub(crate) fn remove_stale(dir: &Path, keep: &[u64]) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let ours = path.extension().is_some_and(|x| x == "log" || x == "idx");
            let kept = path
                .file_stem()
                .and_then(|s| s.to_str()?.parse::<u64>().ok())
                .is_some_and(|n| keep.contains(&n));
            if ours && !kept {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

impl LogStore for FileLog {
    fn put(&mut self, bytes: &[u8]) -> io::Result<LogRef> {
        let at = LogRef {
            offset: self.len,
            len: bytes.len() as u64,
        };
        self.file.write_all_at(bytes, at.offset)?;
        self.len += at.len;
        Ok(at)
    }

    fn get(&self, at: LogRef) -> io::Result<Arc<[u8]>> {
        let mut bytes = vec![0; at.len as usize];
        self.file.read_exact_at(&mut bytes, at.offset)?;
        Ok(bytes.into())
    }

    fn put_index(&mut self, index: &[u8]) -> io::Result<()> {
        // The batches reach the disk before the index that names them.
        self.file.sync_data()?;
        let mut record = (index.len() as u32).to_le_bytes().to_vec();
        record.extend_from_slice(index);
        self.index.write_all_at(&record, self.index_len)?;
        self.index_len += record.len() as u64;
        self.index.sync_data()
    }
}

impl Drop for FileLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(&self.index_path);
    }
}

#[cfg(test)]
mod tests {
    use super::FileLog;
    use solver::LogStore;

    /// What is put is read back, also after the log is opened again (an index cut short
    /// dropped), and the files go with the log.
    #[test]
    fn a_log_keeps_its_batches_and_indexes_and_goes_with_its_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = FileLog::create(dir.path(), 1).unwrap();
        let a = log.put(b"first").unwrap();
        let b = log.put(b"second batch").unwrap();
        log.put_index(b"pass one").unwrap();
        assert_eq!(&*log.get(b).unwrap(), b"second batch");
        assert_eq!(&*log.get(a).unwrap(), b"first");
        // The coordinator stops (the files stay) while writing a second index.
        std::mem::forget(log);
        let idx = dir.path().join("1.idx");
        let mut bytes = std::fs::read(&idx).unwrap();
        bytes.extend_from_slice(&[9, 0, 0, 0, b'p']);
        std::fs::write(&idx, bytes).unwrap();
        let (mut log, indexes) = FileLog::open(dir.path(), 1).unwrap();
        assert_eq!(indexes, [b"pass one".to_vec()]);
        assert_eq!(&*log.get(b).unwrap(), b"second batch");
        let c = log.put(b"third").unwrap();
        assert_eq!(c.offset, 17, "appended after what was there");
        log.put_index(b"pass two").unwrap();
        std::mem::forget(log);
        let (log, indexes) = FileLog::open(dir.path(), 1).unwrap();
        assert_eq!(indexes, [b"pass one".to_vec(), b"pass two".to_vec()]);
        // Stale files go, the ones kept stay; a log's files go with it.
        std::fs::write(dir.path().join("2.log"), b"").unwrap();
        std::fs::write(dir.path().join("2.idx"), b"").unwrap();
        FileLog::remove_stale(dir.path(), &[1]);
        assert!(!dir.path().join("2.log").exists() && !dir.path().join("2.idx").exists());
        assert!(dir.path().join("1.log").exists());
        drop(log);
        assert!(!dir.path().join("1.log").exists() && !idx.exists());
    }
}
