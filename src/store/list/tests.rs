//! The list's read side against plain SQL (the oracle): every filter, sort, direction and
//! page, after every kind of change, patched or read afresh, built aside or under the lock.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use rusqlite::params;
use serde_json::{json, Value};

use crate::model::host_query::{Direction, GroupFilter, HostQuery, Sort};
use crate::store::hosts::{
    by_id, delete, insert, insert_group_for_tests, move_to, new_host_for_tests as new_host,
    toggle_favorite, touch_last_used,
};
use crate::store::list::rows::list;
use crate::store::list::ListMemory;
use crate::store::{open_in_memory, StoreError};

fn query(pairs: &[(&str, &str)]) -> HostQuery {
    HostQuery::parse(|name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
    })
    .unwrap()
}

#[test]
fn tags_keep_their_order_and_pages_carry_them() {
    let db = open_in_memory().unwrap();
    db.write(|tx| {
        insert(
            tx,
            "a",
            &new_host("a", "a", json!({"tags": ["z", "a", "m"]})),
            None,
        )?;
        insert(tx, "b", &new_host("b", "b", json!({"tags": ["q"]})), None)?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    let (hosts, total) = db
        .read_list(|conn, index| list(conn, index, &query(&[])))
        .unwrap();
    let hosts: Vec<Value> = hosts
        .iter()
        .map(|row| serde_json::from_str(row.get()).unwrap())
        .collect();
    assert_eq!(total, 2);
    assert_eq!(hosts[0]["tags"], json!(["z", "a", "m"]));
    assert_eq!(hosts[1]["tags"], json!(["q"]));
}

#[test]
fn search_is_a_case_insensitive_substring_with_literal_wildcards() {
    let db = open_in_memory().unwrap();
    db.write(|tx| {
        insert(
            tx,
            "1",
            &new_host("Ünïcode Prod", "db1.example.com", json!({})),
            None,
        )?;
        insert(
            tx,
            "2",
            &new_host("50%_off", "x.example.org", json!({})),
            None,
        )?;
        insert(
            tx,
            "3",
            &new_host("plain", "y.example.org", json!({})),
            None,
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    let found = |term: &str| -> HashSet<String> {
        let query = query(&[("search", term)]);
        let ids = db.read_list(|conn, index| Ok::<_, StoreError>(listed(conn, index, &query).0));
        ids.unwrap().into_iter().collect()
    };
    let ids = |list: &[&str]| -> HashSet<String> { list.iter().map(|s| s.to_string()).collect() };
    assert_eq!(found("ünï"), ids(&["1"]));
    assert_eq!(found("ÜN"), ids(&["1"]));
    assert_eq!(found("DB1.EX"), ids(&["1"]));
    assert_eq!(found("%_"), ids(&["2"]));
    assert_eq!(found("0%_"), ids(&["2"]));
    assert_eq!(found("_"), ids(&["2"]));
    assert_eq!(found("\"x"), ids(&[]));
    assert_eq!(found("example"), ids(&["1", "2", "3"]));
    assert_eq!(found("ex"), ids(&["1", "2", "3"]));
}

/// Host `n`'s id: a UUID, in an order unrelated to `n`.
fn id_of(n: usize) -> String {
    format!(
        "{:08x}-0000-4000-8000-{n:012x}",
        (n * 37) % 61 * 0x0444_4444
    )
}

/// Host `n`'s id in a catalogue of other ids (the service writes only UUIDs; others sort
/// by their first 16 bytes).
fn short_id_of(n: usize) -> String {
    format!("host-{:02x}", (n * 37) % 61)
}

/// A catalogue with repeated names, two groups, tags of several shares, favorites and
/// some used hosts.
fn varied_catalogue() -> crate::store::Db {
    catalogue_with_ids(id_of)
}

fn catalogue_with_ids(id_of: fn(usize) -> String) -> crate::store::Db {
    let db = open_in_memory().unwrap();
    db.write(|tx| {
        insert_group_for_tests(tx, "g1")?;
        insert_group_for_tests(tx, "g2")?;
        for n in 0..60 {
            let mut tags = vec![json!("all")];
            if n % 3 == 0 {
                tags.push(json!("third"));
            }
            if n == 7 {
                tags.push(json!("rare"));
            }
            let group = match n % 4 {
                0 => Value::Null,
                1 | 2 => json!("g1"),
                _ => json!("g2"),
            };
            let name = format!("{}-{}", ["Web", "db", "web", "Cache"][n % 4], n % 5);
            let hostname = format!("h{}.Example.com", (n * 7) % 13);
            // Mixed case: case-insensitive and binary orders differ.
            let hostname = match n % 2 {
                0 => hostname.to_uppercase(),
                _ => hostname,
            };
            let extra = json!({"tags": tags, "group_id": group, "is_favorite": n % 5 == 0});
            insert(tx, &id_of(n), &new_host(&name, &hostname, extra), None)?;
            if n % 3 == 1 {
                touch_last_used(tx, &id_of(n))?;
            }
        }
        Ok::<_, StoreError>(())
    })
    .unwrap();
    db
}

/// `query`'s page and total from one plain SQL query over every row, independent of the
/// list's memory: a WHERE clause for the filters, an ORDER BY for the sort.
fn oracle(conn: &rusqlite::Connection, query: &HostQuery) -> (Vec<String>, u64) {
    let mut clauses = vec!["1".to_owned()];
    let mut values: Vec<String> = Vec::new();
    match &query.group {
        None => {}
        Some(GroupFilter::Ungrouped) => clauses.push("group_id IS NULL".into()),
        Some(GroupFilter::Group(id)) => {
            values.push(id.clone());
            clauses.push(format!("group_id = ?{}", values.len()));
        }
    }
    if let Some(tag) = &query.tag {
        values.push(tag.clone());
        let at = values.len();
        clauses.push(format!(
            "seq IN (SELECT host_seq FROM host_tags WHERE tag = ?{at})"
        ));
    }
    if let Some(favorite) = query.favorite {
        clauses.push(format!("is_favorite = {}", i32::from(favorite)));
    }
    if let Some(term) = &query.search {
        values.push(term.to_lowercase());
        let at = values.len();
        clauses.push(format!(
            "(instr(name_key, ?{at}) > 0 OR instr(lower(hostname), ?{at}) > 0)"
        ));
    }
    let key = match query.sort {
        Sort::Name => "name_key",
        Sort::Hostname => "lower(hostname)",
        Sort::CreatedAt => "created_at",
        Sort::LastUsedAt => "last_used_at",
    };
    let order = match query.direction {
        Direction::Asc => format!("{key} IS NULL, {key}, id"),
        Direction::Desc => format!("{key} IS NULL, {key} DESC, id DESC"),
    };
    let sql = format!(
        "SELECT id FROM hosts WHERE {} ORDER BY {order}",
        clauses.join(" AND ")
    );
    let all: Vec<String> = conn
        .prepare(&sql)
        .unwrap()
        .query_map(rusqlite::params_from_iter(&values), |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let offset = query.offset().unwrap() as usize;
    let page = all.iter().skip(offset).take(query.per_page as usize);
    (page.cloned().collect(), all.len() as u64)
}

/// The ids of `query`'s page and the total, after asserting that each row the page
/// shows (kept in memory or read) is the host as `by_id` reads it now, whole.
fn listed(
    conn: &rusqlite::Connection,
    index: &mut ListMemory,
    query: &HostQuery,
) -> (Vec<String>, u64) {
    let (rows, total) = list(conn, index, query).unwrap();
    let ids = rows.iter().map(|row| {
        let shown: Value = serde_json::from_str(row.get()).unwrap();
        let id = shown["id"].as_str().unwrap().to_owned();
        let now = serde_json::to_value(by_id(conn, &id).unwrap().view()).unwrap();
        assert_eq!(shown, now, "a listed row is the host as it is now");
        id
    });
    (ids.collect(), total)
}

/// Asserts that `list` answers what the oracle does, each row whole and as it is now,
/// with the rows kept in memory and without; returns the page's size.
fn assert_list_matches_the_oracle(db: &crate::store::Db, pairs: &[(&str, &str)]) -> usize {
    let query = query(pairs);
    db.read_list(|conn, index| {
        let (ids, total) = listed(conn, index, &query);
        let mut without_rows = ListMemory::keeping_rows_up_to(0);
        assert_eq!(
            listed(conn, &mut without_rows, &query),
            (ids.clone(), total)
        );
        let size = ids.len();
        assert_eq!((ids, total), oracle(conn, &query), "{pairs:?}");
        Ok::<_, StoreError>(size)
    })
    .unwrap()
}

/// Filters whose sets are ranked (at most an eighth of the hosts: `rare`, the three
/// combinations) and walked (the rest), empty ones included.
const FILTERS: [&[(&str, &str)]; 14] = [
    &[],
    &[("tag", "third")],
    &[("tag", "rare")],
    &[("tag", "none-such")],
    &[("group", "g1")],
    &[("group", "")],
    &[("group", "unknown")],
    &[("favorite", "true")],
    &[("favorite", "false")],
    &[("search", "web")],
    &[("search", "B-")],
    &[("tag", "third"), ("search", "web")],
    &[("tag", "third"), ("favorite", "true")],
    &[
        ("tag", "all"),
        ("group", "g1"),
        ("favorite", "false"),
        ("search", "eb"),
    ],
];

/// Every filter, sort and direction, and pages near both ends and past the end.
fn every_query() -> Vec<Vec<(&'static str, &'static str)>> {
    let mut queries = Vec::new();
    for filter in FILTERS {
        for sort in ["name", "hostname", "created_at", "last_used_at"] {
            for order in ["asc", "desc"] {
                for (page, per_page) in [("1", "7"), ("2", "7"), ("3", "50"), ("5", "3")] {
                    let mut pairs = filter.to_vec();
                    pairs.extend([
                        ("sort", sort),
                        ("order", order),
                        ("page", page),
                        ("per_page", per_page),
                    ]);
                    queries.push(pairs);
                }
            }
        }
    }
    queries
}

#[test]
fn list_answers_what_plain_sql_answers_for_every_filter_sort_direction_and_page() {
    for ids in [id_of, short_id_of] {
        let db = catalogue_with_ids(ids);
        let mut filled = 0;
        for pairs in every_query() {
            filled += usize::from(assert_list_matches_the_oracle(&db, &pairs) > 0);
        }
        assert!(filled > 200, "only {filled} non-empty pages compared");
    }
}

/// The rows are kept while they take at most the memory's bound: hosts with long notes
/// that pass it drop every kept row, a catalogue over it keeps none from its first
/// read, and every page still answers what plain SQL answers, each row as it is now.
#[test]
fn rows_past_the_bound_are_not_kept_and_pages_stay_right() {
    let db = varied_catalogue();
    let everything = query(&[("per_page", "1000")]);
    let mut index = ListMemory::keeping_rows_up_to(40_000);
    let kept_after_a_list = |index: &mut ListMemory| {
        db.read_list(|conn, _| {
            let (ids, total) = listed(conn, index, &everything);
            assert_eq!((ids, total), oracle(conn, &everything));
            Ok::<_, StoreError>(index.kept_rows())
        })
        .unwrap()
    };
    assert_eq!(kept_after_a_list(&mut index), 60);
    db.write(|tx| {
        let notes = json!({"notes": "n".repeat(4_000)});
        for n in 0..5 {
            insert(
                tx,
                &id_of(100 + n),
                &new_host("long", "l", notes.clone()),
                None,
            )?;
        }
        Ok::<_, StoreError>(())
    })
    .unwrap();
    assert_eq!(kept_after_a_list(&mut index), 0);
    assert_eq!(kept_after_a_list(&mut index), 0);
    let mut fresh = ListMemory::keeping_rows_up_to(40_000);
    assert_eq!(kept_after_a_list(&mut fresh), 0);
    assert_eq!(
        kept_after_a_list(&mut ListMemory::keeping_rows_up_to(60_000)),
        65
    );
}

/// Start-up's reading (`Db::warm_list`: the hosts a chunk a lock, the rows a batch a lock)
/// keeps every live host's row before any page is asked, each as `by_id` reads it.
#[test]
fn start_up_reads_every_row_before_any_page() {
    let db = varied_catalogue();
    db.write(|tx| delete(tx, &id_of(5))).unwrap();
    db.warm_list().unwrap();
    db.read_list(|conn, memory| {
        assert_eq!(memory.kept_rows(), 59);
        let everything = query(&[("per_page", "1000")]);
        assert_eq!(listed(conn, memory, &everything), oracle(conn, &everything));
        Ok::<_, StoreError>(())
    })
    .unwrap();
}

/// A table built aside (start-up: no lock held between its chunks) while this
/// connection writes is brought up to date from the log when it is taken in, so the
/// list never answers the state the build began at.
#[test]
fn a_table_built_aside_while_hosts_change_answers_what_plain_sql_answers() {
    let db = varied_catalogue();
    let mut building = db.read_list(|conn, memory| memory.building(conn)).unwrap();
    let mut chunks = 0;
    while let Some(chunk) = db.read_list(|conn, _| building.read_chunk(conn)).unwrap() {
        building.apply(chunk).unwrap();
        chunks += 1;
        if chunks == 2 {
            db.write(|tx| {
                delete(tx, &id_of(1))?;
                delete(tx, &id_of(50))?;
                touch_last_used(tx, &id_of(2))?;
                insert(tx, &id_of(500), &new_host("late", "l", json!({})), None)?;
                Ok::<_, StoreError>(())
            })
            .unwrap();
        }
    }
    assert!(chunks > 2, "the catalogue spans several chunks");
    building.finish();
    let taken = db.read_list(|conn, memory| memory.install(conn, building));
    assert!(taken.unwrap(), "the table built aside is the one answering");
    for pairs in every_query() {
        assert_list_matches_the_oracle(&db, &pairs);
    }
}

/// A batch of changed hosts of any size (creates, deletes, uses and renames mixed) is
/// patched into every order in one pass; one of 1, 16, 17 or 56 changes, every filter,
/// sort, direction and page answers what plain SQL answers.
#[test]
fn batches_of_1_to_56_changed_hosts_list_what_plain_sql_lists() {
    for batch in [1, 16, 17, 56] {
        let db = varied_catalogue();
        assert_list_matches_the_oracle(&db, &[]);
        db.write(|tx| {
            for n in 0..batch {
                match n % 4 {
                    0 => drop(insert(
                        tx,
                        &id_of(2000 + n),
                        &new_host(&format!("B{n}"), "batch.example", json!({})),
                        None,
                    )?),
                    1 => delete(tx, &id_of(n))?,
                    2 => drop(touch_last_used(tx, &id_of(n))?),
                    _ => drop(tx.execute(
                        "UPDATE hosts SET name = ?2, name_key = ?3 WHERE id = ?1",
                        params![id_of(n), format!("Ä{n}"), format!("ä{n}")],
                    )?),
                }
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        for pairs in every_query().iter().step_by(2) {
            assert_list_matches_the_oracle(&db, pairs);
        }
    }
}

/// A tag's or a search term's set is kept between requests but never past a change: a
/// tag asked before a retag, a term asked before a rename, a delete or a create answer
/// the new state the next time.
#[test]
fn a_kept_tag_or_search_answers_what_changed_after_it_was_asked() {
    let db = varied_catalogue();
    let ids = |filter: &str, value: &str| -> Vec<String> {
        let query = query(&[(filter, value)]);
        let ids = db.read_list(|conn, index| Ok::<_, StoreError>(listed(conn, index, &query).0));
        let mut ids = ids.unwrap();
        ids.sort();
        ids
    };
    let found = |term: &str| ids("search", term);
    let tagged = |tag: &str| ids("tag", tag);
    let before = found("zebra");
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(found("zebra"), before, "asked again, unchanged");
    db.write(|tx| {
        tx.execute(
            "UPDATE hosts SET name = 'Zebra', name_key = 'zebra' WHERE id = ?1",
            [id_of(3)],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    assert_eq!(
        found("zebra"),
        vec![id_of(3)],
        "a rename after the term was asked"
    );
    db.write(|tx| {
        insert(
            tx,
            &id_of(3000),
            &new_host("zebra-2", "z.example", json!({})),
            None,
        )?;
        delete(tx, &id_of(3))
    })
    .unwrap();
    assert_eq!(found("zebra"), vec![id_of(3000)], "a create and a delete");
    for _ in 0..10 {
        found(&format!("other-term-{}", found("zebra").len()));
    }
    assert_eq!(
        found("zebra"),
        vec![id_of(3000)],
        "after more terms than are kept"
    );
    assert!(tagged("zebra-tag").is_empty());
    db.write(|tx| {
        tx.execute(
            "INSERT INTO host_tags (host_seq, tag, position) \
             SELECT seq, 'zebra-tag', 99 FROM hosts WHERE id = ?1",
            [id_of(5)],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    assert_eq!(
        tagged("zebra-tag"),
        vec![id_of(5)],
        "a tag added after it was asked"
    );
}

/// The memory follows every kind of change made after it was read, through the store
/// or through plain SQL on the same connection.
#[test]
fn list_follows_every_kind_of_change_made_after_its_memory_was_read() {
    let db = varied_catalogue();
    let check = |db: &crate::store::Db| {
        for pairs in every_query().iter().step_by(3) {
            assert_list_matches_the_oracle(db, pairs);
        }
    };
    check(&db);
    db.write(|tx| {
        let extra = json!({"tags": ["third"], "is_favorite": true});
        insert(
            tx,
            &id_of(1001),
            &new_host("ZZ web", "zz.example.com", extra),
            None,
        )?;
        tx.execute(
            "UPDATE hosts SET name = 'Web renamed', name_key = 'web renamed' WHERE id = ?1",
            [id_of(3)],
        )?;
        delete(tx, &id_of(10))?;
        touch_last_used(tx, &id_of(20))?;
        move_to(tx, &id_of(21), Some("g2"))?;
        toggle_favorite(tx, &id_of(22))?;
        tx.execute(
            "UPDATE hosts SET notes = 'new notes', port = 2222, username = 'root', \
             color = '#ff0000', password = x'00', revision = revision + 1 WHERE id = ?1",
            [id_of(23)],
        )?;
        crate::store::interop::write_jumps(tx, &id_of(24), &[id_of(25), id_of(26)])?;
        crate::store::interop::write_options(tx, &id_of(25), &["ServerAliveInterval 30".into()])?;
        tx.execute(
            "DELETE FROM host_tags WHERE tag = 'third' AND host_seq < 20",
            [],
        )?;
        tx.execute("DELETE FROM host_tags WHERE host_seq = 3", [])?;
        tx.execute(
            "UPDATE host_tags SET position = 5 - position WHERE host_seq = 4",
            [],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    check(&db);
    // Renames and tag changes, each seen by a list, leave most of the text and of the
    // tag lists unowned: the memory is then read afresh, and answers the same.
    for round in 0..240 {
        db.write(|tx| {
            let name = format!("Renamed {round}");
            match round < 120 {
                true => tx.execute(
                    "UPDATE hosts SET name = ?2, name_key = ?3 WHERE id = ?1",
                    params![id_of(round % 7), name, name.to_lowercase()],
                )?,
                false => tx.execute(
                    "UPDATE host_tags SET position = position + 1 WHERE host_seq = ?1",
                    [round as i64 % 9 + 1],
                )?,
            };
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_list_matches_the_oracle(&db, &[("search", "renamed"), ("sort", "hostname")]);
    }
    check(&db);
    db.read(|conn| {
        conn.execute(
            "UPDATE hosts SET hostname = 'web.other.example' WHERE id = ?1",
            [id_of(30)],
        )?;
        conn.execute(
            "UPDATE hosts SET notes = 'by SQL' WHERE id = ?1",
            [id_of(32)],
        )?;
        conn.execute("DELETE FROM host_jumps WHERE host_id = ?1", [id_of(24)])?;
        conn.execute("UPDATE host_ssh_options SET option = 'Compression yes'", [])?;
        conn.execute(
            "INSERT INTO host_tags (host_seq, tag, position) SELECT seq, 'rare', 9 \
             FROM hosts WHERE id = ?1",
            [id_of(31)],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    check(&db);
}

/// An import of 1,001 hosts in one transaction is merged into the orders and answers
/// what plain SQL answers.
#[test]
fn an_import_of_1001_hosts_at_once_answers_what_plain_sql_answers() {
    let db = varied_catalogue();
    assert_list_matches_the_oracle(&db, &[]);
    db.write(|tx| {
        for n in 0..1_001 {
            let name = format!("Batch {}", n % 17);
            insert(
                tx,
                &id_of(2000 + n),
                &new_host(&name, "b.example", json!({})),
                None,
            )?;
        }
        Ok::<_, StoreError>(())
    })
    .unwrap();
    for pairs in every_query().iter().step_by(5) {
        assert_list_matches_the_oracle(&db, pairs);
    }
}

/// A host whose `seq` falls between those the memory holds (SQLite reuses the top one
/// after a delete; another tool may write any) makes it read everything again.
#[test]
fn a_host_with_a_seq_between_known_ones_is_listed_after_a_full_read() {
    let db = varied_catalogue();
    assert_list_matches_the_oracle(&db, &[("per_page", "100")]);
    db.read(|conn| {
        conn.execute("DELETE FROM hosts WHERE seq = 5", [])?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    assert_list_matches_the_oracle(&db, &[("per_page", "100")]);
    db.read(|conn| {
        conn.execute(
            "INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, \
             auth_type, created_at, updated_at) VALUES (5, '00000000-0000-4000-8000-00000000b0ac', 'Back', 'back', \
             'b.example', 22, 'u', 'agent', '2024-01-01T00:00:00.000Z', \
             '2024-01-01T00:00:00.000Z')",
            [],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
    assert_eq!(
        assert_list_matches_the_oracle(&db, &[("per_page", "100")]),
        60
    );
}

/// Orders patched host by host through random adds, deletes, renames (in any case),
/// last uses, and changes that keep every sort key (a move, a favorite, a name written
/// again) equal orders sorted afresh, and plain SQL, in every sort and direction, with
/// and without a group or favorite filter.
#[test]
fn patched_orders_equal_orders_sorted_afresh_after_random_changes() {
    let db = varied_catalogue();
    let mut state: u64 = 7;
    let mut next = move |bound: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) % bound
    };
    for round in 0..40 {
        db.write(|tx| {
            for step in 0..1 + next(4) {
                let id = id_of(next(60) as usize);
                let exists = by_id(tx, &id).is_ok();
                match (next(8), exists) {
                    (0, _) | (_, false) => {
                        let new_id = id_of(3000 + round * 10 + step as usize);
                        let host = new_host(&format!("N{}", next(9)), "Added.example", json!({}));
                        insert(tx, &new_id, &host, None)?;
                    }
                    (1, true) => delete(tx, &id)?,
                    (2, true) => drop(touch_last_used(tx, &id)?),
                    (3, true) => {
                        let name = ["web-0", "Zeta", "ärger", "WEB-0", "a"][next(5) as usize];
                        tx.execute(
                            "UPDATE hosts SET name = ?2, name_key = ?3 WHERE id = ?1",
                            params![id, name, name.to_lowercase()],
                        )?;
                    }
                    (5, true) => drop(toggle_favorite(tx, &id)?),
                    (6, true) => {
                        let group = [None, Some("g1"), Some("g2")][next(3) as usize];
                        drop(move_to(tx, &id, group)?);
                    }
                    (7, true) => {
                        tx.execute(
                            "UPDATE hosts SET name = name, name_key = name_key, \
                             hostname = hostname WHERE id = ?1",
                            params![id],
                        )?;
                    }
                    _ => {
                        let hostname =
                            ["h1.example.com", "H1.EXAMPLE.COM", "z", "A"][next(4) as usize];
                        tx.execute(
                            "UPDATE hosts SET hostname = ?2 WHERE id = ?1",
                            params![id, hostname],
                        )?;
                    }
                }
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let filters = [None, Some(("group", "g1")), Some(("favorite", "true"))];
        for (sort, order, filter) in ["name", "hostname", "created_at", "last_used_at"]
            .into_iter()
            .flat_map(|sort| ["asc", "desc"].map(|order| (sort, order)))
            .flat_map(|(sort, order)| filters.map(|filter| (sort, order, filter)))
        {
            let mut pairs = vec![("sort", sort), ("order", order), ("per_page", "1000")];
            pairs.extend(filter);
            let query = query(&pairs);
            let ids =
                |index: &mut ListMemory, conn: &rusqlite::Connection| listed(conn, index, &query).0;
            db.read_list(|conn, index| {
                let patched = ids(index, conn);
                assert_eq!(patched, ids(&mut ListMemory::default(), conn), "{round}");
                assert_eq!(patched, oracle(conn, &query).0, "round {round}");
                Ok::<_, StoreError>(())
            })
            .unwrap();
        }
    }
}
