-- One sliding-log step (docs/api.md `algorithm: sliding_window`): drop the units older than the
-- period, count the rest, admit the request's units if they fit; all atomic.
-- KEYS[1]  the log (rl:{key}:sw): a sorted set, one member per admitted unit scored by its time
--          in µs since the epoch (exact in a Lua double until the year 2255), expiring when its
--          newest unit leaves the window
-- KEYS[2]  the idempotency record (same slot): "fingerprint\nnow\ncount\nkth\nnewest"; only
--          touched when ARGV[4] is not empty
-- ARGV[1] limit (count_per_period, at most 10,000)   ARGV[2] period, µs   ARGV[3] quantity
-- ARGV[4] the fingerprint under an idempotency key, or ''   ARGV[5] the record's TTL (s)
-- Returns  { now, count, kth, newest, flag }: the clock, the units in the window before this
--          request, the time of the unit whose expiry lets a refused request fit (false unless
--          refused and quantity <= limit), the newest unit's time before this request (false
--          when none), as decimal strings; flag '' (made now), 'replay' or 'key_reused'.
local fp = ARGV[4]
if fp ~= '' then
  local first = redis.call('GET', KEYS[2])
  if first then
    local ffp, fnow, fcount, fkth, fnewest =
      string.match(first, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')
    if ffp ~= fp then
      return { false, false, false, false, 'key_reused' }
    end
    return { fnow, fcount, fkth ~= '' and fkth or false, fnewest ~= '' and fnewest or false, 'replay' }
  end
end
local key = KEYS[1]
local limit, period, q = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local function dec(v)
  return string.format('%.0f', v)
end

if redis.call('TYPE', key).ok ~= 'zset' then
  redis.call('DEL', key)
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', dec(now - period))
local count = redis.call('ZCARD', key)
local newest = false
local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
if last[2] then
  newest = dec(tonumber(last[2]))
end
local kth = false
local fits = count + q <= limit
if not fits and q <= limit then
  local k = count + q - limit
  local at = redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')
  kth = dec(tonumber(at[2]))
end
local snow = dec(now)
if fits and q > 0 then
  -- Members are unique: a later script in the same microsecond sees a larger count. The clock's
  -- text is made once: formatting it twice per unit was a fifth of a 1,000-unit check.
  local args = {}
  for i = 1, q do
    args[#args + 1] = snow
    args[#args + 1] = snow .. ':' .. (count + i)
    if #args >= 2000 or i == q then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  redis.call('PEXPIRE', key, dec(math.ceil(period / 1000)))
end

if fp ~= '' then
  redis.call('SET', KEYS[2],
    fp .. '\n' .. snow .. '\n' .. count .. '\n' .. (kth or '') .. '\n' .. (newest or ''), 'EX', ARGV[5])
end
return { snow, tostring(count), kth, newest, '' }
