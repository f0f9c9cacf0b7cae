-- One check-in on a Cluster, without the cohort (cohort_set.lua goes beside it, in the chunk's
-- slot), or the rest of a streak on either kind of Redis (follows checkin_common.lua, which
-- says what each step does; a single Redis checks in with checkin_set_many.lua).
-- KEYS[1..n]  the user's months
-- ARGV[1]     n, the number of month keys
-- ARGV[2]     write; 0: continue a streak, no write
-- ARGV[3], ARGV[4]  bit, month_at
-- ARGV[5]     from
-- ARGV[6]     budget
-- ARGV[7]     newest
-- Returns     checkin()'s { previous, month count, streak, budget }
return checkin(KEYS, 0, tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4],
  tonumber(ARGV[5]), tonumber(ARGV[6]), false, false, false, 0, 0, 0, 0, tonumber(ARGV[7]))
