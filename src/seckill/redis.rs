//! Flash sales on Redis: the voucher hash, its buyers, and its order stream, all under the
//! voucher's hash tag so every script is single-slot on a Cluster.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::keys::Keys;
use crate::store::redis::{map_err, RedisStore};

use crate::seckill::logic::Seq;
use crate::seckill::{
    Bought, Idempotency, Once, Order, Put, Refusal, Restock, SeckillStore, Spec, Voucher,
};
use crate::store::error::StoreError;
use crate::store::group::{self, GroupCommit};
use crate::store::slots::Slot;
use crate::types::{Name, UserId, IDEMPOTENCY_SECS};

static PUT: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("seckill_put.lua")));
static RESTOCK: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_restock.lua")));
static GET: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("seckill_get.lua")));
static BUY: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("seckill_buy.lua")));
static ORDERS: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_orders.lua")));
static USER_ORDERS: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_user_orders.lua")));

fn bad(what: &str, reply: &[Value]) -> StoreError {
    StoreError::Internal(format!("unexpected seckill {what} reply: {reply:?}"))
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Integer(i) => Some(*i),
        other => other.as_string()?.parse().ok(),
    }
}

/// `{tag, stock, sold, begin, end, limit, now_ms}` → the voucher.
fn view(reply: &[Value]) -> Option<Voucher> {
    Some(Voucher {
        stock: u64::try_from(int(reply.get(1))?).ok()?,
        sold: u64::try_from(int(reply.get(2))?).ok()?,
        begin_ms: int(reply.get(3))?,
        end_ms: int(reply.get(4))?,
        per_user_limit: u32::try_from(int(reply.get(5))?).ok()?,
        now_ms: int(reply.get(6))?,
    })
}

fn seqs(ids: &str) -> Result<Vec<Seq>, StoreError> {
    ids.split_ascii_whitespace()
        .map(|id| {
            id.parse()
                .map_err(|e| StoreError::Internal(format!("bad order id in Redis: {e}")))
        })
        .collect()
}

fn tag(reply: &[Value]) -> String {
    reply.first().and_then(Value::as_string).unwrap_or_default()
}

impl RedisStore {
    /// Adds `voucher` to the registry through which the ledger finds every order stream
    /// (idempotent; `src/ledger/redis.rs` reads it).
    async fn register_voucher(&self, voucher: &Name) -> Result<(), StoreError> {
        let _: i64 = self
            .pool
            .at(&self.keys.voucher_registry())?
            .sadd(self.keys.voucher_registry(), voucher.as_str())
            .await
            .map_err(map_err)?;
        Ok(())
    }
}

impl SeckillStore for RedisStore {
    async fn seckill_put(&self, voucher: &Name, spec: Spec, cap: u64) -> Result<Put, StoreError> {
        // Registered first (it lives in another slot): the registry may name a voucher that
        // was refused, never miss one that exists.
        self.register_voucher(voucher).await?;
        let reply: Vec<Value> = self
            .pool
            .script(
                &PUT,
                vec![self.keys.voucher(voucher)],
                vec![
                    spec.stock.to_string(),
                    spec.begin_ms.to_string(),
                    spec.end_ms.to_string(),
                    spec.per_user_limit.to_string(),
                    cap.to_string(),
                ],
            )
            .await?;
        match tag(&reply).as_str() {
            "over_cap" => Ok(Put::OverCap {
                sold: int(reply.get(1))
                    .and_then(|s| u64::try_from(s).ok())
                    .unwrap_or(0),
            }),
            "created" => view(&reply)
                .map(Put::Created)
                .ok_or_else(|| bad("put", &reply)),
            "replaced" => view(&reply)
                .map(Put::Replaced)
                .ok_or_else(|| bad("put", &reply)),
            _ => Err(bad("put", &reply)),
        }
    }

