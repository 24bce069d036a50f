//! The encoded values of one side to move of a table ([`Codes`]), held in one byte per slot
//! through a dictionary of their own when that side has few distinct codes.
//!
//! Most tables have far fewer than 256 distinct codes per side (their longest mate is short,
//! and the rule values are few), so a byte per slot halves the memory of a finished table: while
//! it is verified and encoded, and while it is held as a dependency of the tables above it.
//! Each side has its own dictionary, so that a side can be narrowed as soon as it is built,
//! before the other side exists in two-byte form (and a table whose two sides together have more
//! than 256 codes may still have few enough on each).

use rayon::iter::Either;
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;

/// Byte to code. Sorted ascending, so the order of bytes is the order of the codes; the entries
/// past the codes in use repeat the last of them, which keeps it sorted.
type Dict = [u16; 256];

/// The encoded values ([`crate::Value::encode`]) of one side to move of a table, by slot: a
/// byte per slot through a dictionary when they hold at most 256 distinct codes, else two bytes.
///
/// Which of the two is an internal matter: every reader sees the codes themselves.
#[derive(Clone)]
pub struct Codes(Repr);

// The dictionary is held in place, not behind a pointer: every lookup of a narrow slot reads
// it, and a lookup through a pointer showed in the solver's probes of its dependencies. There
// are only two of these per table.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Repr {
    /// A byte per slot, read through the dictionary.
    Narrow { bytes: Vec<u8>, dict: Dict },
    /// The codes themselves.
    Wide(Vec<u16>),
}

/// Narrows the codes to a byte per slot when they hold at most 256 distinct codes; the vector is
/// freed as the bytes are written, so the codes are never held twice.
impl From<Vec<u16>> for Codes {
    fn from(wide: Vec<u16>) -> Codes {
        match Narrowing::of(&CodeSet::of(&wide)) {
            None => Codes(Repr::Wide(wide)),
            Some(n) => {
                let bytes = narrow(wide, &n.byte_of);
                n.codes(bytes)
            }
        }
    }
}

/// A set of codes, a bit per possible code: what decides whether codes fit a byte per slot.
#[derive(Clone, PartialEq, Eq)]
pub struct CodeSet(Box<[u64; 1024]>);

impl Default for CodeSet {
    fn default() -> CodeSet {
        CodeSet(Box::new([0; 1024]))
    }
}

impl std::fmt::Debug for CodeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl CodeSet {
    /// The set of the codes in `codes`.
    pub fn of(codes: &[u16]) -> CodeSet {
        codes
            .par_chunks(1 << 16)
            .fold(CodeSet::default, |mut seen, chunk| {
                for &c in chunk {
                    seen.insert(c);
                }
                seen
            })
            .reduce(CodeSet::default, |mut a, b| {
                a.union(&b);
                a
            })
    }

    /// Adds `code`.
    #[inline]
    pub fn insert(&mut self, code: u16) {
        self.0[code as usize >> 6] |= 1 << (code & 63);
    }

    /// Adds every code of `other`.
    pub fn union(&mut self, other: &CodeSet) {
        for (x, y) in self.0.iter_mut().zip(other.0.iter()) {
            *x |= y;
        }
    }

    /// The number of codes.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set holds no code.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The codes, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (0..=u16::MAX).filter(|&c| self.0[c as usize >> 6] >> (c & 63) & 1 == 1)
    }
}

/// How the codes of a set are written a byte per slot: the dictionary (byte to code, sorted)
/// and the byte of each code.
pub struct Narrowing {
    dict: [u16; 256],
    byte_of: Vec<u8>,
}

impl Narrowing {
    /// The narrowing of the codes of `set`, when it holds at most 256.
    pub fn of(set: &CodeSet) -> Option<Narrowing> {
        if set.len() > 256 {
            return None;
        }
        let mut dict = [0u16; 256];
        let mut byte_of = vec![0u8; 1 << 16];
        let mut n = 0;
        for code in set.iter() {
            dict[n] = code;
            byte_of[code as usize] = n as u8;
            n += 1;
        }
        if n > 0 {
            let last = dict[n - 1];
            dict[n..].fill(last);
        }
        Some(Narrowing { dict, byte_of })
    }

    /// The byte of `code` (a code of the set).
    #[inline]
    pub fn byte(&self, code: u16) -> u8 {
        self.byte_of[code as usize]
    }

    /// The codes whose bytes ([`Narrowing::byte`]) are `bytes`.
    pub fn codes(self, bytes: Vec<u8>) -> Codes {
        Codes(Repr::Narrow {
            bytes,
            dict: self.dict,
        })
    }
}

