//! The search text: every host's `name_key` and lowercased hostname in one buffer, scanned
//! for a term's bytes at close to memory speed (README, API: Hosts, "List": a
//! case-insensitive substring of name or hostname).
//!
//! Invariants: a match never spans the name and the hostname, nor two hosts; the buffer
//! holds no secret; positions fit in u32 (`put` refuses to grow the buffer past 4 GiB).

/// A host's text in the buffer: its `name_key` from `start` to `name_end`, then its
/// hostname up to the next segment's start (or the buffer's end). Segments sit in buffer
/// order; a replaced or deleted host's old segment stays, with no slot, until compaction.
#[derive(Clone, Copy)]
struct Segment {
    start: u32,
    name_end: u32,
    slot: u32,
}

/// The texts of every slot: found by slot for the name and hostname sorts, and scanned as
/// one buffer for a search.
#[derive(Default)]
pub struct SearchText {
    buffer: Vec<u8>,
    segments: Vec<Segment>,
    /// The segment of each slot, or `NONE`.
    segment_of: Vec<u32>,
    /// Bytes of `buffer` no slot owns any more.
    garbage: usize,
}

/// The buffer would pass 4 GiB.
#[derive(Debug)]
pub struct TooLarge;

/// No segment, or no slot.
const NONE: u32 = u32::MAX;

/// Candidate positions are found this many at a time: the loop over one block compiles to
/// SIMD compares (SSE2 on x86-64) with no `unsafe` and no crate.
const BLOCK: usize = 64;

/// From this many bytes of text (about 400,000 hosts) a scan runs on two threads. Below,
/// one thread scans in under a millisecond, while a thread that must wait for a busy core
/// (the other requests, or anything else on the machine) costs milliseconds.
const PARALLEL_FROM: usize = 16 << 20;

impl SearchText {
    /// The slot's `name_key` (empty for a slot with no text).
    pub fn name(&self, slot: u32) -> &[u8] {
        self.field(slot, |start, name_end, _| (start, name_end))
    }

    /// The slot's lowercased hostname (empty for a slot with no text).
    pub fn hostname(&self, slot: u32) -> &[u8] {
        self.field(slot, |_, name_end, end| (name_end, end))
    }

    /// Sets the slot's text, unless it is already that.
    pub fn put(&mut self, slot: u32, name_key: &str, hostname: &str) -> Result<(), TooLarge> {
        let has_text = self
            .segment_of
            .get(slot as usize)
            .is_some_and(|index| *index != NONE);
        if has_text
            && self.name(slot) == name_key.as_bytes()
            && self.hostname(slot) == hostname.as_bytes()
        {
            return Ok(());
        }
        let start = u32::try_from(self.buffer.len()).map_err(|_| TooLarge)?;
        let name_end = start
            .checked_add(u32::try_from(name_key.len()).map_err(|_| TooLarge)?)
            .ok_or(TooLarge)?;
        name_end
            .checked_add(u32::try_from(hostname.len()).map_err(|_| TooLarge)?)
            .ok_or(TooLarge)?;
        self.remove(slot);
        self.buffer.extend_from_slice(name_key.as_bytes());
        self.buffer.extend_from_slice(hostname.as_bytes());
        let index = self.segments.len() as u32;
        self.segments.push(Segment {
            start,
            name_end,
            slot,
        });
        let slot = slot as usize;
        if self.segment_of.len() <= slot {
            self.segment_of.resize(slot + 1, NONE);
        }
        self.segment_of[slot] = index;
        if self.garbage > self.buffer.len() / 2 {
            self.compact();
        }
        Ok(())
    }

    /// Drops the slot's text.
    pub fn remove(&mut self, slot: u32) {
        let Some(index) = self.segment_of.get_mut(slot as usize) else {
            return;
        };
        let old = std::mem::replace(index, NONE) as usize;
        let end = self.end(old);
        if let Some(segment) = self.segments.get_mut(old) {
            segment.slot = NONE;
            self.garbage += end - segment.start as usize;
        }
    }

    /// The slots whose name or hostname contains `needle`, as a bitmap over `slots` slots
    /// (bit `s % 64` of word `s / 64`). Candidates are the positions holding the needle's
    /// first byte with its last byte at the right distance, found a block at a time; each
    /// is then compared in full and mapped to its segment, and the rest of a segment that
    /// matched is skipped.
    pub fn scan(&self, needle: &[u8], slots: usize) -> Vec<u64> {
        let middle = self.segments.len() / 2;
        let split = self
            .segments
            .get(middle)
            .map(|segment| segment.start as usize);
        let Some(split) = split.filter(|_| self.buffer.len() >= PARALLEL_FROM) else {
            return self.scan_part(needle, slots, (0, 0), usize::MAX);
        };
        // The second half on a thread of its own; one that cannot start, or fails, leaves
        // its half to this thread.
        let (mut found, second) = std::thread::scope(|scope| {
            let other = std::thread::Builder::new()
                .name("search-scan".into())
                .spawn_scoped(scope, || {
                    self.scan_part(needle, slots, (middle, split), usize::MAX)
                });
            let first = self.scan_part(needle, slots, (0, 0), split);
            (first, other.ok().and_then(|thread| thread.join().ok()))
        });
        let second =
            second.unwrap_or_else(|| self.scan_part(needle, slots, (middle, split), usize::MAX));
        found
            .iter_mut()
            .zip(second)
            .for_each(|(word, more)| *word |= more);
        found
    }

