//! The search text: every host's `name_key` and lowercased hostname in one buffer, scanned
//! for a term at close to memory speed (README, API: Hosts, "List": a case-insensitive
//! substring of name or hostname).
//!
//! Invariants: a slot's text is its name, `END`, its hostname, `END`, and UTF-8 never holds
//! `END`, so a match never spans the two fields nor two hosts; the buffer holds no secret;
//! positions fit in u32 (`put` refuses to grow the buffer past 4 GiB).

use std::ops::Range;

/// The texts of every slot, each a segment of one buffer.
#[derive(Default)]
pub struct SearchText {
    buffer: Vec<u8>,
    /// In buffer order; a replaced or removed text's segment stays, with no slot.
    segments: Vec<Segment>,
    /// Each slot's segment, or `NONE`.
    segment_of: Vec<u32>,
    /// For each `BLOCK` bytes of the buffer, the segment holding the first one.
    block_segment: Vec<u32>,
    /// Bytes of `buffer` no slot owns any more.
    garbage: usize,
}

/// A slot's text: from `start` up to the next segment's start (or the buffer's end).
#[derive(Clone, Copy)]
struct Segment {
    start: u32,
    slot: u32,
}

/// The buffer would pass 4 GiB.
#[derive(Debug)]
pub struct TooLarge;

/// No segment, or no slot.
const NONE: u32 = u32::MAX;
/// Ends each field: a byte UTF-8 never holds.
const END: u8 = 0xFF;
/// Candidates are found this many at a time: a plain loop over a fixed block, which the
/// compiler turns into vector compares (SSE2 on x86-64) with no `unsafe` and no crate.
const BLOCK: usize = 64;
/// From this many bytes of text a scan runs on two threads. Below it one thread is done
/// before a second, waiting for a busy core, would help.
const PARALLEL_FROM: usize = 16 << 20;

impl SearchText {
    /// The slot's `name_key` (empty without a text).
    pub fn name(&self, slot: u32) -> &[u8] {
        self.field(slot, 0)
    }

    /// The slot's lowercased hostname (empty without a text).
    pub fn hostname(&self, slot: u32) -> &[u8] {
        self.field(slot, 1)
    }

