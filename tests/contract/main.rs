//! The HTTP contract suite: every scenario runs against the memory backend, a real
//! `redis-server` and a real 3-master Redis Cluster (see `common`).

#[path = "../common/mod.rs"]
mod common;

mod checkins;
mod dedup;
mod geo;
mod locks;
mod queues;
mod ratelimit;
mod ratelimit_windows;
mod seckill;
mod uv;
