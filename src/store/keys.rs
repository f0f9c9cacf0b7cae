//! The only place keys are spelled: `<prefix><kind>:{<tag>}:<rest>`.
//!
//! The `{tag}` is the Redis Cluster hash tag: every key one script or multi-key command touches
//! shares it, so they land in one slot (docs/design.md "Redis rules").

use crate::ratelimit::logic::WindowKind;
use crate::ratelimit::Bucket;
use crate::types::{Day, Month, Name, UserId};

/// Users per cohort chunk: 2^20 bits = at most 128 KiB per chunk key, so a check-in by user
/// 4294967295 allocates one chunk, not a 512 MiB string (and a chunk with few users stays a
/// small set of offsets: `store/redis/cohort_set.lua`).
pub const COHORT_CHUNK_BITS: u32 = 20;

/// A day's `YYYY-MM-DD` digits as a `str` for [`Keys::join`].
fn day_str(text: &[u8; 10]) -> &str {
    std::str::from_utf8(text).unwrap_or_default()
}

/// Builds every key under one configured prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    /// Shared, not owned: the store (and these with it) is cloned into every request.
    prefix: std::sync::Arc<str>,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }

    /// The prefix and `parts`, in one allocation of the exact size. The keys a cheap request
    /// names are built this way rather than with `format!`, which cost about 1,000 instructions
    /// a key (three keys were 4% of a check-in in callgrind; issue 19).
    fn join(&self, parts: &[&str]) -> String {
        let len = self.prefix.len() + parts.iter().map(|p| p.len()).sum::<usize>();
        let mut key = String::with_capacity(len);
        key.push_str(&self.prefix);
        for part in parts {
            key.push_str(part);
        }
        key
    }

    /// A user's check-ins for one month: bit `day - 1` is set when checked in.
    #[cfg(test)]
    pub fn checkin_month(&self, user: UserId, month: Month) -> String {
        self.checkin_months(user, &[month]).remove(0)
    }

    /// [`Self::checkin_month`] of each of `months`, the user's part formatted once: a
    /// check-in names every retained month (issue 19).
    pub fn checkin_months(&self, user: UserId, months: &[Month]) -> Vec<String> {
        let base = self.join(&["ck:{", itoa::Buffer::new().format(user.0), "}:"]);
        months
            .iter()
            .map(|month| {
                let mut key = String::with_capacity(base.len() + 7);
                key.push_str(&base);
                key.push_str(std::str::from_utf8(&month.text()).unwrap_or_default());
                key
            })
            .collect()
    }

    /// One chunk of a day's cohort bitmap: bit `user mod 2^20` of chunk `user >> 20`.
    /// Tagged by chunk, so the days of a chunk share a slot and a day's chunks spread out.
    pub fn cohort_chunk(&self, chunk: u32, day: Day) -> String {
        self.join(&[
            "ckd:{",
            itoa::Buffer::new().format(chunk),
            "}:",
            day_str(&day.text()),
        ])
    }

    /// The set of cohort chunk numbers ever written, so stats never scan the keyspace.
    pub fn cohort_registry(&self) -> String {
        self.join(&["ckr:{chunks}"])
    }

    /// A dedup filter's metadata hash: parameters, engine, layer and item counts.
    pub fn dedup_meta(&self, filter: &Name) -> String {
        format!("{}bf:{{{filter}}}", self.prefix)
    }

    /// Layer `i` (from 0) of a Lua-engine dedup filter: a plain bitmap.
    pub fn dedup_layer(&self, filter: &Name, i: usize) -> String {
        format!("{}bf:{{{filter}}}:{i}", self.prefix)
    }

    /// Piece `n` of a dedup layer too big for one key (`dedup_add.lua`), same hash tag.
    pub fn dedup_layer_piece(&self, filter: &Name, i: usize, n: u64) -> String {
        format!("{}bf:{{{filter}}}:{i}:{n}", self.prefix)
    }

    /// The RedisBloom filter behind a native-engine dedup filter.
    pub fn dedup_native(&self, filter: &Name) -> String {
        format!("{}bf:{{{filter}}}:rb", self.prefix)
    }

    /// A page's distinct visitors on one day (a HyperLogLog).
    pub fn uv_day(&self, page: &Name, day: Day) -> String {
        self.join(&["uv:{", page.as_str(), "}:", day_str(&day.text())])
    }

    /// The first outcome of a visit under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the page's slot so the record script keeps it atomically.
    pub fn uv_idempotency(&self, page: &Name, digest: &str) -> String {
        self.join(&["uv:{", page.as_str(), "}:idem:", digest])
    }

    /// A page's views on one day (a counter), in the same slot as [`Self::uv_day`].
    pub fn pv_day(&self, page: &Name, day: Day) -> String {
        self.join(&["pv:{", page.as_str(), "}:", day_str(&day.text())])
    }

    /// Scratch key `n` under a page's hash tag, where HyperLogLogs copied from other slots
    /// are merged; scripts delete it before returning and give it a short TTL meanwhile.
    pub fn uv_scratch(&self, page: &Name, n: u8) -> String {
        format!("{}uvt:{{{page}}}:{n}", self.prefix)
    }

    /// A GCRA bucket's TAT in whole µs. Checks use `rl:{<key>}`; global-limiter clients use
    /// their own kind, `rlg:{<client>}`, so a check key (which may contain `:`) can never name
    /// a client's bucket.
    pub fn ratelimit(&self, bucket: &Bucket) -> String {
        match bucket {
            Bucket::Key(name) => self.join(&["rl:{", name.as_str(), "}"]),
            Bucket::Client(client) => self.join(&["rlg:{", client, "}"]),
        }
    }

    /// The first decision of a check under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the bucket's slot so the GCRA script records it atomically.
    pub fn ratelimit_idempotency(&self, bucket: &Bucket, digest: &str) -> String {
        format!("{}:idem:{digest}", self.ratelimit(bucket))
    }

    /// A sliding-log (`sw`: sorted set, one member per admitted unit) or fixed-window (`fw`:
    /// the window's count, expiring at its end) limit of check key `name`.
    pub fn ratelimit_window(&self, name: &Name, kind: WindowKind) -> String {
        let suffix = match kind {
            WindowKind::Sliding => "sw",
            WindowKind::Fixed => "fw",
        };
        format!("{}rl:{{{name}}}:{suffix}", self.prefix)
    }

    /// The first decision of a window check under one idempotency key, in the limit's slot.
    pub fn ratelimit_window_idempotency(
        &self,
        name: &Name,
        kind: WindowKind,
        digest: &str,
    ) -> String {
        format!("{}:idem:{digest}", self.ratelimit_window(name, kind))
    }

    /// A lock's holder: "owner\ntoken", expiring with the lease.
    pub fn lock(&self, name: &Name) -> String {
        format!("{}lk:{{{name}}}", self.prefix)
    }

    /// A lock's fencing counter: the last token handed out, outliving the holder's key.
    pub fn lock_fence(&self, name: &Name) -> String {
        format!("{}lk:{{{name}}}:fence", self.prefix)
    }

    /// The sharded pub/sub channel a lock's releases are announced on, under the lock's hash
    /// tag so `SPUBLISH` from the release script stays in its slot (a channel, not a key).
    pub fn lock_released_channel(&self, name: &Name) -> String {
        format!("{}lk:{{{name}}}:released", self.prefix)
    }

    /// A geo layer: one geo set (a sorted set scored by 52-bit geohash), so every geo
    /// operation is single-key.
    pub fn geo(&self, layer: &Name) -> String {
        format!("{}geo:{{{layer}}}", self.prefix)
    }

    /// A voucher: hash of `stock` (left), `sold`, `begin`, `end` (unix ms), `limit` (per user).
    pub fn voucher(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}", self.prefix)
    }

    /// A voucher's buyers: hash user id → orders bought.
    pub fn voucher_buyers(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:buyers", self.prefix)
    }

    /// A voucher's orders per user: hash user id → space-separated stream entry ids.
    pub fn voucher_user_orders(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:user_orders", self.prefix)
    }

    /// A voucher's orders in sale order: a stream, one entry per order.
    pub fn voucher_orders(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:orders", self.prefix)
    }

    /// The first outcome of a purchase under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the voucher's slot so the purchase script records it atomically.
    pub fn voucher_idempotency(&self, voucher: &Name, digest: &str) -> String {
        format!("{}sk:{{{voucher}}}:idem:{digest}", self.prefix)
    }

    /// Order entries the ledger gave up on: a stream of copies with the reason.
    pub fn voucher_dead_letters(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:dead", self.prefix)
    }

    /// How often the database refused each pending order entry's row (entry id → count):
    /// only these refusals, not deliveries, bring an entry to the dead-letter stream.
    pub fn voucher_ledger_attempts(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:attempts", self.prefix)
    }

    /// The set of every voucher id ever created, so the ledger finds each order stream
    /// without `KEYS`/`SCAN` (one small key; the streams themselves stay in their own slots).
    pub fn voucher_registry(&self) -> String {
        format!("{}skr:{{vouchers}}", self.prefix)
    }
}

