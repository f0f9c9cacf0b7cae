//! Reading a Cluster's slot table: which master serves each range of slots, as `CLUSTER SLOTS`
//! tells it, and the slot a command routes by.

use fred::prelude::*;

/// The slot a command routes by: its first key's.
pub(super) fn slot_of(key: Option<&[u8]>) -> Option<u16> {
    key.map(fred::util::redis_keyslot)
}

/// Each slot range of a `CLUSTER SLOTS` reply and its master, `(first, last, host, port)`; a
/// master listed without a host (empty or `?`) is on `asked_host`, the node that answered.
pub(super) fn masters(asked_host: &str, entries: &[Value]) -> Vec<(u16, u16, String, u16)> {
    let mut parsed: Vec<(u16, u16, String, u16)> = Vec::new();
    for e in entries {
        let Value::Array(parts) = e else { continue };
        let (Some(a), Some(b), Some(Value::Array(master))) = (
            parts.first().and_then(|v| v.as_i64()),
            parts.get(1).and_then(|v| v.as_i64()),
            parts.get(2),
        ) else {
            continue;
        };
        let host = match master.first().and_then(|v| v.as_string()) {
            Some(host) if !host.is_empty() && host != "?" => host,
            _ => asked_host.to_owned(),
        };
        let Some(port) = master.get(1).and_then(|v| v.as_i64()) else {
            continue;
        };
        parsed.push((a as u16, b as u16, host, port as u16));
    }
    parsed
}
