-- Check a user in for one day and read back the months a streak can span.
-- KEYS[1..n]  the user's month bitmaps (ck:{user}:YYYY-MM), all sharing the user's hash tag
-- ARGV[1]     index (1-based) into KEYS of the month being written
-- ARGV[2]     bit offset: day of month - 1
-- ARGV[3]     unix time at which that month's bitmap expires
-- Returns     { previous bit (0|1), value of KEYS[1] (or nil), ..., value of KEYS[n] (or nil) }
local target = KEYS[tonumber(ARGV[1])]
local previous = redis.call('SETBIT', target, ARGV[2], 1)
redis.call('EXPIREAT', target, ARGV[3])
local out = { previous }
for i = 1, #KEYS do
  out[i + 1] = redis.call('GET', KEYS[i])
end
return out
