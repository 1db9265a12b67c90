//! Host rows, their tags, and the list query (filters, sorts, pages) over the `hosts` and
//! `host_tags` tables, with the in-memory orders and search text of `store::list_index`.
//!
//! Invariants: sealed passwords go in and out as opaque bytes (this module never knows
//! whether the vault is locked); every reference (group, key) is checked inside the caller's
//! transaction before it is written; `updated_at` strictly increases on every change.
//!
//! A page is read in three statements: the `seq`s of the page, the rows for those `seq`s,
//! and the tags of the whole page in one query. `total` comes from a trigger-kept count
//! when one filter alone (or none) is set (sql/0003). The `seq`s come from one of:
//! - the in-memory order of the sort (store::list_index): sliced for a deep unfiltered
//!   page, walked testing membership for a search or tag alone with many matches;
//! - SQL, under one of two plans chosen from the match count (see `Plan`): walk the sort's
//!   index and test each host against the filters, stopping once the page is full; or
//!   collect the matching hosts through the filters' own indexes and sort them.
//!
//! A search is answered from memory in every case (any length of term); SQL receives its
//! matches as a JSON array of `seq`s when other filters join it.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::host::{
    AuthType, Direction, GroupFilter, Host, HostChange, HostQuery, NewHost, OrderChange,
    PasswordAction, Sort,
};
use crate::store::list_index::{ListIndex, SeqSet, SetKey};
use crate::store::{next_updated_at, now_timestamp, StoreError};

const SELECT_HOST_BY_ID: &str = "SELECT id, name, hostname, port, username, auth_type, key_id, \
     password IS NOT NULL, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at, last_used_at, revision FROM hosts WHERE id = ?1";
const INSERT_HOST: &str = "INSERT INTO hosts (id, name, name_key, hostname, port, username, \
     auth_type, key_id, password, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15)";
/// Name and hostname are written only when they change: the list's search text
/// (store::list_index) re-reads every host an UPDATE naming them touches.
const UPDATE_HOST: &str = "UPDATE hosts SET port = ?2, username = ?3, auth_type = ?4, \
     key_id = ?5, group_id = ?6, is_favorite = ?7, color = ?8, sort_order = ?9, notes = ?10, \
     updated_at = ?11 WHERE id = ?1";
const UPDATE_HOST_NAMES: &str =
    "UPDATE hosts SET name = ?2, name_key = ?3, hostname = ?4 WHERE id = ?1";
const UPDATE_PASSWORD: &str = "UPDATE hosts SET password = ?2 WHERE id = ?1";
const UPDATE_FAVORITE: &str = "UPDATE hosts SET is_favorite = ?2, updated_at = ?3 WHERE id = ?1";
const UPDATE_GROUP: &str =
    "UPDATE hosts SET group_id = ?2, sort_order = ?3, updated_at = ?4 WHERE id = ?1";
const UPDATE_LAST_USED: &str = "UPDATE hosts SET last_used_at = ?2 WHERE id = ?1";
const DELETE_HOST: &str = "DELETE FROM hosts WHERE id = ?1";
const SELECT_PASSWORD: &str = "SELECT password FROM hosts WHERE id = ?1";
/// The end of a group: one probe of `hosts_by_group_order`. `IS` matches NULL (ungrouped
/// counts as one group); the host itself is left out so moving it never counts it.
const SELECT_MAX_ORDER: &str =
    "SELECT max(sort_order) FROM hosts WHERE group_id IS ?1 AND id IS NOT ?2";
const GROUP_EXISTS: &str = "SELECT 1 FROM groups WHERE id = ?1";
const KEY_EXISTS: &str = "SELECT 1 FROM keys WHERE id = ?1";
const SELECT_KEY_SECRETS: &str = "SELECT private_key, passphrase FROM keys WHERE id = ?1";

const SELECT_SEQ: &str = "SELECT seq FROM hosts WHERE id = ?1";
/// The number of hosts, kept by triggers (sql/0003_list_counts.sql).
const SELECT_CATALOGUE_SIZE: &str = "SELECT host_count FROM host_total";

const INSERT_TAG: &str = "INSERT INTO host_tags (host_seq, tag, position) VALUES (?1, ?2, ?3)";
const DELETE_TAGS: &str = "DELETE FROM host_tags WHERE host_seq = ?1";
const SELECT_TAGS: &str = "SELECT tag FROM host_tags \
     WHERE host_seq = (SELECT seq FROM hosts WHERE id = ?1) ORDER BY position";
/// Tags of a whole page: `?1` is a JSON array of `seq`s.
const SELECT_TAGS_OF_PAGE: &str = "SELECT host_seq, tag FROM host_tags \
     WHERE host_seq IN (SELECT value FROM json_each(?1)) ORDER BY host_seq, position";
/// Rows of a page: `?1` is a JSON array of `seq`s.
const SELECT_ROWS_OF_PAGE: &str = "SELECT seq, id, name, hostname, port, username, \
     auth_type, key_id, password IS NOT NULL, group_id, is_favorite, color, sort_order, notes, \
     created_at, updated_at, last_used_at, revision FROM hosts \
     WHERE seq IN (SELECT value FROM json_each(?1))";

/// Every host of a tag, for walking an order testing membership.
const SEQS_OF_TAG: &str = "SELECT host_seq FROM host_tags WHERE tag = ?1";

/// When the host list reads from memory (store::list_index) rather than SQL alone.
#[derive(Clone, Copy, Debug)]
struct Tuning {
    /// Unfiltered pages from this offset on are sliced from the in-memory order: a walk of
    /// the sort index costs about 30 ns per skipped host, so 1,000 skipped cost about as
    /// much as the rest of a page.
    deep_offset: u64,
    /// A search or tag alone with at most this many matches is sorted by SQL (about 1.5 µs
    /// a match); with more, the page walks the in-memory order testing membership (a few
    /// ns a host).
    collect_max: u64,
}

const TUNING: Tuning = Tuning {
    deep_offset: 1_000,
    collect_max: 200,
};

/// A filtered walk may take this many steps per step collecting would cost before the page
/// is collected instead. At 100,000 hosts here, testing a host on a walk costs 0.4-1 µs (a
/// tag or search probe, or a row read for a group, favorite or short search) and
/// collecting one match (a row read, then the sort) about 1-1.4 µs, so a walk that runs
/// out wastes at most about what collecting costs (measured with scripts/bench-hosts and
/// EXPLAIN QUERY PLAN timings).
const WALK_COST_RATIO: u64 = 1;

