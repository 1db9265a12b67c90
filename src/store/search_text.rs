//! The search text: every host's `name_key` and lowercased hostname in one buffer, scanned
//! for a term (README, API: Hosts, "List": a case-insensitive substring of name or hostname;
//! "How the host list is answered": why a scan).
//!
//! Invariants: a slot's text is its name, `END`, its hostname, `END`, and UTF-8 never holds
//! `END`, so a match never spans the two fields nor two hosts; the buffer holds no secret;
//! positions fit in u32 (`put` refuses to grow the buffer past 4 GiB).

/// The texts of every slot, each a segment of one buffer.
#[derive(Default)]
pub struct SearchText {
    buffer: Vec<u8>,
    /// Each segment's start and slot, in buffer order; a replaced text keeps its segment.
    segments: Vec<(u32, u32)>,
    /// Each slot's segment, or `NONE`.
    segment_of: Vec<u32>,
    /// For each `BLOCK` bytes of the buffer, the segment holding the first.
    block_segment: Vec<u32>,
    /// Bytes of `buffer` no slot owns any more.
    garbage: usize,
}

/// The buffer would pass 4 GiB.
#[derive(Debug)]
pub struct TooLarge;

/// No segment, or no slot (that of a replaced or removed text's segment).
const NONE: u32 = u32::MAX;
/// Ends each field: a byte UTF-8 never holds.
const END: u8 = 0xFF;
/// Candidates are found this many bytes at a time.
const BLOCK: usize = 64;

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
        let (start, index) = (self.buffer.len(), self.segments.len() as u32);
        let end = start + name_key.len() + hostname.len() + 2;
        u32::try_from(end).map_err(|_| TooLarge)?;
        if name_key.is_empty() && hostname.is_empty() {
            return Ok(());
        }
        let slots = self.segment_of.len().max(slot as usize + 1);
        self.segment_of.resize(slots, NONE);
        self.segment_of[slot as usize] = index;
        self.segments.push((start as u32, slot));
        let text = name_key.bytes().chain([END]).chain(hostname.bytes());
        self.buffer.extend(text.chain([END]));
        self.block_segment.resize(end.div_ceil(BLOCK), index);
        Ok(())
    }

    /// Drops the slot's text.
    pub fn remove(&mut self, slot: u32) {
        let index = self.segment_of.get_mut(slot as usize);
        let old = index.map_or(NONE, |index| std::mem::replace(index, NONE)) as usize;
        let end = self.start(old + 1);
        if let Some((start, slot)) = self.segments.get_mut(old) {
            *slot = NONE;
            self.garbage += end - *start as usize;
        }
    }

    /// The slots whose name or hostname contains `needle`, as a bitmap over `slots` slots
    /// (bit `s % 64` of word `s / 64`), from one scan on this thread (README, "How the host
    /// list is answered": why one). Candidates (the needle's first and last bytes at their
    /// distance) are found a block at a time; each is compared in full and mapped to its
    /// text, whose other candidates are skipped.
    pub fn scan(&self, needle: &[u8], slots: usize) -> Vec<u64> {
        let mut found = vec![0u64; slots.div_ceil(64)];
        let (Some(&first), Some(&last)) = (needle.first(), needle.last()) else {
            return found;
        };
        let (text, tail, mut position) = (&self.buffer, needle.len() - 1, 0);
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
                let mut segment = self.block_segment[at / BLOCK] as usize;
                let ahead = self.segments[segment + 1..].iter();
                segment += ahead.take_while(|(start, _)| *start as usize <= at).count();
                // `NONE`, a replaced text's slot, is past the bitmap.
                let slot = self.segments[segment].1 as usize;
                if let Some(word) = found.get_mut(slot / 64) {
                    *word |= 1 << (slot % 64);
                }
                let skip = self.start(segment + 1) - block;
                // Later candidates in this text add nothing.
                candidates &= u64::MAX.checked_shl(skip as u32).unwrap_or(0);
                position = position.max(block + skip);
            }
        }
        found
    }

    /// True once most of the buffer is unowned text (the list then reads everything again).
    pub fn wasteful(&self) -> bool {
        self.garbage > self.buffer.len() / 2
    }

    /// Field `index` (0 the name, 1 the hostname) of the slot's text, or empty.
    fn field(&self, slot: u32, index: usize) -> &[u8] {
        let segment = *self.segment_of.get(slot as usize).unwrap_or(&NONE) as usize;
        let text = &self.buffer[self.start(segment)..self.start(segment + 1)];
        let mut fields = text.split(|byte| *byte == END);
        fields.nth(index).unwrap_or_default()
    }

    /// Where segment `index` starts; past the last one, the buffer's end.
    fn start(&self, index: usize) -> usize {
        let start = self.segments.get(index).map(|(start, _)| *start as usize);
        start.unwrap_or(self.buffer.len())
    }
}

/// Bit `i` is set when `firsts[i] == first` and `lasts[i] == last`. Plain loops over fixed
/// arrays, which the compiler turns into vector compares: no `unsafe`, no crate.
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

    /// What the scan finds, as slots.
    fn found(text: &SearchText, needle: &str) -> Vec<u32> {
        let words = text.scan(needle.as_bytes(), text.segment_of.len());
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
    /// longer than a block), random needles, half of them cut from the texts, find exactly
    /// what `contains` finds.
    #[test]
    fn a_scan_finds_what_contains_finds_after_random_puts_and_removes() {
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
                assert_eq!(
                    found(&text, &needle),
                    contains(&hosts, &needle),
                    "{needle:?}"
                );
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
