//! Flash sales on Redis.
