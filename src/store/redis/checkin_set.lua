-- Check a user in for one day; report the month's count and the current streak. On a single
-- Redis (every key in one slot) the same call also sets the day's cohort bit and registers its
-- chunk, so a check-in is one round trip; on a Cluster the caller sends cohort_set.lua beside it.
-- Called again with ARGV[2] = 0 (no write, no cohort), it continues a streak into older months.
-- KEYS[1..n]  months of the user's bitmaps (ck:{user}:YYYY-MM), consecutive, newest first: for
--             a check-in KEYS[1] is today's month and the list reaches at least the written
--             month; all share the user's hash tag
-- KEYS[n+1]   (single Redis only) the day's cohort chunk (ckd:{chunk}:YYYY-MM-DD)
-- KEYS[n+2]   (single Redis only) the chunk registry (ckr:{chunks})
-- ARGV[1]     n, the number of month keys
-- ARGV[2]     index (1-based) into KEYS of the month being written; 0: continue a streak
-- ARGV[3]     bit offset: day of month - 1
-- ARGV[4]     unix time at which that month's bitmap expires
-- ARGV[5]     the day of KEYS[1]'s month the streak walk starts at: today's for a check-in
--             (today unchecked: yesterday), the month's last day when continuing (0 means that)
-- ARGV[6]     days the streak may still count: the retention, today included, when checking in
-- ARGV[7]     cohort: bit offset within the chunk (ignored without KEYS[n+1])
-- ARGV[8]     cohort: unix time at which the chunk expires
-- ARGV[9]     cohort: the chunk number, for the registry
-- ARGV[10]    cohort: most users a chunk keeps sparse (cohort_set.lua explains the two forms)
-- ARGV[11]    KEYS[1]'s month as year * 12 + month - 1; KEYS[i]'s is that minus i - 1
-- Returns     { previous bit (0|1), days set in the written month, streak counted, budget }:
--             budget > 0 when the walk reached the oldest month given still checked in, so
--             the streak goes on in older months (call again with them and this budget).
--             The streak counts consecutive days ending today, or yesterday when today is not
--             checked in yet (src/checkins/logic.rs::current_streak is the reference).
local n = tonumber(ARGV[1])
local write = tonumber(ARGV[2])
local previous, month_count = 0, 0
if write > 0 then
  local target = KEYS[write]
  previous = redis.call('SETBIT', target, ARGV[3], 1)
  redis.call('EXPIREAT', target, ARGV[4])
  month_count = redis.call('BITCOUNT', target)
end

if write > 0 and #KEYS == n + 2 then
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

local newest = tonumber(ARGV[11])
local LENGTHS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }
-- Days in KEYS[m]'s month (Gregorian leap years, as chrono's).
local function days_in(m)
  local serial = newest - (m - 1)
  local year, month = math.floor(serial / 12), serial % 12 + 1
  if month == 2 and year % 4 == 0 and (year % 100 ~= 0 or year % 400 == 0) then
    return 29
  end
  return LENGTHS[month]
end
local function checked(m, d)
  return redis.call('GETBIT', KEYS[m], d - 1) == 1
end
local function before(m, d)
  if d > 1 then return m, d - 1 end
  return m + 1, days_in(m + 1)
end

local m, d = 1, tonumber(ARGV[5])
local budget = tonumber(ARGV[6])
if d == 0 then
  d = days_in(1)
elseif not checked(m, d) then
  m, d = before(m, d)
  budget = budget - 1
end
local streak = 0
while budget > 0 and m <= n and checked(m, d) do
  streak = streak + 1
  budget = budget - 1
  m, d = before(m, d)
end
if m <= n then
  budget = 0
end
return { previous, month_count, streak, budget }
