-- One page's figures over a range of days.
-- KEYS[1..n]      the page's HyperLogLogs, one per day (uv:{page}:DATE)
-- KEYS[n+1..2n]   the page's view counters for the same days, in the same order (pv:{page}:DATE)
-- ARGV            none
-- Returns         { distinct visitors over all n days, uv day 1, pv day 1, ..., uv day n, pv day n }
--                 (a missing key counts 0)
local n = #KEYS / 2
local out = { redis.call('PFCOUNT', unpack(KEYS, 1, n)) }
for i = 1, n do
  out[2 * i] = redis.call('PFCOUNT', KEYS[i])
  out[2 * i + 1] = tonumber(redis.call('GET', KEYS[n + i]) or '0')
end
return out
