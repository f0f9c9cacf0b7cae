//! The order ledger's dead letters on the memory backend: the ledger needs Redis streams, so
//! nothing is ever dead-lettered here.

use super::MemoryStore;
use crate::ledger::{DeadLetter, DeadLetters};
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::types::Name;

impl DeadLetters for MemoryStore {
    async fn ledger_dead_letters(
        &self,
        _voucher: &Name,
        _after: Option<Seq>,
        _limit: usize,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        Ok(Vec::new())
    }

    async fn ledger_forget_dead(&self, _voucher: &Name, _ids: &[Seq]) -> Result<(), StoreError> {
        Ok(())
    }
}
