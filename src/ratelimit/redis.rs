//! Rate-limit checks on Redis: one `ratelimit_gcra.lua` call per decision, so concurrent checks
//! of a bucket serialise in Redis and every gateway instance shares it; the sliding log and the
//! fixed window likewise with `ratelimit_sliding.lua` and `ratelimit_fixed.lua`.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::keys::Keys;
use crate::store::redis::script_after;
use crate::store::redis::{text, RedisStore};

use crate::policies::budget::{BudgetStore, Step};
use crate::ratelimit::logic::{self, Decision, Gcra, Window, WindowKind, WindowSeen};
use crate::ratelimit::{Bucket, RateLimitStore, Spend, Throttle};
use crate::store::error::StoreError;
use crate::types::{Idempotency, Name, Once};

static GCRA: LazyLock<Script> = script_after!("gcra_common.lua", "ratelimit_gcra.lua");
static GCRA_MANY: LazyLock<Script> = script_after!("gcra_common.lua", "ratelimit_gcra_many.lua");
static GCRA_ALL: LazyLock<Script> = script_after!("gcra_common.lua", "ratelimit_gcra_all.lua");
static GCRA_REFUND: LazyLock<Script> =
    script_after!("gcra_common.lua", "ratelimit_gcra_refund.lua");

static SLIDING: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("ratelimit_sliding.lua")));
static FIXED: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("ratelimit_fixed.lua")));

/// A decimal µs value the script returned as a string (`nil` → `None`), read in place.
fn micros(v: Option<&Value>) -> Result<Option<i128>, StoreError> {
    let text = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => Some(&**s),
        Some(Value::Bytes(b)) => std::str::from_utf8(b).ok(),
        Some(_) => None,
    };
    text.and_then(|t| t.parse().ok())
        .map(Some)
        .ok_or_else(|| StoreError::Internal(format!("ratelimit_gcra.lua returned {v:?}")))
}

/// A duration in µs as the script takes it: whole seconds, then the microseconds below them,
/// so each part is exact in a Lua double even at the API's caps (3e19 µs).
fn split(us: i128) -> [String; 2] {
    [(us / 1_000_000).to_string(), (us % 1_000_000).to_string()]
}

impl RateLimitStore for RedisStore {
    async fn ratelimit_throttle_once(
        &self,
        bucket: &Bucket,
        spend: Spend<'_, Gcra>,
    ) -> Result<Once<Decision>, StoreError> {
        let Spend {
            limit: gcra,
            quantity,
            idem,
        } = spend;
        let mut args: Vec<String> = split(gcra.increment(quantity))
            .into_iter()
            .chain(split(gcra.tolerance))
            .collect();
        args.extend(Idempotency::script_args(idem));
        let reply: Vec<Value> = self
            .pool
            .script(
                &GCRA,
                vec![
                    self.keys.ratelimit(bucket),
                    self.keys
                        .ratelimit_idempotency(bucket, Idempotency::key_of(idem)),
                ],
                args,
            )
            .await?;
        let flag = text(reply.get(2)).unwrap_or_default();
        if flag == "key_reused" {
            return Ok(Once::KeyReused);
        }
        let now = micros(reply.first())?.ok_or_else(|| {
            StoreError::Internal("ratelimit_gcra.lua returned no clock".to_owned())
        })?;
        let stored = micros(reply.get(1))?;
        let decision = logic::decide(gcra, quantity, now, stored);
        Ok(if flag == "replay" {
            Once::Replayed(decision)
        } else {
            Once::Now(decision)
        })
    }

    async fn ratelimit_throttle_many(
        &self,
        bucket: &Bucket,
        gcra: &Gcra,
        quantities: &[u64],
    ) -> Result<Vec<Decision>, StoreError> {
        // Runs of equal quantities: a batch of single-unit requests is five arguments.
        let mut args: Vec<String> = split(gcra.tolerance).into();
        for run in quantities.chunk_by(|a, b| a == b) {
            args.push(run.len().to_string());
            args.extend(split(gcra.increment(run[0])));
        }
        let reply: Vec<Value> = self
            .pool
            .script(&GCRA_MANY, vec![self.keys.ratelimit(bucket)], args)
            .await?;
        let now = micros(reply.first())?.ok_or_else(|| {
            StoreError::Internal("ratelimit_gcra_many.lua returned no clock".to_owned())
        })?;
        let stored = micros(reply.get(1))?;
        Ok(logic::decide_steps(gcra, quantities, now, stored))
    }

