//! The SSH agent's reads and writes of the `keys` table: the keys it serves, one key by
//! fingerprint with its sealed secrets, and the per-key agent policy (sql/0007).
//!
//! Invariants: never sees a plaintext secret (sealed bytes go out as stored); a key is
//! served only when the agent can sign with it without asking for anything: enabled, and
//! either stored unencrypted or with its passphrase.

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::agent::{AgentPolicy, Confirm};
use crate::store::{now_timestamp, StoreError};

/// Keys the agent lists: enabled, and signable without a question. By name, as the keys
/// list, so `ssh-add -l` and the app show them in the same order.
const SELECT_SERVED: &str = "SELECT id, name, public_key, fingerprint, agent_enabled, \
     agent_confirm, agent_forwarded, has_passphrase = 0 OR passphrase IS NOT NULL \
     FROM keys WHERE agent_enabled = 1 AND (has_passphrase = 0 OR passphrase IS NOT NULL) \
     ORDER BY name_key, id";
const SELECT_BY_FINGERPRINT: &str = "SELECT id, name, public_key, fingerprint, agent_enabled, \
     agent_confirm, agent_forwarded, has_passphrase = 0 OR passphrase IS NOT NULL \
     FROM keys WHERE fingerprint = ?1";
const SELECT_BY_ID: &str = "SELECT id, name, public_key, fingerprint, agent_enabled, \
     agent_confirm, agent_forwarded, has_passphrase = 0 OR passphrase IS NOT NULL \
     FROM keys WHERE id = ?1";
const SELECT_SECRETS: &str = "SELECT private_key, passphrase FROM keys WHERE id = ?1";
const OFFER: &str = "UPDATE keys SET agent_enabled = 1, agent_confirm = ?2, updated_at = ?3 \
     WHERE id = ?1";
const UPDATE_POLICY: &str = "UPDATE keys SET agent_enabled = ?2, agent_confirm = ?3, \
     agent_forwarded = ?4 WHERE id = ?1";
const DISABLE: &str =
    "UPDATE keys SET agent_enabled = 0, updated_at = ?2 WHERE id = ?1 AND agent_enabled = 1";
const DISABLE_ALL: &str =
    "UPDATE keys SET agent_enabled = 0, updated_at = ?1 WHERE agent_enabled = 1";

/// A key as the agent sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentKey {
    pub id: String,
    pub name: String,
    /// `<algorithm> <base64>`.
    pub public_key: String,
    pub fingerprint: String,
    pub policy: AgentPolicy,
    /// False for an encrypted key stored without its passphrase: the agent cannot sign.
    pub signable: bool,
}

/// A key's sealed private key text and passphrase, as the vault sealed them.
pub struct SealedKey {
    pub private_key: Vec<u8>,
    pub passphrase: Option<Vec<u8>>,
}

/// The keys the agent offers, by name.
pub fn served(conn: &Connection) -> Result<Vec<AgentKey>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_SERVED)?;
    let rows = statement.query_map([], agent_key_from_row)?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// The key with this fingerprint, served or not.
pub fn by_fingerprint(
    conn: &Connection,
    fingerprint: &str,
) -> Result<Option<AgentKey>, StoreError> {
    Ok(conn
        .prepare_cached(SELECT_BY_FINGERPRINT)?
        .query_row([fingerprint], agent_key_from_row)
        .optional()?)
}

/// Key `id` as the agent sees it. Errors: `KeyNotFound`.
pub fn by_id(conn: &Connection, id: &str) -> Result<AgentKey, StoreError> {
    conn.prepare_cached(SELECT_BY_ID)?
        .query_row([id], agent_key_from_row)
        .optional()?
        .ok_or(StoreError::KeyNotFound)
}

/// Key `id`'s sealed secrets. Errors: `KeyNotFound`.
pub fn secrets(conn: &Connection, id: &str) -> Result<SealedKey, StoreError> {
    conn.prepare_cached(SELECT_SECRETS)?
        .query_row([id], |row| {
            Ok(SealedKey {
                private_key: row.get(0)?,
                passphrase: row.get(1)?,
            })
        })
        .optional()?
        .ok_or(StoreError::KeyNotFound)
}

/// Stores key `id`'s agent policy; the caller sets `updated_at` (it runs inside the key's
/// update). Errors: `KeyNotFound`.
pub fn set_policy(conn: &Connection, id: &str, policy: &AgentPolicy) -> Result<(), StoreError> {
    let changed = conn.prepare_cached(UPDATE_POLICY)?.execute(params![
        id,
        policy.enabled,
        policy.confirm.as_str(),
        policy.forwarded.as_str(),
    ])?;
    match changed {
        0 => Err(StoreError::KeyNotFound),
        _ => Ok(()),
    }
}

/// `ssh-add` of a key already stored: the agent offers it again, with `confirm` (an edit:
/// `updated_at` moves, so the change feed and the key's revision see it).
pub fn offer(conn: &Connection, id: &str, confirm: Confirm) -> Result<(), StoreError> {
    match conn
        .prepare_cached(OFFER)?
        .execute(params![id, confirm.as_str(), now_timestamp()])?
    {
        0 => Err(StoreError::KeyNotFound),
        _ => Ok(()),
    }
}

