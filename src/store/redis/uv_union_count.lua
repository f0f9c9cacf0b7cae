-- Count the union of HyperLogLogs fetched from other slots.
-- KEYS[1], KEYS[2]  scratch keys under one hash tag (uvt:{page}:0 and :1); gone when the
--                   script returns
-- ARGV[1]           scratch lifetime in milliseconds, in case the script dies half-way
-- ARGV[2..]         HyperLogLog strings (at least one)
-- Returns           the estimated number of distinct elements in their union
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
for i = 3, #ARGV do
  redis.call('SET', KEYS[2], ARGV[i], 'PX', ARGV[1])
  redis.call('PFMERGE', KEYS[1], KEYS[2])
end
local n = redis.call('PFCOUNT', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
return n
