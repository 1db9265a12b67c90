//! A `Query` printed back in canonical form (docs/query.md, "Canonical form"): terms in order,
//! one space apart, keys lowercase, values normalised and quoted only when they must be.
//!
//! Invariants: `parse(&describe(q)) == q` for every `q` that `parse` gives.

use crate::model::query::value::{KeyName, HAS, UNITS};
use crate::model::query::{Age, HostPattern, Is, Predicate, Query, Term};

/// The canonical text of `query`.
pub fn describe(query: &Query) -> String {
    let terms: Vec<String> = query.terms.iter().map(term).collect();
    terms.join(" ")
}

fn term(term: &Term) -> String {
    let sign = if term.negated { "-" } else { "" };
    let Some(first) = term.alternatives.first() else {
        return String::new();
    };
    if let Predicate::Word(word) = first {
        return format!("{sign}{}", as_word(word));
    }
    let values: Vec<String> = term.alternatives.iter().map(value).collect();
    format!("{sign}{}:{}", key(first).name(), values.join(","))
}

/// The key a (non-word) predicate is written with.
fn key(predicate: &Predicate) -> KeyName {
    match predicate {
        Predicate::Word(_) | Predicate::Notes(_) => KeyName::Notes,
        Predicate::Tag(_) => KeyName::Tag,
        Predicate::Group(_) => KeyName::Group,
        Predicate::Host(_) => KeyName::Host,
        Predicate::User(_) => KeyName::User,
        Predicate::Port { .. } => KeyName::Port,
        Predicate::Identity(_) => KeyName::Identity,
        Predicate::Key(_) => KeyName::Key,
        Predicate::Via(_) => KeyName::Via,
        Predicate::Has(_) => KeyName::Has,
        Predicate::Is(_) => KeyName::Is,
        Predicate::Used(_) => KeyName::Used,
        Predicate::Created(_) => KeyName::Created,
    }
}

/// One value of a `key:` term, quoted when it must be.
fn value(predicate: &Predicate) -> String {
    match predicate {
        Predicate::Word(text)
        | Predicate::Notes(text)
        | Predicate::Tag(text)
        | Predicate::User(text) => as_value(text),
        Predicate::Group(path) => {
            let names: Vec<&str> = path.names.iter().map(|name| name.text.as_str()).collect();
            as_value(&names.join("/"))
        }
        Predicate::Host(HostPattern::Glob(glob)) => as_value(&glob.text),
        Predicate::Host(HostPattern::Cidr { network, prefix }) => {
            let width = if network.is_ipv4() { 32 } else { 128 };
            if *prefix == width {
                network.to_string()
            } else {
                format!("{network}/{prefix}")
            }
        }
        Predicate::Port { first, last } if first == last => first.to_string(),
        Predicate::Port { first, last } => format!("{first}-{last}"),
        Predicate::Identity(name) | Predicate::Key(name) | Predicate::Via(name) => {
            as_value(&name.text)
        }
        Predicate::Has(has) => {
            let found = HAS.iter().find(|(_, known)| known == has);
            found.map_or("", |(name, _)| name).to_owned()
        }
        Predicate::Is(Is::Favorite) => "favorite".to_owned(),
        Predicate::Used(age) | Predicate::Created(age) => as_age(*age),
    }
}

/// `<N<unit>` / `>N<unit>` in the largest unit that divides the seconds, or `never`.
fn as_age(age: Age) -> String {
    let (sign, seconds) = match age {
        Age::Never => return "never".to_owned(),
        Age::Within(seconds) => ('<', seconds),
        Age::Older(seconds) => ('>', seconds),
    };
    let (unit, size) = UNITS
        .iter()
        .find(|(_, size)| seconds % size == 0)
        .copied()
        .unwrap_or(('m', 60));
    format!("{sign}{}{unit}", seconds / size)
}

/// A value, quoted when empty or holding whitespace, a quote or a comma.
fn as_value(text: &str) -> String {
    let plain = !text.is_empty()
        && !text
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == ',');
    if plain {
        text.to_owned()
    } else {
        in_quotes(text)
    }
}

/// A word, quoted when it would otherwise read as something else: empty, holding whitespace
/// or a quote, starting with `-`, or starting with letters and a colon (a key).
fn as_word(text: &str) -> String {
    let letters = text.chars().take_while(char::is_ascii_alphabetic).count();
    let quote = text.is_empty()
        || text.starts_with('-')
        || text.chars().any(|c| c.is_whitespace() || c == '"')
        || (letters > 0 && text.chars().nth(letters) == Some(':'));
    if quote {
        in_quotes(text)
    } else {
        text.to_owned()
    }
}

/// `text` between quotes, its quotes and backslashes escaped.
fn in_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}
