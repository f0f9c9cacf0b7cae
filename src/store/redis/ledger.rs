//! The order ledger's Redis side: the voucher registry, and per-voucher consumer-group reads,
//! acks, dead letters and backlog, each a single-slot call on the voucher's hash tag.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use super::{map_err, RedisStore};
use crate::ledger::{Backlog, DeadLetter, DeadLetters, OrderStreams, Row, Taken, GROUP};
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::types::{Name, UserId};

static TAKE: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("ledger_take.lua")));
static DEAD_LETTER: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("ledger_dead_letter.lua")));
static BACKLOG: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("ledger_backlog.lua")));

/// A consumer with nothing pending and idle this long is deleted from the group: it belonged
/// to an instance that stopped (a live one is simply recreated by its next read).
const RETIRE_CONSUMER_MS: u64 = 60 * 60 * 1000;

impl RedisStore {
    /// Adds `voucher` to the registry the ledger reads (idempotent).
    pub(crate) async fn register_voucher(&self, voucher: &Name) -> Result<(), StoreError> {
        let _: i64 = self
            .pool
            .sadd(self.keys.voucher_registry(), voucher.as_str())
            .await
            .map_err(map_err)?;
        Ok(())
    }
}

impl DeadLetters for RedisStore {
    async fn ledger_dead_letters(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        let start = match after.map(Seq::successor) {
            None => "-".to_owned(),
            Some(Some(first)) => first.to_string(),
            Some(None) => return Ok(Vec::new()),
        };
        let entries: Vec<Value> = self
            .pool
            .next()
            .xrange(
                self.keys.voucher_dead_letters(voucher),
                start,
                "+",
                Some(limit as u64),
            )
            .await
            .map_err(map_err)?;
        entries.iter().map(|e| dead_letter(voucher, e)).collect()
    }

    async fn ledger_forget_dead(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let _: i64 = self
            .pool
            .xdel(
                self.keys.voucher_dead_letters(voucher),
                ids.iter().map(Seq::to_string).collect::<Vec<_>>(),
            )
            .await
            .map_err(map_err)?;
        Ok(())
    }
}

impl OrderStreams for RedisStore {
    async fn ledger_vouchers(&self) -> Result<Vec<Name>, StoreError> {
        let ids: Vec<String> = self
            .pool
            .smembers(self.keys.voucher_registry())
            .await
            .map_err(map_err)?;
        // Only valid names were ever registered; anything else is skipped, not fatal.
        Ok(ids
            .into_iter()
            .filter_map(|s| Name::try_from(s).ok())
            .collect())
    }

    async fn ledger_take(
        &self,
        voucher: &Name,
        consumer: &str,
        claim_idle_ms: u64,
        count: usize,
    ) -> Result<Vec<Taken>, StoreError> {
        let reply: Vec<Value> = TAKE
            .evalsha_with_reload(
                self.pool.next(),
                vec![self.keys.voucher_orders(voucher)],
                vec![
                    GROUP.to_owned(),
                    consumer.to_owned(),
                    claim_idle_ms.to_string(),
                    count.to_string(),
                ],
            )
            .await
            .map_err(map_err)?;
        reply.iter().map(|e| taken(voucher, e)).collect()
    }

    async fn ledger_ack(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = ids.iter().map(Seq::to_string).collect();
        let _: i64 = self
            .pool
            .xack(self.keys.voucher_orders(voucher), GROUP, ids)
            .await
            .map_err(map_err)?;
        Ok(())
    }

    async fn ledger_dead_letter(
        &self,
        voucher: &Name,
        ids: &[Seq],
        reason: &str,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut args = vec![GROUP.to_owned(), reason.to_owned()];
        args.extend(ids.iter().map(Seq::to_string));
        let _: i64 = DEAD_LETTER
            .evalsha_with_reload(
                self.pool.next(),
                vec![
                    self.keys.voucher_orders(voucher),
                    self.keys.voucher_dead_letters(voucher),
                ],
                args,
            )
            .await
            .map_err(map_err)?;
        Ok(())
    }

    async fn ledger_backlog(&self, voucher: &Name) -> Result<Backlog, StoreError> {
        let reply: Vec<i64> = BACKLOG
            .evalsha_with_reload(
                self.pool.next(),
                vec![
                    self.keys.voucher_orders(voucher),
                    self.keys.voucher_dead_letters(voucher),
                ],
                vec![GROUP.to_owned(), RETIRE_CONSUMER_MS.to_string()],
            )
            .await
            .map_err(map_err)?;
        let at = |i: usize| reply.get(i).copied().unwrap_or(0).max(0) as u64;
        Ok(Backlog {
            pending: at(0),
            lag: at(1),
            dead_lettered: at(2),
        })
    }
}

/// A stream entry `{id, {field, value, ...}, ...}` as XREADGROUP/XAUTOCLAIM/XRANGE return it.
struct Entry<'a> {
    id: Seq,
    parts: &'a [Value],
}

impl<'a> Entry<'a> {
    fn parse(entry: &'a Value) -> Option<Self> {
        let Value::Array(parts) = entry else {
            return None;
        };
        let id = parts.first()?.as_string()?.parse().ok()?;
        Some(Self { id, parts })
    }

    fn field(&self, name: &str) -> Option<String> {
        let Some(Value::Array(fields)) = self.parts.get(1) else {
            return None;
        };
        fields
            .chunks(2)
            .find(|kv| kv[0].as_string().as_deref() == Some(name))
            .and_then(|kv| kv.get(1))
            .and_then(Value::as_string)
    }
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

/// `{id, {field, value, ...}, deliveries}` → what the ingester needs; an entry whose fields
/// cannot be read still comes back (with `order: None`) so it can be dead-lettered.
fn taken(voucher: &Name, entry: &Value) -> Result<Taken, StoreError> {
    let e = Entry::parse(entry)
        .ok_or_else(|| StoreError::Internal(format!("unexpected ledger entry: {entry:?}")))?;
    Ok(Taken {
        id: e.id,
        order: row(voucher, e.id, e.field("user"), e.field("nth")),
        deliveries: e.parts.get(2).and_then(Value::as_u64).unwrap_or(1),
    })
}

/// A dead-letter stream entry `{dead id, {id, <order id>, reason, <code>, user, .., nth, ..}}`.
fn dead_letter(voucher: &Name, entry: &Value) -> Result<DeadLetter, StoreError> {
    let e = Entry::parse(entry)
        .ok_or_else(|| StoreError::Internal(format!("unexpected dead letter: {entry:?}")))?;
    let order = e
        .field("id")
        .and_then(|id| id.parse::<Seq>().ok())
        .and_then(|id| row(voucher, id, e.field("user"), e.field("nth")));
    Ok(DeadLetter {
        dead_id: e.id,
        order,
        reason: e.field("reason").unwrap_or_default(),
    })
}
