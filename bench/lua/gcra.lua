-- Raw reference for the rate-limit row: a minimal GCRA (the arithmetic of redis-cell's
-- CL.THROTTLE) in one script, so redis-benchmark measures Redis doing the same kind of work
-- as one /v1/ratelimit/check.
-- KEYS[1]  the key's theoretical arrival time (microseconds)
-- ARGV     max_burst, count_per_period, period (s), quantity
-- Returns  { allowed 0|1, limit, remaining, retry_after_us, reset_after_us }
local burst, count, period, quantity =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = math.floor(period * 1000000 / count)
local limit = burst + 1
local tolerance = interval * limit
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval * quantity
local allow_at = new_tat - tolerance
if allow_at > now then
  return { 0, limit, 0, allow_at - now, tat - now }
end
local reset = new_tat - now
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil(reset / 1000))
return { 1, limit, math.floor((now - allow_at) / interval), -1, reset }