impl Codes {
    /// Codes held a byte per slot through `dict` (byte to code), as a producer that knows its
    /// codes writes them without a two-byte copy first.
    ///
    /// # Panics
    /// If `dict` is not sorted ascending (a programming error: the order of bytes must be the
    /// order of the codes).
    pub fn from_bytes(bytes: Vec<u8>, dict: [u16; 256]) -> Codes {
        assert!(dict.is_sorted(), "a narrow dictionary is sorted ascending");
        Codes(Repr::Narrow { bytes, dict })
    }

    /// The number of slots.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Narrow { bytes, .. } => bytes.len(),
            Repr::Wide(w) => w.len(),
        }
    }

    /// Whether there are no slots.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The code of slot `i`.
    ///
    /// # Panics
    /// If `i` is not below [`Codes::len`].
    #[inline]
    pub fn get(&self, i: usize) -> u16 {
        match &self.0 {
            Repr::Narrow { bytes, dict } => dict[bytes[i] as usize],
            Repr::Wide(w) => w[i],
        }
    }

    /// The codes in slot order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u16> + DoubleEndedIterator + Clone + '_ {
        match &self.0 {
            Repr::Narrow { bytes, dict } => {
                let dict: &[u16; 256] = dict;
                Either::Left(bytes.iter().map(move |&b| dict[b as usize]))
            }
            Repr::Wide(w) => Either::Right(w.iter().copied()),
        }
    }

    /// The codes in slot order, in parallel.
    pub fn par_iter(&self) -> impl IndexedParallelIterator<Item = u16> + '_ {
        match &self.0 {
            Repr::Narrow { bytes, dict } => {
                let dict: &[u16; 256] = dict;
                Either::Left(bytes.par_iter().map(move |&b| dict[b as usize]))
            }
            Repr::Wide(w) => Either::Right(w.par_iter().copied()),
        }
    }

    /// The codes of the slots `r`: borrowed when they are held two bytes each, else widened into
    /// a vector of their own.
    ///
    /// # Panics
    /// If `r` is not within `0..len`.
    pub fn slice(&self, r: Range<usize>) -> Cow<'_, [u16]> {
        match &self.0 {
            Repr::Narrow { bytes, dict } => {
                Cow::Owned(bytes[r].iter().map(|&b| dict[b as usize]).collect())
            }
            Repr::Wide(w) => Cow::Borrowed(&w[r]),
        }
    }

    /// The codes in consecutive runs of `n` slots (the last may be shorter), as
    /// [`Codes::slice`] gives them, in parallel.
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn par_chunks(&self, n: usize) -> impl IndexedParallelIterator<Item = Cow<'_, [u16]>> + '_ {
        let (len, count) = (self.len(), self.chunk_count(n));
        (0..count)
            .into_par_iter()
            .map(move |c| self.slice(c * n..((c + 1) * n).min(len)))
    }

    fn chunk_count(&self, n: usize) -> usize {
        assert!(n > 0, "chunks of no slots");
        self.len().div_ceil(n)
    }

    /// The codes, two bytes each.
    pub fn to_vec(&self) -> Vec<u16> {
        match &self.0 {
            Repr::Narrow { .. } => self.par_iter().collect(),
            Repr::Wide(w) => w.clone(),
        }
    }

    /// The codes, two bytes each, without a copy when they are held so.
    pub(crate) fn into_vec(self) -> Vec<u16> {
        match self.0 {
            Repr::Narrow { .. } => self.to_vec(),
            Repr::Wide(w) => w,
        }
    }

    /// Hints that [`Codes::get`] of slot `i` comes soon: lookups of a position's successors are
    /// scattered over the whole table, so issuing all their loads before using any of them
    /// overlaps their cache misses.
    ///
    /// # Panics
    /// If `i` is not below [`Codes::len`].
    #[inline(always)]
    pub fn prefetch(&self, i: usize) {
        match &self.0 {
            Repr::Narrow { bytes, .. } => prefetch(&bytes[i]),
            Repr::Wide(w) => prefetch(&w[i]),
        }
    }

    /// Whether the codes are held a byte per slot.
    pub fn is_narrow(&self) -> bool {
        matches!(self.0, Repr::Narrow { .. })
    }

    /// Bytes held per slot: 1 or 2.
    pub fn bytes_per_slot(&self) -> usize {
        if self.is_narrow() { 1 } else { 2 }
    }

    /// Sets the code of slot `i`. A code the dictionary lacks widens these codes to two bytes
    /// per slot: only tests and fault injection change codes, so keeping them narrow is not
    /// worth a dictionary that could fall out of order.
    ///
    /// # Panics
    /// If `i` is not below [`Codes::len`].
    pub(crate) fn set(&mut self, i: usize, code: u16) {
        match &mut self.0 {
            Repr::Narrow { bytes, dict } => match dict.binary_search(&code) {
                Ok(b) => bytes[i] = b as u8,
                Err(_) => {
                    assert!(i < bytes.len(), "slot {i} of {}", bytes.len());
                    let wide = self.to_vec();
                    self.0 = Repr::Wide(wide);
                    self.set(i, code);
                }
            },
            Repr::Wide(w) => w[i] = code,
        }
    }
}

