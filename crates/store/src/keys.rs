//! API keys (`docs/interfaces.md`, "Keys and tenants"): made, listed and revoked by `airlock keys`,
//! looked up by the gateway on each `/v1` request. Only a key's SHA-256 is stored; the key itself
//! is shown once, when it is made.

use airlock_base::input::plain_name;
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::sqlite::Sqlite;
use super::{Store, StoreError};

/// A stored key (never the key itself).
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    /// The key's public id, the part after `ak_`: what `keys list` shows and `keys revoke` takes.
    pub key_id: String,
    /// The tenant it acts for.
    pub tenant: String,
    /// It acts for every tenant.
    pub admin: bool,
    /// Epoch ms.
    pub created_at: u64,
    /// Epoch ms; a revoked key is refused.
    pub revoked_at: Option<u64>,
}

/// A key just made: the only time its secret exists outside the client.
#[derive(Debug)]
pub struct NewKey {
    /// What was stored.
    pub key: Key,
    /// `ak_<key id>_<64 hex digits>`: what a client sends as `Authorization: Bearer …`.
    pub secret: String,
}

/// Why a key could not be made or revoked.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The tenant name does not fit.
    #[error(
        "the tenant name {0:?} is not valid: use 1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit"
    )]
    BadTenant(String),
    /// No key has that id.
    #[error("no key has id {0:?}; `airlock keys list` shows the ids")]
    NoSuchKey(String),
    /// The system's random source failed.
    #[error("the system's random number source failed: {0}")]
    Random(String),
    /// Storage.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether `name` may name a tenant: a [`plain_name`] of up to 64 characters.
pub fn valid_tenant(name: &str) -> bool {
    plain_name(name, 64, &['.', '_', '-'])
}

/// How long a browser's sign-in (`POST /v1/login`) lasts: 30 days.
pub const LOGIN_TTL_MS: u64 = 30 * 24 * 60 * 60 * 1000;

/// What a store publishes to the gateways sharing it when a key is made: one that served without
/// keys asks for them at once.
pub const KEYS_NOTICE: &str = r#"{"keys":"created"}"#;

/// The stored form of a key (or of a sign-in token).
pub fn key_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn random_hex(bytes: usize) -> Result<String, KeyError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| KeyError::Random(e.to_string()))?;
    Ok(hex::encode(buf))
}

impl Store {
    /// Makes a key for `tenant` (for every tenant when `admin`).
    pub async fn create_key(
        &self,
        tenant: &str,
        admin: bool,
        now: u64,
    ) -> Result<NewKey, KeyError> {
        if !valid_tenant(tenant) {
            return Err(KeyError::BadTenant(tenant.to_owned()));
        }
        let key_id = random_hex(6)?;
        let secret = format!("ak_{key_id}_{}", random_hex(32)?);
        let key =
            Key { key_id, tenant: tenant.to_owned(), admin, created_at: now, revoked_at: None };
        self.insert_key(key.clone(), key_hash(&secret)).await?;
        if let Err(error) = self.publish(KEYS_NOTICE).await {
            // They ask the store again within a second by themselves.
            tracing::warn!(%error, "telling the running gateways of the new key failed");
        }
        Ok(NewKey { key, secret })
    }

    /// Signs a browser in for the key `key_id`: a fresh random token, answered once (it becomes
    /// the cookie); only its hash is kept.
    pub async fn create_login(&self, key_id: &str, now: u64) -> Result<String, KeyError> {
        let token = format!("as_{}", random_hex(32)?);
        self.insert_login(key_hash(&token), key_id.to_owned(), now).await?;
        Ok(token)
    }

    /// The key a sign-in token acts for: `None` when the token is unknown, signed out, older
    /// than [`LOGIN_TTL_MS`], or its key was revoked.
    pub async fn login_key(&self, token: &str, now: u64) -> Result<Option<Key>, StoreError> {
        let since = now.saturating_sub(LOGIN_TTL_MS);
        self.login_key_row(key_hash(token), since).await
    }

    /// Ends a sign-in (an unknown token: nothing to do).
    pub async fn end_login(&self, token: &str) -> Result<(), StoreError> {
        self.end_login_row(key_hash(token)).await
    }

    /// Revokes a key (again: no change); requests with it are refused from then on.
    pub async fn revoke_key(&self, key_id: &str, now: u64) -> Result<Key, KeyError> {
        let revoked = self.revoke_key_row(key_id, now).await?;
        revoked.ok_or_else(|| KeyError::NoSuchKey(key_id.to_owned()))
    }
}

impl Sqlite {
    /// Stores a key made by [`Store::create_key`], with the hash of its secret.
    pub async fn insert_key(&self, key: Key, hash: String) -> Result<(), StoreError> {
        self.direct(move |conn| {
            conn.execute(
                "INSERT INTO api_keys (key_id, hash, tenant, admin, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![key.key_id, hash, key.tenant, key.admin, key.created_at as i64],
            )
        })
        .await?;
        Ok(())
    }

