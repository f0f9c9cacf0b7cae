//! Store backends: the in-memory default and Redis (standalone, TLS, Cluster), one enum that
//! implements every domain's store trait by dispatching to the backend chosen at start-up.

pub mod error;
pub mod keys;
pub mod memory;
pub mod redis;

use crate::config::{Settings, StoreChoice};
use error::StoreError;

/// What `/readyz` reports about the store.
#[derive(Debug, Clone)]
pub struct ReadyInfo {
    pub backend: &'static str,
    pub redis_version: Option<String>,
    pub bloom_engine: &'static str,
}

/// The backend the gateway runs on, a cheap-clone handle.
#[derive(Debug, Clone)]
pub enum Store {
    Memory(memory::MemoryStore),
    Redis(redis::RedisStore),
}

/// Calls the same method on whichever backend is active.
macro_rules! dispatch {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            Store::Memory($s) => $call,
            Store::Redis($s) => $call,
        }
    };
}

impl Store {
    /// Builds the backend `settings` ask for. Redis being down is not an error here: the
    /// gateway starts, reports not ready, and serves once the client reconnects.
    pub async fn open(settings: &Settings) -> Result<Self, StoreError> {
        match &settings.store {
            StoreChoice::Memory => Ok(Self::Memory(memory::MemoryStore::new(settings))),
            StoreChoice::Redis(url) => Ok(Self::Redis(
                redis::RedisStore::connect(url, settings).await?,
            )),
        }
    }

    /// `memory`, `redis` or `redis-cluster`.
    pub fn backend(&self) -> &'static str {
        dispatch!(self, s => s.backend())
    }

    /// Asks the store whether it answers.
    pub async fn ready(&self) -> Result<ReadyInfo, StoreError> {
        dispatch!(self, s => s.ready().await)
    }
}

// Each domain's `impl <Domain>Store for Store`, dispatching with the macro above.
mod dispatch;
