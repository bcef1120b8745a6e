//! Which repeated strings and dict shapes format 2 writes once and refers back to.
//!
//! The rule is "define on second sight": the first occurrence of a value is written in full
//! (so a value seen once costs nothing extra), the second is written as a definition that
//! enters the reader's table, and every later one as a short reference to it. Readers do not
//! need to know the rule; they only number the definitions in the order they read them.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// How to write one occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// First sighting: write it in full; the caller may need to keep the key alive.
    First,
    /// Not tracked (the table is full): write it in full.
    Plain,
    /// Second sighting: write a definition, which gets this index in the reader's table.
    Define(u32),
    /// Later sightings: write a reference to this index.
    Ref(u32),
}

/// The table of values seen so far in one encode, keyed by `K` (object identity for
/// Python objects, content in the pure-Rust encoder).
pub struct Repeats<K> {
    seen: HashMap<K, Option<u32>, BuildHasherDefault<FxHasher>>,
    defined: u32,
    capacity: usize,
}

impl<K: Hash + Eq> Repeats<K> {
    /// Tracks at most `capacity` distinct values, so memory stays bounded on huge inputs.
    pub fn new(capacity: usize) -> Self {
        Repeats {
            seen: HashMap::default(),
            defined: 0,
            capacity,
        }
    }

    /// Records one occurrence of `key` and says how to write it.
    #[inline]
    pub fn note<Q>(&mut self, key: &Q) -> Use
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(slot) = self.seen.get_mut(key) {
            return match *slot {
                Some(index) => Use::Ref(index),
                None => {
                    let index = self.defined;
                    self.defined += 1;
                    *slot = Some(index);
                    Use::Define(index)
                }
            };
        }
        if self.seen.len() < self.capacity {
            self.seen.insert(key.to_owned(), None);
            Use::First
        } else {
            Use::Plain
        }
    }
}

/// [`Repeats`] for object addresses: open addressing with linear probing, no hashing
/// trait, about a dozen instructions per lookup (strings are the most frequent lookup of
/// an encode). Address 0 is never a key.
pub struct AddrRepeats {
    /// (address, its index or `SEEN_ONCE`, generation); a slot of an older generation is
    /// empty, so clearing the table between encodes costs nothing.
    slots: Vec<(usize, u32, u32)>,
    generation: u32,
    len: usize,
    /// Sightings of values that can never repeat (see [`AddrRepeats::note_fresh`]): they
    /// count against `capacity` like tracked ones but take no slot.
    fresh: usize,
    defined: u32,
    capacity: usize,
}

const SEEN_ONCE: u32 = u32::MAX;
const MIN_SLOTS: usize = 1024;

impl AddrRepeats {
    pub fn new(capacity: usize) -> Self {
        AddrRepeats {
            slots: Vec::new(),
            generation: 1,
            len: 0,
            fresh: 0,
            defined: 0,
            capacity,
        }
    }