/// A host's stored secrets, still sealed.
pub enum SealedCredentials {
    Password(Option<Vec<u8>>),
    Key {
        key_id: String,
        private_key: Vec<u8>,
        passphrase: Option<Vec<u8>>,
    },
    Agent,
}

/// Inserts a checked host with id `id`. Fails with `GroupNotFound`/`KeyNotFound` for a
/// reference that does not exist. Caller holds a write transaction.
pub fn insert(
    conn: &Connection,
    id: &str,
    host: &NewHost,
    sealed_password: Option<&[u8]>,
) -> Result<Host, StoreError> {
    check_references(conn, host.group_id.as_deref(), host.auth.key_id.as_deref())?;
    let order = match host.order {
        Some(order) => order,
        None => end_of_group(conn, host.group_id.as_deref(), None)?,
    };
    let now = now_timestamp();
    let password = match host.auth.password {
        PasswordAction::Store => sealed_password,
        PasswordAction::Keep | PasswordAction::Clear => None,
    };
    conn.prepare_cached(INSERT_HOST)?.execute(params![
        id,
        host.name,
        host.name_key,
        host.hostname,
        host.port,
        host.username,
        host.auth.auth_type.as_str(),
        host.auth.key_id,
        password,
        host.group_id,
        host.is_favorite,
        host.color,
        order,
        host.notes,
        now,
    ])?;
    write_tags(conn, conn.last_insert_rowid(), &host.tags)?;
    crate::store::interop::write_jumps(conn, id, &host.jump_host_ids)?;
    crate::store::interop::write_options(conn, id, &host.ssh_options)?;
    Ok(Host {
        id: id.to_owned(),
        name: host.name.clone(),
        hostname: host.hostname.clone(),
        port: host.port,
        username: host.username.clone(),
        auth_type: host.auth.auth_type,
        key_id: host.auth.key_id.clone(),
        has_password: password.is_some(),
        group_id: host.group_id.clone(),
        tags: host.tags.clone(),
        is_favorite: host.is_favorite,
        color: host.color.clone(),
        order,
        notes: host.notes.clone(),
        created_at: now.clone(),
        updated_at: now,
        last_used_at: None,
        jump_host_ids: host.jump_host_ids.clone(),
        ssh_options: host.ssh_options.clone(),
        revision: 1,
    })
}

