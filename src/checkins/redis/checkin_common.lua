-- The steps of a check-in, shared by checkin_set.lua, checkin_set_many.lua and cohort_set.lua
-- (prepended to each, since Redis scripts cannot import).
--
-- checkin(): check a user in for one day, report the month's count and the current streak. On
-- a single Redis (every key in one slot) it also sets the day's cohort bit and registers its
-- chunk, so a check-in is one round trip; on a Cluster the caller sends cohort_set.lua beside
-- it.
-- keys, at  the user's months are keys[at + 1 .. at + n]: consecutive, newest first; for a
--           check-in the first is today's month and they reach at least the written month;
--           all share the user's hash tag
-- write     index (1-based) among those months of the one being written; 0: no write, continue
--           a streak
-- bit       bit offset: day of month - 1
-- month_at  unix time at which that month's bitmap expires
-- from      the day of the first month the streak walk starts at: today's for a check-in
--           (today unchecked: yesterday), the month's last day when continuing (0 means that)
-- budget    days the streak may still count: the retention, today included, when checking in
-- seen, chunk, registry  (single Redis only, else false) cohort(): what this run learnt of
--           the chunks, the day's cohort chunk (ckd:{chunk}:DATE) and the chunk registry
--           (ckr:{chunks})
-- cohort_bit, day_at, chunk_no, sparse_max  cohort(): bit offset within the chunk, unix time
--           at which the chunk expires, the chunk number for the registry, most users a chunk
--           keeps sparse
-- newest    the first month as year * 12 + month - 1; each next one is one less
-- Returns   { previous bit (0|1), days set in the written month, streak counted, budget }:
--           budget > 0 when the walk reached the oldest month given still checked in, so the
--           streak goes on in older months (call again with them and this budget). The streak
--           counts consecutive days ending today, or yesterday when today is not checked in
--           yet (src/checkins/logic.rs::current_streak is the reference).
local LENGTHS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

-- Days in the m-th month given, the first being `newest` (Gregorian leap years, as chrono's).
local function days_in(newest, m)
  local serial = newest - (m - 1)
  local year, month = math.floor(serial / 12), serial % 12 + 1
  if month == 2 and year % 4 == 0 and (year % 100 ~= 0 or year % 400 == 0) then
    return 29
  end
  return LENGTHS[month]
end

-- Sets a user's bit in a chunk of a day's cohort. A chunk starts sparse, as a set of offsets
-- (an intset: 4 bytes per user), and becomes a bitmap (up to 128 KiB) only once it holds more
-- than sparse_max users, so a sparse user id costs a few bytes, not 128 KiB, and a bitmap
-- costs at least 128 KiB / sparse_max per user in it. `seen` carries what one script run
-- learnt of each chunk, so the check-ins of a group that share a chunk cost one command each:
-- its form and size are read, its expiry set and its registration made once per run (again
-- after it turns into a bitmap). registry: false on a Cluster, where the caller registers.
-- Returns true when the chunk existed before this run.
local function cohort(seen, chunk, registry, bit, day_at, chunk_no, sparse_max)
  local c = seen[chunk]
  if not c then
    local kind = redis.call('TYPE', chunk).ok
    c = { existed = kind ~= 'none', bitmap = kind == 'string', users = 0, fresh = true }
    if kind ~= 'none' and kind ~= 'string' then
      c.users = redis.call('SCARD', chunk)
    end
    seen[chunk] = c
  end
  if c.bitmap then
    redis.call('SETBIT', chunk, bit, 1)
  else
    c.users = c.users + redis.call('SADD', chunk, bit)
    if c.users > sparse_max then
      local users = redis.call('SMEMBERS', chunk)
      redis.call('DEL', chunk)
      for _, u in ipairs(users) do
        redis.call('SETBIT', chunk, u, 1)
      end
      c.bitmap, c.fresh = true, true
    end
  end
  if c.fresh then
    redis.call('EXPIREAT', chunk, day_at)
    if registry then
      redis.call('SADD', registry, chunk_no)
    end
    c.fresh = false
  end
  return c.existed
end

local function checkin(keys, at, n, write, bit, month_at, from, budget, seen, chunk, registry,
                       cohort_bit, day_at, chunk_no, sparse_max, newest)
  local previous, month_count = 0, 0
  if write > 0 then
    local target = keys[at + write]
    previous = redis.call('SETBIT', target, bit, 1)
    -- A bit set before was set with this expiry (unless the retention changed since: the
    -- month's next new day sets the new one).
    if previous == 0 then
      redis.call('EXPIREAT', target, month_at)
    end
    month_count = redis.call('BITCOUNT', target)
    if chunk then
      cohort(seen, chunk, registry, cohort_bit, day_at, chunk_no, sparse_max)
    end
  end

  local m, d = 1, from
  local streak = 0
  local function step()
    if d > 1 then
      d = d - 1
    else
      m = m + 1
      d = days_in(newest, m)
    end
  end
  if d == 0 then
    d = days_in(newest, 1)
  elseif redis.call('GETBIT', keys[at + 1], d - 1) == 0 then
    step()
    budget = budget - 1
  elseif budget > 0 then
    -- Today is checked in: the walk's first day is counted without reading it again.
    streak, budget = 1, budget - 1
    step()
  end
  while budget > 0 and m <= n and redis.call('GETBIT', keys[at + m], d - 1) == 1 do
    streak = streak + 1
    budget = budget - 1
    step()
  end
  if m <= n then
    budget = 0
  end
  return { previous, month_count, streak, budget }
end
