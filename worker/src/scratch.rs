//! A job's states on local disk: the [`solver::Scratch`] that keeps each group of a job's
//! level states in a file of its own while another group is in memory.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use xiangqi::Color;

/// A directory of one job's group files, created empty and removed with everything in it when
/// dropped (so a job that fails or is cancelled leaves nothing behind).
pub struct DirScratch {
    dir: PathBuf,
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
        Ok(DirScratch { dir })
    }

    fn path(&self, group: usize, side: Color) -> PathBuf {
        let side = match side {
            Color::Red => "red",
            Color::Black => "black",
        };
        self.dir.join(format!("group-{group}-{side}"))
    }
}

impl solver::Scratch for DirScratch {
    fn put(&self, group: usize, side: Color, parts: &[&[u8]]) -> std::io::Result<()> {
        let mut file = std::fs::File::create(self.path(group, side))?;
        for part in parts {
            file.write_all(part)?;
        }
        Ok(())
    }

    fn get(&self, group: usize, side: Color, parts: &mut [&mut [u8]]) -> std::io::Result<()> {
        let mut file = std::fs::File::open(self.path(group, side))?;
        for part in parts {
            file.read_exact(part)?;
        }
        Ok(())
    }
}

impl Drop for DirScratch {
    fn drop(&mut self) {
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
    fn groups_come_back_as_stored_and_the_directory_goes() {
        let parent = std::env::temp_dir().join(format!("xqtb-scratch-test-{}", std::process::id()));
        let scratch = DirScratch::create(&parent).unwrap();
        let dir = scratch.dir.clone();
        scratch.put(3, Color::Black, &[&[1, 2, 3]]).unwrap();
        scratch.put(3, Color::Black, &[&[4], &[7, 8]]).unwrap();
        scratch.put(3, Color::Red, &[&[5, 6]]).unwrap();
        let (mut a, mut b) = ([0u8; 2], [0u8; 1]);
        scratch.get(3, Color::Black, &mut [&mut b, &mut a]).unwrap();
        assert_eq!((b, a), ([4], [7, 8]));
        scratch.get(3, Color::Red, &mut [&mut a]).unwrap();
        assert_eq!(a, [5, 6]);
        assert!(scratch.get(4, Color::Red, &mut [&mut a]).is_err());
        drop(scratch);
        assert!(!dir.exists());
        std::fs::remove_dir_all(parent).unwrap();
    }
}