    pub fn clear(&mut self) {
        self.generation = next_generation(self.generation, &mut self.slots);
        self.len = 0;
        self.fresh = 0;
        self.defined = 0;
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Records one occurrence of `addr` and says how to write it.
    #[inline]
    pub fn note(&mut self, addr: usize) -> Use {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = spread(addr) & mask;
        loop {
            let slot = &mut self.slots[i];
            if slot.2 != self.generation {
                if addr == 0 || self.len + self.fresh >= self.capacity {
                    return Use::Plain;
                }
                *slot = (addr, SEEN_ONCE, self.generation);
                self.len += 1;
                return Use::First;
            }
            if slot.0 == addr {
                if slot.1 == SEEN_ONCE {
                    slot.1 = self.defined;
                    self.defined += 1;
                    return Use::Define(slot.1);
                }
                return Use::Ref(slot.1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Records one occurrence of a value known to be distinct from every other (an object
    /// made for this one write and kept alive until the encode ends, whose address is
    /// therefore new). It is always written in full; noting it only uses up capacity exactly
    /// as [`AddrRepeats::note`] of a new address would, without storing it.
    #[inline]
    pub fn note_fresh(&mut self) -> Use {
        if self.len + self.fresh >= self.capacity {
            return Use::Plain;
        }
        self.fresh += 1;
        Use::First
    }

    /// Doubles the table (at most half full keeps probe runs short).
    #[cold]
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = rehash(old, self.generation, |&addr| spread(addr));
    }
}

/// [`Repeats`] for key lists given as address slices (dict shapes): the same open
/// addressing as [`AddrRepeats`] over a 64-bit hash of the list, each hit confirmed by
/// comparing the stored list, so a hash collision can only cost compactness.
pub struct ShapeRepeats {
    /// (hash, index into `shapes`, generation), as in [`AddrRepeats`].
    slots: Vec<(u64, u32, u32)>,
    generation: u32,
    /// Per distinct list: where it is in `arena`, its length, its index or `SEEN_ONCE`.
    shapes: Vec<(usize, usize, u32)>,
    arena: Vec<usize>,
    /// Key lists that can never repeat, noted by [`ShapeRepeats::note_fresh`].
    fresh: usize,
    defined: u32,
    capacity: usize,
}

impl ShapeRepeats {
    pub fn new(capacity: usize) -> Self {
        ShapeRepeats {
            slots: Vec::new(),
            generation: 1,
            shapes: Vec::new(),
            arena: Vec::new(),
            fresh: 0,
            defined: 0,
            capacity,
        }
    }

    pub fn clear(&mut self) {
        self.generation = next_generation(self.generation, &mut self.slots);
        self.shapes.clear();
        self.arena.clear();
        self.fresh = 0;
        self.defined = 0;
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Records one occurrence of the key list `keys` and says how to write it.
    #[inline]
    pub fn note(&mut self, keys: &[usize]) -> Use {
        if (self.shapes.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let hash = keys.iter().fold(keys.len() as u64, |h, &k| {
            (h.rotate_left(5) ^ k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        });
        let mask = self.slots.len() - 1;
        let mut i = (hash >> 32) as usize & mask;
        loop {
            let (h, id, generation) = self.slots[i];
            if generation != self.generation {
                break;
            }
            if h == hash {
                let (start, len, state) = self.shapes[id as usize];
                if &self.arena[start..start + len] == keys {
                    return self.sighted(id as usize, state);
                }
            }
            i = (i + 1) & mask;
        }
        if self.shapes.len() + self.fresh >= self.capacity {
            return Use::Plain;
        }
        self.slots[i] = (hash, self.shapes.len() as u32, self.generation);
        self.shapes.push((self.arena.len(), keys.len(), SEEN_ONCE));
        self.arena.extend_from_slice(keys);
        Use::First
    }

    /// Records a key list holding a key that is new (see [`AddrRepeats::note_fresh`]): such
    /// a list is never seen again, so it only uses up capacity as a new list would.
    #[inline]
    pub fn note_fresh(&mut self) -> Use {
        if self.shapes.len() + self.fresh >= self.capacity {
            return Use::Plain;
        }
        self.fresh += 1;
        Use::First
    }

    fn sighted(&mut self, id: usize, state: u32) -> Use {
        if state != SEEN_ONCE {
            return Use::Ref(state);
        }
        self.shapes[id].2 = self.defined;
        self.defined += 1;
        Use::Define(self.shapes[id].2)
    }

    #[cold]
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = rehash(old, self.generation, |&hash| (hash >> 32) as usize);
    }
}

/// A table twice the size of `old` (at least `MIN_SLOTS`) holding its slots of generation
/// `live`, each placed by linear probing from `home(key)`.
fn rehash<K: Default + Copy>(
    old: Vec<(K, u32, u32)>,
    live: u32,
    home: impl Fn(&K) -> usize,
) -> Vec<(K, u32, u32)> {
    let size = (old.len() * 2).max(MIN_SLOTS);
    let mut slots = vec![(K::default(), 0, 0); size];
    for slot in old.into_iter().filter(|s| s.2 == live) {
        let mut i = home(&slot.0) & (size - 1);
        while slots[i].2 == live {
            i = (i + 1) & (size - 1);
        }
        slots[i] = slot;
    }
    slots
}

/// The generation after `current`; on wrap-around (after 4 billion encodes on one
/// thread) the slots are really emptied, since generation 0 is what new slots hold.
fn next_generation<K: Default + Copy>(current: u32, slots: &mut [(K, u32, u32)]) -> u32 {
    match current.wrapping_add(1) {
        0 => {
            slots.fill((K::default(), 0, 0));
            1
        }
        next => next,
    }
}

/// Mixes an address into a slot number: objects are 16-byte aligned, so the low bits
/// carry nothing; a Fibonacci multiply spreads the rest into the high half.
#[inline]
fn spread(addr: usize) -> usize {
    ((addr as u64 >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize
}

/// A fast non-cryptographic hasher (the Fx hash of rustc). Keys are object addresses or
/// content the encoding side chose, never bytes read from untrusted input.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits of aligned addresses zero, and the table picks
        // buckets by the low bits: rotate the well-mixed high bits down.
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_on_second_sight_and_refers_after() {
        let mut r: Repeats<String> = Repeats::new(10);
        assert_eq!(r.note("role"), Use::First);
        assert_eq!(r.note("content"), Use::First);
        assert_eq!(r.note("content"), Use::Define(0));
        assert_eq!(r.note("role"), Use::Define(1));
        assert_eq!(r.note("content"), Use::Ref(0));
        assert_eq!(r.note("role"), Use::Ref(1));
    }

    #[test]
    fn addresses_define_on_second_sight_across_growth() {
        let mut r = AddrRepeats::new(usize::MAX);
        let addrs: Vec<usize> = (1..5000).map(|i| i * 16).collect();
        assert!(addrs.iter().all(|&a| r.note(a) == Use::First));
        for (i, &a) in addrs.iter().enumerate() {
            assert_eq!(r.note(a), Use::Define(i as u32));
        }
        assert_eq!(r.note(addrs[7]), Use::Ref(7));
        r.clear();
        assert_eq!(r.note(addrs[7]), Use::First);
        // Clearing is a new generation; at wrap-around the slots are emptied for real.
        r.generation = u32::MAX;
        r.clear();
        assert_eq!((r.generation, r.note(addrs[7])), (1, Use::First));
        let mut full = AddrRepeats::new(1);
        assert_eq!(full.note(16), Use::First);
        assert_eq!(full.note(32), Use::Plain);
        assert_eq!(full.note(16), Use::Define(0));
    }

    #[test]
    fn shapes_match_whole_lists_only() {
        let mut r = ShapeRepeats::new(usize::MAX);
        assert_eq!(r.note(&[16, 32]), Use::First);
        assert_eq!(r.note(&[32, 16]), Use::First);
        assert_eq!(r.note(&[16]), Use::First);
        assert_eq!(r.note(&[32, 16]), Use::Define(0));
        assert_eq!(r.note(&[16, 32]), Use::Define(1));
        assert_eq!(r.note(&[32, 16]), Use::Ref(0));
        for n in 0..3000usize {
            r.note(&[n * 16 + 48, 16]);
        }
        assert_eq!(r.note(&[16, 32]), Use::Ref(1));
        assert_eq!(r.note(&[16]), Use::Define(2));
        r.clear();
        assert_eq!(r.note(&[16, 32]), Use::First);
    }

    #[test]
    fn fresh_values_use_up_capacity_like_new_ones() {
        let mut a = AddrRepeats::new(2);
        assert_eq!(a.note_fresh(), Use::First);
        assert_eq!(a.note(16), Use::First);
        assert_eq!(a.note(32), Use::Plain);
        assert_eq!(a.note_fresh(), Use::Plain);
        assert_eq!(a.note(16), Use::Define(0));
        a.clear();
        assert_eq!(a.note(32), Use::First);
        let mut s = ShapeRepeats::new(2);
        assert_eq!(s.note_fresh(), Use::First);
        assert_eq!(s.note(&[16]), Use::First);
        assert_eq!(s.note(&[32]), Use::Plain);
        assert_eq!(s.note_fresh(), Use::Plain);
        assert_eq!(s.note(&[16]), Use::Define(0));
        s.clear();
        assert_eq!(s.note(&[32]), Use::First);
    }

    #[test]
    fn stops_tracking_when_full() {
        let mut r: Repeats<Vec<usize>> = Repeats::new(1);
        assert_eq!(r.note(&[1usize, 2][..]), Use::First);
        assert_eq!(r.note(&[3usize][..]), Use::Plain);
        assert_eq!(r.note(&[3usize][..]), Use::Plain);
        assert_eq!(r.note(&[1usize, 2][..]), Use::Define(0));
    }
}
