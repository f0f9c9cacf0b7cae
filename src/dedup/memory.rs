//! Dedup in memory: the same scalable filter as the Lua engine (sizing and bit positions from
//! [`crate::dedup::logic`]), with bitmaps as `Vec<u64>`.

use std::collections::HashMap;

use crate::dedup::logic::{ItemHash, LayerSpec, Params};
use crate::dedup::{Added, DedupStore, Engine, FilterInfo, Policy, Reserved};
use crate::store::error::StoreError;
use crate::store::memory::{reclaim, Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::Name;

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    filters: HashMap<Name, Filter>,
}

impl State {
    /// The live filter called `name`, if any (an expired one is dropped here).
    fn live(&mut self, name: &Name, now: i64) -> Option<&mut Filter> {
        if self.filters.get(name).is_some_and(|f| f.expires_at <= now) {
            self.filters.remove(name);
        }
        self.filters.get_mut(name)
    }
}

impl Purge for State {
    fn purge(&mut self, now: i64) {
        reclaim(&mut self.filters, |_, f| f.expires_at > now);
    }
}

#[derive(Debug)]
struct Filter {
    params: Params,
    /// How many layers the filter may have (its layout within the size cap).
    max_layers: usize,
    layers: Vec<Layer>,
    items: u64,
    expires_at: i64,
}

#[derive(Debug)]
struct Layer {
    spec: LayerSpec,
    words: Vec<u64>,
    /// Items added to this layer.
    count: u64,
}

impl Layer {
    fn new(spec: LayerSpec) -> Self {
        Self {
            spec,
            words: vec![0; spec.bits.div_ceil(64) as usize],
            count: 0,
        }
    }

    fn contains(&self, h: ItemHash) -> bool {
        h.positions(self.spec)
            .all(|p| self.words[(p / 64) as usize] & (1 << (p % 64)) != 0)
    }

    fn insert(&mut self, h: ItemHash) {
        for p in h.positions(self.spec) {
            self.words[(p / 64) as usize] |= 1 << (p % 64);
        }
        self.count += 1;
    }
}

impl Filter {
    fn new(params: Params) -> Self {
        Self {
            params,
            max_layers: params.layout().len(),
            layers: vec![Layer::new(params.layer(0))],
            items: 0,
            expires_at: 0,
        }
    }

    fn contains(&self, h: ItemHash) -> bool {
        self.layers.iter().any(|l| l.contains(h))
    }

    /// Items the filter can still take before it would outgrow its layout.
    fn room(&self) -> u64 {
        let last = self.layers.last().expect("a filter has a layer");
        let later: u64 = (self.layers.len()..self.max_layers)
            .map(|i| self.params.layer(i as u32).capacity)
            .fold(0, u64::saturating_add);
        (last.spec.capacity - last.count.min(last.spec.capacity)).saturating_add(later)
    }

    fn add(&mut self, h: ItemHash) -> bool {
        if self.contains(h) {
            return false;
        }
        let full = self
            .layers
            .last()
            .is_some_and(|l| l.count >= l.spec.capacity);
        if full {
            let next = self.params.layer(self.layers.len() as u32);
            self.layers.push(Layer::new(next));
        }
        self.layers.last_mut().expect("a layer").insert(h);
        self.items += 1;
        true
    }

    fn info(&self) -> FilterInfo {
        FilterInfo {
            params: self.params,
            items: self.items,
            bytes: self.layers.iter().map(|l| l.spec.bytes()).sum(),
            layers: self.layers.len() as u32,
            engine: Engine::Memory,
        }
    }
}

fn expiry(now: i64, policy: Policy) -> i64 {
    now.saturating_add(i64::try_from(policy.retention_secs).unwrap_or(i64::MAX))
}

impl DedupStore for MemoryStore {
    async fn dedup_reserve(
        &self,
        filter: &Name,
        params: Params,
        policy: Policy,
    ) -> Result<Reserved, StoreError> {
        let now = self.clock().now_s();
        let mut s = self.state(&STATE);
        if let Some(existing) = s.live(filter, now) {
            if existing.params != params {
                return Ok(Reserved::Conflict(existing.params));
            }
            existing.expires_at = expiry(now, policy);
            return Ok(Reserved::Unchanged);
        }
        let mut created = Filter::new(params);
        created.expires_at = expiry(now, policy);
        s.filters.insert(filter.clone(), created);
        Ok(Reserved::Created)
    }

    async fn dedup_add(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Added, StoreError> {
        // Hash outside the lock: it is the expensive part.
        let hashes: Vec<ItemHash> = items.iter().map(|i| ItemHash::of(i)).collect();
        let now = self.clock().now_s();
        let mut s = self.state(&STATE);
        if s.live(filter, now).is_none() {
            s.filters
                .insert(filter.clone(), Filter::new(policy.defaults));
        }
        let f = s.filters.get_mut(filter).expect("just ensured");
        f.expires_at = expiry(now, policy);
        if hashes.len() as u64 > f.room() {
            return Ok(Added::Full);
        }
        Ok(Added::Flags(hashes.into_iter().map(|h| f.add(h)).collect()))
    }

    async fn dedup_check(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Vec<bool>, StoreError> {
        let hashes: Vec<ItemHash> = items.iter().map(|i| ItemHash::of(i)).collect();
        let now = self.clock().now_s();
        let mut s = self.state(&STATE);
        let Some(f) = s.live(filter, now) else {
            return Ok(vec![false; items.len()]);
        };
        f.expires_at = expiry(now, policy);
        Ok(hashes.into_iter().map(|h| f.contains(h)).collect())
    }

    async fn dedup_engine(&self) -> Result<Engine, StoreError> {
        Ok(Engine::Memory)
    }

    async fn dedup_info(&self, filter: &Name) -> Result<Option<FilterInfo>, StoreError> {
        let mut s = self.state(&STATE);
        Ok(s.live(filter, self.clock().now_s()).map(|f| f.info()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_refuses_batches_past_its_layout() {
        let mut f = Filter::new(Params::new(10, 0.1).unwrap());
        f.max_layers = 2;
        assert_eq!(f.room(), 30);
        for i in 0..25 {
            f.add(ItemHash::of(&i.to_string()));
        }
        assert_eq!(f.layers.len(), 2);
        assert_eq!(f.room(), 30 - f.items);
    }
}
