//! dedup scenarios.
