//! The limit policies' runtime overrides on Redis: one hash of entries and a version counter
//! in one slot, changed by `overrides_*.lua` so an entry and the version move together.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use super::budget::{OverrideStore, Stored};
use crate::store::error::StoreError;
use crate::store::keys::Keys;
use crate::store::redis::{map_err, text, RedisStore};

static OVERRIDES_PUT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("overrides_put.lua")));
static OVERRIDES_DELETE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("overrides_delete.lua")));
static OVERRIDES_ALL: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("overrides_all.lua")));

impl OverrideStore for RedisStore {
    async fn overrides_put(
        &self,
        field: &str,
        value: &str,
        max: u64,
    ) -> Result<Stored, StoreError> {
        let reply: Value = self
            .pool
            .script(
                &OVERRIDES_PUT,
                self.keys.limiter_overrides().to_vec(),
                vec![field.to_owned(), value.to_owned(), max.to_string()],
            )
            .await?;
        match text(Some(&reply)).as_deref() {
            Some("created") => Ok(Stored::Created),
            Some("replaced") => Ok(Stored::Replaced),
            Some("full") => Ok(Stored::Full),
            _ => Err(StoreError::Internal(format!(
                "overrides_put.lua returned {reply:?}"
            ))),
        }
    }

    async fn overrides_delete(&self, field: &str) -> Result<bool, StoreError> {
        let gone: i64 = self
            .pool
            .script(
                &OVERRIDES_DELETE,
                self.keys.limiter_overrides().to_vec(),
                vec![field.to_owned()],
            )
            .await?;
        Ok(gone == 1)
    }

    async fn overrides_version(&self) -> Result<u64, StoreError> {
        let [_, version] = self.keys.limiter_overrides();
        let v: Option<u64> = self.pool.get(&version).await.map_err(map_err)?;
        Ok(v.unwrap_or(0))
    }

    async fn overrides_all(&self) -> Result<(u64, Vec<(String, String)>), StoreError> {
        let reply: Vec<Value> = self
            .pool
            .script(
                &OVERRIDES_ALL,
                self.keys.limiter_overrides().to_vec(),
                Vec::<String>::new(),
            )
            .await?;
        let bad = || StoreError::Internal("overrides_all.lua returned garbage".to_owned());
        let version = text(reply.first())
            .and_then(|v| v.parse().ok())
            .ok_or_else(bad)?;
        let mut entries = Vec::with_capacity(reply.len() / 2);
        for pair in reply[1..].chunks(2) {
            let field = text(pair.first()).ok_or_else(bad)?;
            let value = text(pair.get(1)).ok_or_else(bad)?;
            entries.push((field, value));
        }
        Ok((version, entries))
    }
}

/// The keys of this domain (under its own hash tag: see `crate::store::keys`).
impl Keys {
    /// The limiter's runtime overrides (a hash) and their version counter, in one slot.
    pub(crate) fn limiter_overrides(&self) -> [String; 2] {
        [
            self.join(&["rlo:{overrides}"]),
            self.join(&["rlo:{overrides}:v"]),
        ]
    }
}
