-- Fold one source page's HyperLogLogs, fetched from its slot, into the target page day by day.
-- KEYS[1]          scratch key under the target's hash tag (uvt:{into}:0); gone when the script
--                  returns
-- KEYS[2..n+1]     the target's HyperLogLogs for the days to fold (uv:{into}:DATE)
-- ARGV[1]          scratch lifetime in milliseconds, in case the script dies half-way
-- ARGV[2..n+1]     unix time at which each of those target keys expires
-- ARGV[n+2..2n+1]  the source's HyperLogLog string for each of those days
-- Returns          n, the number of days folded
local n = #KEYS - 1
for i = 1, n do
  redis.call('SET', KEYS[1], ARGV[n + 1 + i], 'PX', ARGV[1])
  redis.call('PFMERGE', KEYS[i + 1], KEYS[1])
  redis.call('EXPIREAT', KEYS[i + 1], ARGV[1 + i])
end
redis.call('DEL', KEYS[1])
-- Once per run, to the gateways streaming the target's counts (see uv_record.lua).
if n > 0 then
  local page_key, day = string.match(KEYS[n + 1], '^(.*):([^:]*)$')
  redis.call('SPUBLISH', page_key .. ':events', day)
end
return n
