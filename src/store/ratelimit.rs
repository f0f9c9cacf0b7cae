//! ratelimit store calls, dispatched to the active backend.
