-- One GCRA step (RATELIMIT.md): read the clock and the bucket's TAT, write the new TAT if the
-- request fits. The caller derives the whole reply from the two values returned, with the same
-- arithmetic (src/ratelimit/logic.rs); only the comparison that decides the write is repeated here.
-- KEYS[1]  the bucket (rl:{key} or rlg:{client}): its TAT in whole microseconds since the epoch,
--          as a decimal string, expiring (PX) when the bucket is full again
-- ARGV[1], ARGV[2]  increment (emission interval x quantity): whole seconds, then the
--          microseconds below them; 0 0 is a peek, which never writes
-- ARGV[3], ARGV[4]  delay variation tolerance (emission interval x limit), split the same way
-- KEYS[2]  the idempotency record (<bucket>:idem:<sha256 of the key>, same slot): the string
--          "fingerprint\nnow\ntat" of the first check under that key; only read or written when
--          ARGV[5] is not empty
-- ARGV[5]  the check's fingerprint under an idempotency key, or ''   ARGV[6] the record's TTL (s)
-- Returns  { now, tat, flag }: the clock (TIME, read once) and the stored TAT, in microseconds
--          as decimal strings (tat false when the key is missing or does not hold a TAT);
--          flag '' for a check made now, 'replay' for the first check's { now, tat } under the
--          same key (nothing written), 'key_reused' when that key came with another check.
--
-- Lua numbers are doubles, exact only up to 2^53, and at the API's caps a TAT reaches 3e19 µs.
-- So every duration here is a pair (seconds, microseconds below them), each part exact.
local M = 1000000
local key = KEYS[1]
local fp = ARGV[5]
if fp ~= '' then
  local first = redis.call('GET', KEYS[2])
  if first then
    local ffp, fnow, ftat = string.match(first, '^([^\n]*)\n([^\n]*)\n(.*)$')
    if ffp ~= fp then
      return { false, false, 'key_reused' }
    end
    return { fnow, ftat ~= '' and ftat or false, 'replay' }
  end
end
local inc_s, inc_us = tonumber(ARGV[1]), tonumber(ARGV[2])
local tol_s, tol_us = tonumber(ARGV[3]), tonumber(ARGV[4])

local clock = redis.call('TIME')
local now_s, now_us = tonumber(clock[1]), tonumber(clock[2])

-- pcall: a key of another type counts as missing, like garbage or a number too big to be a TAT
-- (over 21 digits its seconds would not be exact), and is overwritten.
local raw = redis.pcall('GET', key)
local tat_s, tat_us = now_s, now_us
local stored = false
if type(raw) == 'string' and #raw <= 21 and string.match(raw, '^%d+$') then
  stored = raw
  if #raw > 6 then
    tat_s, tat_us = tonumber(string.sub(raw, 1, -7)), tonumber(string.sub(raw, -6))
  else
    tat_s, tat_us = 0, tonumber(raw)
  end
end

-- new_tat = max(now, tat) + inc
local new_s, new_us = now_s, now_us
if tat_s > now_s or (tat_s == now_s and tat_us > now_us) then
  new_s, new_us = tat_s, tat_us
end
new_s, new_us = new_s + inc_s, new_us + inc_us
if new_us >= M then
  new_s, new_us = new_s + 1, new_us - M
end

-- ttl = new_tat - now (never negative); limited when ttl > tolerance
local ttl_s, ttl_us = new_s - now_s, new_us - now_us
if ttl_us < 0 then
  ttl_s, ttl_us = ttl_s - 1, ttl_us + M
end
local limited = ttl_s > tol_s or (ttl_s == tol_s and ttl_us > tol_us)

if not limited and (inc_s > 0 or inc_us > 0) then
  local expire_ms = ttl_s * 1000 + math.floor(ttl_us / 1000)
  if expire_ms > 0 then
    local value = string.format('%.0f%06d', new_s, new_us)
    redis.call('SET', key, value, 'PX', string.format('%.0f', expire_ms))
  elseif raw then
    redis.call('DEL', key)
  end
end

local now = string.format('%.0f%06d', now_s, now_us)
if fp ~= '' then
  redis.call('SET', KEYS[2], fp .. '\n' .. now .. '\n' .. (stored or ''), 'EX', ARGV[6])
end
return { now, stored, '' }