/// One host with its tags; `HostNotFound` for any id that is not stored (UUID or not).
pub fn by_id(conn: &Connection, id: &str) -> Result<Host, StoreError> {
    let mut host = conn
        .prepare_cached(SELECT_HOST_BY_ID)?
        .query_row([id], |row| host_from_row(row, 0))
        .optional()?
        .ok_or(StoreError::HostNotFound)??;
    host.tags = conn
        .prepare_cached(SELECT_TAGS)?
        .query_map([id], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    crate::store::interop::fill_extensions(conn, std::slice::from_mut(&mut host))?;
    Ok(host)
}

/// Writes `change`, computed from the current row `previous`. Checks references, places
/// the host, bumps `updated_at` past the previous value; `sealed_password` is written when
/// the change says `Store`. Caller holds a write transaction.
pub fn update(
    conn: &Connection,
    previous: &Host,
    change: &HostChange,
    sealed_password: Option<&[u8]>,
) -> Result<Host, StoreError> {
    let host = &change.host;
    check_references(conn, host.group_id.as_deref(), host.key_id.as_deref())?;
    let order = match change.order {
        OrderChange::To(order) => order,
        OrderChange::End => end_of_group(conn, host.group_id.as_deref(), Some(&host.id))?,
    };
    let updated_at = next_updated_at(&previous.updated_at);
    if host.name != previous.name || host.hostname != previous.hostname {
        conn.prepare_cached(UPDATE_HOST_NAMES)?.execute(params![
            host.id,
            host.name,
            change.name_key,
            host.hostname
        ])?;
    }
    conn.prepare_cached(UPDATE_HOST)?.execute(params![
        host.id,
        host.port,
        host.username,
        host.auth_type.as_str(),
        host.key_id,
        host.group_id,
        host.is_favorite,
        host.color,
        order,
        host.notes,
        updated_at,
    ])?;
    let has_password = match (change.password, sealed_password) {
        (PasswordAction::Keep, _) => previous.has_password,
        (PasswordAction::Store, Some(sealed)) => {
            conn.prepare_cached(UPDATE_PASSWORD)?
                .execute(params![host.id, sealed])?;
            true
        }
        (PasswordAction::Store, None) | (PasswordAction::Clear, _) => {
            conn.prepare_cached(UPDATE_PASSWORD)?
                .execute(params![host.id, None::<Vec<u8>>])?;
            false
        }
    };
    if host.tags != previous.tags {
        let seq: i64 = conn
            .prepare_cached(SELECT_SEQ)?
            .query_row([&host.id], |row| row.get(0))?;
        write_tags(conn, seq, &host.tags)?;
    }
    if host.jump_host_ids != previous.jump_host_ids {
        crate::store::interop::write_jumps(conn, &host.id, &host.jump_host_ids)?;
    }
    if host.ssh_options != previous.ssh_options {
        crate::store::interop::write_options(conn, &host.id, &host.ssh_options)?;
    }
    Ok(Host {
        order,
        updated_at,
        has_password,
        // The schema's hosts_changed trigger adds one for the statement that set updated_at.
        revision: previous.revision + 1,
        ..host.clone()
    })
}

/// Deletes a host and (by cascade) its tags. With `secure_delete` on, its sealed password
/// is overwritten in the file, not just unlinked.
pub fn delete(conn: &Connection, id: &str) -> Result<(), StoreError> {
    match conn.prepare_cached(DELETE_HOST)?.execute([id])? {
        0 => Err(StoreError::HostNotFound),
        _ => Ok(()),
    }
}

/// Flips `is_favorite` and bumps `updated_at`; returns the new value.
pub fn toggle_favorite(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    let host = by_id(conn, id)?;
    let favorite = !host.is_favorite;
    conn.prepare_cached(UPDATE_FAVORITE)?.execute(params![
        id,
        favorite,
        next_updated_at(&host.updated_at)
    ])?;
    Ok(favorite)
}

/// Moves a host to `group_id` (`None`: ungrouped). A host that changes group goes to the
/// end of the new one; a move to its own group keeps its place. Bumps `updated_at`.
pub fn move_to(conn: &Connection, id: &str, group_id: Option<&str>) -> Result<Host, StoreError> {
    let host = by_id(conn, id)?;
    check_references(conn, group_id, None)?;
    let order = match host.group_id.as_deref() == group_id {
        true => host.order,
        false => end_of_group(conn, group_id, Some(id))?,
    };
    let updated_at = next_updated_at(&host.updated_at);
    conn.prepare_cached(UPDATE_GROUP)?
        .execute(params![id, group_id, order, updated_at])?;
    Ok(Host {
        group_id: group_id.map(str::to_owned),
        order,
        updated_at,
        revision: host.revision + 1,
        ..host
    })
}

/// Sets `last_used_at` to now and nothing else (not `updated_at`).
pub fn touch_last_used(conn: &Connection, id: &str) -> Result<Host, StoreError> {
    let host = by_id(conn, id)?;
    let now = now_timestamp();
    conn.prepare_cached(UPDATE_LAST_USED)?
        .execute(params![id, now])?;
    Ok(Host {
        last_used_at: Some(now),
        ..host
    })
}

/// The sealed secrets `host`'s auth type needs to connect.
pub fn credentials(conn: &Connection, host: &Host) -> Result<SealedCredentials, StoreError> {
    match (host.auth_type, host.key_id.as_deref()) {
        (AuthType::Password, _) => {
            let sealed: Option<Vec<u8>> = conn
                .prepare_cached(SELECT_PASSWORD)?
                .query_row([&host.id], |row| row.get(0))
                .optional()?
                .ok_or(StoreError::HostNotFound)?;
            Ok(SealedCredentials::Password(sealed))
        }
        (AuthType::Key, Some(key_id)) => {
            let (private_key, passphrase) = conn
                .prepare_cached(SELECT_KEY_SECRETS)?
                .query_row([key_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?
                .ok_or(StoreError::KeyNotFound)?;
            Ok(SealedCredentials::Key {
                key_id: key_id.to_owned(),
                private_key,
                passphrase,
            })
        }
        (AuthType::Key, None) => Err(StoreError::KeyNotFound),
        (AuthType::Agent, _) => Ok(SealedCredentials::Agent),
    }
}

/// One page of hosts and the number of hosts matching the filters.
pub fn list(
    conn: &Connection,
    index: &mut ListIndex,
    query: &HostQuery,
) -> Result<(Vec<Host>, u64), StoreError> {
    list_tuned(conn, index, query, TUNING)
}

fn list_tuned(
    conn: &Connection,
    index: &mut ListIndex,
    query: &HostQuery,
    tuning: Tuning,
) -> Result<(Vec<Host>, u64), StoreError> {
    let matches = match &query.search {
        Some(term) => Some(index.set(conn, SetKey::Search(term.clone()), |index| {
            index.search(conn, term)
        })?),
        None => None,
    };
    let filters = Filters::new(query, matches.as_deref(), tuning.collect_max)?;
    let total = match (&matches, filters.only_search()) {
        (Some(matches), true) => matches.len(),
        _ => {
            let total: i64 = conn
                .prepare_cached(&filters.count_sql())?
                .query_row(filters.params().as_slice(), |row| row.get(0))?;
            u64::try_from(total).unwrap_or(0)
        }
    };
    let Some(offset) = query.offset().filter(|offset| *offset < total) else {
        return Ok((Vec::new(), total));
    };
    let (sort, direction, limit) = (query.sort, query.direction, query.per_page);
    let set = match (&filters.tag, matches) {
        _ if filters.is_empty() => None,
        (None, Some(matches)) if filters.only_search() => Some(matches),
        (Some(tag), None) if filters.only_tag() && total > tuning.collect_max => {
            Some(index.set(conn, SetKey::Tag(tag.clone()), |_| {
                Ok(conn
                    .prepare_cached(SEQS_OF_TAG)?
                    .query_map([tag], |row| row.get(0))?
                    .collect::<Result<_, _>>()?)
            })?)
        }
        _ => None,
    };
    let seqs = match set {
        None if filters.is_empty() && offset >= tuning.deep_offset => {
            index.order(conn, sort)?.slice(direction, offset, limit)
        }
        Some(set) if total > tuning.collect_max => {
            index
                .order(conn, sort)?
                .page(direction, offset, limit, |seq| set.contains(seq))
        }
        _ => sql_page(conn, &filters, query, offset, total)?,
    };
    Ok((rows_of_page(conn, &seqs)?, total))
}

/// The `seq`s of one page through SQL alone, under the cheaper plan.
fn sql_page(
    conn: &Connection,
    filters: &Filters,
    query: &HostQuery,
    offset: u64,
    total: u64,
) -> Result<Vec<i64>, StoreError> {
    let on_page = query.per_page.min(total - offset);
    Ok(match choose_plan(conn, filters, query, offset, total)? {
        Plan::WalkWithin(budget) => {
            let seqs = page_seqs(conn, filters, query, offset, Plan::WalkWithin(budget))?;
            // A page found within the budget is exact: matches are taken in sort order.
            match seqs.len() as u64 == on_page {
                true => seqs,
                false => page_seqs(conn, filters, query, offset, Plan::Collect)?,
            }
        }
        plan => page_seqs(conn, filters, query, offset, plan)?,
    })
}

/// The number of hosts (trigger-kept, sql/0003).
fn catalogue_size(conn: &Connection) -> Result<u64, StoreError> {
    let catalogue: i64 = conn
        .prepare_cached(SELECT_CATALOGUE_SIZE)?
        .query_row([], |row| row.get(0))?;
    Ok(u64::try_from(catalogue).unwrap_or(0))
}

/// True when a group with this id exists.
pub fn group_exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(GROUP_EXISTS)?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// True when a key with this id exists.
pub fn key_exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(KEY_EXISTS)?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// How the `seq`s of one page are found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Walk the sort's index in order and stop when the page is full. Unfiltered, it
    /// reads the index only, so its cost is the offset plus the page.
    Walk,
    /// Walk at most this many hosts of the sort's index, testing each against the
    /// filters: cost grows with (offset + page) / share of hosts matching, which is small
    /// for broad filters. Matches that cluster late in the order (a tag that only hosts
    /// named "mail-*" carry, sorted by name) can exhaust the budget; the page is then
    /// collected instead, so a wrong guess costs at most about one collection more.
    WalkWithin(u64),
    /// Collect the matching hosts through the filters' own indexes, then sort them: cost
    /// grows with the number of matches. Best for narrow filters.
    Collect,
}

/// The cheaper plan for this page. `total` (hosts matching) is known and non-zero.
fn choose_plan(
    conn: &Connection,
    filters: &Filters,
    query: &HostQuery,
    offset: u64,
    total: u64,
) -> Result<Plan, StoreError> {
    if filters.is_empty() {
        return Ok(Plan::Walk);
    }
    // hosts_by_group and hosts_by_favorite come ordered by name: collecting is a range read.
    if query.sort == Sort::Name && (filters.group.is_some() || filters.favorite.is_some()) {
        return Ok(Plan::Collect);
    }
    // A search term of two or more characters is often a prefix of the names and hostnames
    // it finds, so its matches bunch together in those two orders and a walk would cross
    // the whole gap before them. (One character matches too many hosts to leave a gap.)
    if filters.search_chars >= 2 && matches!(query.sort, Sort::Name | Sort::Hostname) {
        return Ok(Plan::Collect);
    }
    let catalogue = catalogue_size(conn)?;
    // What collecting costs, in walk steps: one per match read through a set or an index.
    let budget = total.saturating_mul(WALK_COST_RATIO);
    // Hosts a walk visits when matches spread evenly over the order; walk when that is
    // well inside the budget.
    let expected = offset
        .saturating_add(query.per_page)
        .saturating_mul(catalogue)
        / total;
    Ok(match expected.saturating_mul(2) <= budget {
        true => Plan::WalkWithin(budget),
        false => Plan::Collect,
    })
}

/// The `seq`s of one page under `plan`.
fn page_seqs(
    conn: &Connection,
    filters: &Filters,
    query: &HostQuery,
    offset: u64,
    plan: Plan,
) -> Result<Vec<i64>, StoreError> {
    let sql = filters.page_sql(plan, query.sort, query.direction);
    let limit = i64::try_from(query.per_page).unwrap_or(i64::MAX);
    let offset = i64::try_from(offset).unwrap_or(i64::MAX);
    let budget = match plan {
        Plan::WalkWithin(budget) => i64::try_from(budget).unwrap_or(i64::MAX),
        Plan::Walk | Plan::Collect => 0,
    };
    let mut params = filters.params();
    params.push((":limit", &limit));
    params.push((":offset", &offset));
    if let Plan::WalkWithin(_) = plan {
        params.push((":budget", &budget));
    }
    let seqs = conn
        .prepare_cached(&sql)?
        .query_map(params.as_slice(), |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(seqs)
}

/// The hosts a search term matched (store::list_index), bound as one JSON array.
struct SearchSet {
    json: String,
}

/// The filters of a list query and the values they bind, by name.
struct Filters {
    group: Option<GroupFilter>,
    tag: Option<String>,
    search: Option<SearchSet>,
    /// Characters in the search term (0 without one).
    search_chars: usize,
    favorite: Option<bool>,
}

impl Filters {
    /// `matches`: the `seq`s the query's search term matched, when it has one. SQL sees them
    /// (as `:matches`) only when another filter joins the search or they are at most
    /// `collect_max`: a larger set alone is walked in memory, and its JSON (up to 700 KB)
    /// is never built.
    fn new(
        query: &HostQuery,
        matches: Option<&SeqSet>,
        collect_max: u64,
    ) -> Result<Filters, StoreError> {
        let joined = query.tag.is_some() || query.group.is_some() || query.favorite.is_some();
        let search = match matches {
            Some(set) if joined || set.len() <= collect_max => Some(SearchSet {
                json: serde_json::to_string(&set.to_vec())
                    .map_err(|err| StoreError::Sqlite(err.to_string()))?,
            }),
            Some(_) => Some(SearchSet {
                json: String::new(),
            }),
            None => None,
        };
        Ok(Filters {
            group: query.group.clone(),
            tag: query.tag.clone(),
            search,
            search_chars: query.search.as_ref().map_or(0, |term| term.chars().count()),
            favorite: query.favorite,
        })
    }

    fn is_empty(&self) -> bool {
        self.group.is_none()
            && self.tag.is_none()
            && self.search.is_none()
            && self.favorite.is_none()
    }

    /// True when a filter reads columns of the host row (not only a set of hosts).
    fn tests_host_columns(&self) -> bool {
        self.group.is_some() || self.favorite.is_some()
    }

    fn only_search(&self) -> bool {
        self.search.is_some() && self.tag.is_none() && !self.tests_host_columns()
    }

    fn only_tag(&self) -> bool {
        self.tag.is_some() && self.search.is_none() && !self.tests_host_columns()
    }

    fn has_search(&self) -> bool {
        self.search.is_some()
    }

    /// The number of matching hosts. One filter alone (or none) is read from a count the
    /// triggers keep (sql/0001, sql/0003); sets of hosts (a tag, an indexed search) are
    /// counted from their own index when nothing else needs the hosts table.
    fn count_sql(&self) -> String {
        let only_group = self.group.is_some()
            && self.tag.is_none()
            && self.search.is_none()
            && self.favorite.is_none();
        match (&self.group, only_group) {
            (Some(GroupFilter::Group(_)), true) => {
                return "SELECT coalesce((SELECT host_count FROM group_host_counts \
                        WHERE group_id = :group), 0)"
                    .to_owned()
            }
            (Some(GroupFilter::Ungrouped), true) => {
                return "SELECT (SELECT host_count FROM host_total) \
                        - coalesce((SELECT sum(host_count) FROM group_host_counts), 0)"
                    .to_owned()
            }
            _ => {}
        }
        match (
            self.tests_host_columns(),
            self.tag.is_some(),
            self.has_search(),
        ) {
            (false, false, false) => SELECT_CATALOGUE_SIZE.to_owned(),
            (false, true, false) => {
                "SELECT coalesce((SELECT host_count FROM tag_counts WHERE tag = :tag), 0)"
                    .to_owned()
            }
            (false, false, true) => format!("SELECT count(*) FROM ({MATCH_SEQS})"),
            (false, true, true) => format!(
                "SELECT count(*) FROM host_tags WHERE tag = :tag AND host_seq IN ({MATCH_SEQS})"
            ),
            (true, _, _) => format!(
                "SELECT count(*) FROM hosts{}",
                self.where_sql(Plan::Collect)
            ),
        }
    }

    /// The SQL of one page under `plan`.
    fn page_sql(&self, plan: Plan, sort: Sort, direction: Direction) -> String {
        let order = order_by(sort, direction);
        let index = sort_index(sort, direction);
        let filter = self.where_sql(plan);
        match plan {
            Plan::Walk => format!(
                "SELECT seq FROM hosts INDEXED BY {index}{filter} ORDER BY {order} \
                 LIMIT :limit OFFSET :offset"
            ),
            // The inner walk carries the columns the filters test, under the table's name
            // so the filters read the same either way, and the sort keys as plain columns,
            // from which SQLite sees the rows already come in order (no sort of the walk).
            Plan::WalkWithin(_) => {
                let (keys, key_order) = walk_keys(sort, direction);
                format!(
                    "SELECT seq FROM (SELECT {}, {keys} FROM hosts INDEXED BY {index} \
                     ORDER BY {order} LIMIT :budget) AS hosts{filter} ORDER BY {key_order} \
                     LIMIT :limit OFFSET :offset",
                    self.walk_columns().join(", ")
                )
            }
            // Without a group or favorite filter (whose indexes lead the way), matches
            // come from the sets (tag, search) by seq, or from one scan for a short search:
            // NOT INDEXED keeps SQLite from walking a sort index in search of the first
            // matches instead, which is the plan this one exists to avoid.
            Plan::Collect => {
                let not_indexed = match self.group.is_some() || self.favorite.is_some() {
                    true => "",
                    false => " NOT INDEXED",
                };
                format!(
                    "SELECT seq FROM hosts{not_indexed}{filter} ORDER BY {order} \
                     LIMIT :limit OFFSET :offset"
                )
            }
        }
    }

    /// The columns a bounded walk must carry besides the sort keys: `seq`, `id` and those
    /// the filters test.
    fn walk_columns(&self) -> Vec<&'static str> {
        let mut columns = vec!["seq", "id"];
        if self.group.is_some() {
            columns.push("group_id");
        }
        if self.favorite.is_some() {
            columns.push("is_favorite");
        }
        columns
    }

    /// The WHERE clause. A tag is a per-host probe of host_tags' primary key while walking
    /// (building the set of a common tag would cost more than the walk), and a set to
    /// collect from otherwise.
    fn where_sql(&self, plan: Plan) -> String {
        let walking = !matches!(plan, Plan::Collect);
        let mut clauses: Vec<String> = Vec::new();
        match &self.group {
            None => {}
            Some(GroupFilter::Ungrouped) => clauses.push("group_id IS NULL".into()),
            Some(GroupFilter::Group(_)) => clauses.push("group_id = :group".into()),
        }
        if self.favorite.is_some() {
            clauses.push("is_favorite = :favorite".into());
        }
        let indexed = self.has_search();
        match (self.tag.is_some(), walking, indexed) {
            (false, _, _) => {}
            (true, true, _) => clauses.push(
                "EXISTS (SELECT 1 FROM host_tags WHERE host_seq = hosts.seq AND tag = :tag)".into(),
            ),
            // A tag and a search meet in the indexes first, so only hosts in both are read.
            (true, false, true) => clauses.push(format!(
                "seq IN (SELECT host_seq FROM host_tags WHERE tag = :tag \
                 AND host_seq IN ({MATCH_SEQS}))"
            )),
            (true, false, false) => {
                clauses.push("seq IN (SELECT host_seq FROM host_tags WHERE tag = :tag)".into())
            }
        }
        match &self.search {
            None => {}
            Some(_) if self.tag.is_some() && !walking => {}
            Some(_) => clauses.push(format!("seq IN ({MATCH_SEQS})")),
        }
        match clauses.is_empty() {
            true => String::new(),
            false => format!(" WHERE {}", clauses.join(" AND ")),
        }
    }

    fn params(&self) -> Vec<(&'static str, &dyn rusqlite::ToSql)> {
        let mut params: Vec<(&'static str, &dyn rusqlite::ToSql)> = Vec::new();
        if let Some(GroupFilter::Group(group)) = &self.group {
            params.push((":group", group));
        }
        if let Some(tag) = &self.tag {
            params.push((":tag", tag));
        }
        if let Some(favorite) = &self.favorite {
            params.push((":favorite", favorite));
        }
        if let Some(search) = &self.search {
            params.push((":matches", &search.json));
        }
        params
    }
}

/// The `seq`s a search matched (store::list_index), bound as a JSON array.
const MATCH_SEQS: &str = "SELECT value FROM json_each(:matches)";

/// The ORDER BY of each sort, from a fixed list; every one ends in `id` so ties always
/// break the same way (README, Hosts) and matches `sort_index`.
pub(super) fn order_by(sort: Sort, direction: Direction) -> &'static str {
    match (sort, direction) {
        (Sort::Name, Direction::Asc) => "name_key, id",
        (Sort::Name, Direction::Desc) => "name_key DESC, id DESC",
        (Sort::Hostname, Direction::Asc) => "hostname COLLATE NOCASE, id",
        (Sort::Hostname, Direction::Desc) => "hostname COLLATE NOCASE DESC, id DESC",
        (Sort::CreatedAt, Direction::Asc) => "created_at, id",
        (Sort::CreatedAt, Direction::Desc) => "created_at DESC, id DESC",
        // README, Hosts: never-used (NULL) last in both orders; descending puts NULL
        // last by itself.
        (Sort::LastUsedAt, Direction::Asc) => "last_used_at IS NULL, last_used_at, id",
        (Sort::LastUsedAt, Direction::Desc) => "last_used_at DESC, id DESC",
    }
}

/// The sort keys of `order_by` as named columns of a bounded walk, and the ORDER BY over
/// those names.
fn walk_keys(sort: Sort, direction: Direction) -> (&'static str, &'static str) {
    match (sort, direction) {
        (Sort::Name, Direction::Asc) => ("name_key AS key_1", "key_1, id"),
        (Sort::Name, Direction::Desc) => ("name_key AS key_1", "key_1 DESC, id DESC"),
        (Sort::Hostname, Direction::Asc) => ("hostname COLLATE NOCASE AS key_1", "key_1, id"),
        (Sort::Hostname, Direction::Desc) => {
            ("hostname COLLATE NOCASE AS key_1", "key_1 DESC, id DESC")
        }
        (Sort::CreatedAt, Direction::Asc) => ("created_at AS key_1", "key_1, id"),
        (Sort::CreatedAt, Direction::Desc) => ("created_at AS key_1", "key_1 DESC, id DESC"),
        (Sort::LastUsedAt, Direction::Asc) => (
            "last_used_at IS NULL AS key_1, last_used_at AS key_2",
            "key_1, key_2, id",
        ),
        (Sort::LastUsedAt, Direction::Desc) => ("last_used_at AS key_1", "key_1 DESC, id DESC"),
    }
}

/// The index (sql/0001_init.sql) that yields hosts in `order_by` order.
pub(super) fn sort_index(sort: Sort, direction: Direction) -> &'static str {
    match (sort, direction) {
        (Sort::Name, _) => "hosts_by_name",
        (Sort::Hostname, _) => "hosts_by_hostname",
        (Sort::CreatedAt, _) => "hosts_by_created",
        (Sort::LastUsedAt, Direction::Asc) => "hosts_by_last_used_nulls_last",
        (Sort::LastUsedAt, Direction::Desc) => "hosts_by_last_used",
    }
}

/// The hosts with these `seq`s, in the given order, tags included (one query for all).
fn rows_of_page(conn: &Connection, seqs: &[i64]) -> Result<Vec<Host>, StoreError> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let seq_list =
        serde_json::to_string(seqs).map_err(|err| StoreError::Sqlite(err.to_string()))?;
    let mut rows: HashMap<i64, Host> = HashMap::with_capacity(seqs.len());
    let mut statement = conn.prepare_cached(SELECT_ROWS_OF_PAGE)?;
    let mut cursor = statement.query([&seq_list])?;
    while let Some(row) = cursor.next()? {
        let seq: i64 = row.get(0)?;
        rows.insert(seq, host_from_row(row, 1)??);
    }
    let mut statement = conn.prepare_cached(SELECT_TAGS_OF_PAGE)?;
    let mut cursor = statement.query([&seq_list])?;
    while let Some(row) = cursor.next()? {
        let seq: i64 = row.get(0)?;
        if let Some(host) = rows.get_mut(&seq) {
            host.tags.push(row.get(1)?);
        }
    }
    Ok(seqs.iter().filter_map(|seq| rows.remove(seq)).collect())
}