    /// Sets the slot's text, unless it is that already; an empty one takes no segment.
    pub fn put(&mut self, slot: u32, name_key: &str, hostname: &str) -> Result<(), TooLarge> {
        if self.name(slot) == name_key.as_bytes() && self.hostname(slot) == hostname.as_bytes() {
            return Ok(());
        }
        self.remove(slot);
        let start = u32::try_from(self.buffer.len()).map_err(|_| TooLarge)?;
        u32::try_from(self.buffer.len() + name_key.len() + hostname.len() + 2)
            .map_err(|_| TooLarge)?;
        if name_key.is_empty() && hostname.is_empty() {
            return Ok(());
        }
        if self.segment_of.len() <= slot as usize {
            self.segment_of.resize(slot as usize + 1, NONE);
        }
        self.segment_of[slot as usize] = self.segments.len() as u32;
        self.segments.push(Segment { start, slot });
        for field in [name_key, hostname] {
            self.buffer.extend_from_slice(field.as_bytes());
            self.buffer.push(END);
        }
        let blocks = self.buffer.len().div_ceil(BLOCK);
        self.block_segment
            .resize(blocks, self.segments.len() as u32 - 1);
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
    /// (bit `s % 64` of word `s / 64`).
    pub fn scan(&self, needle: &[u8], slots: usize) -> Vec<u64> {
        self.scan_from(needle, slots, PARALLEL_FROM)
    }

    /// `scan`, on two threads from `parallel_from` bytes of text.
    fn scan_from(&self, needle: &[u8], slots: usize, parallel_from: usize) -> Vec<u64> {
        let (count, middle) = (self.segments.len(), self.segments.len() / 2);
        if self.buffer.len() < parallel_from {
            return self.scan_part(needle, slots, 0..count);
        }
        // The second half on a thread of its own; one that cannot start, or fails, leaves
        // its half to this thread.
        let (mut found, second) = std::thread::scope(|scope| {
            let other = std::thread::Builder::new()
                .name("search-scan".into())
                .spawn_scoped(scope, || self.scan_part(needle, slots, middle..count));
            let first = self.scan_part(needle, slots, 0..middle);
            (first, other.ok().and_then(|thread| thread.join().ok()))
        });
        let second = second.unwrap_or_else(|| self.scan_part(needle, slots, middle..count));
        found
            .iter_mut()
            .zip(second)
            .for_each(|(word, more)| *word |= more);
        found
    }

    /// `scan` over the segments in `part`. Candidates are the positions holding the
    /// needle's first byte with its last byte at the right distance, found a block at a
    /// time; each is compared in full and mapped to its segment, and a segment that matched
    /// is skipped to its end.
    fn scan_part(&self, needle: &[u8], slots: usize, part: Range<usize>) -> Vec<u64> {
        let mut found = vec![0u64; slots.div_ceil(64)];
        let (Some(&first), Some(&last), Some(from)) =
            (needle.first(), needle.last(), self.segments.get(part.start))
        else {
            return found;
        };
        let until = self.segments.get(part.end);
        let text = &self.buffer[..until.map_or(self.buffer.len(), |next| next.start as usize)];
        let (tail, mut segment, mut position) = (needle.len() - 1, part.start, from.start as usize);
        while position + tail < text.len() {
            let block = position;
            let window = |from: usize| text.get(from..from + BLOCK)?.try_into().ok();
            let mut candidates = match (window(block), window(block + tail)) {
                (Some(firsts), Some(lasts)) => block_candidates(firsts, lasts, first, last),
                // The last block: fewer than `BLOCK` positions.
                _ => (block..text.len() - tail).fold(0, |mask, at| {
                    mask | u64::from(text[at] == first && text[at + tail] == last) << (at - block)
                }),
            };
            position = block + BLOCK;
            while candidates != 0 {
                let at = block + candidates.trailing_zeros() as usize;
                candidates &= candidates - 1;
                // The first and last bytes are checked already.
                if needle.len() > 2 && text[at + 1..at + tail] != needle[1..tail] {
                    continue;
                }
                segment = segment.max(self.block_segment[at / BLOCK] as usize);
                while self
                    .segments
                    .get(segment + 1)
                    .is_some_and(|next| next.start as usize <= at)
                {
                    segment += 1;
                }
                // A removed text's `NONE` is past the bitmap.
                let slot = self.segments[segment].slot as usize;
                if let Some(word) = found.get_mut(slot / 64) {
                    *word |= 1 << (slot % 64);
                }
                match self.end(segment) - block {
                    skip if skip >= BLOCK => (position, candidates) = (block + skip, 0),
                    skip => candidates &= u64::MAX << skip,
                }
            }
        }
        found
    }

    /// True once most of the buffer is text no slot owns any more: the list then reads
    /// everything again, which lays the buffer out afresh.
    pub fn wasteful(&self) -> bool {
        self.garbage > self.buffer.len() / 2
    }

    /// Field `index` (0 the name, 1 the hostname) of the slot's text, or empty.
    fn field(&self, slot: u32, index: usize) -> &[u8] {
        let text = self.segment_of.get(slot as usize).and_then(|&segment| {
            let start = self.segments.get(segment as usize)?.start as usize;
            Some(&self.buffer[start..self.end(segment as usize)])
        });
        let mut fields = text.unwrap_or_default().split(|byte| *byte == END);
        fields.nth(index).unwrap_or_default()
    }

    /// Where segment `index` ends: the next one's start, or the buffer's end.
    fn end(&self, index: usize) -> usize {
        self.segments
            .get(index + 1)
            .map_or(self.buffer.len(), |next| next.start as usize)
    }
}

/// Bit `i` is set when `firsts[i] == first` and `lasts[i] == last`. Plain loops over a fixed block, which compile to vector compares.
fn block_candidates(firsts: &[u8; BLOCK], lasts: &[u8; BLOCK], first: u8, last: u8) -> u64 {
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
        found_from(text, needle, super::PARALLEL_FROM)
    }

    /// What the scan finds, on two threads from `parallel_from` bytes of text.
    fn found_from(text: &SearchText, needle: &str, parallel_from: usize) -> Vec<u32> {
        let words = text.scan_from(needle.as_bytes(), text.segment_of.len(), parallel_from);
        let slots = (0..words.len() as u32 * 64)
            .filter(|slot| words[*slot as usize / 64] & (1 << (slot % 64)) != 0);
        slots.collect()
    }

