//! The order ledger on Redis: per-voucher consumer-group reads, acks, refusals, dead letters
//! and backlog, each a single-slot call on the voucher's hash tag (its order stream, its
//! dead-letter stream and its attempts hash share it), and the read of the voucher registry.
//! The order stream and the registry are the flash sale's (`src/seckill/redis/` writes them);
//! the dead-letter stream and the attempts hash are the ledger's own keys, spelled below.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::ledger::{Backlog, DeadLetter, LedgerStore, Row, Take, Taken, GROUP};
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::store::keys::Keys;
use crate::store::redis::{map_err, RedisStore};
use crate::types::{Name, UserId};

static TAKE: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("ledger_take.lua")));
static ACK: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("ledger_ack.lua")));
static REFUSE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("ledger_refuse.lua")));
static BACKLOG: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("ledger_backlog.lua")));

/// A consumer with nothing pending and idle this long is deleted from the group: it belonged
/// to an instance that stopped (a live one is simply recreated by its next read).
const RETIRE_CONSUMER_MS: u64 = 60 * 60 * 1000;

impl LedgerStore for RedisStore {
    async fn ledger_vouchers(&self) -> Result<Vec<Name>, StoreError> {
        let ids: Vec<String> = self
            .pool
            .at(&self.keys.voucher_registry())?
            .smembers(self.keys.voucher_registry())
            .await
            .map_err(map_err)?;
        // Only valid names were ever registered; anything else is skipped, not fatal.
        Ok(ids
            .into_iter()
            .filter_map(|s| Name::try_from(s).ok())
            .collect())
    }

    async fn ledger_take(&self, voucher: &Name, take: Take<'_>) -> Result<Vec<Taken>, StoreError> {
        let (reply, written): (Vec<Value>, _) = self
            .pool
            .script_written(
                &TAKE,
                self.keys.voucher_group(voucher),
                vec![
                    GROUP.to_owned(),
                    take.consumer.to_owned(),
                    take.claim_idle_ms.to_string(),
                    take.count.to_string(),
                ],
            )
            .await?;
        // Only what a failover cannot lose goes to the ledger: under GATEWAY_WRITE_REPLICAS,
        // an order whose replicas have not confirmed it (its purchase answered 503) may vanish
        // with its master while the ledger would keep it, and its buyer's retry then sells
        // another. The take's own write (the group's pending list) comes after every order it
        // hands out, so the replicas confirming it confirm them; until they do, the orders
        // stay pending and are taken again (docs/operations.md "Order ledger").
        if !reply.is_empty() {
            written.replicated().await?;
        }
        reply.iter().map(|e| taken(voucher, e)).collect()
    }

    async fn ledger_ack(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut args = vec![GROUP.to_owned()];
        args.extend(ids.iter().map(Seq::to_string));
        let _: i64 = self
            .pool
            .script(&ACK, self.keys.voucher_group(voucher), args)
            .await?;
        Ok(())
    }

    async fn ledger_refuse(
        &self,
        voucher: &Name,
        ids: &[Seq],
        reason: &str,
        max_attempts: u64,
    ) -> Result<u64, StoreError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut args = vec![
            GROUP.to_owned(),
            reason.to_owned(),
            max_attempts.to_string(),
        ];
        args.extend(ids.iter().map(Seq::to_string));
        let n: i64 = self
            .pool
            .script(
                &REFUSE,
                vec![
                    self.keys.voucher_orders(voucher),
                    self.keys.voucher_dead_letters(voucher),
                    self.keys.voucher_ledger_attempts(voucher),
                ],
                args,
            )
            .await?;
        Ok(n.max(0) as u64)
    }

    async fn ledger_dead_letters(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        let start = after.map_or_else(|| "-".to_owned(), |s| format!("({s}"));
        let reply: Vec<Value> = self
            .pool
            .at(&self.keys.voucher_dead_letters(voucher))?
            .xrange(
                self.keys.voucher_dead_letters(voucher),
                start,
                "+",
                Some(limit as u64),
            )
            .await
            .map_err(map_err)?;
        reply.iter().map(|e| dead_letter(voucher, e)).collect()
    }

    async fn ledger_forget_dead(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let _: i64 = self
            .pool
            .at(&self.keys.voucher_dead_letters(voucher))?
            .xdel(
                self.keys.voucher_dead_letters(voucher),
                ids.iter().map(Seq::to_string).collect::<Vec<_>>(),
            )
            .await
            .map_err(map_err)?;
        Ok(())
    }

    // The script also retires long-gone consumers (RETIRE_CONSUMER_MS): every restarted
    // instance leaves one behind.
    async fn ledger_backlog(&self, voucher: &Name) -> Result<Backlog, StoreError> {
        let reply: Vec<i64> = self
            .pool
            .script(
                &BACKLOG,
                vec![
                    self.keys.voucher_orders(voucher),
                    self.keys.voucher_dead_letters(voucher),
                ],
                vec![GROUP.to_owned(), RETIRE_CONSUMER_MS.to_string()],
            )
            .await?;
        let at = |i: usize| reply.get(i).copied().unwrap_or(0).max(0) as u64;
        Ok(Backlog {
            pending: at(0),
            lag: at(1),
            dead_lettered: at(2),
        })
    }
}