/// A host from the columns of `SELECT_HOST_BY_ID` starting at column `first`; tags are left empty. The outer
/// error is SQLite's; the inner one a stored value this build does not understand.
pub(crate) fn host_from_row(
    row: &Row<'_>,
    first: usize,
) -> rusqlite::Result<Result<Host, StoreError>> {
    let auth_type: String = row.get(first + 5)?;
    let port: i64 = row.get(first + 3)?;
    let (Some(auth_type), Ok(port)) = (AuthType::parse(&auth_type), u16::try_from(port)) else {
        return Ok(Err(StoreError::Sqlite(
            "a hosts row has an auth_type or port this build does not know".into(),
        )));
    };
    Ok(Ok(Host {
        id: row.get(first)?,
        name: row.get(first + 1)?,
        hostname: row.get(first + 2)?,
        port,
        username: row.get(first + 4)?,
        auth_type,
        key_id: row.get(first + 6)?,
        has_password: row.get(first + 7)?,
        group_id: row.get(first + 8)?,
        tags: Vec::new(),
        is_favorite: row.get(first + 9)?,
        color: row.get(first + 10)?,
        order: row.get(first + 11)?,
        notes: row.get(first + 12)?,
        created_at: row.get(first + 13)?,
        updated_at: row.get(first + 14)?,
        last_used_at: row.get(first + 15)?,
        jump_host_ids: Vec::new(),
        ssh_options: Vec::new(),
        revision: row.get(first + 16)?,
    }))
}

