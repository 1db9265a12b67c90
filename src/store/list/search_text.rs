//! The search text: every host's `name_key` and lowercased hostname, in blocks of `BLOCK`
//! slots, scanned for a term (docs/api.md, API: Hosts, "List": a case-insensitive substring of
//! name or hostname; "How the host list is answered": why a scan). The sorts read their
//! text keys here too.
//!
//! Invariants: a slot's text is its name, `END`, its hostname, `END` (nothing without a
//! host), and UTF-8 never holds `END`, so a match never spans two fields or two hosts; the
//! text holds no secret.

/// Ends each field: a byte UTF-8 never holds.
const END: u8 = 0xFF;
/// Candidates are found this many positions at a time; each block ends with as many `END`s.
const PAD: usize = 64;
/// Slots a block: large enough to scan at memory speed, small enough that a changed text
/// moves little (every size in unit tests, so they cross blocks).
const BLOCK: usize = if cfg!(test) { 64 } else { 4096 };

/// The texts of slots `BLOCK b` to `BLOCK (b + 1) - 1` one after another in block `b`, each
/// from its start to the next one's, then `PAD` bytes of `END` (so the scan reads whole
/// windows).
#[derive(Default)]
pub struct SearchText {
    blocks: Vec<Vec<u8>>,
    starts: Vec<u32>,
}

impl SearchText {
    /// The slot's `name_key` (`field` 0) or lowercased hostname (1); empty without a text.
    pub fn field(&self, slot: u32, field: usize) -> &[u8] {
        let (block, range) = (
            self.blocks.get(slot as usize / BLOCK),
            self.range(slot as usize),
        );
        let text = block.map_or(&[][..], |block| &block[range]);
        text.split(|byte| *byte == END)
            .nth(field)
            .unwrap_or_default()
    }

    /// Sets the slot's text; an empty name and hostname leave none.
    pub fn put(&mut self, slot: u32, name_key: &str, hostname: &str) {
        let (slot, block) = (slot as usize, slot as usize / BLOCK);
        if self.blocks.len() <= block {
            self.blocks.resize_with(block + 1, || vec![END; PAD]);
        }
        while self.starts.len() <= slot {
            let end = self.blocks[self.starts.len() / BLOCK].len() - PAD;
            self.starts.push(end as u32);
        }
        let mut text = [name_key.as_bytes(), &[END], hostname.as_bytes(), &[END]].concat();
        if text.len() == 2 {
            text.clear();
        }
        let range = self.range(slot);
        let grown = text.len() as i64 - range.len() as i64;
        self.blocks[block].splice(range, text);
        let last = self.starts.len().min((block + 1) * BLOCK);
        for start in &mut self.starts[slot + 1..last] {
            *start = (i64::from(*start) + grown) as u32;
        }
    }

    /// Gives the blocks back their spare room (after everything was read).
    pub fn shrink(&mut self) {
        self.blocks.iter_mut().for_each(Vec::shrink_to_fit);
    }

    /// The slots whose name or hostname contains `needle`, as a bitmap (bit `s % 64` of word
    /// `s / 64`). Candidates (the needle's first and last bytes at their distance) are found
    /// 64 at a time; each is compared in full and mapped to its slot, whose later candidates
    /// are skipped.
    pub fn scan(&self, needle: &[u8]) -> Vec<u64> {
        let mut found = vec![0u64; self.starts.len().div_ceil(64)];
        let (Some(&first), Some(&last)) = (needle.first(), needle.last()) else {
            return found;
        };
        let tail = needle.len() - 1;
        for (block, (text, starts)) in self
            .blocks
            .iter()
            .zip(self.starts.chunks(BLOCK))
            .enumerate()
        {
            let (mut position, len, mut slot) = (0, text.len() - PAD, 0);
            while position + tail < len {
                let at = position;
                let windows = (text[at..].first_chunk(), text[at + tail..].first_chunk());
                let (Some(firsts), Some(lasts)) = windows else {
                    break;
                };
                let mut candidates = block_candidates(firsts, lasts, first, last);
                position += PAD;
                while candidates != 0 {
                    let hit = at + candidates.trailing_zeros() as usize;
                    candidates &= candidates - 1;
                    if text[hit..=hit + tail] != *needle {
                        continue;
                    }
                    // The slot holding `hit`, searched from the last one found (hits come in
                    // order; a block's first text starts at 0), over 1, 2, 4... slots ahead.
                    let (ahead, mut reach) = (&starts[slot..], 1);
                    while ahead.get(reach).is_some_and(|start| *start as usize <= hit) {
                        reach *= 2;
                    }
                    let ahead = &ahead[..reach.min(ahead.len())];
                    slot += ahead.partition_point(|start| *start as usize <= hit) - 1;
                    let end = starts.get(slot + 1).map_or(len, |end| *end as usize);
                    let bit = block * BLOCK + slot;
                    found[bit / 64] |= 1 << (bit % 64);
                    // Later candidates in this text add nothing.
                    candidates &= u64::MAX.checked_shl((end - at) as u32).unwrap_or(0);
                    position = position.max(end);
                }
            }
        }
        found
    }

