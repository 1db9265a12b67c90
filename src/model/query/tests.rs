//! Tests of the query language (docs/query.md): each key's edges on both sides, quoting,
//! negation, alternatives, the column of every kind of error, the canonical form's round
//! trip over random queries, and a fuzz of the parser.

#![allow(clippy::unwrap_used)]

use std::panic;

use crate::fuzz::{settings, Rng};
use crate::model::query::value::{predicate, KEYS};
use crate::model::query::{
    describe, matches, parse, Age, Hit, HostFacts, Predicate, Query, QueryError, Term,
    MAX_ALTERNATIVES, MAX_CHARS, MAX_TERMS,
};

const NOW: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

/// A grouped, key-authenticated host used a day ago.
fn host() -> HostFacts {
    HostFacts {
        name: "Web-1".into(),
        hostname: "WEB1.Example.com".into(),
        notes: "Rebooted after the Kernel update".into(),
        tags: vec!["prod".into(), "nginx".into()],
        group_path: vec!["DC1".into(), "Web".into(), "Blue".into()],
        group_ids: vec!["g1".into(), "g2".into(), "g3".into()],
        user: Some("deploy".into()),
        port: 2222,
        identity: Some("OPS Team".into()),
        keys: vec!["Deploy Key".into(), "backup".into()],
        chain: vec!["Bastion".into(), "inner".into()],
        has_password: false,
        has_forwards: true,
        is_favorite: true,
        last_used_at: Some(NOW - DAY),
        created_at: NOW - 100 * DAY,
        now: NOW,
    }
}

fn query(text: &str) -> Query {
    match parse(text) {
        Ok(query) => query,
        Err(error) => panic!("{text:?} refused: {error}"),
    }
}

fn error(text: &str) -> QueryError {
    match parse(text) {
        Ok(query) => panic!("{text:?} accepted: {query:?}"),
        Err(error) => error,
    }
}

fn hits(text: &str, facts: &HostFacts) -> bool {
    matches(&query(text), facts).is_some()
}

/// The host with `change` applied.
fn with(change: impl FnOnce(&mut HostFacts)) -> HostFacts {
    let mut facts = host();
    change(&mut facts);
    facts
}

#[test]
fn a_bare_word_is_a_caseless_substring_of_name_or_hostname_as_search_is() {
    let facts = host();
    assert!(hits("web", &facts));
    assert!(hits("EXAMPLE.COM", &facts));
    assert!(hits("b-1", &facts));
    assert!(!hits("kernel", &facts), "a word never reads the notes");
    assert!(!hits("prod", &facts), "a word never reads the tags");
    assert!(!hits("web1.example.org", &facts));
    // Never across the two fields.
    assert!(!hits("web-1web1", &facts));
    // Lowercased with Unicode's rules on both sides.
    let greek = with(|facts| facts.name = "ΟΔΟΣ".into());
    assert!(hits("ΟΔΟΣ", &greek));
    assert!(hits("οδος", &greek), "the same final sigma on both sides");
    assert!(hits(
        "straSSe",
        &with(|facts| facts.name = "STRASSE".into())
    ));
}

#[test]
fn hits_of_words_are_character_offsets_into_the_original_fields() {
    let found = matches(&query("EB"), &host()).unwrap();
    let hit = |field, start, end| Hit { field, start, end };
    assert_eq!(found, vec![hit("name", 1, 3), hit("hostname", 1, 3)]);
    // `İ` lowercases to two characters: offsets still count the name's own characters.
    let istanbul = with(|facts| facts.name = "İstanbul-İstanbul".into());
    let found = matches(&query("stan"), &istanbul).unwrap();
    assert_eq!(found, vec![hit("name", 1, 5), hit("name", 10, 14)]);
    // Non-text predicates mark their key with an empty range; negated terms add nothing.
    let found = matches(&query("is:favorite -tag:old host:web1.*"), &host()).unwrap();
    assert_eq!(found, vec![hit("is", 0, 0), hit("hostname", 0, 16)]);
}

