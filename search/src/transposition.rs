//! The transposition table: what the proof-number search learnt about each position, in a
//! fixed number of bytes shared by all threads. When it is full, the entries that cost the
//! least work to find again are replaced, so a search that runs out of room slows down but
//! still answers.

use std::sync::Mutex;

/// What is known about one position for one attacker, at one remaining depth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The position's key with the attacker's salt; 0 marks an empty entry.
    pub key: u64,
    /// Proof number: 0 when the attacker's win is proven.
    pub pn: u32,
    /// Disproof number: 0 when the win is disproven.
    pub dn: u32,
    /// Positions expanded to find this entry: the cost of losing it.
    pub work: u32,
    /// For a proof, its length in plies (valid at any remaining depth at least this).
    pub dist: u16,
    /// The remaining depth, in plies, the numbers were found at.
    pub plies: u16,
    /// For a disproof: it holds at any depth (no line was cut short by the depth limit or a
    /// repetition).
    pub exact: bool,
}

/// Entries per bucket: a key may sit in any entry of its bucket.
const WAYS: usize = 4;

pub(crate) struct Table {
    buckets: Vec<Mutex<[Entry; WAYS]>>,
}

impl Table {
    /// A table of about `bytes` bytes (at least one bucket).
    pub fn new(bytes: u64) -> Table {
        let per_bucket = std::mem::size_of::<Mutex<[Entry; WAYS]>>() as u64;
        let n = (bytes / per_bucket).clamp(1, usize::MAX as u64) as usize;
        Table {
            buckets: (0..n)
                .map(|_| Mutex::new([Entry::default(); WAYS]))
                .collect(),
        }
    }

    fn bucket(&self, key: u64) -> std::sync::MutexGuard<'_, [Entry; WAYS]> {
        let i = (key % self.buckets.len() as u64) as usize;
        // A thread that panicked mid-write leaves plain data behind: still usable.
        self.buckets[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, key: u64) -> Option<Entry> {
        self.bucket(key).iter().find(|e| e.key == key).copied()
    }

    /// Stores `entry`, over the same key's entry, else an empty one, else the cheapest.
    pub fn put(&self, entry: Entry) {
        let mut bucket = self.bucket(entry.key);
        let slot = match bucket.iter().position(|e| e.key == entry.key) {
            Some(i) => i,
            None => match bucket.iter().position(|e| e.key == 0) {
                Some(i) => i,
                None => {
                    let (i, cheapest) = bucket
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, e)| e.work)
                        .expect("a bucket has entries");
                    if cheapest.work > entry.work && entry.pn != 0 && entry.dn != 0 {
                        // An unresolved entry found cheaply is not worth more than the
                        // bucket's cheapest.
                        return;
                    }
                    i
                }
            },
        };
        bucket[slot] = entry;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_keeps_the_costliest_entries() {
        let t = Table::new(1);
        for k in 1..=4u64 {
            t.put(Entry {
                key: k,
                pn: 1,
                dn: 1,
                work: k as u32 * 10,
                ..Entry::default()
            });
        }
        t.put(Entry {
            key: 9,
            pn: 0,
            dn: u32::MAX,
            work: 15,
            ..Entry::default()
        });
        assert!(t.get(1).is_none(), "the cheapest entry is replaced");
        assert_eq!(t.get(9).map(|e| e.pn), Some(0));
        t.put(Entry {
            key: 10,
            pn: 3,
            dn: 3,
            work: 1,
            ..Entry::default()
        });
        assert!(
            t.get(10).is_none(),
            "a cheap unresolved entry does not push out costlier ones"
        );
    }
}