/// A stream entry `{id, {field, value, ...}}` as its id and a field lookup.
fn entry(value: &Value) -> Option<(Seq, &[Value])> {
    let Value::Array(parts) = value else {
        return None;
    };
    let id = parts.first()?.as_string()?.parse().ok()?;
    let fields = match parts.get(1) {
        Some(Value::Array(fields)) => fields.as_slice(),
        _ => &[],
    };
    Some((id, fields))
}

fn field(fields: &[Value], name: &str) -> Option<String> {
    fields
        .chunks(2)
        .find(|kv| kv[0].as_string().as_deref() == Some(name))
        .and_then(|kv| kv.get(1))
        .and_then(Value::as_string)
}

/// The order an order-stream entry `id` with these `user` and `nth` fields stands for.
fn row(voucher: &Name, id: Seq, user: Option<String>, nth: Option<String>) -> Option<Row> {
    Some(Row {
        order_id: format!("{voucher}/{id}"),
        voucher: voucher.clone(),
        user: UserId::parse(&user?).ok()?,
        nth: nth?.parse().ok()?,
        created_at_ms: id.ms,
    })
}

/// `{id, {field, value, ...}, attempts}` → what the ingester needs; an entry whose fields
/// cannot be read still comes back (with `order: None`) so it can be dead-lettered.
fn taken(voucher: &Name, value: &Value) -> Result<Taken, StoreError> {
    let (id, fields) = entry(value)
        .ok_or_else(|| StoreError::Internal(format!("unexpected ledger entry: {value:?}")))?;
    let attempts = match value {
        Value::Array(parts) => parts.get(2).and_then(Value::as_u64).unwrap_or(0),
        _ => 0,
    };
    Ok(Taken {
        id,
        order: row(voucher, id, field(fields, "user"), field(fields, "nth")),
        attempts,
    })
}

/// A dead-letter stream entry `{dead id, {id, <entry id>, reason, <code>, attempts, <n>,
/// user, .., nth, ..}}` (`attempts` absent in those of older versions).
fn dead_letter(voucher: &Name, value: &Value) -> Result<DeadLetter, StoreError> {
    let (dead_id, fields) = entry(value)
        .ok_or_else(|| StoreError::Internal(format!("unexpected dead letter: {value:?}")))?;
    let order = field(fields, "id")
        .and_then(|id| id.parse::<Seq>().ok())
        .and_then(|id| row(voucher, id, field(fields, "user"), field(fields, "nth")));
    Ok(DeadLetter {
        dead_id,
        order,
        reason: field(fields, "reason").unwrap_or_default(),
        attempts: field(fields, "attempts").and_then(|a| a.parse().ok()),
    })
}

/// The ledger's keys, under the voucher's hash tag beside its order stream (`sk:{voucher}`,
/// spelled in `src/seckill/redis/wire.rs`), so each script is single-slot on a Cluster.
impl Keys {
    /// Order entries the ledger gave up on: a stream of copies with the reason.
    pub(crate) fn voucher_dead_letters(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:dead", self.prefix)
    }

    /// The consumer group's keys, as `ledger_take.lua` and `ledger_ack.lua` take them: the
    /// order stream and the refusal counts.
    pub(crate) fn voucher_group(&self, voucher: &Name) -> Vec<String> {
        vec![
            self.voucher_orders(voucher),
            self.voucher_ledger_attempts(voucher),
        ]
    }

    /// How often the database refused each pending order entry's row (entry id → count):
    /// only these refusals, not deliveries, bring an entry to the dead-letter stream.
    pub(crate) fn voucher_ledger_attempts(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:attempts", self.prefix)
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;

    #[test]
    fn the_ledgers_keys_share_the_order_streams_slot() {
        let (keys, v) = (Keys::new("gw:"), Name::try_from("v1".to_owned()).unwrap());
        let all = [
            keys.voucher_dead_letters(&v),
            keys.voucher_ledger_attempts(&v),
            keys.voucher_orders(&v),
        ];
        assert_one_slot("v1", "gw:sk:{v1}:dead", &all);
    }
}