#[test]
fn notes_match_a_caseless_substring_of_the_notes_only() {
    let facts = host();
    assert!(hits("notes:kernel", &facts));
    assert!(hits("notes:\"after THE\"", &facts));
    assert!(!hits("notes:web", &facts));
    assert!(!hits("notes:kernels", &facts));
    let found = matches(&query("notes:kernel"), &facts).unwrap();
    assert_eq!(
        found,
        vec![Hit {
            field: "notes",
            start: 19,
            end: 25
        }]
    );
}

#[test]
fn tag_is_exact_and_case_sensitive_and_commas_mean_any() {
    let facts = host();
    assert!(hits("tag:prod", &facts));
    assert!(!hits("tag:Prod", &facts));
    assert!(!hits("tag:pro", &facts));
    assert!(!hits("tag:prods", &facts));
    assert!(hits("tag:legacy,nginx", &facts));
    assert!(!hits("tag:legacy,old", &facts));
    let comma = with(|facts| facts.tags = vec!["a,b".into()]);
    assert!(hits("tag:\"a,b\"", &comma));
    assert!(!hits("tag:a,b", &comma));
}

#[test]
fn group_matches_the_path_from_the_top_and_every_group_below_it_caselessly() {
    let facts = host();
    assert!(hits("group:DC1", &facts));
    assert!(hits("group:dc1/WEB", &facts));
    assert!(hits("group:\" DC1 / Web / Blue \"", &facts));
    assert!(
        !hits("group:DC1/Web/Blue/Deep", &facts),
        "deeper than the host's group"
    );
    assert!(!hits("group:Web", &facts), "paths start at the top");
    assert!(!hits("group:DC1/Blue", &facts));
    assert!(!hits("group:DC1", &with(|facts| facts.group_path.clear())));
    let german = with(|facts| facts.group_path = vec!["Straße".into()]);
    assert!(
        hits("group:STRASSE", &german),
        "names compare as groups' names do"
    );
    for (text, column) in [("group:DC1//Web", 7), ("group:/Web", 7), ("group:Web/", 7)] {
        assert_eq!(error(text).column, column, "{text}");
    }
}

#[test]
fn host_globs_match_the_whole_hostname_caselessly() {
    let named = |hostname: &str| with(|facts| facts.hostname = hostname.into());
    assert!(hits("host:web-*.example.com", &named("WEB-1.Example.com")));
    assert!(!hits("host:web-*.example.com", &named("web-1.example.org")));
    assert!(hits("host:*.com", &named("a.b.com")), "`*` crosses dots");
    assert!(hits("host:web*", &named("web")), "`*` may be empty");
    assert!(hits("host:web?.x", &named("web1.x")));
    assert!(
        !hits("host:web?.x", &named("web12.x")),
        "`?` is exactly one"
    );
    assert!(!hits("host:web?.x", &named("web.x")));
    assert!(!hits("host:web", &named("web1")), "the whole hostname");
    assert!(hits("host:*a*b", &named("xaaab")));
    assert!(!hits("host:*a*b", &named("xaaba")));
    assert!(hits("host:***", &named("")));
}

#[test]
fn host_networks_match_ip_literal_hostnames_of_their_family() {
    let named = |hostname: &str| with(|facts| facts.hostname = hostname.into());
    assert!(hits("host:10.0.0.0/8", &named("10.255.255.255")));
    assert!(hits("host:10.0.0.0/8", &named("10.0.0.0")));
    assert!(!hits("host:10.0.0.0/8", &named("11.0.0.0")));
    assert!(!hits("host:10.0.0.0/8", &named("9.255.255.255")));
    assert!(!hits("host:10.0.0.0/8", &named("10.example.com")));
    assert!(!hits("host:10.0.0.0/8", &named("::ffff:10.0.0.1")));
    assert!(
        !hits("host:2001:db8::/64", &named("10.0.0.1")),
        "a long prefix, other family"
    );
    assert!(!hits("host:::/0", &named("10.0.0.1")));
    assert!(hits("host:0.0.0.0/0", &named("192.0.2.1")));
    assert!(!hits("host:0.0.0.0/0", &named("::1")));
    assert!(hits("host:2001:db8::/32", &named("2001:DB8:ffff::1")));
    assert!(!hits("host:2001:db8::/32", &named("2001:db9::1")));
    assert!(
        hits("host:10.0.0.1", &named("10.0.0.1")),
        "an address is a /32"
    );
    assert!(!hits("host:10.0.0.1", &named("10.0.0.10")));
    assert!(
        hits("host:2001:db8::1", &named("2001:db8:0::1")),
        "compared as addresses"
    );
    // Host bits are cleared; the prefix is checked against the family.
    assert_eq!(describe(&query("host:10.1.2.3/8")), "host:10.0.0.0/8");
    assert!(parse("host:10.0.0.0/32").is_ok());
    assert!(parse("host:::/128").is_ok());
    for text in [
        "host:10.0.0.0/33",
        "host:::/129",
        "host:10.0.0/8",
        "host:10.0.0.0/",
        "host:10.0.0.0/+8",
    ] {
        assert_eq!(error(text).column, 6, "{text}");
    }
}

