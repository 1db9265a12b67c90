//! `GET /api/changes?since&wait&limit`: the change feed (docs/api.md, "Change feed"). Answers at
//! once with the entries after `since`, or holds the request until a write commits one or
//! `wait` runs out.
//!
//! Invariants: a waiting request holds no lock, only its thread and a wait on the commit
//! signal, and every commit wakes every waiter at once; at most `MAX_WAITERS` requests wait
//! at once, and one more that would wait is 503 `BUSY` with `Retry-After`; a page never reaches past a vault
//! lock entry, and while the vault is locked a page that does not end with that entry is
//! 401 `VAULT_LOCKED`, like every data endpoint: a reader waiting when the vault locks gets
//! the lock entry, the 401s come after it. Entries carry no field value.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::api::{number_parameter, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::state::AppState;
use crate::store;
use crate::store::changes::{Change, ChangePage};

/// docs/api.md "Change feed": a request waits at most this long; more is clamped.
pub const MAX_WAIT_SECONDS: u64 = 30;

/// docs/api.md "Change feed": requests waiting at once at most; one more that would wait is 503
/// `BUSY` (`Retry-After: 1`). Each holds a connection and a thread, so this keeps long polls
/// from taking the connection cap (docs/security.md, "Threat model of the HTTP layer").
pub const MAX_WAITERS: usize = 64;

/// docs/api.md "Change feed": entries a page holds unless `limit` says otherwise.
pub const DEFAULT_LIMIT: u64 = 100;

/// docs/api.md "Change feed": the most entries a page holds; more is clamped.
pub const MAX_LIMIT: u64 = 1000;

#[derive(Serialize)]
struct FeedPage<'a> {
    items: Vec<ChangeView<'a>>,
    next: i64,
    reset: bool,
}

#[derive(Serialize)]
struct ChangeView<'a> {
    seq: i64,
    at: &'a str,
    kind: &'a str,
    id: &'a str,
    op: &'a str,
}

pub fn list(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let since = number_parameter(req, "since", 0, i64::MAX as u64)?;
    let wait = number_parameter(req, "wait", 0, MAX_WAIT_SECONDS)?.unwrap_or(0);
    let wait = match state.config.feed_overrides.max_wait {
        Some(cap) => Duration::from_secs(wait).min(cap),
        None => Duration::from_secs(wait),
    };
    let limit = number_parameter(req, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
    let limit = u32::try_from(limit).unwrap_or(u32::MAX);
    let deadline = Instant::now() + wait;
    let since = match since {
        Some(since) => i64::try_from(since).unwrap_or(i64::MAX),
        // docs/api.md "Change feed": no cursor means from now on.
        None => state.db.read(store::changes::latest)?,
    };
    let feed = state.db.feed();
    let max_waiters = state
        .config
        .feed_overrides
        .max_waiters
        .unwrap_or(MAX_WAITERS);
    let mut place = None;
    loop {
        // Both before the read: a commit after it moves the generation, so the wait below
        // returns at once; a lock before it committed its entry first (Session::lock).
        let seen = feed.generation();
        let locked = state.session.vault_locked();
        let page = feed.page(&state.db, since, limit)?;
        let (items, next) = until_vault_lock(&page);
        if locked && !items.last().is_some_and(is_vault_lock) {
            return Err(ApiError::VaultLocked);
        }
        if !items.is_empty() || page.reset || Instant::now() >= deadline {
            return answer(items, next, page.reset);
        }
        if place.is_none() {
            place = Some(feed.try_wait_place(max_waiters).ok_or(ApiError::Busy)?);
        }
        // One line per wait: tests poll for it before they act on a waiting request.
        log::debug!("change feed: a request waits for the next change");
        if !feed.wait_past(seen, deadline) {
            return answer(items, next, page.reset);
        }
    }
}

/// The entries up to and including the first vault lock, and the cursor after them.
fn until_vault_lock(page: &ChangePage) -> (&[Change], i64) {
    match page.items.iter().position(is_vault_lock) {
        Some(position) => (&page.items[..=position], page.items[position].seq),
        None => (&page.items, page.next),
    }
}

fn is_vault_lock(change: &Change) -> bool {
    change.kind == "vault" && change.op == "locked"
}

fn answer(items: &[Change], next: i64, reset: bool) -> Result<Reply, ApiError> {
    let items = items
        .iter()
        .map(|change| ChangeView {
            seq: change.seq,
            at: &change.at,
            kind: &change.kind,
            id: &change.id,
            op: &change.op,
        })
        .collect();
    Reply::json(200, &FeedPage { items, next, reset })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::api::changes::until_vault_lock;
    use crate::store::changes::{Change, ChangePage};

    fn change(seq: i64, kind: &str, op: &str) -> Change {
        Change {
            seq,
            at: "2026-01-01T00:00:00.000Z".into(),
            kind: kind.into(),
            id: "x".into(),
            op: op.into(),
        }
    }

    #[test]
    fn a_page_ends_at_its_first_vault_lock() {
        let page = ChangePage {
            items: vec![
                change(1, "host", "created"),
                change(2, "vault", "locked"),
                change(3, "vault", "unlocked"),
                change(4, "vault", "locked"),
            ],
            next: 4,
            reset: false,
        };
        let (items, next) = until_vault_lock(&page);
        assert_eq!(items.len(), 2);
        assert_eq!(next, 2);
    }

    #[test]
    fn a_page_without_a_vault_lock_is_kept_whole() {
        let page = ChangePage {
            items: vec![change(1, "vault", "unlocked"), change(2, "host", "locked")],
            next: 2,
            reset: false,
        };
        let (items, next) = until_vault_lock(&page);
        assert_eq!((items.len(), next), (2, 2));
    }
}
