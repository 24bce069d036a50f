//! One job's retrograde levels solved by several workers at once: what they exchange.
//!
//! A job kept in groups ([`crate::level_groups`]) can be shared: each worker owns some of its
//! groups ([`Share::owner`]) and runs every level over those only, level-synchronously with
//! the others. Whatever one group's pass does to another group's entries already goes through
//! the **kinds** (two bits per entry held for the whole job), so a worker sharing a job holds a
//! replica of every entry's kind and, at the end of each pass, hands the others the words of
//! kinds it changed ([`Updates`]), and takes theirs in:
//!
//! - after the start (captures and mates folded): each worker's own entries, legal or not, lost
//!   at 0 plies or unresolved; the others take these words as they are;
//! - after a win level's pass and a loss level's second pass (the candidates tested): every
//!   word changed, own entries won or lost and other workers' entries won from here; they are
//!   merged entry by entry, the larger kind winning (a level only moves an entry up from
//!   unresolved, and two workers that both win an entry win it at the same level);
//! - after a loss level's first pass: only the candidates marked in other workers' entries,
//!   each word to the owner of its entries, since a marked kind means something only to the
//!   owner (the next pass turns it into a candidate, or drops it).
//!
//! The pass is the barrier: each worker waits for every other's updates of the same pass before
//! it goes on, and the sum of the entries resolved by all ends the levels. Since every write of
//! a level is idempotent and independent of the order the positions are visited in, the table
//! is the same bit for bit however many workers share the job.
//!
//! How updates travel (gRPC, memory in tests) is the shells' business, behind [`Exchange`];
//! [`Updates::encode`] gives them bytes.

use std::io;

/// Which pass of the levels an exchange ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Pass {
    /// Captures and mates folded into every entry, before the first level.
    #[default]
    Start,
    /// A win level.
    Win(u16),
    /// A loss level's first pass, which marks candidates.
    Mark(u16),
    /// A loss level's second pass, which tests the candidates.
    Resolve(u16),
    /// After the levels: each worker's parts of the table, for the others to join the table
    /// from (the solver never sends in it; the shells that share a table do).
    Parts,
    /// After the parts: each worker has verified its own groups' entries of the joined table
    /// (nothing is sent; ending the pass says so).
    Verified,
}

/// What a worker hands the others at the end of a pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Updates {
    /// The pass they end.
    pub pass: Pass,
    /// How many entries the worker resolved in the pass (the levels end after two levels in
    /// which no worker resolved any, and no capture falls due later).
    pub resolved: u64,
    /// After [`Pass::Start`]: the last level a capture of the worker's entries falls due at.
    pub last_capture: u16,
    /// Per side to move, the words of kinds changed in the pass: each word's index (its
    /// entries are the job slots `32 * index..32 * index + 32`) and the word.
    pub words: [Vec<(u64, u64)>; 2],
}

/// How the workers sharing a job hand each other their [`Updates`], in batches of at most
/// [`BATCH_WORDS`] words, so that neither side holds a pass's updates whole.
pub trait Exchange: Sync {
    /// Hands `batch`, part of worker `worker`'s updates of a pass, to the other workers. A
    /// worker takes from a loss level's first pass ([`Pass::Mark`]) only the words of its own
    /// entries, so an exchange may hand every worker every word, or each word only to the owner
    /// of its entries; the counts (`resolved`, `last_capture`) go to every worker.
    fn send(&self, worker: usize, batch: Updates) -> io::Result<()>;

    /// Ends worker `worker`'s `pass` (it has sent every batch of it), waits until every other
    /// worker has ended it too, and hands `take` each batch they sent in it, in any order.
    fn receive(
        &self,
        worker: usize,
        pass: Pass,
        take: &mut dyn FnMut(Updates) -> io::Result<()>,
    ) -> io::Result<()>;
}

/// The most words of kinds a batch of [`Updates`] holds (a mebibyte of words).
pub const BATCH_WORDS: usize = 1 << 17;

/// How a job is shared: which worker this is, of how many, and how they exchange updates.
#[derive(Clone, Copy)]
pub struct Share<'a> {
    /// This worker, `0..workers`.
    pub worker: usize,
    /// How many workers share the job.
    pub workers: usize,
    /// How their updates travel.
    pub exchange: &'a dyn Exchange,
}

impl Share<'_> {
    /// The worker that owns group `group`: the groups are dealt out in turn, so that
    /// neighbouring groups, whose work in a level is often alike, go to different workers and
    /// each level's work is spread evenly.
    pub fn owner(&self, group: usize) -> usize {
        owner_of(group, self.workers)
    }
}

/// The worker that owns group `group` of a job shared by `workers` ([`Share::owner`]).
pub(crate) fn owner_of(group: usize, workers: usize) -> usize {
    group % workers
}

/// Kinds are 32 to a 64-bit word, two bits each.
pub(crate) const ENTRIES_PER_WORD: usize = 32;

/// The word of entry kinds `word` with every entry marked ([`crate::level_groups::Kind::Marked`],
/// `01`) made unresolved (`00`) again.
pub(crate) fn unmark_word(word: u64) -> u64 {
    const LOW: u64 = 0x5555_5555_5555_5555;
    let marked = word & !(word >> 1) & LOW;
    word & !marked
}

