//! News dedup on scalable Bloom filters (RedisBloom when present, else a Lua engine). in memory.

#[derive(Debug, Default)]
pub(super) struct State {}

impl State {
    pub(super) fn purge(&mut self, _now: i64) {}
}