/// The bytes of `wide`'s codes, `byte_of` each. A finished table is narrowed right after it
/// is solved, when its codes are the largest thing the process holds: they are converted from
/// the end a step at a time, and each step's codes freed as soon as its bytes are written, so
/// that the side is never held twice. (The bytes' zeroed pages take no memory until written;
/// the allocator returns the tail of a large block when it shrinks.)
fn narrow(mut wide: Vec<u16>, byte_of: &[u8]) -> Vec<u8> {
    const STEPS: usize = 16;
    let mut bytes = vec![0u8; wide.len()];
    let step = wide.len().div_ceil(STEPS).max(1 << 16);
    while !wide.is_empty() {
        let lo = wide.len().saturating_sub(step);
        bytes[lo..wide.len()]
            .par_iter_mut()
            .zip(&wide[lo..])
            .for_each(|(b, &c)| *b = byte_of[c as usize]);
        wide.truncate(lo);
        wide.shrink_to_fit();
    }
    bytes
}

/// Asks the CPU to start loading the cache line of `p`. Table lookups of neighbouring slots are
/// scattered over hundreds of megabytes, so issuing every load of a position's moves before
/// using any of them overlaps their cache misses.
#[inline(always)]
pub fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint without side effects on any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Equal when the codes are, however each is held.
impl PartialEq for Codes {
    fn eq(&self, other: &Codes) -> bool {
        match (&self.0, &other.0) {
            (Repr::Wide(a), Repr::Wide(b)) => a == b,
            (Repr::Narrow { bytes: a, dict: x }, Repr::Narrow { bytes: b, dict: y }) if x == y => {
                a == b
            }
            _ => self.len() == other.len() && self.iter().eq(other.iter()),
        }
    }
}

impl Eq for Codes {}