#[test]
fn user_is_the_effective_username_exactly() {
    assert!(hits("user:deploy", &host()));
    assert!(!hits("user:Deploy", &host()));
    assert!(!hits("user:dep", &host()));
    assert!(!hits("user:deploy", &with(|facts| facts.user = None)));
}

#[test]
fn port_is_the_effective_port_or_an_inclusive_range() {
    let on = |port| with(|facts| facts.port = port);
    assert!(hits("port:2222", &on(2222)));
    assert!(!hits("port:22", &on(2222)));
    assert!(hits("port:2200-2299", &on(2200)));
    assert!(hits("port:2200-2299", &on(2299)));
    assert!(!hits("port:2200-2299", &on(2199)));
    assert!(!hits("port:2200-2299", &on(2300)));
    assert!(hits("port:1", &on(1)));
    assert!(hits("port:65535", &on(65535)));
    assert!(hits("port:22-22", &on(22)));
    for text in [
        "port:0",
        "port:65536",
        "port:2299-2200",
        "port:22-",
        "port:-22",
        "port:+22",
        "port:ssh",
        "port:0x16",
        "port:1-2-3",
    ] {
        let refused = error(text);
        assert_eq!(refused.column, 6, "{text}");
        assert!(refused.hint.contains("1-65535"), "{text}");
    }
}

#[test]
fn identity_key_and_via_compare_names_caselessly_and_whole() {
    let facts = host();
    assert!(hits("identity:\"ops team\"", &facts));
    assert!(!hits("identity:ops", &facts));
    assert!(!hits(
        "identity:\"ops team\"",
        &with(|facts| facts.identity = None)
    ));
    assert!(hits("key:\"DEPLOY KEY\"", &facts));
    assert!(hits("key:Backup", &facts));
    assert!(!hits("key:deploy", &facts));
    assert!(hits("via:bastion", &facts));
    assert!(hits("via:INNER", &facts));
    assert!(!hits("via:bast", &facts));
    assert!(!hits("via:bastion", &with(|facts| facts.chain.clear())));
}

#[test]
fn has_and_is_read_each_flag_on_both_sides() {
    let facts = host();
    let bare = with(|facts| {
        facts.has_forwards = false;
        facts.keys.clear();
        facts.notes.clear();
        facts.chain.clear();
        facts.is_favorite = false;
        facts.has_password = true;
    });
    for (text, on_host, on_bare) in [
        ("has:forwards", true, false),
        ("has:key", true, false),
        ("has:notes", true, false),
        ("has:chain", true, false),
        ("has:password", false, true),
        ("is:favorite", true, false),
        ("HAS:Forwards", true, false),
        ("is:FAVORITE", true, false),
    ] {
        assert_eq!(hits(text, &facts), on_host, "{text}");
        assert_eq!(hits(text, &bare), on_bare, "{text}");
    }
    assert_eq!(error("has:tags").column, 5);
    assert_eq!(error("is:pinned").hint, "is: expects favorite");
}