    async fn seckill_restock(
        &self,
        voucher: &Name,
        quantity: u64,
        cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Restock>, StoreError> {
        let keys = vec![
            self.keys.voucher(voucher),
            self.keys
                .voucher_idempotency(voucher, Idempotency::key_of(idem)),
        ];
        let mut args = vec![quantity.to_string(), cap.to_string()];
        args.extend(Idempotency::script_args(idem));
        let (reply, written): (Vec<Value>, _) =
            self.pool.script_written(&RESTOCK, keys, args).await?;
        let once = match tag(&reply).as_str() {
            "key_reused" => Once::KeyReused,
            "replay" => Once::Replayed(restocked(&reply[1..])?),
            _ => Once::Now(restocked(&reply)?),
        };
        // A restock done, now or by the request replayed, is acknowledged once its replicas
        // hold it (docs/operations.md "Durable writes").
        if let Once::Now(Restock::Done(_)) | Once::Replayed(Restock::Done(_)) = once {
            written.replicated().await?;
        }
        Ok(once)
    }

    async fn seckill_voucher(&self, voucher: &Name) -> Result<Option<Voucher>, StoreError> {
        let reply: Vec<Value> = self
            .pool
            .script(&GET, vec![self.keys.voucher(voucher)], ())
            .await?;
        match tag(&reply).as_str() {
            "not_found" => Ok(None),
            "ok" => view(&reply).map(Some).ok_or_else(|| bad("get", &reply)),
            _ => Err(bad("get", &reply)),
        }
    }

    async fn seckill_buy(
        &self,
        voucher: &Name,
        user: UserId,
        cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Bought, StoreError> {
        let purchase = Purchase {
            user,
            idem: self
                .keys
                .voucher_idempotency(voucher, Idempotency::key_of(idem)),
            fingerprint: idem.map_or_else(String::new, |i| i.fingerprint.clone()),
        };
        // Every key of a voucher is in its slot, so purchases group on a Cluster too.
        match self
            .kept(&PURCHASES)
            .join((voucher.clone(), cap), purchase, self, buy_group)
            .await
        {
            Some(bought) => bought,
            None => Err(StoreError::Unavailable(
                "the gateway is shutting down".to_owned(),
            )),
        }
    }

    async fn seckill_orders(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Option<Vec<Order>>, StoreError> {
        let mut orders: Vec<Order> = Vec::new();
        let mut cursor = after;
        // A page of up to 1,000 is read ORDERS_PER_CALL at a time, each call continuing after
        // the last: one XRANGE of 1,000 entries held Redis ~2.5-6 ms (tests/redis_time.rs).
        loop {
            let want = (limit - orders.len()).min(ORDERS_PER_CALL);
            let Some(part) = self.orders_from(voucher, cursor, want).await? else {
                return Ok(None);
            };
            let done = part.len() < want;
            cursor = part.last().map(|o| o.seq).or(cursor);
            orders.extend(part);
            if done || orders.len() >= limit {
                return Ok(Some(orders));
            }
        }
    }

    async fn seckill_user_orders(
        &self,
        voucher: &Name,
        user: UserId,
    ) -> Result<Option<Vec<Seq>>, StoreError> {
        let reply: Vec<Value> = self
            .pool
            .script(
                &USER_ORDERS,
                vec![
                    self.keys.voucher(voucher),
                    self.keys.voucher_user_orders(voucher),
                ],
                vec![user.to_string()],
            )
            .await?;
        match tag(&reply).as_str() {
            "not_found" => Ok(None),
            "ok" => seqs(&reply.get(1).and_then(Value::as_string).unwrap_or_default()).map(Some),
            _ => Err(bad("user orders", &reply)),
        }
    }
}

/// Most purchases in one `seckill_buy.lua` call, and the bytes of their keys and arguments
/// after which a call takes no more: bounds one script run (64 sales: ~260 Redis commands,
/// well under a millisecond) however large a burst's group grew. A larger group goes as several
/// calls, one after the other, so purchases stay in arrival order.
const MAX_PURCHASES: usize = 64;
const MAX_PURCHASE_BYTES: usize = 16 * 1024;

/// Purchases waiting to go in one call, per voucher (and stream cap).
static PURCHASES: Slot<Purchases> = Slot::new();

/// Purchases on one voucher, grouped: those a worker takes up in one turn cost one round trip,
/// one script run and one replica wait (issue 42), each answered as if it ran alone.
type Purchases = GroupCommit<(Name, u64), Purchase, Result<Bought, StoreError>>;

/// One purchase's share of a `seckill_buy.lua` call.
struct Purchase {
    user: UserId,
    /// Its idempotency record's key (unused without a key: `fingerprint` is then empty).
    idem: String,
    fingerprint: String,
}

/// A voucher's group of purchases in `seckill_buy.lua` calls of at most [`MAX_PURCHASES`]
/// purchases and [`MAX_PURCHASE_BYTES`], in order.
async fn buy_group(
    store: RedisStore,
    (voucher, cap): (Name, u64),
    purchases: Vec<Purchase>,
) -> Vec<Result<Bought, StoreError>> {
    let weight = |p: &Purchase| p.idem.len() + p.fingerprint.len() + 20;
    group::in_calls(
        purchases,
        MAX_PURCHASES,
        MAX_PURCHASE_BYTES,
        weight,
        |call| store.buy_call(&voucher, cap, call),
    )
    .await
}

impl RedisStore {
    /// One `seckill_buy.lua` call for `call`'s purchases, each answered on its own.
    async fn buy_call(
        &self,
        voucher: &Name,
        cap: u64,
        call: Vec<Purchase>,
    ) -> Result<Vec<Result<Bought, StoreError>>, StoreError> {
        let mut keys = Vec::with_capacity(4 + call.len());
        keys.extend(self.keys.voucher_sale(voucher));
        let mut args = Vec::with_capacity(3 + 2 * call.len());
        args.extend([
            voucher.to_string(),
            cap.to_string(),
            IDEMPOTENCY_SECS.to_string(),
        ]);
        let users: Vec<UserId> = call.iter().map(|p| p.user).collect();
        for p in call {
            keys.push(p.idem);
            args.push(p.user.to_string());
            args.push(p.fingerprint);
        }
        let (reply, written): (Vec<Value>, _) = self.pool.script_written(&BUY, keys, args).await?;
        if reply.len() != users.len() {
            return Err(bad("buy", &reply));
        }
        let bought: Vec<Result<Bought, StoreError>> = users
            .into_iter()
            .zip(reply)
            .map(|(user, one)| match one {
                Value::Array(one) => bought(user, &one),
                other => Err(bad("buy", &[other])),
            })
            .collect();
        // An order, new or replayed, is acknowledged once its replicas hold it
        // (docs/operations.md "Durable writes"); a refusal created nothing to lose. One wait
        // covers every order of the call: they ran on one master in one step.
        Ok(written
            .settle(bought, |b| {
                matches!(b, Once::Now(Ok(_)) | Once::Replayed(Ok(_)))
            })
            .await)
    }
}

/// One purchase's reply within `seckill_buy.lua`'s.
fn bought(user: UserId, reply: &[Value]) -> Result<Bought, StoreError> {
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
fn purchase(
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
fn restocked(reply: &[Value]) -> Result<Restock, StoreError> {
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

/// Orders read per `seckill_orders.lua` call.
const ORDERS_PER_CALL: usize = 250;

impl RedisStore {
    /// Up to `limit` of a voucher's orders after `after`, in one call; `None` when the voucher
    /// does not exist.
    async fn orders_from(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Option<Vec<Order>>, StoreError> {
        // XRANGE's start is inclusive: begin at the id right after the cursor.
        let start = match after.map(Seq::successor) {
            None => "-".to_owned(),
            Some(Some(first)) => first.to_string(),
            // Nothing can come after the largest id (the HTTP layer refuses such a cursor).
            Some(None) => return Ok(Some(Vec::new())),
        };
        let reply: Vec<Value> = self
            .pool
            .script(
                &ORDERS,
                vec![
                    self.keys.voucher(voucher),
                    self.keys.voucher_orders(voucher),
                ],
                vec![start, limit.to_string()],
            )
            .await?;
        match tag(&reply).as_str() {
            "not_found" => return Ok(None),
            "ok" => {}
            _ => return Err(bad("orders", &reply)),
        }
        let Some(Value::Array(entries)) = reply.get(1) else {
            return Ok(Some(Vec::new()));
        };
        entries
            .iter()
            .map(|entry| parse_entry(entry).ok_or_else(|| bad("orders", &reply)))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// The keys a sale touches, under the voucher's hash tag.
    fn voucher_sale(&self, voucher: &Name) -> [String; 4] {
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
