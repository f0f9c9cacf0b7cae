-- Acquire each of N locks with a fencing token, or extend it for its current owner, in order,
-- each as if it ran alone: several acquisitions of one name in a call answer as one after the
-- other would (the first free one takes it, another owner then finds it held, the same owner
-- again extends it with the same token), since each reads its key afresh. The acquisitions a
-- gateway worker takes up in one turn come in one call (src/locks/redis/group.rs): every key of the
-- call in one slot on a Cluster, any keys on a single Redis.
-- KEYS[i]  acquisition i's lock (lk:{name}): "<lease deadline, ms> <token> <owner>" (owner
--          last: the rest of the value). Held while the deadline is ahead of the store's clock;
--          the token is the last one handed out for the name (its fencing counter), so the key
--          lives ARGV[1] ms past the lease: a release or an expired lease leaves the counter.
-- ARGV[1] the counter's grace, ms   ARGV[2i] acquisition i's owner   ARGV[2i+1] its ttl, ms
-- Returns  { now_ms, r1, ..., rN }: ri is the token (a string) when acquired or extended (same
--          token), whose lease then ends at now_ms + its ttl; the ms the lease has left (an
--          integer) when another owner holds it. A refusal reads one key and writes nothing.
--
-- token = max(counter + 1, now in µs) (src/locks/logic.rs next_token): strictly increasing
-- while the key lives, and past every earlier token by the clock once it has expired. µs since
-- the epoch are exact in a Lua double (< 2^53) until the year 2255; the µs text is built from
-- TIME's fields, once per call, as ms values (13 digits) print exactly by Lua's own "%.14g".
--
-- A gateway not yet upgraded writes the layout before this one (docs/locks.md "Key layout"):
-- "owner\ntoken", expiring with the lease, its counter in lk:{name}:fence. Such a key is held
-- by that owner until it expires (one PTTL, only on that path); the same owner extending it
-- rewrites it in this layout with the same token.
local grace = tonumber(ARGV[1])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local now_ms = math.floor(now_us / 1000)
local fresh = clock[1] .. string.format('%06d', tonumber(clock[2]))
local replies = { now_ms }
for i = 1, #KEYS do
  local key, owner, ttl = KEYS[i], ARGV[2 * i], tonumber(ARGV[2 * i + 1])
  local value = redis.call('GET', key)
  local token = fresh
  if value then
    local deadline, last, by = string.match(value, '^(%d+) (%d+) (.*)$')
    local left
    if deadline then
      left = tonumber(deadline) - now_ms
    else
      by, last = string.match(value, '^([^\n]*)\n(%d+)$')
      left = redis.call('PTTL', key)
      if left == -1 then
        -- No expiry (set by hand): held; look again after a lease of this length.
        left = ttl
      elseif left < 1 then
        left = 1
      end
    end
    if left > 0 then
      if by == owner then
        token = last
      else
        token = nil
        replies[i + 1] = left
      end
    elseif tonumber(last) >= now_us then
      token = string.format('%.0f', tonumber(last) + 1)
    end
  end
  if token then
    redis.call('SET', key, (now_ms + ttl) .. ' ' .. token .. ' ' .. owner, 'PX', ttl + grace)
    replies[i + 1] = token
  end
end
return replies