    async fn ratelimit_throttle_all(
        &self,
        steps: &[Throttle<'_>],
    ) -> Result<Vec<Decision>, StoreError> {
        let keys: Vec<String> = steps
            .iter()
            .map(|s| self.keys.ratelimit(&s.bucket))
            .collect();
        // One call on a single Redis. On a Cluster one per slot, in the order of the steps
        // (the global layer's first), each all or nothing in its slot; a slot that refuses
        // refunds the slots spent before it, and the slots after it are only decided, for
        // the headers (docs/policies.md "On a Cluster").
        let groups: Vec<Vec<usize>> = if self.cluster {
            let mut groups: Vec<(u16, Vec<usize>)> = Vec::new();
            for (i, key) in keys.iter().enumerate() {
                let slot = fred::util::redis_keyslot(key.as_bytes());
                match groups.iter_mut().find(|(s, _)| *s == slot) {
                    Some((_, members)) => members.push(i),
                    None => groups.push((slot, vec![i])),
                }
            }
            groups.into_iter().map(|(_, members)| members).collect()
        } else {
            vec![(0..steps.len()).collect()]
        };
        let mut decisions: Vec<Option<Decision>> = vec![None; steps.len()];
        let mut spent: Vec<&[usize]> = Vec::new();
        let mut refused = false;
        for group in &groups {
            let decided = self.throttle_group(&keys, steps, group, refused).await;
            let (group_decisions, admitted) = match decided {
                Ok(d) => d,
                Err(e) => {
                    self.refund(&keys, steps, &spent).await;
                    return Err(e);
                }
            };
            for (&i, d) in group.iter().zip(group_decisions) {
                decisions[i] = Some(d);
            }
            if refused {
                continue;
            }
            if admitted {
                spent.push(group);
            } else {
                refused = true;
                self.refund(&keys, steps, &spent).await;
            }
        }
        decisions
            .into_iter()
            .map(|d| d.ok_or_else(|| StoreError::Internal("a bucket was not decided".to_owned())))
            .collect()
    }

    async fn ratelimit_window_once(
        &self,
        key: &Name,
        spend: Spend<'_, Window>,
    ) -> Result<Once<WindowSeen>, StoreError> {
        let Spend {
            limit: window,
            quantity,
            idem,
        } = spend;
        let (script, period) = match window.kind {
            WindowKind::Sliding => (&SLIDING, window.period),
            WindowKind::Fixed => (&FIXED, window.period / 1_000_000),
        };
        let log = self.keys.ratelimit_window(key, window.kind);
        let record =
            self.keys
                .ratelimit_window_idempotency(key, window.kind, Idempotency::key_of(idem));
        let mut args = vec![
            window.limit.to_string(),
            period.to_string(),
            quantity.to_string(),
        ];
        args.extend(Idempotency::script_args(idem));
        let reply: Vec<Value> = self.pool.script(script, vec![log, record], args).await?;
        let flag = text(reply.last()).unwrap_or_default();
        if flag == "key_reused" {
            return Ok(Once::KeyReused);
        }
        let bad = || StoreError::Internal(format!("a window script returned {reply:?}"));
        let now = micros(reply.first())?.ok_or_else(bad)?;
        let count = text(reply.get(1))
            .and_then(|c| c.parse().ok())
            .ok_or_else(bad)?;
        let (kth, newest) = match window.kind {
            WindowKind::Sliding => (micros(reply.get(2))?, micros(reply.get(3))?),
            WindowKind::Fixed => (None, None),
        };
        let seen = WindowSeen {
            now,
            count,
            kth,
            newest,
        };
        Ok(if flag == "replay" {
            Once::Replayed(seen)
        } else {
            Once::Now(seen)
        })
    }
}

impl RedisStore {
    /// One `ratelimit_gcra_all.lua` call on the steps `group` of `steps` (one slot), spending
    /// nothing when `dry`: their decisions, and whether they admit the request.
    async fn throttle_group(
        &self,
        keys: &[String],
        steps: &[Throttle<'_>],
        group: &[usize],
        dry: bool,
    ) -> Result<(Vec<Decision>, bool), StoreError> {
        let mut args = Vec::with_capacity(1 + 5 * group.len());
        args.push(if dry { "1" } else { "0" }.to_owned());
        for &i in group {
            let step = &steps[i];
            args.extend(split(step.gcra.tolerance));
            args.extend(split(step.gcra.increment(step.quantity)));
            args.push(if step.enforce { "1" } else { "0" }.to_owned());
        }
        let group_keys: Vec<String> = group.iter().map(|&i| keys[i].clone()).collect();
        let reply: Vec<Value> = self.pool.script(&GCRA_ALL, group_keys, args).await?;
        let now = micros(reply.first())?.ok_or_else(|| {
            StoreError::Internal("ratelimit_gcra_all.lua returned no clock".to_owned())
        })?;
        let stored = (0..group.len())
            .map(|n| micros(reply.get(n + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        let asked: Vec<_> = group
            .iter()
            .map(|&i| (*steps[i].gcra, steps[i].quantity, steps[i].enforce))
            .collect();
        Ok(logic::decide_all(&asked, now, &stored))
    }

    /// Gives back what the `spent` groups of `steps` were charged (a later slot refused the
    /// request). A refund that fails leaves the charge: the limits then err on the side of
    /// refusing, never of admitting more than they allow.
    async fn refund(&self, keys: &[String], steps: &[Throttle<'_>], spent: &[&[usize]]) {
        for group in spent {
            let group_keys: Vec<String> = group.iter().map(|&i| keys[i].clone()).collect();
            let args: Vec<String> = group
                .iter()
                .flat_map(|&i| split(steps[i].gcra.increment(steps[i].quantity)))
                .collect();
            let given: Result<Value, StoreError> =
                self.pool.script(&GCRA_REFUND, group_keys, args).await;
            if let Err(e) = given {
                tracing::warn!(error = %e, "a limiter refund failed; the request's charge stays");
            }
        }
    }
}

budget_on_client_buckets!(BudgetStore, Step, RedisStore);

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A GCRA bucket's TAT in whole µs. Checks use `rl:{<key>}`; global-limiter clients use
    /// their own kind, `rlg:{<client>}`, so a check key (which may contain `:`) can never name
    /// a client's bucket.
    pub(crate) fn ratelimit(&self, bucket: &Bucket) -> String {
        match bucket {
            Bucket::Key(name) => self.join(&["rl:{", name.as_str(), "}"]),
            Bucket::Client(client) => self.join(&["rlg:{", client, "}"]),
            // Tagged by the identity, so a request's global bucket and its policies counted by
            // the same identity (`by = "client"`) share a Cluster slot, and one call.
            Bucket::Policy { identity, policy } => self.join(&["rlp:{", identity, "}:", policy]),
        }
    }

    /// The first decision of a check under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the bucket's slot so the GCRA script records it atomically.
    pub(crate) fn ratelimit_idempotency(&self, bucket: &Bucket, digest: &str) -> String {
        format!("{}:idem:{digest}", self.ratelimit(bucket))
    }

    /// A sliding-log (`sw`: sorted set, one member per admitted unit) or fixed-window (`fw`:
    /// the window's count, expiring at its end) limit of check key `name`.
    pub(crate) fn ratelimit_window(&self, name: &Name, kind: WindowKind) -> String {
        let suffix = match kind {
            WindowKind::Sliding => "sw",
            WindowKind::Fixed => "fw",
        };
        format!("{}rl:{{{name}}}:{suffix}", self.prefix)
    }

    /// The first decision of a window check under one idempotency key, in the limit's slot.
    pub(crate) fn ratelimit_window_idempotency(
        &self,
        name: &Name,
        kind: WindowKind,
        digest: &str,
    ) -> String {
        format!("{}:idem:{digest}", self.ratelimit_window(name, kind))
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::types::testing::name;

    #[test]
    fn check_keys_and_global_clients_never_collide() {
        let keys = Keys::new("gw:");
        let name = name("k:abc");
        let check = keys.ratelimit(&Bucket::Key(name));
        let client = keys.ratelimit(&Bucket::Client("k:abc".to_owned()));
        assert_eq!(check, "gw:rl:{k:abc}");
        assert_eq!(client, "gw:rlg:{k:abc}");
        assert_ne!(check, client);
    }
}
