//! The keys of the query language and the checking of each key's values (docs/query.md,
//! "Keys"): text in, a normalised `Predicate` or the reason it is refused out.
//!
//! Invariants: pure; a refusal's message quotes at most the faulty value (cut to
//! `QUOTE_CHARS`), and the hint says the forms the key takes.

use std::net::IpAddr;

use crate::model::fold;
use crate::model::query::{
    Age, Caseless, Glob, GlobPart, GroupPath, Has, HostPattern, Is, Predicate,
};

/// The longest piece of the query an error quotes, in characters.
pub const QUOTE_CHARS: usize = 40;

/// The largest number a `used:`/`created:` value takes, in any unit.
pub const MAX_AGE_NUMBER: i64 = 99_999;

/// A key of the language (`tag`, `group`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyName {
    Notes,
    Tag,
    Group,
    Host,
    User,
    Port,
    Identity,
    Key,
    Via,
    Has,
    Is,
    Used,
    Created,
}

/// Every key with its name, in the order docs/query.md lists them (and suggestions prefer).
pub const KEYS: [(&str, KeyName); 13] = [
    ("tag", KeyName::Tag),
    ("group", KeyName::Group),
    ("host", KeyName::Host),
    ("user", KeyName::User),
    ("port", KeyName::Port),
    ("identity", KeyName::Identity),
    ("key", KeyName::Key),
    ("via", KeyName::Via),
    ("has", KeyName::Has),
    ("is", KeyName::Is),
    ("used", KeyName::Used),
    ("created", KeyName::Created),
    ("notes", KeyName::Notes),
];

/// The `has:` values by name.
pub const HAS: [(&str, Has); 5] = [
    ("forwards", Has::Forwards),
    ("password", Has::Password),
    ("key", Has::Key),
    ("notes", Has::Notes),
    ("chain", Has::Chain),
];

/// Units of `used:`/`created:`, largest first (as `describe` prefers them), in seconds.
pub const UNITS: [(char, i64); 4] = [('w', 604_800), ('d', 86_400), ('h', 3_600), ('m', 60)];

impl KeyName {
    /// The key's name as the language spells it.
    pub fn name(self) -> &'static str {
        KEYS.iter()
            .find(|(_, key)| *key == self)
            .map_or("", |(name, _)| name)
    }

    /// The key's value forms, for an error's hint.
    pub fn expects(self) -> &'static str {
        match self {
            KeyName::Notes => "notes: expects a word or \"quoted words\" to find in the notes",
            KeyName::Tag => "tag: expects a tag, exactly as written (case-sensitive)",
            KeyName::Group => "group: expects a group path from the top, such as \"DC1/Web\"",
            KeyName::Host => {
                "host: expects a hostname glob with * and ? (web-*.example.com) or a network \
                 such as 10.0.0.0/8 or 2001:db8::/32"
            }
            KeyName::User => "user: expects a username, exactly as written",
            KeyName::Port => "port: expects a port 1-65535 or a range such as 2200-2299",
            KeyName::Identity => "identity: expects an identity's name",
            KeyName::Key => "key: expects a key's name",
            KeyName::Via => "via: expects the name of a jump host",
            KeyName::Has => "has: expects forwards, password, key, notes or chain",
            KeyName::Is => "is: expects favorite",
            KeyName::Used => "used: expects <7d, >30d or never (units m, h, d, w)",
            KeyName::Created => "created: expects <7d or >30d (units m, h, d, w)",
        }
    }
}

/// The key named `name` (any case).
pub fn key_named(name: &str) -> Option<KeyName> {
    let name = name.to_ascii_lowercase();
    KEYS.iter()
        .find(|(known, _)| *known == name)
        .map(|(_, key)| *key)
}

/// The known key closest to `name` when it is a likely typo (docs/query.md, "Errors").
pub fn suggest(name: &str) -> Option<&'static str> {
    let name: Vec<char> = name.to_ascii_lowercase().chars().collect();
    let reach = if name.len() <= 2 { 1 } else { 2 };
    KEYS.iter()
        .map(|(known, _)| (distance(&name, &known.chars().collect::<Vec<_>>()), *known))
        .filter(|(distance, _)| *distance <= reach)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

/// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`.
fn distance(a: &[char], b: &[char]) -> usize {
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    rows[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// `text` in backquotes for a message, cut to `QUOTE_CHARS` characters.
pub fn quoted(text: &str) -> String {
    if text.chars().count() <= QUOTE_CHARS {
        return format!("`{text}`");
    }
    let cut: String = text.chars().take(QUOTE_CHARS).collect();
    format!("`{cut}…`")
}

/// Checks one value of `key` and gives its predicate, or the message saying why not.
pub fn predicate(key: KeyName, text: &str) -> Result<Predicate, String> {
    if text.is_empty() {
        return Err(format!("`{}:` needs a value", key.name()));
    }
    let bad = || format!("bad value {} for `{}`", quoted(text), key.name());
    match key {
        KeyName::Notes => Ok(Predicate::Notes(text.to_lowercase())),
        KeyName::Tag => Ok(Predicate::Tag(text.to_owned())),
        KeyName::User => Ok(Predicate::User(text.to_owned())),
        KeyName::Group => group_path(text).map(Predicate::Group).ok_or_else(bad),
        KeyName::Host => host_pattern(text).map(Predicate::Host).ok_or_else(bad),
        KeyName::Port => port_range(text)
            .map(|(first, last)| Predicate::Port { first, last })
            .ok_or_else(bad),
        KeyName::Identity => caseless(text).map(Predicate::Identity).ok_or_else(bad),
        KeyName::Key => caseless(text).map(Predicate::Key).ok_or_else(bad),
        KeyName::Via => caseless(text).map(Predicate::Via).ok_or_else(bad),
        KeyName::Has => {
            let text = text.to_lowercase();
            let found = HAS.iter().find(|(name, _)| *name == text);
            found.map(|(_, has)| Predicate::Has(*has)).ok_or_else(bad)
        }
        KeyName::Is => match text.to_lowercase().as_str() {
            "favorite" => Ok(Predicate::Is(Is::Favorite)),
            _ => Err(bad()),
        },
        KeyName::Used => age(text, true).map(Predicate::Used).ok_or_else(bad),
        KeyName::Created => age(text, false).map(Predicate::Created).ok_or_else(bad),
    }
}

/// A name compared caselessly: trimmed, not empty.
pub fn caseless(text: &str) -> Option<Caseless> {
    let text = text.trim();
    (!text.is_empty()).then(|| Caseless {
        text: text.to_owned(),
        key: fold::key(text),
    })
}

/// `A/B/C`: names from the top, each trimmed and not empty.
fn group_path(text: &str) -> Option<GroupPath> {
    let names: Option<Vec<Caseless>> = text.split('/').map(caseless).collect();
    names.map(|names| GroupPath { names })
}

/// A network (`address/prefix`), an IP literal (a network of one address) or a glob.
pub fn host_pattern(text: &str) -> Option<HostPattern> {
    if let Some((address, prefix)) = text.split_once('/') {
        let address: IpAddr = address.parse().ok()?;
        let prefix = digits(prefix)?;
        let width = if address.is_ipv4() { 32 } else { 128 };
        let prefix = u8::try_from(prefix)
            .ok()
            .filter(|prefix| *prefix <= width)?;
        return Some(HostPattern::Cidr {
            network: masked(address, prefix),
            prefix,
        });
    }
    if let Ok(address) = text.parse::<IpAddr>() {
        let prefix = if address.is_ipv4() { 32 } else { 128 };
        return Some(HostPattern::Cidr {
            network: address,
            prefix,
        });
    }
    Some(HostPattern::Glob(glob(text)))
}

/// `address` with every bit past the first `prefix` cleared (a prefix longer than the
/// address, from a network of the other family, clears nothing).
pub fn masked(address: IpAddr, prefix: u8) -> IpAddr {
    let prefix = u32::from(prefix);
    match address {
        IpAddr::V4(v4) => {
            let mask = u32::MAX
                .checked_shl(32u32.saturating_sub(prefix))
                .unwrap_or(0);
            IpAddr::V4((u32::from(v4) & mask).into())
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX
                .checked_shl(128u32.saturating_sub(prefix))
                .unwrap_or(0);
            IpAddr::V6((u128::from(v6) & mask).into())
        }
    }
}

/// The glob of `text`, lowercased, each run of `*` as one.
pub fn glob(text: &str) -> Glob {
    let mut parts: Vec<GlobPart> = Vec::new();
    for c in text.to_lowercase().chars() {
        let part = match c {
            '*' => GlobPart::AnyRun,
            '?' => GlobPart::AnyOne,
            c => GlobPart::Char(c),
        };
        if !(part == GlobPart::AnyRun && parts.last() == Some(&GlobPart::AnyRun)) {
            parts.push(part);
        }
    }
    let text = parts
        .iter()
        .map(|part| match part {
            GlobPart::Char(c) => *c,
            GlobPart::AnyRun => '*',
            GlobPart::AnyOne => '?',
        })
        .collect();
    Glob { text, parts }
}

/// A number of plain ASCII digits (at most 9 of them).
fn digits(text: &str) -> Option<u32> {
    let plain = !text.is_empty() && text.len() <= 9 && text.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| text.parse().ok()).flatten()
}

/// `N` or `N-M`, each 1-65535, `N <= M`.
fn port_range(text: &str) -> Option<(u16, u16)> {
    let port = |text: &str| {
        let number = digits(text)?;
        u16::try_from(number).ok().filter(|port| *port >= 1)
    };
    let (first, last) = match text.split_once('-') {
        Some((first, last)) => (port(first)?, port(last)?),
        None => (port(text)?, port(text)?),
    };
    (first <= last).then_some((first, last))
}

/// `<N<unit>`, `>N<unit>` (N 1-99,999; units m h d w, any case), or `never` when allowed.
fn age(text: &str, never: bool) -> Option<Age> {
    let text = text.to_ascii_lowercase();
    if text == "never" {
        return never.then_some(Age::Never);
    }
    let mut chars = text.chars();
    let sign = chars.next()?;
    let unit = chars.next_back()?;
    let seconds = UNITS.iter().find(|(name, _)| *name == unit)?.1;
    let number = i64::from(digits(chars.as_str())?);
    if !(1..=MAX_AGE_NUMBER).contains(&number) {
        return None;
    }
    match sign {
        '<' => Some(Age::Within(number * seconds)),
        '>' => Some(Age::Older(number * seconds)),
        _ => None,
    }
}
