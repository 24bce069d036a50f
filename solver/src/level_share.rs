//! One job's retrograde levels solved by several workers at once: what they exchange.
//!
//! A job kept in groups ([`crate::level_groups`]) can be shared: each worker owns some of its
//! groups ([`Share::owner`]) and runs every level over those only, level-synchronously with
//! the others. Whatever one group's pass does to another group's entries already goes through
//! the **kinds** (two bits per entry held for the whole job), so a worker sharing a job holds a
//! replica of every entry's kind and, at the end of each pass, hands the others the kinds it
//! wrote ([`Updates`]; entry by entry, or the words of kinds they are in, as [`Sends`] says),
//! and takes theirs in:
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
    /// Per side to move, the words of kinds written in the pass: each word's index (its
    /// entries are the job slots `32 * index..32 * index + 32`) and the word. The start sends
    /// its words whole; the other passes the entries written in them, or the words whole
    /// ([`Sends`]), the other entries 0 (a receiver keeps the larger kind of each entry, so a
    /// 0 changes nothing).
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
    /// What this worker sends of each pass after the start.
    pub sends: Sends,
}

/// What a worker sharing a job sends the others of each pass after the start: every change
/// in any case, and what else its memory allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sends {
    /// The entries it wrote in the pass: the least traffic, for a bit per entry of memory
    /// through the levels (`xqtb_core::JobCost::seat_bytes`).
    WrittenEntries,
    /// The words of kinds it wrote in, whole: two to three times the traffic, for a bit per
    /// word of memory.
    WrittenWords,
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

    /// The updates as bytes to send, compressed. The start's words go whole, each after the gap
    /// from the word before (the others store them). The other passes' words go in whichever
    /// of two forms is shorter once compressed: whole in the same way, or entry by entry, each entry that is
    /// not 0 as the gap from the entry before and its kind (a worker that sends only the
    /// entries it wrote has few in a word, and whole words would mostly repeat what the
    /// receiver has); their words that are 0 change nothing and are not sent.
    pub fn encode(&self) -> Vec<u8> {
        let (tag, level) = self.pass.tag();
        let start = self.pass == Pass::Start;
        let words = |side: &[(u64, u64)]| {
            let mut body = Vec::new();
            let sent = side.iter().filter(|&&(_, word)| start || word != 0);
            put_varint(&mut body, sent.clone().count() as u64);
            let mut last = 0;
            for &(index, word) in sent {
                put_varint(&mut body, index - last);
                body.extend_from_slice(&word.to_le_bytes());
                last = index;
            }
            body
        };
        let entries = |side: &[(u64, u64)]| {
            let mut body = Vec::new();
            let count = side.iter().map(|&(_, w)| entries_in(w)).sum::<u32>();
            put_varint(&mut body, u64::from(count));
            let mut last = 0;
            for &(index, word) in side {
                for i in 0..ENTRIES_PER_WORD as u64 {
                    let kind = (word >> (2 * i)) & 3;
                    if kind != 0 {
                        let entry = index * ENTRIES_PER_WORD as u64 + i;
                        put_varint(&mut body, entry - last);
                        body.push(kind as u8);
                        last = entry;
                    }
                }
            }
            body
        };
        let compressed = |tag: u8, body: &[u8]| {
            let mut raw = vec![tag];
            raw.extend_from_slice(&level.to_le_bytes());
            raw.extend_from_slice(&self.last_capture.to_le_bytes());
            put_varint(&mut raw, self.resolved);
            raw.extend_from_slice(body);
            zstd::bulk::compress(&raw, 1).expect("compressing to memory")
        };
        let whole = compressed(
            tag,
            &self.words.iter().flat_map(|s| words(s)).collect::<Vec<_>>(),
        );
        if start {
            return whole;
        }
        let by_entry = self
            .words
            .iter()
            .flat_map(|s| entries(s))
            .collect::<Vec<_>>();
        let by_entry = compressed(tag | ENTRY_FORMAT, &by_entry);
        if by_entry.len() < whole.len() {
            by_entry
        } else {
            whole
        }
    }

    /// Updates from bytes [`Updates::encode`] made; an error names what is wrong with them.
    pub fn decode(bytes: &[u8]) -> io::Result<Updates> {
        let raw = zstd::stream::decode_all(bytes).map_err(|e| bad(&e.to_string()))?;
        let mut r = Reader(&raw);
        let raw_tag = r.take(1)?[0];
        let by_entry = raw_tag & ENTRY_FORMAT != 0;
        let level = u16::from_le_bytes(r.take(2)?.try_into().expect("two bytes"));
        let pass =
            Pass::from_tag(raw_tag & !ENTRY_FORMAT, level).ok_or_else(|| bad("unknown pass"))?;
        if by_entry && pass == Pass::Start {
            return Err(bad("the start's words entry by entry"));
        }
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
                if !by_entry {
                    let word = u64::from_le_bytes(r.take(8)?.try_into().expect("eight bytes"));
                    side.push((index, word));
                    continue;
                }
                // An entry and its kind, into its word.
                let kind = u64::from(r.take(1)?[0]);
                if kind == 0 || kind > 3 {
                    return Err(bad("an entry of no kind"));
                }
                let (w, i) = (
                    index / ENTRIES_PER_WORD as u64,
                    index % ENTRIES_PER_WORD as u64,
                );
                match side.last_mut() {
                    Some((last, word)) if *last == w => *word |= kind << (2 * i),
                    _ => side.push((w, kind << (2 * i))),
                }
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

/// Set in the pass tag of updates that carry their words entry by entry rather than whole.
const ENTRY_FORMAT: u8 = 0x10;

/// The mask of a word of kinds that covers the entries whose bits are set in `entries`: each
/// bit spread to its entry's two.
pub(crate) fn kinds_mask(entries: u32) -> u64 {
    let mut x = u64::from(entries);
    x = (x | x << 16) & 0x0000_FFFF_0000_FFFF;
    x = (x | x << 8) & 0x00FF_00FF_00FF_00FF;
    x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    x = (x | x << 1) & 0x5555_5555_5555_5555;
    x * 3
}

/// How many entries of a word of kinds are not 0.
fn entries_in(word: u64) -> u32 {
    const LOW: u64 = 0x5555_5555_5555_5555;
    ((word | word >> 1) & LOW).count_ones()
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
    use super::{ENTRIES_PER_WORD, Pass, Updates, kinds_mask, merge_word, unmark_word};

    #[test]
    fn a_mask_covers_exactly_the_entries_named() {
        for entries in [0u32, 1, 0x8000_0000, 0xFFFF_FFFF, 0x1234_5678, 0x8000_0001] {
            let mask = kinds_mask(entries);
            for i in 0..ENTRIES_PER_WORD {
                let want = if entries >> i & 1 == 1 { 3 } else { 0 };
                assert_eq!((mask >> (2 * i)) & 3, want, "{entries:#x} entry {i}");
            }
        }
    }

    #[test]
    fn updates_round_trip_through_bytes_and_reject_damage() {
        // Few entries to a word go entry by entry, many as whole words; either way every word
        // comes back, but after the start those that are 0.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            seed
        };
        let mut sparse = [vec![(5, 1 << 40), (1 << 40, 0)], vec![(3, 0x5)]];
        let mut dense = [vec![(9, 0)], vec![]];
        for i in 0..64 {
            // One entry of a word, at a place of its own; every entry of a word, of any kind.
            sparse[0].push((100 + 7 * i, 1 << (2 * (next() >> 59))));
            dense[1].push((100 + 3 * i, next() | 0x5555_5555_5555_5555));
        }
        sparse[0].sort_unstable();
        for (words, by_entry) in [(sparse, true), (dense, false)] {
            for pass in [Pass::Start, Pass::Win(3), Pass::Mark(17), Pass::Resolve(4)] {
                let u = Updates {
                    pass,
                    resolved: 123_456_789,
                    last_capture: 40,
                    words: words.clone(),
                };
                let mut back = u.clone();
                if pass != Pass::Start {
                    back.words
                        .iter_mut()
                        .for_each(|side| side.retain(|&(_, w)| w != 0));
                }
                let bytes = u.encode();
                assert_eq!(Updates::decode(&bytes).unwrap(), back, "{pass}");
                let tag = zstd::stream::decode_all(&bytes[..]).unwrap()[0];
                let entry_form = tag & super::ENTRY_FORMAT != 0;
                assert_eq!(entry_form, by_entry && pass != Pass::Start, "{pass}");
            }
        }
        let u = Updates {
            pass: Pass::Mark(17),
            resolved: 1,
            last_capture: 40,
            words: [vec![(0, 7), (5, 1 << 62)], vec![(3, 0x5), (9, 1 << 62)]],
        };
        let bytes = u.encode();
        assert_eq!(Updates::decode(&bytes).unwrap(), u);
        assert!(Updates::decode(&bytes[..bytes.len() - 1]).is_err());
        let raw = zstd::stream::decode_all(&bytes[..]).unwrap();
        let damaged = |raw: &[u8]| {
            Updates::decode(&zstd::bulk::compress(raw, 1).unwrap())
                .unwrap_err()
                .to_string()
        };
        let with_tag = |tag: u8| [&[tag][..], &raw[1..]].concat();
        assert!(damaged(&with_tag(9)).contains("unknown pass"));
        // The start's words come whole.
        let start = Pass::Start.tag().0 | super::ENTRY_FORMAT;
        assert!(damaged(&with_tag(start)).contains("the start's words"));
        // The last byte is the kind of the last entry (a mark); an entry of kind 0 is no change.
        let mut zero_kind = raw.clone();
        assert_eq!(zero_kind.pop(), Some(1));
        zero_kind.push(0);
        assert!(damaged(&zero_kind).contains("an entry of no kind"));
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
