//! What the flash-sale backend's calls share: the scripts, the keys of a voucher, and the
//! decoding of script replies.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::keys::Keys;

use crate::seckill::logic::Seq;
use crate::seckill::{Bought, Order, Refusal, Restock, Voucher};
use crate::store::error::StoreError;
use crate::types::{Name, UserId};

pub(super) static PUT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_put.lua")));
pub(super) static RESTOCK: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_restock.lua")));
pub(super) static GET: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_get.lua")));
pub(super) static BUY: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_buy.lua")));
pub(super) static ORDERS: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_orders.lua")));
pub(super) static USER_ORDERS: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_user_orders.lua")));

pub(super) fn bad(what: &str, reply: &[Value]) -> StoreError {
    StoreError::Internal(format!("unexpected seckill {what} reply: {reply:?}"))
}

pub(super) fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Integer(i) => Some(*i),
        other => other.as_string()?.parse().ok(),
    }
}

/// `{tag, stock, sold, begin, end, limit, now_ms}` → the voucher.
pub(super) fn view(reply: &[Value]) -> Option<Voucher> {
    Some(Voucher {
        stock: u64::try_from(int(reply.get(1))?).ok()?,
        sold: u64::try_from(int(reply.get(2))?).ok()?,
        begin_ms: int(reply.get(3))?,
        end_ms: int(reply.get(4))?,
        per_user_limit: u32::try_from(int(reply.get(5))?).ok()?,
        now_ms: int(reply.get(6))?,
    })
}

pub(super) fn seqs(ids: &str) -> Result<Vec<Seq>, StoreError> {
    ids.split_ascii_whitespace()
        .map(|id| {
            id.parse()
                .map_err(|e| StoreError::Internal(format!("bad order id in Redis: {e}")))
        })
        .collect()
}

pub(super) fn tag(reply: &[Value]) -> String {
    reply.first().and_then(Value::as_string).unwrap_or_default()
}

/// One purchase's reply within `seckill_buy.lua`'s.
pub(super) fn bought(user: UserId, reply: &[Value]) -> Result<Bought, StoreError> {
    let text = |i: usize| reply.get(i).and_then(Value::as_string).unwrap_or_default();
    Ok(match tag(reply).as_str() {
        "key_reused" => Bought::KeyReused,
        "replay" => Bought::Replayed(purchase(user, &text(1), &text(2), reply)?),
        tag => Bought::Now(purchase(user, tag, &text(1), reply)?),
    })
}

/// One stream entry `[id, [field, value, ...]]` → the order it records.
pub(super) fn parse_entry(entry: &Value) -> Option<Order> {
    let Value::Array(parts) = entry else {
        return None;
    };
    let seq: Seq = parts.first()?.as_string()?.parse().ok()?;
    let Value::Array(fields) = parts.get(1)? else {
        return None;
    };
    let user = fields
        .chunks(2)
        .find(|kv| kv[0].as_string().as_deref() == Some("user"))
        .and_then(|kv| kv.get(1))
        .and_then(Value::as_string)?;
    Some(Order {
        seq,
        user: UserId::parse(&user).ok()?,
    })
}

/// One purchase outcome from the script's tag and argument (`reply` only for the error text).
pub(super) fn purchase(
    user: UserId,
    tag: &str,
    arg: &str,
    reply: &[Value],
) -> Result<Result<Order, Refusal>, StoreError> {
    Ok(match tag {
        "ok" => Ok(Order {
            seq: arg
                .parse()
                .map_err(|e| StoreError::Internal(format!("bad order id in Redis: {e}")))?,
            user,
        }),
        "not_found" => Err(Refusal::NotFound),
        "not_started" => Err(Refusal::NotStarted),
        "ended" => Err(Refusal::Ended),
        "sold_out" => Err(Refusal::SoldOut),
        "already_ordered" => Err(Refusal::AlreadyOrdered(seqs(arg)?)),
        _ => return Err(bad("buy", reply)),
    })
}

/// A restock outcome from the script's reply (`{'ok', stock, sold, ...}` and the refusals).
pub(super) fn restocked(reply: &[Value]) -> Result<Restock, StoreError> {
    let n = |i: usize| {
        int(reply.get(i))
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(0)
    };
    match tag(reply).as_str() {
        "not_found" => Ok(Restock::NotFound),
        "over_cap" => Ok(Restock::OverCap {
            stock: n(1),
            sold: n(2),
        }),
        "ok" => view(reply)
            .map(Restock::Done)
            .ok_or_else(|| bad("restock", reply)),
        _ => Err(bad("restock", reply)),
    }
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// The keys a sale touches, under the voucher's hash tag.
    pub(super) fn voucher_sale(&self, voucher: &Name) -> [String; 4] {
        [
            self.voucher(voucher),
            self.voucher_buyers(voucher),
            self.voucher_user_orders(voucher),
            self.voucher_orders(voucher),
        ]
    }

    /// A voucher: hash of `stock` (left), `sold`, `begin`, `end` (unix ms), `limit` (per user).
    pub(crate) fn voucher(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}", self.prefix)
    }

    /// A voucher's event channel (sharded pub/sub, in the voucher's slot): every script that
    /// changes the voucher publishes `<stock> <sold> <begin> <end>` on it. The scripts spell it
    /// as `KEYS[1] .. ':events'`.
    pub(crate) fn voucher_events(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:events", self.prefix)
    }

    /// A voucher's buyers: hash user id → orders bought.
    pub(crate) fn voucher_buyers(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:buyers", self.prefix)
    }

    /// A voucher's orders per user: hash user id → space-separated stream entry ids.
    pub(crate) fn voucher_user_orders(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:user_orders", self.prefix)
    }

    /// A voucher's orders in sale order: a stream, one entry per order.
    pub(crate) fn voucher_orders(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:orders", self.prefix)
    }

    /// The first outcome of a purchase under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the voucher's slot so the purchase script records it atomically.
    pub(crate) fn voucher_idempotency(&self, voucher: &Name, digest: &str) -> String {
        format!("{}sk:{{{voucher}}}:idem:{digest}", self.prefix)
    }

    /// The set of every voucher id ever created, so the ledger finds each order stream
    /// without `KEYS`/`SCAN` (one small key; the streams themselves stay in their own slots).
    pub(crate) fn voucher_registry(&self) -> String {
        format!("{}skr:{{vouchers}}", self.prefix)
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;
    use crate::types::testing::name;

    #[test]
    fn a_vouchers_keys_share_a_slot() {
        let all = Keys::new("gw:").voucher_sale(&name("v1"));
        assert_one_slot("v1", "gw:sk:{v1}", &all);
    }
}
