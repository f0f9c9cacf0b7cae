-- Record visits to a page on one day.
-- KEYS[1]   the day's HyperLogLog (uv:{page}:DATE)
-- KEYS[2]   the day's page views (pv:{page}:DATE), same hash tag
-- ARGV[1]   unix time at which both keys expire
-- ARGV[2..] the visitors (at least one)
-- Returns   { 1 when the HyperLogLog changed else 0, the day's page views after this call }
local changed = 0
-- PFADD in slices: unpack() of a very large batch would overflow Lua's C stack.
for first = 2, #ARGV, 500 do
  local last = math.min(first + 499, #ARGV)
  if redis.call('PFADD', KEYS[1], unpack(ARGV, first, last)) == 1 then
    changed = 1
  end
end
local pv = redis.call('INCRBY', KEYS[2], #ARGV - 1)
redis.call('EXPIREAT', KEYS[1], ARGV[1])
redis.call('EXPIREAT', KEYS[2], ARGV[1])
return { changed, pv }
