//! The coordinator's log of a shared job on its local disk: the batches every seat has taken,
//! kept for a replacement to catch up from ([`solver::LogStore`]), so that the coordinator's
//! memory holds only the passes in progress whatever the size of the table.

use solver::{LogRef, LogStore};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A shared job's log: one file, appended to, removed when the job's session ends.
pub(crate) struct FileLog {
    file: File,
    path: PathBuf,
    len: u64,
}

impl FileLog {
    /// A new, empty log file `name` in `dir` (created if missing).
    pub(crate) fn create(dir: &Path, name: &str) -> io::Result<FileLog> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(name);
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        Ok(FileLog { file, path, len: 0 })
    }

    /// Removes the logs a coordinator that stopped left in `dir`: their sessions ended with it.
    pub(crate) fn remove_stale(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "log") {
                let _ = std::fs::remove_file(e.path());
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
}

impl Drop for FileLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::FileLog;
    use solver::LogStore;

    /// What is put is read back, and the file goes with the log.
    #[test]
    fn a_log_keeps_its_batches_and_goes_with_its_session() {
        let dir = std::env::temp_dir().join(format!("xqtb-share-log-{}", std::process::id()));
        let mut log = FileLog::create(&dir, "1.log").unwrap();
        let a = log.put(b"first").unwrap();
        let b = log.put(b"second batch").unwrap();
        assert_eq!(&*log.get(b).unwrap(), b"second batch");
        assert_eq!(&*log.get(a).unwrap(), b"first");
        assert!(dir.join("1.log").exists());
        drop(log);
        assert!(!dir.join("1.log").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
