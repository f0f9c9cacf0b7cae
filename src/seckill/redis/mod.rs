//! Flash sales on Redis: the voucher hash, its buyers, and its order stream, all under the
//! voucher's hash tag so every script is single-slot on a Cluster.
//!
//! Here: the store trait and the paged order reads. [`buy`]: the grouped purchases; [`wire`]:
//! the scripts, the keys and the decoding of replies, which both share.

mod buy;
mod listing;
mod wire;

use fred::prelude::*;

use crate::store::redis::RedisStore;

use crate::seckill::logic::{Listed, Phase, Seq};
use crate::seckill::{
    Bought, Idempotency, Listening, Once, Order, Put, Restock, SeckillStore, Spec, Voucher,
    Vouchers,
};
use crate::store::error::StoreError;
use crate::types::{Name, UserId};
use buy::{buy_group, Purchase, PURCHASES};
use wire::{bad, int, parse_entry, restocked, seqs, tag, view, ORDERS, PUT, RESTOCK, USER_ORDERS};

impl SeckillStore for RedisStore {
    async fn seckill_put(&self, voucher: &Name, spec: Spec, cap: u64) -> Result<Put, StoreError> {
        // Registered and listed first (in another slot): the registry and the listing's index
        // may name a voucher that was refused, never miss one that exists ([`listing`]).
        self.register_voucher(voucher, spec.begin_ms).await?;
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
        let put = match tag(&reply).as_str() {
            "over_cap" => {
                return Ok(Put::OverCap {
                    sold: int(reply.get(1))
                        .and_then(|s| u64::try_from(s).ok())
                        .unwrap_or(0),
                })
            }
            "created" => view(&reply).map(Put::Created),
            "replaced" => view(&reply).map(Put::Replaced),
            _ => None,
        };
        let (Some(put), Some(rev)) = (put, int(reply.get(7))) else {
            return Err(bad("put", &reply));
        };
        self.place_voucher(voucher, spec.begin_ms, rev).await?;
        Ok(put)
    }

    async fn seckill_list(
        &self,
        after: Option<Listed>,
        phase: Option<Phase>,
        limit: usize,
        examine: usize,
    ) -> Result<Vouchers, StoreError> {
        self.list_vouchers(after, phase, limit, examine).await
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
        Ok(self.voucher_at_rev(voucher).await?.map(|(v, _)| v))
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

    async fn seckill_listen(&self, voucher: &Name) -> Result<Listening, StoreError> {
        Ok(self.channels().listen(&self.keys.voucher_events(voucher)))
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