    /// `scan` over the matches starting before `until`, from segment `from.0`, which
    /// starts at position `from.1`.
    fn scan_part(
        &self,
        needle: &[u8],
        slots: usize,
        from: (usize, usize),
        until: usize,
    ) -> Vec<u64> {
        let mut found = vec![0u64; slots.div_ceil(64)];
        let (Some(&first), Some(&last)) = (needle.first(), needle.last()) else {
            return found;
        };
        let Some(limit) = self.buffer.len().checked_sub(needle.len()) else {
            return found;
        };
        let limit = limit.min(until.saturating_sub(1));
        let tail = needle.len() - 1;
        let (mut segment, mut position) = from;
        while position <= limit {
            let block = position;
            let mut candidates = match block + BLOCK - 1 <= limit {
                true => block_candidates(
                    &self.buffer[block..block + BLOCK],
                    &self.buffer[block + tail..block + tail + BLOCK],
                    first,
                    last,
                ),
                false => (block..=limit).fold(0, |mask, at| {
                    let candidate = self.buffer[at] == first && self.buffer[at + tail] == last;
                    mask | u64::from(candidate) << (at - block)
                }),
            };
            position = block + BLOCK;
            while candidates != 0 {
                let at = block + candidates.trailing_zeros() as usize;
                candidates &= candidates - 1;
                // The first and last bytes are checked already.
                if needle.len() > 2 && self.buffer[at + 1..at + tail] != needle[1..tail] {
                    continue;
                }
                segment = self.segment_at(segment, at);
                let (found_in, end) = (self.segments[segment], self.end(segment));
                let name_end = found_in.name_end as usize;
                // One byte cannot straddle the fields; a longer match may.
                let within = needle.len() == 1
                    || at + needle.len() <= name_end
                    || (at >= name_end && at + needle.len() <= end);
                if !within && found_in.slot != NONE {
                    continue;
                }
                if let Some(word) = found.get_mut(found_in.slot as usize / 64) {
                    *word |= 1 << (found_in.slot % 64);
                }
                // Nothing more to find in this host: go on from its end.
                match end - block {
                    skip if skip >= BLOCK => {
                        position = end;
                        candidates = 0;
                    }
                    skip => candidates &= u64::MAX << skip,
                }
            }
        }
        found
    }

    /// Rewrites the buffer with only the texts slots own.
    fn compact(&mut self) {
        let mut buffer = Vec::with_capacity(self.buffer.len() - self.garbage);
        let mut segments = Vec::with_capacity(self.segments.len());
        for (index, segment) in self.segments.iter().enumerate() {
            if segment.slot == NONE {
                continue;
            }
            let text = &self.buffer[segment.start as usize..self.end(index)];
            // The whole buffer was under 4 GiB, so any part of it is.
            let start = buffer.len() as u32;
            self.segment_of[segment.slot as usize] = segments.len() as u32;
            segments.push(Segment {
                start,
                name_end: start + (segment.name_end - segment.start),
                slot: segment.slot,
            });
            buffer.extend_from_slice(text);
        }
        self.buffer = buffer;
        self.segments = segments;
        self.garbage = 0;
    }

    /// One field of the slot's text, as `pick(start, name_end, end)` bounds it.
    fn field(&self, slot: u32, pick: impl Fn(usize, usize, usize) -> (usize, usize)) -> &[u8] {
        let Some(&index) = self.segment_of.get(slot as usize) else {
            return &[];
        };
        let Some(segment) = self.segments.get(index as usize) else {
            return &[];
        };
        let (from, to) = pick(
            segment.start as usize,
            segment.name_end as usize,
            self.end(index as usize),
        );
        &self.buffer[from..to]
    }

    /// Where segment `index` ends: the next one's start, or the buffer's end.
    fn end(&self, index: usize) -> usize {
        self.segments
            .get(index + 1)
            .map_or(self.buffer.len(), |next| next.start as usize)
    }

    /// The last segment starting at or before `at`, searched forward from `from` (whose
    /// start is at or before `at`): a few steps when hits are close together.
    fn segment_at(&self, from: usize, at: usize) -> usize {
        let starts_by = |index: usize| {
            self.segments
                .get(index)
                .is_some_and(|segment| segment.start as usize <= at)
        };
        let mut step = 1;
        let mut low = from;
        while starts_by(low + step) {
            low += step;
            step *= 2;
        }
        let high = (low + step).min(self.segments.len());
        low + self.segments[low..high].partition_point(|segment| segment.start as usize <= at) - 1
    }
}