    /// Where slot `slot`'s text is in its block.
    fn range(&self, slot: usize) -> std::ops::Range<usize> {
        let Some(start) = self.starts.get(slot) else {
            return 0..0;
        };
        let next = self
            .starts
            .get(slot + 1)
            .filter(|_| !(slot + 1).is_multiple_of(BLOCK));
        let end = self.blocks[slot / BLOCK].len() - PAD;
        *start as usize..next.map_or(end, |next| *next as usize)
    }
}

/// Bit `i` is set when `firsts[i] == first` and `lasts[i] == last`. Plain loops over fixed
/// arrays, which the compiler turns into vector compares: no `unsafe`, no crate.
fn block_candidates(firsts: &[u8; PAD], lasts: &[u8; PAD], first: u8, last: u8) -> u64 {
    let mut hits = [0u8; 64];
    for ((hit, a), b) in hits.iter_mut().zip(firsts).zip(lasts) {
        *hit = u8::from(*a == first) & u8::from(*b == last);
    }
    let mut words = [0u64; 8];
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
    use crate::store::list::search_text::SearchText;

    /// What the scan finds, as slots.
    fn found(text: &SearchText, needle: &str) -> Vec<u32> {
        let words = text.scan(needle.as_bytes());
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
            text.put(slot, &name, &hostname);
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
                    text.put(slot as u32, "", "");
                } else {
                    text.put(slot as u32, name, hostname);
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

    /// Renames, deletes and re-adds are found and old texts never are, and a text replaced
    /// leaves nothing behind: the blocks hold exactly the slots' texts.
    #[test]
    fn a_scan_follows_puts_and_removes_and_replaced_texts_leave_nothing() {
        let mut text = SearchText::default();
        for (slot, name) in [(1, "web-1"), (2, "db-2"), (3, "web-3")] {
            text.put(slot, name, "host.example");
        }
        assert_eq!(found(&text, "web"), vec![1, 3]);
        text.put(1, "renamed", "h");
        text.put(3, "", "");
        assert_eq!(found(&text, "web"), Vec::<u32>::new());
        assert_eq!(found(&text, "host.ex"), vec![2]);
        text.put(3, "web-again", "h");
        text.put(130, "web-130", "h");
        for round in 0..40 {
            text.put(2, &format!("db-{round}"), "host.example");
        }
        assert_eq!(found(&text, "web"), vec![3, 130]);
        assert_eq!(found(&text, "db-39"), vec![2]);
        assert_eq!(found(&text, "db-38"), Vec::<u32>::new());
        assert_eq!(text.field(1, 0), b"renamed");
        assert_eq!(text.field(2, 1), b"host.example");
        assert_eq!(text.field(4, 0), b"", "a slot never put has no text");
        assert_eq!(text.field(999, 1), b"", "nor a slot past the last block");
        let held: usize = text
            .blocks
            .iter()
            .map(|block| block.len() - super::PAD)
            .sum();
        let texts = [
            "renamed",
            "h",
            "db-39",
            "host.example",
            "web-again",
            "h",
            "web-130",
            "h",
        ];
        assert_eq!(held, texts.iter().map(|text| text.len() + 1).sum::<usize>());
    }
}