/// `GroupNotFound`/`KeyNotFound` when a reference does not exist.
fn check_references(
    conn: &Connection,
    group_id: Option<&str>,
    key_id: Option<&str>,
) -> Result<(), StoreError> {
    if let Some(group_id) = group_id {
        if !group_exists(conn, group_id)? {
            return Err(StoreError::GroupNotFound);
        }
    }
    if let Some(key_id) = key_id {
        if !key_exists(conn, key_id)? {
            return Err(StoreError::KeyNotFound);
        }
    }
    Ok(())
}

/// README, Hosts: without an `order`, a host goes after every other host of its group.
fn end_of_group(
    conn: &Connection,
    group_id: Option<&str>,
    except_id: Option<&str>,
) -> Result<i64, StoreError> {
    let max: Option<i64> = conn
        .prepare_cached(SELECT_MAX_ORDER)?
        .query_row(params![group_id, except_id], |row| row.get(0))?;
    // At i64::MAX the host shares the last place; ties sort by name and id.
    Ok(max.map_or(0, |max| max.saturating_add(1)))
}

/// Replaces a host's tags, keeping their order.
fn write_tags(conn: &Connection, seq: i64, tags: &[String]) -> Result<(), StoreError> {
    conn.prepare_cached(DELETE_TAGS)?.execute([seq])?;
    let mut insert = conn.prepare_cached(INSERT_TAG)?;
    for (position, tag) in tags.iter().enumerate() {
        insert.execute(params![seq, tag, position as i64])?;
    }
    Ok(())
}

