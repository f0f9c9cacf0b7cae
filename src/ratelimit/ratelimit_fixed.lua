-- One fixed-window step (docs/api.md `algorithm: fixed_window`): INCRBY the window's counter if the
-- request fits, the counter expiring (PEXPIREAT) at its window's end.
-- KEYS[1]  the counter (rl:{key}:fw). Its expiry names its window: a counter whose expiry is
--          not this window's end is a previous window's (Redis expires keys lazily, to the ms)
--          and counts as 0
-- KEYS[2]  the idempotency record (same slot): "fingerprint\nnow\ncount"; only touched when
--          ARGV[4] is not empty
-- ARGV[1] limit   ARGV[2] period, whole seconds   ARGV[3] quantity
-- ARGV[4] the fingerprint under an idempotency key, or ''   ARGV[5] the record's TTL (s)
-- Returns  { now, count, flag }: the clock in µs and the window's count before this request,
--          as decimal strings; flag '' (made now), 'replay' or 'key_reused'.
local fp = ARGV[4]
if fp ~= '' then
  local first = redis.call('GET', KEYS[2])
  if first then
    local ffp, fnow, fcount = string.match(first, '^([^\n]*)\n([^\n]*)\n(.*)$')
    if ffp ~= fp then
      return { false, false, 'key_reused' }
    end
    return { fnow, fcount, 'replay' }
  end
end
local key = KEYS[1]
local limit, period, q = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now_s, now_us = tonumber(clock[1]), tonumber(clock[2])
-- fmod is exact on doubles; the window is aligned to whole seconds of the store's clock.
local end_ms = (now_s - math.fmod(now_s, period) + period) * 1000
local count = 0
local raw = redis.pcall('GET', key)
if raw then
  if type(raw) == 'string' and redis.call('PEXPIRETIME', key) == end_ms then
    count = tonumber(raw) or 0
  else
    redis.call('DEL', key)
  end
end
if q > 0 and count + q <= limit then
  redis.call('INCRBY', key, q)
  redis.call('PEXPIREAT', key, string.format('%.0f', end_ms))
end
local now = string.format('%.0f%06d', now_s, now_us)
if fp ~= '' then
  redis.call('SET', KEYS[2], fp .. '\n' .. now .. '\n' .. count, 'EX', ARGV[5])
end
return { now, tostring(count), '' }