/// `ssh-add -d`: the agent stops offering key `id`; it stays in the vault. True when it was
/// offered until now.
pub fn disable(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(DISABLE)?
        .execute(params![id, now_timestamp()])?
        > 0)
}

/// `ssh-add -D`: the agent stops offering every key; they stay in the vault. The number of
/// keys that were offered.
pub fn disable_all(conn: &Connection) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached(DISABLE_ALL)?
        .execute([now_timestamp()])?)
}

fn agent_key_from_row(row: &Row<'_>) -> rusqlite::Result<AgentKey> {
    Ok(AgentKey {
        id: row.get(0)?,
        name: row.get(1)?,
        public_key: row.get(2)?,
        fingerprint: row.get(3)?,
        policy: AgentPolicy::from_stored(
            row.get(4)?,
            &row.get::<_, String>(5)?,
            &row.get::<_, String>(6)?,
        ),
        signable: row.get(7)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::agent::{AgentPolicy, Confirm, Forwarded};
    use crate::model::name::Name;
    use crate::store::agent::{by_fingerprint, disable, disable_all, secrets, served, set_policy};
    use crate::store::keys::{self, NewKey};
    use crate::store::{open_in_memory, Db, StoreError};

    /// Stores a key `id` named `name`; encrypted when `encrypted`, with a stored passphrase
    /// when `passphrase`.
    fn store(db: &Db, id: &str, name: &str, encrypted: bool, passphrase: bool) {
        let fingerprint = format!("SHA256:{id}");
        let name = Name::from_text(name).unwrap();
        let row = NewKey {
            has_passphrase: encrypted,
            sealed_private_key: b"sealed-key",
            sealed_passphrase: passphrase.then_some(&b"sealed-pass"[..]),
            ..NewKey::for_tests(id, &fingerprint)
        };
        db.write(|tx| keys::insert(tx, &name, &row)).unwrap();
    }

    fn served_names(db: &Db) -> Vec<String> {
        db.read(served)
            .unwrap()
            .into_iter()
            .map(|key| key.name)
            .collect()
    }

    #[test]
    fn a_new_key_is_served_with_the_default_policy() {
        let db = open_in_memory().unwrap();
        store(&db, "1", "plain", false, false);
        let keys = db.read(served).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].policy, AgentPolicy::default());
        assert!(keys[0].signable);
    }

    #[test]
    fn an_encrypted_key_is_served_only_with_its_passphrase_stored() {
        let db = open_in_memory().unwrap();
        store(&db, "1", "without", true, false);
        store(&db, "2", "with", true, true);
        assert_eq!(served_names(&db), ["with"]);
        let without = db
            .read(|conn| by_fingerprint(conn, "SHA256:1"))
            .unwrap()
            .unwrap();
        assert!(!without.signable);
    }

    #[test]
    fn a_disabled_key_is_not_served_and_stays_stored() {
        let db = open_in_memory().unwrap();
        store(&db, "1", "a", false, false);
        store(&db, "2", "b", false, false);
        let long_ago = "2000-01-01T00:00:00.000Z";
        db.write(|tx| {
            tx.execute("UPDATE keys SET updated_at = ?1", [long_ago])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert!(db.write(|tx| disable(tx, "1")).unwrap());
        assert!(!db.write(|tx| disable(tx, "1")).unwrap(), "already off");
        assert_eq!(served_names(&db), ["b"]);
        let key = db.read(|conn| keys::by_id(conn, "1")).unwrap();
        assert!(!key.agent.enabled);
        assert!(key.updated_at.as_str() > long_ago, "a disable is an edit");
        assert_eq!(db.write(|tx| disable_all(tx)).unwrap(), 1);
        assert!(served_names(&db).is_empty());
        assert_eq!(db.read(keys::list).unwrap().len(), 2);
    }

    #[test]
    fn a_policy_round_trips_through_the_row() {
        let db = open_in_memory().unwrap();
        store(&db, "1", "a", false, false);
        let policy = AgentPolicy {
            enabled: false,
            confirm: Confirm::OncePerHost,
            forwarded: Forwarded::Confirm,
        };
        db.write(|tx| set_policy(tx, "1", &policy)).unwrap();
        assert_eq!(
            db.read(|conn| keys::by_id(conn, "1")).unwrap().agent,
            policy
        );
        let err = db.write(|tx| set_policy(tx, "nope", &policy)).unwrap_err();
        assert!(matches!(err, StoreError::KeyNotFound));
    }

    #[test]
    fn secrets_come_back_sealed_as_stored() {
        let db = open_in_memory().unwrap();
        store(&db, "1", "a", true, true);
        let sealed = db.read(|conn| secrets(conn, "1")).unwrap();
        assert_eq!(sealed.private_key, b"sealed-key");
        assert_eq!(sealed.passphrase.as_deref(), Some(&b"sealed-pass"[..]));
        assert!(matches!(
            db.read(|conn| secrets(conn, "2")),
            Err(StoreError::KeyNotFound)
        ));
    }
}
