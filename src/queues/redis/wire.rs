//! What the queue backend's calls share: the scripts, the keys of a queue, the expiry every
//! script is given, and the decoding of script replies.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::keys::Keys;
use crate::store::redis::script_after;

use crate::queues::{Claimed, IDLE_SECS, IDLE_SLACK_SECS};
use crate::store::error::StoreError;
use crate::types::Name;

pub(super) static ENQUEUE: LazyLock<Script> =
    script_after!("queue_common.lua", "queue_enqueue.lua");
pub(super) static CLAIM: LazyLock<Script> = script_after!("queue_common.lua", "queue_claim.lua");
pub(super) static ACK: LazyLock<Script> = script_after!("queue_common.lua", "queue_ack.lua");
pub(super) static CANCEL: LazyLock<Script> = script_after!("queue_common.lua", "queue_cancel.lua");
pub(super) static STATS: LazyLock<Script> = script_after!("queue_common.lua", "queue_stats.lua");
pub(super) static DEAD: LazyLock<Script> = script_after!("queue_common.lua", "queue_dead.lua");

pub(super) const IDLE_MS: u64 = IDLE_SECS * 1000;
pub(super) const IDLE_SLACK_MS: u64 = IDLE_SLACK_SECS * 1000;
/// What every expiry refresh (`touch` in `queue_common.lua`) is given.
pub(super) const TOUCH_MS: u64 = IDLE_MS + IDLE_SLACK_MS;

pub(super) fn bad(what: &str, reply: &impl std::fmt::Debug) -> StoreError {
    StoreError::Internal(format!("unexpected queue {what} reply: {reply:?}"))
}

pub(super) fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Integer(i) => Some(*i),
        other => other.as_string()?.parse().ok(),
    }
}

pub(super) fn text(v: Option<&Value>) -> Option<String> {
    v?.as_string()
}

pub(super) fn name(v: Option<&Value>) -> Option<Name> {
    Name::try_from(text(v)?).ok()
}

/// One claimed job `[id, payload, run_at, attempts, receipt]`.
pub(super) fn claimed(job: &Value) -> Option<Claimed> {
    let Value::Array(f) = job else { return None };
    Some(Claimed {
        id: name(f.first())?,
        payload: text(f.get(1))?,
        run_at: int(f.get(2))?,
        attempts: u32::try_from(int(f.get(3))?).ok()?,
        receipt: text(f.get(4))?,
    })
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A delayed queue's keys, in the order its scripts take them (see `queue_common.lua`):
    /// `due`, `flight`, `meta`, `pay`, `dead`, `ctr`, all under the queue's hash tag.
    pub(crate) fn queue(&self, queue: &Name) -> [String; 6] {
        ["due", "flight", "meta", "pay", "dead", "ctr"]
            .map(|part| format!("{}q:{{{queue}}}:{part}", self.prefix))
    }

    /// A queue's event channel (sharded pub/sub, in the queue's slot): the scripts that may
    /// change its ready jobs publish on it, spelling it from the queue's first key.
    pub(crate) fn queue_events(&self, queue: &Name) -> String {
        format!("{}q:{{{queue}}}:events", self.prefix)
    }

    /// The first outcome of an enqueue under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the queue's slot so the enqueue script records it atomically.
    pub(crate) fn queue_idempotency(&self, queue: &Name, digest: &str) -> String {
        format!("{}q:{{{queue}}}:idem:{digest}", self.prefix)
    }

    /// The pub/sub channel an enqueue to `queue` is announced on (classic pub/sub, which a
    /// Cluster broadcasts to every node, so one pattern subscription anywhere hears it).
    pub(crate) fn queue_bell(&self, queue: &Name) -> String {
        format!("{}qbell:{queue}", self.prefix)
    }

    /// The pattern matching every [`Self::queue_bell`] channel, and the length of the text
    /// before the queue name. Glob characters of the prefix are escaped.
    pub(crate) fn queue_bell_pattern(&self) -> (String, usize) {
        (self.pattern("qbell:*"), self.prefix.len() + "qbell:".len())
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;
    use crate::types::testing::name;

    #[test]
    fn a_queues_keys_share_a_slot() {
        let (keys, q) = (Keys::new("gw:"), name("mail"));
        let mut all = keys.queue(&q).to_vec();
        all.push(keys.queue_idempotency(&q, "ab"));
        assert_one_slot("mail", "gw:q:{mail}:due", &all);
    }
}
