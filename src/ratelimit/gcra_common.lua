-- Shared head of the GCRA scripts, ratelimit_gcra.lua (one step) and ratelimit_gcra_many.lua
-- (a batch), prepended by ratelimit.rs: reading the clock and a bucket, and one step's test.
-- The caller derives every reply from the clock and the TAT with the same arithmetic
-- (src/ratelimit/logic.rs); only the comparison that decides the write is repeated here.
--
-- Lua numbers are doubles, exact only up to 2^53, and at the API's caps a TAT reaches 3e19 µs.
-- So every duration here is a pair (seconds, microseconds below them), each part exact.
local M = 1000000

-- The store's clock as (seconds, µs).
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]), tonumber(t[2])
end

-- A bucket's key (its TAT in whole microseconds since the epoch, as a decimal string) →
-- what GET found (for a later DEL), the TAT as stored (false: none), and the TAT as a pair
-- (now when there is none). pcall: a key of another type counts as missing, like garbage or a
-- number too big to be a TAT (over 21 digits its seconds would not be exact), and is
-- overwritten.
local function read_tat(key, now_s, now_us)
  local raw = redis.pcall('GET', key)
  if type(raw) == 'string' and #raw <= 21 and string.match(raw, '^%d+$') then
    if #raw > 6 then
      return raw, raw, tonumber(string.sub(raw, 1, -7)), tonumber(string.sub(raw, -6))
    end
    return raw, raw, 0, tonumber(raw)
  end
  return raw, false, now_s, now_us
end

-- One step of increment inc against tat at now, with tolerance tol →
-- limited (ttl = max(now, tat) + inc - now > tol), the new TAT, and the ms its key should
-- live (at most 0: the bucket is as good as full, no key).
local function step(now_s, now_us, tat_s, tat_us, inc_s, inc_us, tol_s, tol_us)
  local new_s, new_us = now_s, now_us
  if tat_s > now_s or (tat_s == now_s and tat_us > now_us) then
    new_s, new_us = tat_s, tat_us
  end
  new_s, new_us = new_s + inc_s, new_us + inc_us
  if new_us >= M then
    new_s, new_us = new_s + 1, new_us - M
  end
  local ttl_s, ttl_us = new_s - now_s, new_us - now_us
  if ttl_us < 0 then
    ttl_s, ttl_us = ttl_s - 1, ttl_us + M
  end
  local limited = ttl_s > tol_s or (ttl_s == tol_s and ttl_us > tol_us)
  return limited, new_s, new_us, ttl_s * 1000 + math.floor(ttl_us / 1000)
end

local function tat_text(s, us)
  return string.format('%.0f%06d', s, us)
end

