//! ratelimit scenarios.