/// The word of entry kinds `new` merged into `old` entry by entry, the larger kind of each
/// entry kept ([`crate::level_groups::Kind`] orders them as a level moves entries).
pub(crate) fn merge_word(old: u64, new: u64) -> u64 {
    let mut out = 0;
    for i in 0..ENTRIES_PER_WORD {
        let shift = 2 * i;
        out |= ((old >> shift) & 3).max((new >> shift) & 3) << shift;
    }
    out
}

impl std::fmt::Display for Pass {
    /// `start`, `win 12`, `mark 13`, `resolve 13`, `parts` or `verified`, as the status shows
    /// it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pass::Start => write!(f, "start"),
            Pass::Win(n) => write!(f, "win {n}"),
            Pass::Mark(n) => write!(f, "mark {n}"),
            Pass::Resolve(n) => write!(f, "resolve {n}"),
            Pass::Parts => write!(f, "parts"),
            Pass::Verified => write!(f, "verified"),
        }
    }
}

impl Pass {
    /// The pass as a kind (0 start, 1 win, 2 mark, 3 resolve, 4 parts, 5 verified) and a level, as
    /// messages carry it.
    pub fn tag(self) -> (u8, u16) {
        match self {
            Pass::Start => (0, 0),
            Pass::Win(n) => (1, n),
            Pass::Mark(n) => (2, n),
            Pass::Resolve(n) => (3, n),
            Pass::Parts => (4, 0),
            Pass::Verified => (5, 0),
        }
    }

    /// The pass [`Pass::tag`] gave, or `None` for an unknown kind.
    pub fn from_tag(tag: u8, level: u16) -> Option<Pass> {
        Some(match tag {
            0 => Pass::Start,
            1 => Pass::Win(level),
            2 => Pass::Mark(level),
            3 => Pass::Resolve(level),
            4 => Pass::Parts,
            5 => Pass::Verified,
            _ => return None,
        })
    }
}

impl Updates {
    /// How many words of kinds the updates hold, both sides to move.
    pub fn word_count(&self) -> u64 {
        (self.words[0].len() + self.words[1].len()) as u64
    }

    /// The updates as bytes to send: the word indices as gaps, the words whole, compressed
    /// (most words of a level hold few changes, and neighbouring words alike).
    pub fn encode(&self) -> Vec<u8> {
        let mut raw = Vec::new();
        let (tag, level) = self.pass.tag();
        raw.push(tag);
        raw.extend_from_slice(&level.to_le_bytes());
        raw.extend_from_slice(&self.last_capture.to_le_bytes());
        put_varint(&mut raw, self.resolved);
        for words in &self.words {
            put_varint(&mut raw, words.len() as u64);
            let mut last = 0;
            for &(index, word) in words {
                put_varint(&mut raw, index - last);
                raw.extend_from_slice(&word.to_le_bytes());
                last = index;
            }
        }
        zstd::bulk::compress(&raw, 1).expect("compressing to memory")
    }

    /// Updates from bytes [`Updates::encode`] made; an error names what is wrong with them.
    pub fn decode(bytes: &[u8]) -> io::Result<Updates> {
        let raw = zstd::stream::decode_all(bytes).map_err(|e| bad(&e.to_string()))?;
        let mut r = Reader(&raw);
        let tag = r.take(1)?[0];
        let level = u16::from_le_bytes(r.take(2)?.try_into().expect("two bytes"));
        let pass = Pass::from_tag(tag, level).ok_or_else(|| bad("unknown pass"))?;
        let last_capture = u16::from_le_bytes(r.take(2)?.try_into().expect("two bytes"));
        let resolved = r.varint()?;
        let mut words = [Vec::new(), Vec::new()];
        for side in &mut words {
            let n = r.varint()?;
            let mut index = 0u64;
            for _ in 0..n {
                index = index
                    .checked_add(r.varint()?)
                    .ok_or_else(|| bad("a word index too large"))?;
                let word = u64::from_le_bytes(r.take(8)?.try_into().expect("eight bytes"));
                side.push((index, word));
            }
        }
        if !r.0.is_empty() {
            return Err(bad("bytes after the end"));
        }
        Ok(Updates {
            pass,
            resolved,
            last_capture,
            words,
        })
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("updates: {what}"))
}

/// Encoded updates not read yet.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(bad("cut short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn varint(&mut self) -> io::Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("a number too long"))
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::{Pass, Updates, merge_word, unmark_word};

    #[test]
    fn updates_round_trip_through_bytes_and_reject_damage() {
        let u = Updates {
            pass: Pass::Mark(17),
            resolved: 123_456_789,
            last_capture: 40,
            words: [vec![(0, 7), (5, u64::MAX), (1 << 40, 0)], vec![(3, 0x5555)]],
        };
        let bytes = u.encode();
        assert_eq!(Updates::decode(&bytes).unwrap(), u);
        assert!(Updates::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut raw = zstd::stream::decode_all(&bytes[..]).unwrap();
        raw[0] = 9;
        let err = Updates::decode(&zstd::bulk::compress(&raw, 1).unwrap()).unwrap_err();
        assert!(err.to_string().contains("unknown pass"), "{err}");
    }

    #[test]
    fn words_merge_entry_by_entry_keeping_the_larger_kind() {
        // Entries 0..4 of `old`: 0, 1, 2, 3; of `new`: 3, 0, 2, 1.
        let old = 0b11_10_01_00;
        let new = 0b01_10_00_11;
        assert_eq!(merge_word(old, new), 0b11_10_01_11);
        assert_eq!(merge_word(u64::MAX, 0), u64::MAX);
        assert_eq!(unmark_word(old), 0b11_10_00_00);
    }
}