/// A top-level group named like its id, through the groups store, for the tests below.
#[cfg(test)]
pub fn insert_group_for_tests(conn: &Connection, id: &str) -> Result<(), StoreError> {
    let group = crate::model::group::NewGroup {
        name: crate::model::name::Name::from_text(id)
            .map_err(|err| StoreError::Sqlite(err.to_string()))?,
        parent_id: None,
        color: String::new(),
        icon: String::new(),
    };
    crate::store::groups::insert(conn, id, &group)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use serde_json::{json, Value};

    use crate::model::host::{Direction, Sort};
    use crate::model::host::{HostQuery, NewHost, PasswordField};
    use crate::store::hosts::{
        by_id, delete, insert, insert_group_for_tests, list, list_tuned, move_to, page_seqs,
        rows_of_page, sort_index, toggle_favorite, touch_last_used, Filters, Plan, Tuning, TUNING,
    };
    use crate::store::list_index::{ListIndex, SeqSet};
    use crate::store::{open_in_memory, StoreError};
    use rusqlite::params;

    fn new_host(name: &str, hostname: &str, extra: Value) -> NewHost {
        let mut body = json!({
            "name": name, "hostname": hostname, "port": 22, "username": "u",
            "auth": {"type": "agent"}
        });
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        NewHost::from_json(body.as_object().unwrap(), PasswordField::Absent).unwrap()
    }

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
    fn hosts_without_order_go_to_the_end_of_their_group() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            insert_group_for_tests(tx, "g")?;
            let a = insert(tx, "a", &new_host("a", "a", json!({"order": 7})), None)?;
            let b = insert(tx, "b", &new_host("b", "b", json!({})), None)?;
            let c = insert(tx, "c", &new_host("c", "c", json!({"group_id": "g"})), None)?;
            assert_eq!((a.order, b.order, c.order), (7, 8, 0));
            let moved = move_to(tx, "c", None)?;
            assert_eq!(moved.order, 9);
            let back = move_to(tx, "c", Some("g"))?;
            assert_eq!(back.order, 0);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    #[test]
    fn favorite_toggle_and_touch_change_the_right_timestamps() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            let host = insert(tx, "a", &new_host("a", "a", json!({})), None)?;
            assert!(toggle_favorite(tx, "a")?);
            let toggled = by_id(tx, "a")?;
            assert!(toggled.updated_at > host.updated_at);
            let touched = touch_last_used(tx, "a")?;
            assert_eq!(by_id(tx, "a")?.updated_at, toggled.updated_at);
            assert_eq!(by_id(tx, "a")?.last_used_at, touched.last_used_at);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    #[test]
    fn missing_rows_are_not_found() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            assert!(matches!(by_id(tx, "nope"), Err(StoreError::HostNotFound)));
            assert!(matches!(delete(tx, "nope"), Err(StoreError::HostNotFound)));
            let err = insert(tx, "a", &new_host("a", "a", json!({"group_id": "g"})), None);
            assert!(matches!(err, Err(StoreError::GroupNotFound)));
            Ok::<_, StoreError>(())
        })
        .unwrap();
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
        assert_eq!(total, 2);
        assert_eq!(hosts[0].tags, vec!["z", "a", "m"]);
        assert_eq!(hosts[1].tags, vec!["q"]);
    }

    #[test]
    fn search_finds_substrings_by_index_and_by_scan() {
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
            db.read_list(|conn, index| list(conn, index, &query(&[("search", term)])))
                .unwrap()
                .0
                .into_iter()
                .map(|host| host.id)
                .collect()
        };
        let ids =
            |list: &[&str]| -> HashSet<String> { list.iter().map(|s| s.to_string()).collect() };
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

    /// A catalogue with repeated names, two groups, tags of several shares, favorites and
    /// some used hosts.
    fn varied_catalogue() -> crate::store::Db {
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
                // Mixed case: NOCASE and binary orders differ.
                let hostname = match n % 2 {
                    0 => hostname.to_uppercase(),
                    _ => hostname,
                };
                let extra = json!({"tags": tags, "group_id": group, "is_favorite": n % 5 == 0});
                let id = format!("id-{:02}", (n * 37) % 60);
                insert(tx, &id, &new_host(&name, &hostname, extra), None)?;
                if n % 3 == 1 {
                    touch_last_used(tx, &id)?;
                }
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        db
    }

    /// The filters of `query`, its search answered by SQL (`instr` over the lowercased
    /// name and hostname): an oracle independent of the in-memory search text.
    fn oracle_filters(conn: &rusqlite::Connection, query: &HostQuery) -> Filters {
        let matches = query.search.as_ref().map(|term| {
            let seqs: Vec<i64> = conn
                .prepare(
                    "SELECT seq FROM hosts \
                     WHERE instr(name_key, ?1) > 0 OR instr(lower(hostname), ?1) > 0",
                )
                .unwrap()
                .query_map([term.to_lowercase()], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            SeqSet::new(&seqs)
        });
        Filters::new(query, matches.as_ref(), u64::MAX).unwrap()
    }

    fn plan_seqs(conn: &rusqlite::Connection, query: &HostQuery, plan: Plan) -> Vec<i64> {
        let filters = oracle_filters(conn, query);
        page_seqs(conn, &filters, query, query.offset().unwrap(), plan).unwrap()
    }

    /// Tunings that send every query down each path: SQL alone, and memory whenever allowed.
    const TUNINGS: [Tuning; 3] = [
        TUNING,
        Tuning {
            deep_offset: u64::MAX,
            collect_max: u64::MAX,
        },
        Tuning {
            deep_offset: 0,
            collect_max: 0,
        },
    ];

    /// The ids `list` answers with each tuning, checked equal to the collected page.
    fn assert_lists_match_the_oracle(db: &crate::store::Db, pairs: &[(&str, &str)]) {
        let query = query(pairs);
        db.read_list(|conn, index| {
            let collected: Vec<String> =
                rows_of_page(conn, &plan_seqs(conn, &query, Plan::Collect))?
                    .into_iter()
                    .map(|h| h.id)
                    .collect();
            for tuning in TUNINGS {
                let listed: Vec<String> = list_tuned(conn, index, &query, tuning)?
                    .0
                    .into_iter()
                    .map(|h| h.id)
                    .collect();
                assert_eq!(listed, collected, "{pairs:?} {tuning:?}");
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    const FILTERS: [&[(&str, &str)]; 10] = [
        &[],
        &[("tag", "third")],
        &[("tag", "rare")],
        &[("group", "g1")],
        &[("group", "")],
        &[("favorite", "true")],
        &[("search", "web")],
        &[("search", "b-")],
        &[("tag", "third"), ("search", "web")],
        &[
            ("tag", "all"),
            ("group", "g1"),
            ("favorite", "false"),
            ("search", "eb"),
        ],
    ];

    /// Every filter, sort, order and a few pages, as query pairs.
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
    fn walk_and_collect_plans_give_the_same_pages() {
        let db = varied_catalogue();
        let mut compared = 0;
        for pairs in every_query() {
            let query = query(&pairs);
            db.read(|conn| {
                let collect = plan_seqs(conn, &query, Plan::Collect);
                assert_eq!(plan_seqs(conn, &query, Plan::Walk), collect, "{pairs:?}");
                let within = plan_seqs(conn, &query, Plan::WalkWithin(1000));
                assert_eq!(within, collect, "{pairs:?}");
                compared += usize::from(!collect.is_empty());
                Ok::<_, StoreError>(())
            })
            .unwrap();
        }
        assert!(compared > 150, "only {compared} non-empty pages compared");
    }

    /// The in-memory orders and search text answer exactly what SQL does, for
    /// every filter, sort, direction and page, in memory or not.
    #[test]
    fn list_answers_the_collected_page_whichever_plan_it_picks() {
        let db = varied_catalogue();
        for pairs in every_query() {
            assert_lists_match_the_oracle(&db, &pairs);
        }
    }

    /// The search text and the orders follow every kind of change (add, rename,
    /// delete, move, last use) made after they were read.
    #[test]
    fn list_follows_changes_made_after_its_memory_was_read() {
        let db = varied_catalogue();
        let queries: [&[(&str, &str)]; 6] = [
            &[("search", "web"), ("per_page", "100")],
            &[("search", "zz"), ("per_page", "100")],
            &[("search", "b"), ("sort", "last_used_at"), ("order", "desc")],
            &[("tag", "third"), ("sort", "hostname"), ("per_page", "100")],
            &[("page", "2"), ("per_page", "5"), ("sort", "last_used_at")],
            &[("page", "3"), ("per_page", "4"), ("order", "desc")],
        ];
        let check = |db: &crate::store::Db| {
            for pairs in queries {
                assert_lists_match_the_oracle(db, pairs);
            }
        };
        check(&db);
        db.write(|tx| {
            insert(tx, "new-1", &new_host("ZZ top", "zz.example.com", json!({"tags": ["third"]})), None)?;
            let renamed = by_id(tx, "id-03")?;
            tx.execute(
                "UPDATE hosts SET name = 'Web renamed', name_key = 'web renamed' WHERE id = 'id-03'",
                [],
            )?;
            assert_ne!(renamed.name, "Web renamed");
            delete(tx, "id-10")?;
            touch_last_used(tx, "id-20")?;
            move_to(tx, "id-21", Some("g2"))?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        check(&db);
        // A change through plain SQL, outside the store functions, is seen too.
        db.read(|conn| {
            conn.execute(
                "UPDATE hosts SET hostname = 'zz-other.example' WHERE id = 'id-30'",
                [],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        check(&db);
    }

    /// An order patched host by host after adds, renames (in any case), deletes
    /// and last uses equals the order read afresh, in every sort and direction.
    #[test]
    fn patched_orders_equal_orders_read_afresh() {
        let db = varied_catalogue();
        let sorts = [
            Sort::Name,
            Sort::Hostname,
            Sort::CreatedAt,
            Sort::LastUsedAt,
        ];
        let mut state: u64 = 7;
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) % bound
        };
        for round in 0..40 {
            // Read (or patch) every order, then change a few hosts.
            db.read_list(|conn, index| {
                for sort in sorts {
                    index.order(conn, sort)?;
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
            db.write(|tx| {
                for step in 0..1 + next(4) {
                    let id = format!("id-{:02}", next(60));
                    let exists = by_id(tx, &id).is_ok();
                    match (next(5), exists) {
                        (0, _) | (_, false) => {
                            let new_id = format!("new-{round}-{step}");
                            let host =
                                new_host(&format!("N{}", next(9)), "Added.example", json!({}));
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
            db.read_list(|conn, index| {
                for sort in sorts {
                    for direction in [Direction::Asc, Direction::Desc] {
                        let patched: Vec<i64> = index.order(conn, sort)?.iter(direction).collect();
                        let fresh: Vec<i64> = ListIndex::default()
                            .order(conn, sort)?
                            .iter(direction)
                            .collect();
                        assert_eq!(patched, fresh, "round {round}, {sort:?} {direction:?}");
                    }
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
        }
    }

    #[test]
    fn a_walk_out_of_budget_falls_short_and_list_still_answers_the_full_page() {
        let db = varied_catalogue();
        // Names starting with "web" sort last: a short walk by name cannot reach them.
        let query = query(&[("search", "web"), ("per_page", "5")]);
        db.read_list(|conn, index| {
            assert!(plan_seqs(conn, &query, Plan::WalkWithin(10)).len() < 5);
            assert_eq!(list(conn, index, &query)?.0.len(), 5);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    #[test]
    fn walks_read_the_sort_index_in_order_without_sorting() {
        let db = varied_catalogue();
        for sort in ["name", "hostname", "created_at", "last_used_at"] {
            for order in ["asc", "desc"] {
                for filter in [None, Some(("tag", "third")), Some(("search", "web"))] {
                    let mut pairs = vec![("sort", sort), ("order", order)];
                    pairs.extend(filter);
                    let query = query(&pairs);
                    let filters = db
                        .read(|conn| Ok::<_, StoreError>(oracle_filters(conn, &query)))
                        .unwrap();
                    let plan = match filter {
                        None => Plan::Walk,
                        Some(_) => Plan::WalkWithin(1000),
                    };
                    let sql = filters.page_sql(plan, query.sort, query.direction);
                    let plan: Vec<String> = db
                        .read(|conn| {
                            let mut statement =
                                conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                            let mut params = filters.params();
                            let (limit, offset, budget) = (50i64, 0i64, 1000i64);
                            params.push((":limit", &limit));
                            params.push((":offset", &offset));
                            if plan != Plan::Walk {
                                params.push((":budget", &budget));
                            }
                            let rows = statement
                                .query_map(params.as_slice(), |row| row.get::<_, String>(3))?
                                .collect::<Result<Vec<_>, _>>()?;
                            Ok::<_, StoreError>(rows)
                        })
                        .unwrap();
                    let text = plan.join(" | ");
                    assert!(
                        text.contains(sort_index(query.sort, query.direction)),
                        "{pairs:?}: {text}"
                    );
                    assert!(!text.contains("TEMP B-TREE"), "{pairs:?}: {text}");
                }
            }
        }
    }

    #[test]
    fn list_counts_match_the_pages_for_every_filter() {
        let db = varied_catalogue();
        let filters: [&[(&str, &str)]; 6] = [
            &[("tag", "third")],
            &[("search", "web")],
            &[("tag", "third"), ("search", "web")],
            &[("search", "eb"), ("tag", "all")],
            &[("group", "g2"), ("favorite", "false")],
            &[("tag", "none-such")],
        ];
        for filter in filters {
            let mut pairs = filter.to_vec();
            pairs.push(("per_page", "1000"));
            let (hosts, total) = db
                .read_list(|conn, index| list(conn, index, &query(&pairs)))
                .unwrap();
            assert_eq!(hosts.len() as u64, total, "{pairs:?}");
        }
    }
}
