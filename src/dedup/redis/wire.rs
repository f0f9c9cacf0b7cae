//! What the dedup engines share: the keys of a filter, the piece size of big layers, and the
//! shape of one add or check ([`Batch`]) and of its outcome ([`Step`]).

use crate::store::keys::Keys;

use crate::dedup::logic::Params;
use crate::dedup::{Engine, Policy};
use crate::types::Name;

/// Most bytes of a layer one call allocates: a layer of tens of MiB in one SETBIT held Redis
/// ~30 ms, and growing one string in steps reallocates (copies) it, so a bigger layer is kept
/// as piece keys of this size, each built by one call of ~1 ms (`dedup_grow.lua`).
pub(super) const LAYER_PIECE_BYTES: u64 = 2 << 20;

/// One attempt at an operation, given the parameters the gateway believed in.
pub(super) enum Step<T> {
    Done(T),
    /// No such filter (and this call may not create it).
    Absent,
    /// The filter exists with these parameters and engine instead.
    Stored(Params, Engine),
}

/// A batch to add or check, on a filter with the parameters the gateway believes it has.
#[derive(Debug, Clone, Copy)]
pub(super) struct Batch<'a> {
    pub(super) filter: &'a Name,
    pub(super) params: Params,
    /// Adding: whether an absent filter may be created. `None`: checking.
    pub(super) may_create: Option<bool>,
    pub(super) items: &'a [String],
    pub(super) policy: Policy,
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A dedup filter's metadata hash: parameters, engine, layer and item counts.
    pub(crate) fn dedup_meta(&self, filter: &Name) -> String {
        format!("{}bf:{{{filter}}}", self.prefix)
    }

    /// Layer `i` (from 0) of a Lua-engine dedup filter: a plain bitmap.
    pub(crate) fn dedup_layer(&self, filter: &Name, i: usize) -> String {
        format!("{}bf:{{{filter}}}:{i}", self.prefix)
    }

    /// Piece `n` of a dedup layer too big for one key (`dedup_add.lua`), same hash tag.
    pub(crate) fn dedup_layer_piece(&self, filter: &Name, i: usize, n: u64) -> String {
        format!("{}bf:{{{filter}}}:{i}:{n}", self.prefix)
    }

    /// The RedisBloom filter behind a native-engine dedup filter.
    pub(crate) fn dedup_native(&self, filter: &Name) -> String {
        format!("{}bf:{{{filter}}}:rb", self.prefix)
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;
    use crate::types::testing::name;

    #[test]
    fn a_filters_keys_share_a_slot() {
        let (keys, f) = (Keys::new("gw:"), name("news:eu@1"));
        let all = [
            keys.dedup_meta(&f),
            keys.dedup_layer(&f, 3),
            keys.dedup_native(&f),
        ];
        assert_one_slot("news:eu@1", "gw:bf:{news:eu@1}", &all);
        assert_eq!(all[1], "gw:bf:{news:eu@1}:3");
    }
}