    /// Every key, oldest first.
    pub async fn keys(&self) -> Result<Vec<Key>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("{KEY_COLUMNS} ORDER BY created_at, key_id"))?;
            stmt.query_map([], key_row)?.collect()
        })
        .await
    }

    /// Revokes a key (again: no change) and ends its sign-ins; `None` if no key has that id.
    pub async fn revoke_key_row(&self, key_id: &str, now: u64) -> Result<Option<Key>, StoreError> {
        let id = key_id.to_owned();
        self.direct(move |conn| {
            conn.execute(
                "UPDATE api_keys SET revoked_at = ?2 WHERE key_id = ?1 AND revoked_at IS NULL",
                params![id, now as i64],
            )?;
            conn.execute("DELETE FROM logins WHERE key_id = ?1", [&id])?;
            conn.query_row(&format!("{KEY_COLUMNS} WHERE key_id = ?1"), [&id], key_row).optional()
        })
        .await
    }

    /// The unrevoked key whose secret is `secret`.
    pub async fn live_key(&self, secret: &str) -> Result<Option<Key>, StoreError> {
        let hash = key_hash(secret);
        self.read(move |conn| {
            conn.query_row(
                &format!("{KEY_COLUMNS} WHERE hash = ?1 AND revoked_at IS NULL"),
                [&hash],
                key_row,
            )
            .optional()
        })
        .await
    }

    /// Whether any key was ever made: from then on every `/v1` request needs one.
    pub async fn has_keys(&self) -> Result<bool, StoreError> {
        self.read(|conn| conn.query_row("SELECT EXISTS (SELECT 1 FROM api_keys)", [], |r| r.get(0)))
            .await
    }

    /// Keeps a sign-in token's hash for the key `key_id`.
    pub async fn insert_login(
        &self,
        hash: String,
        key_id: String,
        now: u64,
    ) -> Result<(), StoreError> {
        self.direct(move |conn| {
            conn.execute(
                "INSERT INTO logins (token_hash, key_id, created_at) VALUES (?1, ?2, ?3)",
                params![hash, key_id, now as i64],
            )
        })
        .await?;
        Ok(())
    }

    /// The unrevoked key of the sign-in whose token hashes to `hash`, made at `since` or later.
    pub async fn login_key(&self, hash: String, since: u64) -> Result<Option<Key>, StoreError> {
        self.read(move |conn| {
            conn.query_row(
                &format!("{LOGIN_KEY_COLUMNS} WHERE l.token_hash = ?1 AND l.created_at >= ?2 AND k.revoked_at IS NULL"),
                params![hash, since as i64],
                key_row,
            )
            .optional()
        })
        .await
    }

    /// Forgets the sign-in whose token hashes to `hash`.
    pub async fn end_login(&self, hash: String) -> Result<(), StoreError> {
        self.direct(move |conn| conn.execute("DELETE FROM logins WHERE token_hash = ?1", [hash]))
            .await?;
        Ok(())
    }
}

/// A sign-in's key, joined: `l` the sign-in, `k` the key.
pub(super) const LOGIN_KEY_COLUMNS: &str = "SELECT k.key_id, k.tenant, k.admin, k.created_at, \
     k.revoked_at FROM logins l JOIN api_keys k ON k.key_id = l.key_id";

const KEY_COLUMNS: &str = "SELECT key_id, tenant, admin, created_at, revoked_at FROM api_keys";

fn key_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Key> {
    Ok(Key {
        key_id: r.get(0)?,
        tenant: r.get(1)?,
        admin: r.get(2)?,
        created_at: r.get::<_, i64>(3)? as u64,
        revoked_at: r.get::<_, Option<i64>>(4)?.map(|t| t as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Durability, MEMORY};

    #[tokio::test]
    async fn a_key_is_found_by_its_secret_until_it_is_revoked() {
        let store = Store::open(std::path::Path::new(MEMORY), Durability::Full).unwrap();
        assert!(!store.has_keys().await.unwrap());
        let made = store.create_key("acme", false, 1).await.unwrap();
        assert!(made.secret.starts_with(&format!("ak_{}_", made.key.key_id)));
        assert_eq!(store.live_key(&made.secret).await.unwrap(), Some(made.key.clone()));
        assert_eq!(store.live_key("ak_nope").await.unwrap(), None);
        let revoked = store.revoke_key(&made.key.key_id, 2).await.unwrap();
        assert_eq!(revoked.revoked_at, Some(2));
        assert_eq!(store.live_key(&made.secret).await.unwrap(), None);
        assert!(store.has_keys().await.unwrap(), "a revoked key still keeps auth on");
        assert!(matches!(store.revoke_key("nope", 3).await, Err(KeyError::NoSuchKey(_))));
    }

    #[tokio::test]
    async fn a_tenant_name_is_checked() {
        let store = Store::open(std::path::Path::new(MEMORY), Durability::Full).unwrap();
        for bad in ["", "-a", "a b", "a/b", &"x".repeat(65)] {
            assert!(matches!(store.create_key(bad, false, 1).await, Err(KeyError::BadTenant(_))));
        }
        assert!(store.create_key("team-1.prod_x", true, 1).await.is_ok());
    }
}
