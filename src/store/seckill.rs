//! Flash-sale store calls, dispatched to the active backend.

use super::{Store, StoreError};
use crate::seckill::logic::Seq;
use crate::seckill::{Bought, Idempotency, Once, Order, Put, Restock, SeckillStore, Spec, Voucher};
use crate::types::{Name, UserId};

impl SeckillStore for Store {
    async fn put_voucher(&self, voucher: &Name, spec: Spec, cap: u64) -> Result<Put, StoreError> {
        dispatch!(self, "seckill.put_voucher", s => s.put_voucher(voucher, spec, cap).await)
    }
    async fn restock(
        &self,
        voucher: &Name,
        quantity: u64,
        cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Restock>, StoreError> {
        dispatch!(self, "seckill.restock", s => s.restock(voucher, quantity, cap, idem).await)
    }
    async fn voucher(&self, voucher: &Name) -> Result<Option<Voucher>, StoreError> {
        dispatch!(self, "seckill.voucher", s => s.voucher(voucher).await)
    }
    async fn buy(
        &self,
        voucher: &Name,
        user: UserId,
        cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Bought, StoreError> {
        dispatch!(self, "seckill.buy", s => s.buy(voucher, user, cap, idem).await)
    }
    async fn orders(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Option<Vec<Order>>, StoreError> {
        dispatch!(self, "seckill.orders", s => s.orders(voucher, after, limit).await)
    }
    async fn user_orders(
        &self,
        voucher: &Name,
        user: UserId,
    ) -> Result<Option<Vec<Seq>>, StoreError> {
        dispatch!(self, "seckill.user_orders", s => s.user_orders(voucher, user).await)
    }
}
