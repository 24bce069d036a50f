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
const WAYS: usize = 3;

/// An entry as stored: 16 bytes, so that a bucket with its lock fills one cache line and a
/// lookup costs one memory access.
#[derive(Clone, Copy, Default)]
struct Packed {
    /// The key's high 32 bits (the low bits chose the bucket); 0 marks an empty entry.
    check: u32,
    pn: u32,
    dn: u32,
    dist: u8,
    plies: u8,
    /// Bit 15: exact; bits 0..15: work, saturated.
    flags: u16,
}

const EXACT: u16 = 1 << 15;

impl Packed {
    fn of(e: &Entry) -> Packed {
        Packed {
            check: ((e.key >> 32) as u32).max(1),
            pn: e.pn,
            dn: e.dn,
            dist: e.dist.min(u8::MAX as u16) as u8,
            plies: e.plies.min(u8::MAX as u16) as u8,
            flags: (e.work.min(EXACT as u32 - 1) as u16) | if e.exact { EXACT } else { 0 },
        }
    }

    fn entry(&self, key: u64) -> Entry {
        Entry {
            key,
            pn: self.pn,
            dn: self.dn,
            work: (self.flags & !EXACT) as u32,
            dist: self.dist as u16,
            plies: self.plies as u16,
            exact: self.flags & EXACT != 0,
        }
    }
}

#[repr(align(64))]
struct Bucket(Mutex<[Packed; WAYS]>);

pub(crate) struct Table {
    buckets: Vec<Bucket>,
    /// Buckets minus one: their number is a power of two, so a key's low bits pick its bucket.
    mask: u64,
}

impl Table {
    /// A table of at most `bytes` bytes (at least one bucket).
    pub fn new(bytes: u64) -> Table {
        let per_bucket = std::mem::size_of::<Bucket>() as u64;
        let n = (bytes / per_bucket).max(1);
        // The largest power of two that fits.
        let n = 1u64 << (63 - n.leading_zeros());
        Table {
            buckets: (0..n)
                .map(|_| Bucket(Mutex::new([Packed::default(); WAYS])))
                .collect(),
            mask: n - 1,
        }
    }

    fn bucket(&self, key: u64) -> std::sync::MutexGuard<'_, [Packed; WAYS]> {
        // A thread that panicked mid-write leaves plain data behind: still usable.
        self.buckets[(key & self.mask) as usize]
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the processor to start loading `key`'s bucket, so that a later [`Table::get`] finds
    /// it in cache: a search looks up every move's position, and waiting for memory is most of
    /// a lookup's cost.
    pub fn prefetch(&self, key: u64) {
        xqtb_core::prefetch(&self.buckets[(key & self.mask) as usize]);
    }

    pub fn get(&self, key: u64) -> Option<Entry> {
        let check = ((key >> 32) as u32).max(1);
        self.bucket(key)
            .iter()
            .find(|e| e.check == check)
            .map(|e| e.entry(key))
    }

    /// Stores `entry`, over the same key's entry, else an empty one, else the cheapest.
    pub fn put(&self, entry: Entry) {
        let packed = Packed::of(&entry);
        let mut bucket = self.bucket(entry.key);
        let slot = match bucket.iter().position(|e| e.check == packed.check) {
            Some(i) => i,
            None => match bucket.iter().position(|e| e.check == 0) {
                Some(i) => i,
                None => {
                    let work = |e: &Packed| e.flags & !EXACT;
                    let (i, cheapest) = bucket
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, e)| work(e))
                        .expect("a bucket has entries");
                    if work(cheapest) > work(&packed) && entry.pn != 0 && entry.dn != 0 {
                        // An unresolved entry found cheaply is not worth more than the
                        // bucket's cheapest.
                        return;
                    }
                    i
                }
            },
        };
        bucket[slot] = packed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_keeps_the_costliest_entries() {
        let t = Table::new(1);
        // Keys of one bucket (the table has one), told apart by their high bits.
        let key = |k: u64| k << 32;
        for k in 1..=3u64 {
            t.put(Entry {
                key: key(k),
                pn: 1,
                dn: 1,
                work: k as u32 * 10,
                ..Entry::default()
            });
        }
        t.put(Entry {
            key: key(9),
            pn: 0,
            dn: u32::MAX,
            work: 15,
            ..Entry::default()
        });
        assert!(t.get(key(1)).is_none(), "the cheapest entry is replaced");
        assert_eq!(t.get(key(9)).map(|e| e.pn), Some(0));
        t.put(Entry {
            key: key(10),
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
