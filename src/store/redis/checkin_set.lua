-- Check a user in for one day; report the month's count and the current streak.
-- KEYS[1..n]  the user's month bitmaps (ck:{user}:YYYY-MM), newest first: KEYS[1] is today's
--             month, KEYS[n] the oldest retained one; all share the user's hash tag
-- ARGV[1]     index (1-based) into KEYS of the month being written
-- ARGV[2]     bit offset: day of month - 1
-- ARGV[3]     unix time at which that month's bitmap expires
-- ARGV[4]     today's day of month (today is in KEYS[1]'s month)
-- ARGV[5]     retention in days: a streak never reaches further back than this, today included
-- ARGV[5+i]   number of days in KEYS[i]'s month
-- Returns     { previous bit (0|1), days set in the written month, current streak }
--             The streak counts consecutive days ending today, or yesterday when today is not
--             checked in yet (src/checkins/logic.rs::current_streak is the reference).
local target = KEYS[tonumber(ARGV[1])]
local previous = redis.call('SETBIT', target, ARGV[2], 1)
redis.call('EXPIREAT', target, ARGV[3])
local month_count = redis.call('BITCOUNT', target)

local function checked(m, d)
  return redis.call('GETBIT', KEYS[m], d - 1) == 1
end
local function before(m, d)
  if d > 1 then return m, d - 1 end
  return m + 1, tonumber(ARGV[5 + m + 1])
end

local m, d = 1, tonumber(ARGV[4])
local budget = tonumber(ARGV[5])
if not checked(m, d) then
  m, d = before(m, d)
  budget = budget - 1
end
local streak = 0
while budget > 0 and m <= #KEYS and checked(m, d) do
  streak = streak + 1
  budget = budget - 1
  m, d = before(m, d)
end
return { previous, month_count, streak }