/// Bit `i` is set when `firsts[i] == first` and `lasts[i] == last`. Written as plain loops
/// over fixed blocks, which the compiler turns into vector compares.
fn block_candidates(firsts: &[u8], lasts: &[u8], first: u8, last: u8) -> u64 {
    let mut hits = [0u8; BLOCK];
    for ((hit, a), b) in hits.iter_mut().zip(firsts).zip(lasts) {
        *hit = u8::from(*a == first) & u8::from(*b == last);
    }
    let mut words = [0u64; BLOCK / 8];
    for (word, bytes) in words.iter_mut().zip(hits.chunks_exact(8)) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(bytes);
        *word = u64::from_le_bytes(eight);
    }
    if words.iter().fold(0, |any, word| any | word) == 0 {
        return 0;
    }
    // Each byte is 0 or 1: the multiply gathers the eight low bits into the top byte.
    words.iter().enumerate().fold(0, |mask, (index, word)| {
        mask | (word.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (index * 8)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::store::search_text::SearchText;

    fn found(text: &SearchText, needle: &str) -> Vec<u32> {
        let words = text.scan(needle.as_bytes(), text.segment_of.len());
        let slots = (0..words.len() as u32 * 64)
            .filter(|slot| words[*slot as usize / 64] & (1 << (slot % 64)) != 0);
        slots.collect()
    }

    /// The scan finds exactly what a plain `contains` over each field finds, for every
    /// term length from 1 byte to longer than a block, with hosts straddling every block
    /// boundary, and never across the name and the hostname or two hosts.
    #[test]
    fn a_scan_finds_what_contains_finds_in_either_field_and_never_across_fields() {
        let mut text = SearchText::default();
        let mut hosts = Vec::new();
        for slot in 0..700u32 {
            let name = format!("näme-{slot}-{}", "x".repeat(slot as usize % 70));
            let hostname = format!("h{}.example.com", slot % 97);
            text.put(slot, &name, &hostname).unwrap();
            hosts.push((name, hostname));
        }
        let long = format!("-{}", "x".repeat(66));
        let needles = [
            "7", "ä", "me-12", "h9", "xyz", "e", "xh", "mh", "5-x", &long, "0h",
        ];
        for needle in needles {
            let expected: Vec<u32> = (0..700)
                .filter(|slot| {
                    let (name, hostname) = &hosts[*slot as usize];
                    name.contains(needle) || hostname.contains(needle)
                })
                .collect();
            assert_eq!(found(&text, needle), expected, "{needle:?}");
        }
    }

    /// From `PARALLEL_FROM` bytes the scan runs in two halves on two threads, and finds
    /// exactly what a plain `contains` finds, at the split too.
    #[test]
    fn a_scan_on_two_threads_finds_what_contains_finds() {
        let mut text = SearchText::default();
        let mut hosts = Vec::new();
        let mut slot = 0;
        while text.buffer.len() < crate::store::search_text::PARALLEL_FROM + 1000 {
            let name = format!("host-{slot}");
            let hostname = format!("h{}.example.com", slot % 977);
            text.put(slot, &name, &hostname).unwrap();
            hosts.push((name, hostname));
            slot += 1;
        }
        let middle = text.segments[text.segments.len() / 2].slot as usize;
        let at_split = hosts[middle].0.clone();
        for needle in ["7", "st-1", "h97.", "xyz", &at_split] {
            let expected: Vec<u32> = (0..slot)
                .filter(|slot| {
                    let (name, hostname) = &hosts[*slot as usize];
                    name.contains(needle) || hostname.contains(needle)
                })
                .collect();
            assert_eq!(found(&text, needle), expected, "{needle:?}");
        }
    }

    /// Renames, deletes and re-adds are found, old texts never are, and compaction keeps
    /// every slot's text.
    #[test]
    fn a_scan_follows_puts_and_removes_through_compaction() {
        let mut text = SearchText::default();
        for (slot, name) in [(1, "web-1"), (2, "db-2"), (3, "web-3")] {
            text.put(slot, name, "host.example").unwrap();
        }
        assert_eq!(found(&text, "web"), vec![1, 3]);
        text.put(1, "renamed", "h").unwrap();
        text.remove(3);
        assert_eq!(found(&text, "web"), Vec::<u32>::new());
        assert_eq!(found(&text, "host.ex"), vec![2]);
        text.put(3, "web-again", "h").unwrap();
        text.put(9, "web-9", "h").unwrap();
        for round in 0..40 {
            text.put(2, &format!("db-{round}"), "host.example").unwrap();
        }
        assert!(text.garbage <= text.buffer.len() / 2, "compacted");
        assert_eq!(found(&text, "web"), vec![3, 9]);
        assert_eq!(found(&text, "db-39"), vec![2]);
        assert_eq!(found(&text, "db-38"), Vec::<u32>::new());
        assert_eq!(text.name(1), b"renamed");
        assert_eq!(text.hostname(2), b"host.example");
        assert_eq!(text.name(4), b"", "a slot never put has no text");
    }
}
