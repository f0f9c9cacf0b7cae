-- Collapse one page's days into a single HyperLogLog and hand it back, so it can be carried
-- to another slot (HyperLogLogs are plain strings).
-- KEYS[1]    scratch key under the page's hash tag (uvt:{page}:0); gone when the script returns
-- KEYS[2..]  the page's HyperLogLogs over the range (uv:{page}:DATE)
-- ARGV[1]    scratch lifetime in milliseconds, in case the script dies half-way
-- Returns    the merged HyperLogLog as a string, or nil when none of the days has one
if redis.call('EXISTS', unpack(KEYS, 2)) == 0 then
  return false
end
redis.call('DEL', KEYS[1])
redis.call('PFMERGE', KEYS[1], unpack(KEYS, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local hll = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1])
return hll
