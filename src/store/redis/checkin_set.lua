-- Check a user in for one day; report the month's count and the current streak. On a single
-- Redis (every key in one slot) the same call also sets the day's cohort bit and registers its
-- chunk, so a check-in is one round trip; on a Cluster the caller sends cohort_set.lua beside it.
-- KEYS[1..n]  the user's month bitmaps (ck:{user}:YYYY-MM), newest first: KEYS[1] is today's
--             month, KEYS[n] the oldest retained one; all share the user's hash tag
-- KEYS[n+1]   (single Redis only) the day's cohort chunk (ckd:{chunk}:YYYY-MM-DD)
-- KEYS[n+2]   (single Redis only) the chunk registry (ckr:{chunks})
-- ARGV[1]     n, the number of month keys
-- ARGV[2]     index (1-based) into KEYS of the month being written
-- ARGV[3]     bit offset: day of month - 1
-- ARGV[4]     unix time at which that month's bitmap expires
-- ARGV[5]     today's day of month (today is in KEYS[1]'s month)
-- ARGV[6]     retention in days: a streak never reaches further back than this, today included
-- ARGV[7]     cohort: bit offset within the chunk (ignored without KEYS[n+1])
-- ARGV[8]     cohort: unix time at which the chunk expires
-- ARGV[9]     cohort: the chunk number, for the registry
-- ARGV[10]    cohort: most users a chunk keeps sparse (cohort_set.lua explains the two forms)
-- ARGV[10+i]  number of days in KEYS[i]'s month, for i = 1..n
-- Returns     { previous bit (0|1), days set in the written month, current streak }
--             The streak counts consecutive days ending today, or yesterday when today is not
--             checked in yet (src/checkins/logic.rs::current_streak is the reference).
local n = tonumber(ARGV[1])
local target = KEYS[tonumber(ARGV[2])]
local previous = redis.call('SETBIT', target, ARGV[3], 1)
redis.call('EXPIREAT', target, ARGV[4])
local month_count = redis.call('BITCOUNT', target)

if #KEYS == n + 2 then
  local chunk = KEYS[n + 1]
  if redis.call('TYPE', chunk).ok == 'string' then
    redis.call('SETBIT', chunk, ARGV[7], 1)
  else
    redis.call('SADD', chunk, ARGV[7])
    if redis.call('SCARD', chunk) > tonumber(ARGV[10]) then
      local users = redis.call('SMEMBERS', chunk)
      redis.call('DEL', chunk)
      for _, u in ipairs(users) do
        redis.call('SETBIT', chunk, u, 1)
      end
    end
  end
  redis.call('EXPIREAT', chunk, ARGV[8])
  redis.call('SADD', KEYS[n + 2], ARGV[9])
end

local function checked(m, d)
  return redis.call('GETBIT', KEYS[m], d - 1) == 1
end
local function before(m, d)
  if d > 1 then return m, d - 1 end
  return m + 1, tonumber(ARGV[10 + m + 1])
end

local m, d = 1, tonumber(ARGV[5])
local budget = tonumber(ARGV[6])
if not checked(m, d) then
  m, d = before(m, d)
  budget = budget - 1
end
local streak = 0
while budget > 0 and m <= n and checked(m, d) do
  streak = streak + 1
  budget = budget - 1
  m, d = before(m, d)
end
return { previous, month_count, streak }