impl Keys {
    /// A delayed queue's keys, in the order its scripts take them (see `queue_common.lua`):
    /// `due`, `flight`, `meta`, `pay`, `dead`, `ctr`, all under the queue's hash tag.
    pub fn queue(&self, queue: &Name) -> [String; 6] {
        ["due", "flight", "meta", "pay", "dead", "ctr"]
            .map(|part| format!("{}q:{{{queue}}}:{part}", self.prefix))
    }

    /// The first outcome of an enqueue under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the queue's slot so the enqueue script records it atomically.
    pub fn queue_idempotency(&self, queue: &Name, digest: &str) -> String {
        format!("{}q:{{{queue}}}:idem:{digest}", self.prefix)
    }

    /// The pub/sub channel an enqueue to `queue` is announced on (classic pub/sub, which a
    /// Cluster broadcasts to every node, so one pattern subscription anywhere hears it).
    pub fn queue_bell(&self, queue: &Name) -> String {
        format!("{}qbell:{queue}", self.prefix)
    }

    /// The pattern matching every [`Self::queue_bell`] channel, and the length of the text
    /// before the queue name. Glob characters of the prefix are escaped.
    pub fn queue_bell_pattern(&self) -> (String, usize) {
        let mut pattern = String::new();
        for c in self.prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push_str("qbell:*");
        (pattern, self.prefix.len() + "qbell:".len())
    }
}

