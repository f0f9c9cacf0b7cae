-- Several check-ins on a single Redis in one run, one after the other in the order given, as
-- if each came alone (follows checkin_common.lua). The gateway groups the check-ins a worker
-- takes up in one turn (src/store/group.rs): one round trip and one script run for the group
-- instead of one per request, and a cohort chunk's form, expiry and registration dealt with
-- once per run. A check-in that fails answers its own error and the others go on.
-- KEYS[1]     the chunk registry
-- then per check-in: its n months, then its day's cohort chunk
-- ARGV[1]     the number of check-ins
-- ARGV[2], ARGV[3], ARGV[4], ARGV[5]  from, budget, sparse_max, newest: the same for all
-- then 7 per check-in: n, write, bit, month_at, cohort_bit, day_at, chunk_no
-- Returns     per check-in checkin()'s { previous, month count, streak, budget }, or
--             { error text }
local count = tonumber(ARGV[1])
local from, budget = tonumber(ARGV[2]), tonumber(ARGV[3])
local sparse_max, newest = tonumber(ARGV[4]), tonumber(ARGV[5])
local seen = {}
local out = {}
local at, a = 1, 5
for i = 1, count do
  local n = tonumber(ARGV[a + 1])
  local ok, reply = pcall(checkin, KEYS, at, n, tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4],
    from, budget, seen, KEYS[at + n + 1], KEYS[1], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7],
    sparse_max, newest)
  if ok then
    out[i] = reply
  else
    out[i] = { type(reply) == 'table' and reply.err or tostring(reply) }
  end
  at, a = at + n + 1, a + 7
end
return out