#[test]
fn used_and_created_compare_ages_strictly_and_never_means_no_use() {
    let used = |at: Option<i64>| with(|facts| facts.last_used_at = at);
    assert!(hits("used:<7d", &used(Some(NOW - 7 * DAY + 1))));
    assert!(!hits("used:<7d", &used(Some(NOW - 7 * DAY))));
    assert!(hits("used:>30d", &used(Some(NOW - 30 * DAY - 1))));
    assert!(!hits("used:>30d", &used(Some(NOW - 30 * DAY))));
    assert!(
        hits("used:<1m", &used(Some(NOW + 3_600))),
        "a time after now is recent"
    );
    assert!(!hits("used:<7d", &used(None)));
    assert!(!hits("used:>7d", &used(None)));
    assert!(hits("used:never", &used(None)));
    assert!(!hits("used:never", &used(Some(0))));
    assert!(
        hits("-used:<7d", &used(None)),
        "never used is not used lately"
    );
    assert!(hits("used:never,<2d", &used(Some(NOW - DAY))));
    let created = |at: i64| with(|facts| facts.created_at = at);
    assert!(hits("created:<2h", &created(NOW - 7_199)));
    assert!(!hits("created:<2h", &created(NOW - 7_200)));
    assert!(hits("created:>1w", &created(NOW - 604_801)));
    assert!(!hits("created:>1w", &created(NOW - 604_800)));
    for (text, seconds) in [
        ("<1m", 60),
        ("<2H", 7_200),
        ("<3d", 3 * DAY),
        ("<4w", 28 * DAY),
    ] {
        let parsed = query(&format!("used:{text}"));
        assert_eq!(
            parsed.terms[0].alternatives,
            vec![Predicate::Used(Age::Within(seconds))]
        );
    }
    assert!(parse("used:<99999w").is_ok());
    for text in [
        "<7", "7d", "<0d", "<100000d", "<7s", "=7d", "<-1d", "<d", "soon", "<1y",
    ] {
        let refused = error(&format!("used:{text}"));
        assert_eq!(refused.column, 6, "{text}");
        assert_eq!(
            refused.hint,
            "used: expects <7d, >30d or never (units m, h, d, w)"
        );
    }
    assert_eq!(error("created:never").column, 9);
}

#[test]
fn negation_excludes_a_term_and_covers_all_its_alternatives() {
    let facts = host();
    assert!(!hits("-tag:prod", &facts));
    assert!(hits("-tag:legacy", &facts));
    assert!(!hits("-tag:legacy,nginx", &facts));
    assert!(hits("-tag:legacy,old", &facts));
    assert!(!hits("-web", &facts));
    assert!(hits("-db", &facts));
    assert!(hits("web -db tag:prod", &facts));
    assert!(!hits("web -tag:prod", &facts), "terms AND together");
    // A second `-` belongs to the word.
    assert_eq!(
        query("--x").terms,
        vec![Term {
            negated: true,
            column: 1,
            alternatives: vec![Predicate::Word("-x".into())]
        }]
    );
    assert!(hits("\"-1\"", &facts), "a quoted word may start with `-`");
}

