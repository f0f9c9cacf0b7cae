//! The layer listing on Redis, from an index the writes keep in a slot of its own
//! (`geor:{layers}`, by name, and `geor:{layers}:expiry`), while each layer lives in its own.
//!
//! No script can touch both slots, so the index is kept in an order that makes it safe:
//! - a write enters the layer in the index *before* it writes the layer
//!   (`geo_index_add.lua`), with an expiry never earlier than the one the write gives the
//!   layer, so a layer that exists is never missing from it;
//! - a listing counts the places of every layer it lists (`ZCARD`: 0 for a layer that expired
//!   or whose last place was deleted, which Redis then removes) and skips those with none, so
//!   none is shown that is not there;
//! - an entry leaves the index only once its expiry is [`INDEX_SLACK_S`] past: no write has
//!   entered it since, so its layer is gone for good. An emptied layer's entry stays until
//!   then (skipped), since removing it at once could race a write that brings the layer back.
//!   Listings and writes both sweep such entries (a bounded number per call), and the index's
//!   keys expire with the last layer entered, so it stays bounded as the layers are.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::geo::{Layers, INDEX_SLACK_S};
use crate::store::error::StoreError;
use crate::store::keys::Keys;
use crate::store::redis::{map_err, script_after, RedisStore};
use crate::types::{Name, Walk};

static ADD: LazyLock<Script> = script_after!("geo_index_common.lua", "geo_index_add.lua");
static PAGE: LazyLock<Script> = script_after!("geo_index_common.lua", "geo_index_page.lua");

/// Names read per `geo_index_page.lua` call, their layers then counted at once.
const NAMES_PER_CALL: usize = 250;
/// Entries past their expiry a page call sweeps out at most.
const SWEPT_PER_CALL: usize = 100;
/// Entries past their expiry each write sweeps out at most: more than the one it may add, so
/// writes alone drain what expired.
const SWEPT_PER_WRITE: usize = 2;

impl RedisStore {
    /// Enters `layer` in the listing's index until at least `expire_at` (unix seconds), before
    /// a write that keeps the layer until then (see the module).
    pub(super) async fn index_layer(&self, layer: &Name, expire_at: i64) -> Result<(), StoreError> {
        let _: i64 = self
            .pool
            .script(
                &ADD,
                vec![self.keys.layer_index(), self.keys.layer_expiries()],
                vec![
                    layer.to_string(),
                    expire_at.to_string(),
                    INDEX_SLACK_S.to_string(),
                    SWEPT_PER_WRITE.to_string(),
                ],
            )
            .await?;
        Ok(())
    }

    /// The listing (`GeoStore::geo_layers`): names [`NAMES_PER_CALL`] at a time, each layer
    /// counted on its own slot, all of a call's at once.
    pub(super) async fn list_layers(
        &self,
        after: Option<Name>,
        limit: usize,
        examine: usize,
    ) -> Result<Layers, StoreError> {
        let mut walk = Walk::new(after, limit, examine);
        loop {
            let (after, want) = walk.next_read(NAMES_PER_CALL);
            let (names, more) = self.names_after(after, want).await?;
            let counts = futures::future::try_join_all(names.iter().map(|l| self.places_in(l)));
            let kept = counts
                .await?
                .into_iter()
                .map(|n| (n > 0).then_some(n))
                .collect();
            if let Some(page) = walk.take(names, kept, more) {
                return Ok(page);
            }
        }
    }

    /// Up to `want` layer names after `after`, and whether more may follow.
    async fn names_after(
        &self,
        after: Option<&Name>,
        want: usize,
    ) -> Result<(Vec<Name>, bool), StoreError> {
        let names: Vec<String> = self
            .pool
            .script(
                &PAGE,
                vec![self.keys.layer_index(), self.keys.layer_expiries()],
                vec![
                    after.map_or_else(String::new, Name::to_string),
                    want.to_string(),
                    INDEX_SLACK_S.to_string(),
                    SWEPT_PER_CALL.to_string(),
                ],
            )
            .await?;
        let more = names.len() == want;
        let names = names
            .into_iter()
            .map(|n| {
                Name::try_from(n.clone()).map_err(|_| {
                    StoreError::Internal(format!("a layer index entry is no name: {n:?}"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok((names, more))
    }

    /// How many places `layer` holds: 0 once it expired or lost its last place.
    async fn places_in(&self, layer: &Name) -> Result<u64, StoreError> {
        let key = self.keys.geo(layer);
        self.pool.at(&key)?.zcard(&key).await.map_err(map_err)
    }
}

/// The listing's keys, in a slot of their own (`crate::store::keys`).
impl Keys {
    /// Every layer's name, each scored 0 so that they are read in order by name (`BYLEX`).
    pub(crate) fn layer_index(&self) -> String {
        format!("{}geor:{{layers}}", self.prefix)
    }

    /// Every layer's name, scored by its latest expiry (unix seconds).
    pub(crate) fn layer_expiries(&self) -> String {
        format!("{}geor:{{layers}}:expiry", self.prefix)
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;

    #[test]
    fn the_index_is_one_slot() {
        let keys = Keys::new("gw:");
        let all = [keys.layer_index(), keys.layer_expiries()];
        assert_one_slot("layers", "gw:geor:{layers}", &all);
    }
}
