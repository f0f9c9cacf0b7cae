//! News dedup on scalable Bloom filters (RedisBloom when present, else a Lua engine). on Redis.
