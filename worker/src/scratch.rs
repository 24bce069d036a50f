//! A job's states on local disk: the [`solver::Scratch`] that keeps each group of a job's
//! level states in a file of its own while another group is in memory.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use xiangqi::Color;

/// A directory of one job's group files, created empty and removed with everything in it when
/// dropped (so a job that fails or is cancelled leaves nothing behind).
pub struct DirScratch {
    dir: PathBuf,
    /// The group files opened so far, kept open: a group is written and read in many pieces.
    /// One lock over all of them: a job moves one group at a time.
    files: Mutex<HashMap<(usize, Color), File>>,
}

impl DirScratch {
    /// A new directory for one job's states under `parent` (created if needed), named after
    /// the process and a counter so that jobs running side by side never share one.
    pub fn create(parent: &Path) -> std::io::Result<DirScratch> {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "states-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Relaxed)
        );
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(DirScratch {
            dir,
            files: Mutex::default(),
        })
    }

    fn path(&self, group: usize, side: Color) -> PathBuf {
        let side = match side {
            Color::Red => "red",
            Color::Black => "black",
        };
        self.dir.join(format!("group-{group}-{side}"))
    }

    /// Runs `f` on the file of `group` and `side`, created first when `create` and it does not
    /// exist yet.
    fn with_file<T>(
        &self,
        group: usize,
        side: Color,
        create: bool,
        f: impl FnOnce(&mut File) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let file = match files.entry((group, side)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                // Never truncated: a group is stored by writing its changed chunks over the rest.
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create(create)
                    .truncate(false)
                    .open(self.path(group, side))?;
                e.insert(file)
            }
        };
        f(file)
    }
}

impl solver::Scratch for DirScratch {
    fn write_at(&self, group: usize, side: Color, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.with_file(group, side, true, |file| {
            file.seek(SeekFrom::Start(at))?;
            file.write_all(bytes)
        })
    }

    fn read_at(&self, group: usize, side: Color, at: u64, bytes: &mut [u8]) -> std::io::Result<()> {
        self.with_file(group, side, false, |file| {
            file.seek(SeekFrom::Start(at))?;
            file.read_exact(bytes)
        })
    }
}

impl Drop for DirScratch {
    fn drop(&mut self) {
        // Closed first: some systems do not remove open files.
        self.files.lock().unwrap_or_else(|e| e.into_inner()).clear();
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), "cannot remove a job's states: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DirScratch;
    use solver::Scratch;
    use xiangqi::Color;

    #[test]
    fn bytes_come_back_as_written_and_the_directory_goes() {
        let parent = std::env::temp_dir().join(format!("xqtb-scratch-test-{}", std::process::id()));
        let scratch = DirScratch::create(&parent).unwrap();
        let dir = scratch.dir.clone();
        scratch.write_at(3, Color::Black, 0, &[1, 2, 3]).unwrap();
        scratch.write_at(3, Color::Black, 1, &[7]).unwrap();
        scratch.write_at(3, Color::Red, 0, &[5, 6]).unwrap();
        let mut a = [0u8; 2];
        scratch.read_at(3, Color::Black, 1, &mut a).unwrap();
        assert_eq!(a, [7, 3], "written over, the rest kept");
        scratch.read_at(3, Color::Red, 0, &mut a).unwrap();
        assert_eq!(a, [5, 6]);
        assert!(
            scratch.read_at(3, Color::Red, 1, &mut a).is_err(),
            "past the end"
        );
        assert!(
            scratch.read_at(4, Color::Red, 0, &mut a).is_err(),
            "never written"
        );
        drop(scratch);
        assert!(!dir.exists());
        std::fs::remove_dir_all(parent).unwrap();
    }
}