    /// The oracle: the slots (indexes into `hosts`) whose name or hostname contains `needle`.
    fn contains(hosts: &[(String, String)], needle: &str) -> Vec<u32> {
        (0..hosts.len() as u32)
            .filter(|slot| {
                let (name, hostname) = &hosts[*slot as usize];
                name.contains(needle) || hostname.contains(needle)
            })
            .collect()
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
            assert_eq!(found(&text, needle), contains(&hosts, needle), "{needle:?}");
        }
    }

    /// From its threshold the scan runs in two halves on two threads, and finds exactly
    /// what a plain `contains` finds, at the split too.
    #[test]
    fn a_scan_on_two_threads_finds_what_contains_finds() {
        let mut text = SearchText::default();
        let mut hosts = Vec::new();
        for slot in 0..3000 {
            let name = format!("host-{slot}");
            let hostname = format!("h{}.example.com", slot % 977);
            text.put(slot, &name, &hostname).unwrap();
            hosts.push((name, hostname));
        }
        let middle = text.segments[text.segments.len() / 2].slot as usize;
        let at_split = hosts[middle].0.clone();
        for needle in ["7", "st-1", "h97.", "xyz", &at_split] {
            let expected = contains(&hosts, needle);
            assert_eq!(found_from(&text, needle, 0), expected, "{needle:?}");
        }
    }

    /// A fixed-seed xorshift, for random texts and needles.
    struct Random(u64);

    impl Random {
        fn below(&mut self, bound: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % bound as u64) as usize
        }

        /// Up to `most` characters, ASCII and multi-byte UTF-8, from a small alphabet so
        /// that needles often match.
        fn text(&mut self, most: usize) -> String {
            const PIECES: [&str; 8] = ["a", "b", "-", ".", "7", "ä", "€", "𝄞"];
            let len = self.below(most + 1);
            (0..len).map(|_| PIECES[self.below(PIECES.len())]).collect()
        }
    }

    /// After random puts and removes of random texts (empty fields, multi-byte UTF-8, texts
    /// longer than a block), random needles, half of them cut from the texts, find on one
    /// thread and on two exactly what `contains` finds.
    #[test]
    fn a_scan_finds_what_contains_finds_after_random_puts_and_removes_on_one_and_two_threads() {
        let mut random = Random(0x2545_f491_4f6c_dd1d);
        let mut text = SearchText::default();
        let mut hosts = vec![(String::new(), String::new()); 150];
        for _ in 0..60 {
            for _ in 0..40 {
                let slot = random.below(hosts.len());
                let most = [3, 12, 90][random.below(3)];
                hosts[slot] = match random.below(5) {
                    0 => Default::default(),
                    _ => (random.text(most), random.text(most)),
                };
                // A cleared host: removed, or given an empty text.
                let (name, hostname) = &hosts[slot];
                if name.len() + hostname.len() == 0 && random.below(2) == 0 {
                    text.remove(slot as u32);
                } else {
                    text.put(slot as u32, name, hostname).unwrap();
                }
            }
            for _ in 0..30 {
                let (name, hostname) = &hosts[random.below(hosts.len())];
                let field: Vec<char> = [name, hostname][random.below(2)].chars().collect();
                let (from, len) = (random.below(field.len() + 1), random.below(70) + 1);
                let mut needle: String = field.iter().skip(from).take(len).collect();
                if needle.is_empty() || random.below(2) == 0 {
                    needle = random.text(len).chars().chain(['a']).collect();
                }
                let expected = contains(&hosts, &needle);
                assert_eq!(
                    found_from(&text, &needle, usize::MAX),
                    expected,
                    "{needle:?}"
                );
                assert_eq!(found_from(&text, &needle, 0), expected, "{needle:?}");
            }
        }
    }

    /// Renames, deletes and re-adds are found and old texts never are; text no slot owns
    /// is counted until it is most of the buffer (the list then reads everything again).
    #[test]
    fn a_scan_follows_puts_and_removes_and_counts_what_they_leave_unowned() {
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
        assert!(
            !text.wasteful(),
            "{} of {}",
            text.garbage,
            text.buffer.len()
        );
        for round in 0..40 {
            text.put(2, &format!("db-{round}"), "host.example").unwrap();
        }
        assert!(text.wasteful());
        assert_eq!(found(&text, "web"), vec![3, 9]);
        assert_eq!(found(&text, "db-39"), vec![2]);
        assert_eq!(found(&text, "db-38"), Vec::<u32>::new());
        assert_eq!(text.name(1), b"renamed");
        assert_eq!(text.hostname(2), b"host.example");
        assert_eq!(text.name(4), b"", "a slot never put has no text");
    }
}
