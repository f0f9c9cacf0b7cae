//! The limit policies' runtime overrides in the embedded backend: the entries and their
//! version, as on Redis.

use std::collections::HashMap;

use super::budget::{OverrideStore, Stored};
use crate::store::error::StoreError;
use crate::store::memory::{Locked, MemoryStore, Purge};
use crate::store::slots::Slot;

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    /// field → value, each value led by its expiry (`<unix ms>|`, 0: none).
    entries: HashMap<String, String>,
    /// Moved on by every change, so instances re-read the entries only when it moved.
    version: u64,
}

impl Purge for State {
    /// Expired entries stay until a full store needs their room, as on Redis, where only
    /// `overrides_put.lua` drops them: readers skip them by their expiry.
    fn purge(&mut self, _now: i64) {}
}

impl OverrideStore for MemoryStore {
    async fn overrides_put(
        &self,
        field: &str,
        value: &str,
        max: u64,
    ) -> Result<Stored, StoreError> {
        let now_ms = self.clock().now_ms();
        let mut s = self.state(&STATE);
        let exists = s.entries.contains_key(field);
        if !exists && s.entries.len() as u64 >= max {
            s.entries.retain(|_, v| {
                let at = v.split('|').next().and_then(|a| a.parse::<i64>().ok());
                !matches!(at, Some(at) if at > 0 && at <= now_ms)
            });
            if s.entries.len() as u64 >= max {
                return Ok(Stored::Full);
            }
        }
        s.entries.insert(field.to_owned(), value.to_owned());
        s.version += 1;
        Ok(if exists {
            Stored::Replaced
        } else {
            Stored::Created
        })
    }

    async fn overrides_delete(&self, field: &str) -> Result<bool, StoreError> {
        let mut s = self.state(&STATE);
        let gone = s.entries.remove(field).is_some();
        if gone {
            s.version += 1;
        }
        Ok(gone)
    }

    async fn overrides_version(&self) -> Result<u64, StoreError> {
        Ok(self.state(&STATE).version)
    }

    async fn overrides_all(&self) -> Result<(u64, Vec<(String, String)>), StoreError> {
        let s = self.state(&STATE);
        let entries = s
            .entries
            .iter()
            .map(|(f, v)| (f.clone(), v.clone()))
            .collect();
        Ok((s.version, entries))
    }
}