/// The hash tag Redis Cluster hashes for `key` (the whole key when it has none).
pub fn hash_tag(key: &str) -> &str {
    if let Some(open) = key.find('{') {
        if let Some(len) = key[open + 1..].find('}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_months_share_a_slot() {
        let keys = Keys::new("gw:");
        let a = keys.checkin_month(UserId(7), Month::parse("2026-01").unwrap());
        let b = keys.checkin_month(UserId(7), Month::parse("2025-12").unwrap());
        assert_eq!(a, "gw:ck:{7}:2026-01");
        assert_eq!(hash_tag(&a), hash_tag(&b));
        assert_ne!(
            hash_tag(&a),
            hash_tag(&keys.checkin_month(UserId(8), Month::parse("2026-01").unwrap()))
        );
    }

    #[test]
    fn a_filters_keys_share_a_slot() {
        let keys = Keys::new("gw:");
        let f = Name::try_from("news:eu@1".to_owned()).unwrap();
        let meta = keys.dedup_meta(&f);
        assert_eq!(meta, "gw:bf:{news:eu@1}");
        assert_eq!(keys.dedup_layer(&f, 3), "gw:bf:{news:eu@1}:3");
        assert_eq!(hash_tag(&meta), hash_tag(&keys.dedup_layer(&f, 3)));
        assert_eq!(hash_tag(&meta), hash_tag(&keys.dedup_native(&f)));
    }

    #[test]
    fn a_vouchers_keys_share_a_slot() {
        let keys = Keys::new("gw:");
        let v = Name::try_from("v1".to_owned()).unwrap();
        let all = [
            keys.voucher(&v),
            keys.voucher_buyers(&v),
            keys.voucher_user_orders(&v),
            keys.voucher_orders(&v),
            keys.voucher_dead_letters(&v),
            keys.voucher_ledger_attempts(&v),
        ];
        assert_eq!(all[0], "gw:sk:{v1}");
        assert!(all.iter().all(|k| hash_tag(k) == "v1"));
    }

    #[test]
    fn a_chunks_days_share_a_slot() {
        let keys = Keys::new("t:");
        let d1 = keys.cohort_chunk(3, Day::parse("2026-01-01").unwrap());
        let d2 = keys.cohort_chunk(3, Day::parse("2026-03-01").unwrap());
        assert_eq!(d1, "t:ckd:{3}:2026-01-01");
        assert_eq!(hash_tag(&d1), hash_tag(&d2));
        assert_eq!(keys.cohort_registry(), "t:ckr:{chunks}");
        assert_eq!(
            keys.uv_idempotency(&Name::try_from("p".to_owned()).unwrap(), "ab"),
            "t:uv:{p}:idem:ab"
        );
    }

    #[test]
    fn a_pages_day_keys_and_scratch_share_a_slot() {
        let keys = Keys::new("gw:");
        let page = Name::try_from("home".to_owned()).unwrap();
        let day = Day::parse("2026-11-21").unwrap();
        let uv = keys.uv_day(&page, day);
        assert_eq!(uv, "gw:uv:{home}:2026-11-21");
        assert_eq!(keys.pv_day(&page, day), "gw:pv:{home}:2026-11-21");
        for other in [keys.pv_day(&page, day.succ()), keys.uv_scratch(&page, 1)] {
            assert_eq!(hash_tag(&other), "home");
        }
    }

    #[test]
    fn check_keys_and_global_clients_never_collide() {
        let keys = Keys::new("gw:");
        let name = crate::types::Name::try_from("k:abc".to_owned()).unwrap();
        let check = keys.ratelimit(&Bucket::Key(name));
        let client = keys.ratelimit(&Bucket::Client("k:abc".to_owned()));
        assert_eq!(check, "gw:rl:{k:abc}");
        assert_eq!(client, "gw:rlg:{k:abc}");
        assert_ne!(check, client);
    }

    #[test]
    fn a_queues_keys_share_a_slot() {
        let keys = Keys::new("gw:");
        let q = Name::try_from("mail".to_owned()).unwrap();
        let all = keys.queue(&q);
        assert_eq!(all[0], "gw:q:{mail}:due");
        assert!(all.iter().all(|k| hash_tag(k) == "mail"));
        assert_eq!(hash_tag(&keys.queue_idempotency(&q, "ab")), "mail");
    }

    #[test]
    fn a_layer_is_one_key() {
        let layer = Name::try_from("cafes:bj".to_owned()).unwrap();
        let key = Keys::new("gw:").geo(&layer);
        assert_eq!(key, "gw:geo:{cafes:bj}");
        assert_eq!(hash_tag(&key), "cafes:bj");
    }
}
