//! The grouped purchases: those of one voucher that a worker takes up in one turn go as one
//! `seckill_buy.lua` call (or a few, within bounds), each answered as if it ran alone.

use fred::prelude::*;

use crate::store::redis::RedisStore;

use super::wire::{bad, bought, BUY};
use crate::seckill::{Bought, Once};
use crate::store::error::StoreError;
use crate::store::group::{self, GroupCommit};
use crate::store::slots::Slot;
use crate::types::{Name, UserId, IDEMPOTENCY_SECS};

/// Most purchases in one `seckill_buy.lua` call, and the bytes of their keys and arguments
/// after which a call takes no more: bounds one script run (64 sales: ~260 Redis commands,
/// well under a millisecond) however large a burst's group grew. A larger group goes as several
/// calls, one after the other, so purchases stay in arrival order.
const MAX_PURCHASES: usize = 64;
const MAX_PURCHASE_BYTES: usize = 16 * 1024;

/// Purchases waiting to go in one call, per voucher (and stream cap).
pub(super) static PURCHASES: Slot<Purchases> = Slot::new();

/// Purchases on one voucher, grouped: those a worker takes up in one turn cost one round trip,
/// one script run and one replica wait, each answered as if it ran alone.
pub(super) type Purchases = GroupCommit<(Name, u64), Purchase, Result<Bought, StoreError>>;

/// One purchase's share of a `seckill_buy.lua` call.
pub(super) struct Purchase {
    pub(super) user: UserId,
    /// Its idempotency record's key (unused without a key: `fingerprint` is then empty).
    pub(super) idem: String,
    pub(super) fingerprint: String,
}

/// A voucher's group of purchases in `seckill_buy.lua` calls of at most [`MAX_PURCHASES`]
/// purchases and [`MAX_PURCHASE_BYTES`], in order.
pub(super) async fn buy_group(
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
