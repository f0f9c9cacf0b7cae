//! Rate-limit checks on Redis.