#[test]
fn quotes_group_words_and_escape_quotes_and_backslashes() {
    let word = |text: &str| query(text).terms[0].alternatives[0].clone();
    assert_eq!(word("\"Web 1\""), Predicate::Word("web 1".into()));
    assert_eq!(
        word(r#""say \"hi\"""#),
        Predicate::Word("say \"hi\"".into())
    );
    assert_eq!(word(r#""a\\b""#), Predicate::Word("a\\b".into()));
    assert_eq!(
        word(r#""a\b""#),
        Predicate::Word("a\\b".into()),
        "other backslashes stay"
    );
    assert_eq!(
        word(r"a\b"),
        Predicate::Word("a\\b".into()),
        "no escapes outside quotes"
    );
    assert_eq!(word("\"tag:x\""), Predicate::Word("tag:x".into()));
    assert_eq!(
        word("a,b"),
        Predicate::Word("a,b".into()),
        "a word's comma is a comma"
    );
    assert_eq!(
        word("fe80::1"),
        Predicate::Word("fe80::1".into()),
        "not letters before `:`"
    );
    assert_eq!(
        word("\" x \""),
        Predicate::Word(" x ".into()),
        "quoted text is not trimmed"
    );
    let tags = query("tag:\"a b\",c,\"d,e\"").terms[0].alternatives.clone();
    let tag = |text: &str| Predicate::Tag(text.into());
    assert_eq!(tags, vec![tag("a b"), tag("c"), tag("d,e")]);
    assert!(hits("\"web-1\" group:\"DC1/Web\"", &host()));
}

#[test]
fn keys_are_case_insensitive() {
    for (name, _) in KEYS {
        let upper = name.to_uppercase();
        let value = match name {
            "port" => "22",
            "has" => "key",
            "is" => "favorite",
            "used" | "created" => "<1d",
            _ => "x",
        };
        assert_eq!(
            query(&format!("{upper}:{value}")),
            query(&format!("{name}:{value}"))
        );
    }
}

#[test]
fn an_empty_or_blank_query_matches_every_host() {
    assert_eq!(query(""), Query::default());
    assert_eq!(query(" \t\n "), Query::default());
    assert_eq!(matches(&query(""), &HostFacts::default()), Some(Vec::new()));
}

#[test]
fn terms_record_their_starting_column_in_characters() {
    let parsed = query("  -tag:a  é \"x y\"");
    let columns: Vec<usize> = parsed.terms.iter().map(|term| term.column).collect();
    assert_eq!(columns, vec![3, 11, 13]);
}

#[test]
fn every_kind_of_error_points_at_its_column() {
    let long = "a".repeat(MAX_CHARS + 1);
    let many_terms = "a ".repeat(MAX_TERMS + 1);
    let values: Vec<String> = (1..=MAX_ALTERNATIVES + 1).map(|n| n.to_string()).collect();
    let many_values = format!("port:{}", values.join(","));
    let seventeenth = 6 + values[..MAX_ALTERNATIVES].join(",").chars().count() + 1;
    let cases: Vec<(&str, usize, &str)> = vec![
        (
            &long,
            MAX_CHARS + 1,
            "the query is longer than 512 characters",
        ),
        ("ab\0", 3, "a NUL character"),
        (&many_terms, 2 * MAX_TERMS + 1, "more than 32 terms"),
        (&many_values, seventeenth, "more than 16 values for `port:`"),
        ("tag:a -", 7, "a `-` with no term after it"),
        ("- x", 1, "a `-` with no term after it"),
        ("é tgs:a", 3, "unknown key `tgs`"),
        ("used:soon", 6, "bad value `soon` for `used`"),
        ("port:22,x", 9, "bad value `x` for `port`"),
        ("tag:", 5, "`tag:` needs a value"),
        ("tag:a,", 7, "`tag:` needs a value"),
        ("tag:,a", 5, "`tag:` needs a value"),
        ("tag:\"\"", 5, "`tag:` needs a value"),
        ("tag:a -tag:", 12, "`tag:` needs a value"),
        ("a \"bc", 3, "a quote that is never closed"),
        ("tag:\"x", 5, "a quote that is never closed"),
        ("ab\"c", 3, "a quote inside a word"),
        ("tag:a\"b", 6, "a quote inside a word"),
        ("\"ab\"c", 5, "a closing quote must end the term"),
        ("tag:\"a\"b", 8, "a closing quote must end the value"),
        ("\"\"", 1, "an empty word"),
    ];
    for (text, column, message) in cases {
        let refused = error(text);
        assert_eq!(
            (refused.column, refused.message.as_str()),
            (column, message),
            "{text:?}"
        );
        assert!(!refused.hint.is_empty(), "{text:?}");
        assert!(column <= text.chars().count() + 1);
    }
    // Exactly at each limit is fine.
    assert!(parse(&"a".repeat(MAX_CHARS)).is_ok());
    assert!(parse(&"a ".repeat(MAX_TERMS)).is_ok());
    let sixteen: Vec<String> = (1..=MAX_ALTERNATIVES).map(|n| n.to_string()).collect();
    assert!(parse(&format!("port:{}", sixteen.join(","))).is_ok());
}

#[test]
fn unknown_keys_suggest_the_nearest_key_or_list_them_all() {
    assert_eq!(error("tgs:a").hint, "did you mean `tag`?");
    assert_eq!(error("TAGS:a").hint, "did you mean `tag`?");
    assert_eq!(error("gruop:a").hint, "did you mean `group`?");
    assert_eq!(error("identiy:a").hint, "did you mean `identity`?");
    assert_eq!(error("ix:a").hint, "did you mean `is`?");
    let far = error("zzzzzz:a");
    assert!(far.hint.contains("tag, group, host"), "{}", far.hint);
    assert!(far.hint.contains("\"a:b\""));
}

#[test]
fn an_error_quotes_at_most_the_faulty_token() {
    let value = "x".repeat(200);
    let refused = error(&format!("tag:ok secret-word used:{value}"));
    let shown = refused.to_string();
    assert!(
        !shown.contains("secret-word") && !shown.contains("tag:ok"),
        "{shown}"
    );
    assert!(shown.contains(&format!("`{}…`", "x".repeat(40))), "{shown}");
    assert!(!shown.contains(&"x".repeat(41)), "{shown}");
    let key = "k".repeat(60);
    let shown = error(&format!("{key}:v")).to_string();
    assert!(!shown.contains(&"k".repeat(41)), "{shown}");
    assert_eq!(
        error("a b tgs:x").to_string(),
        "column 5: unknown key `tgs` (did you mean `tag`?)"
    );
}

#[test]
fn describe_prints_the_canonical_form() {
    let cases = [
        ("TAG:b,\"x y\"   -Web", "tag:b,\"x y\" -web"),
        (
            "used:<14d created:>48h used:<90m",
            "used:<2w created:>2d used:<90m",
        ),
        (
            "host:WEB-**.Example.com host:10.1.2.3/8 host:10.0.0.1/32",
            "host:web-*.example.com host:10.0.0.0/8 host:10.0.0.1",
        ),
        ("port:22-22,2200-2299", "port:22,2200-2299"),
        (
            "group:\" DC1 / Web \" identity:\" ops \"",
            "group:DC1/Web identity:ops",
        ),
        ("\"tag:x\" \"-y\" \"a\\\"b\"", "\"tag:x\" \"-y\" \"a\\\"b\""),
        ("notes:\"Line\\\\Two\"", "notes:line\\two"),
        (
            "has:Key is:Favorite used:NEVER",
            "has:key is:favorite used:never",
        ),
    ];
    for (text, canonical) in cases {
        assert_eq!(describe(&query(text)), canonical, "{text}");
        assert_eq!(query(canonical), query(text), "{text}");
    }
}

/// Characters a random value or word is made of: the grammar's own, spaces, escapes and
/// letters that change under lowercasing or folding.
const CHARS: &[char] = &[
    'a', 'B', 'z', '0', '7', '-', ':', ',', '"', '\\', ' ', '\t', '*', '?', '/', '.', '<', '>',
    'é', 'İ', 'Σ', 'ß', 'ﬁ', '\u{a0}', '#',
];

fn random_text(rng: &mut Rng, longest: usize) -> String {
    (0..=rng.below(longest)).map(|_| *rng.pick(CHARS)).collect()
}

/// A random value for `key`: mostly from the key's own forms, some from random text.
fn random_value(rng: &mut Rng, key: &str) -> String {
    let forms: &[&str] = match key {
        "port" => &["22", "1-65535", "2200-2299", "65535", "8"],
        "has" => &["forwards", "password", "key", "notes", "chain"],
        "is" => &["favorite", "FAVORITE"],
        "used" => &["never", "<7d", ">30d", "<14d", ">120m", "<99999w", ">3h"],
        "created" => &["<7d", ">30d", "<60m", ">1w"],
        "host" => &[
            "10.0.0.0/8",
            "2001:db8::/32",
            "::1",
            "10.1.2.3/9",
            "web-*.x",
            "?a*",
        ],
        "group" => &["DC1/Web", " a / b ", "x"],
        _ => &[],
    };
    match rng.pick_any(forms) {
        Some(form) if rng.below(4) != 0 => (*form).to_owned(),
        _ => random_text(rng, 8),
    }
}

/// A random checked query, built through the same value checks `parse` uses.
fn random_query(rng: &mut Rng) -> Query {
    let (mut terms, count) = (Vec::new(), rng.below(7));
    while terms.len() < count {
        let alternatives = if rng.below(3) == 0 {
            let word = random_text(rng, 8).to_lowercase();
            vec![Predicate::Word(word)]
        } else {
            let (name, key) = *rng.pick(&KEYS);
            let wanted = 1 + rng.below(4);
            let tries = (0..20).map(|_| predicate(key, &random_value(rng, name)));
            tries.filter_map(Result::ok).take(wanted).collect()
        };
        if !alternatives.is_empty() {
            terms.push(Term {
                negated: rng.below(2) == 0,
                column: 1,
                alternatives,
            });
        }
    }
    Query { terms }
}

/// docs/query.md, "Canonical form": printing a query and reading it back gives the same
/// query, and printing is stable, over seeded random queries of every key.
#[test]
fn describe_round_trips_over_seeded_random_queries() {
    let (iterations, seed) = settings("query describe", 0x0DE5_C81B);
    let mut rng = Rng::new(seed);
    for iteration in 0..iterations {
        let original = random_query(&mut rng);
        let text = describe(&original);
        let read = parse(&text).unwrap_or_else(|error| {
            panic!("#{iteration}: {original:?} printed as {text:?} is refused: {error}")
        });
        assert_eq!(read, original, "#{iteration}: {text:?}");
        assert_eq!(describe(&read), text, "#{iteration}");
    }
}

/// Pieces of real queries the fuzzer splices together.
const PIECES: &[&str] = &[
    "tag:",
    "group:",
    "host:",
    "user:",
    "port:",
    "identity:",
    "key:",
    "via:",
    "has:",
    "is:",
    "used:",
    "created:",
    "notes:",
    "TAG:",
    "tgs:",
    "-",
    "\"",
    "\\\"",
    "\\",
    ",",
    " ",
    ":",
    "*",
    "?",
    "/",
    "<7d",
    ">30d",
    "never",
    "10.0.0.0/8",
    "::/0",
    "2200-2299",
    "65536",
    "favorite",
    "forwards",
    "DC1/Web",
    "web 1",
    "é",
    "İ",
    "\t",
];

/// docs/query.md, "Errors": the parser never panics, every refusal's column lies within
/// `1..=chars + 1`, and every accepted query round-trips through `describe`, over seeded
/// random text spliced from the grammar's tokens and random characters.
#[test]
fn query_parser_never_panics_on_seeded_random_input() {
    let (iterations, seed) = settings("query parser", 0x0051_E7AB);
    let mut rng = Rng::new(seed);
    for iteration in 0..iterations {
        let mut text = String::new();
        let longest = if rng.below(50) == 0 { 300 } else { 16 };
        for _ in 0..rng.below(longest) {
            match rng.below(6) {
                0 => text.push(char::from_u32(rng.below(0x500) as u32).unwrap_or('x')),
                _ => text.push_str(rng.pick::<&str>(PIECES)),
            }
        }
        let outcome = panic::catch_unwind(|| match parse(&text) {
            Ok(parsed) => {
                // Lowercasing may lengthen a query (`İ` is two characters in lowercase).
                let canonical = describe(&parsed);
                if canonical.chars().count() <= MAX_CHARS {
                    assert_eq!(parse(&canonical).ok(), Some(parsed.clone()));
                }
                for hostname in ["web1.example.com", "10.1.2.3", "2001:db8::1", ""] {
                    let _ = matches(&parsed, &with(|facts| facts.hostname = hostname.into()));
                }
            }
            Err(refused) => {
                assert!((1..=text.chars().count() + 1).contains(&refused.column));
            }
        });
        assert!(outcome.is_ok(), "failure on input #{iteration}: {text:?}");
    }
}