/// Lists the codes, as a slice of them would.
impl std::fmt::Debug for Codes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes of `n` slots cycling through `distinct` different codes, spread over the range.
    fn cycling(n: usize, distinct: usize, offset: usize) -> Vec<u16> {
        (0..n)
            .map(|i| (((i + offset) % distinct) * 251 % 65536) as u16)
            .collect()
    }

    fn check_reads(c: &Codes, want: &[u16]) {
        assert_eq!(c.len(), want.len());
        assert_eq!(c.is_empty(), want.is_empty());
        for (i, &w) in want.iter().enumerate() {
            assert_eq!(c.get(i), w, "slot {i}");
        }
        assert!(c.iter().eq(want.iter().copied()));
        assert_eq!(c.iter().len(), want.len());
        assert!(c.iter().rev().eq(want.iter().rev().copied()));
        assert_eq!(c.par_iter().collect::<Vec<_>>(), want);
        assert_eq!(c.to_vec(), want);
        let n = want.len();
        for r in [0..0, 0..n, n.min(3)..n.min(17), n.saturating_sub(5)..n] {
            assert_eq!(&*c.slice(r.clone()), &want[r]);
        }
        c.prefetch(n - 1);
        assert_eq!(c.clone().into_vec(), want);
        if n > 10_000 {
            return;
        }
        for n in [1, 7, 1000, n + 1] {
            let expect: Vec<Vec<u16>> = want.chunks(n).map(|s| s.to_vec()).collect();
            let par: Vec<Vec<u16>> = c.par_chunks(n).map(|s| s.into_owned()).collect();
            assert_eq!(par, expect);
        }
        assert_eq!(format!("{c:?}"), format!("{want:?}"));
    }

    #[test]
    fn codes_of_at_most_256_distinct_values_are_a_byte_each() {
        // 256 codes, 0 and 0xFFFF among them.
        let mut want = cycling(3000, 255, 0);
        want[5] = 0xFFFF;
        let distinct: std::collections::BTreeSet<u16> = want.iter().copied().collect();
        assert_eq!(distinct.len(), 256);
        let c = Codes::from(want.clone());
        assert!(c.is_narrow());
        assert_eq!(c.bytes_per_slot(), 1);
        check_reads(&c, &want);
        // Large enough to be narrowed in several steps.
        let want = cycling(3 << 20, 77, 5);
        let c = Codes::from(want.clone());
        assert!(c.is_narrow());
        check_reads(&c, &want);
    }

    #[test]
    fn codes_of_257_distinct_values_are_two_bytes_each() {
        let want = cycling(3000, 257, 0);
        let c = Codes::from(want.clone());
        assert!(!c.is_narrow());
        assert_eq!(c.bytes_per_slot(), 2);
        check_reads(&c, &want);
    }

    #[test]
    fn byte_order_follows_code_order() {
        let want = vec![900, 3, 0xFFFF, 0, 40, 3];
        let c = Codes::from(want.clone());
        let Repr::Narrow { bytes, .. } = &c.0 else {
            panic!("not narrow")
        };
        assert_eq!(bytes, &[3, 1, 4, 0, 2, 1]);
        check_reads(&c, &want);
    }

    #[test]
    fn setting_codes_keeps_the_values_and_widens_only_for_a_new_code() {
        let mut want = cycling(1000, 100, 0);
        let mut c = Codes::from(want.clone());
        // A code of the dictionary: still a byte each.
        c.set(10, want[20]);
        want[10] = want[20];
        assert!(c.is_narrow());
        check_reads(&c, &want);
        // A new code: two bytes each, every other value kept.
        c.set(11, 12345);
        want[11] = 12345;
        assert!(!c.is_narrow());
        check_reads(&c, &want);
        c.set(12, 54321);
        want[12] = 54321;
        check_reads(&c, &want);
        // Wide from the start.
        let mut want = cycling(1000, 300, 0);
        let mut w = Codes::from(want.clone());
        w.set(0, 7);
        want[0] = 7;
        check_reads(&w, &want);
    }

    #[test]
    fn codes_are_equal_whatever_they_are_held_in() {
        let codes = cycling(1000, 100, 0);
        let narrow = Codes::from(codes.clone());
        let wide = Codes(Repr::Wide(codes.clone()));
        // The same codes through another dictionary.
        let mut other = Codes::from([&codes[..], &[65000]].concat());
        other.0 = match other.0 {
            Repr::Narrow { mut bytes, dict } => {
                bytes.pop();
                Repr::Narrow { bytes, dict }
            }
            w => w,
        };
        assert!(narrow.is_narrow() && other.is_narrow() && !wide.is_narrow());
        assert_eq!(narrow, wide);
        assert_eq!(wide, narrow);
        assert_eq!(narrow, other);
        assert_eq!(other, wide);
        assert_eq!(narrow, narrow.clone());
        let mut changed = narrow.clone();
        changed.set(3, codes[4]);
        assert_ne!(changed, narrow);
        assert_ne!(changed, wide);
        assert_ne!(changed, other);
        let shorter = Codes::from(codes[..999].to_vec());
        assert_ne!(narrow, shorter);
        assert_ne!(wide, shorter);
    }

    #[test]
    fn a_code_set_narrows_in_code_order_up_to_256_codes() {
        let mut set = CodeSet::of(&[7, 0xFFFF, 7, 0]);
        let mut other = CodeSet::default();
        other.insert(300);
        set.union(&other);
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 7, 300, 0xFFFF]);
        assert_eq!(set.len(), 4);
        let n = Narrowing::of(&set).expect("four codes fit a byte");
        let bytes: Vec<u8> = [300, 0, 0xFFFF, 7].iter().map(|&c| n.byte(c)).collect();
        assert_eq!(bytes, [2, 0, 3, 1]);
        assert_eq!(n.codes(bytes).to_vec(), [300, 0, 0xFFFF, 7]);
        let wide = CodeSet::of(&cycling(1000, 257, 0));
        assert!(Narrowing::of(&wide).is_none() && !wide.is_empty());
        assert!(CodeSet::default().is_empty());
    }

    #[test]
    fn empty_codes_are_read_as_empty() {
        let c = Codes::from(Vec::new());
        assert!(c.is_empty() && c.is_narrow());
        assert_eq!(c.iter().count(), 0);
        assert_eq!(c.par_chunks(5).count(), 0);
        assert_eq!(c, Codes(Repr::Wide(Vec::new())));
    }
}
