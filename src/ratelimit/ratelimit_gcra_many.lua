-- Several GCRA steps on one bucket in one call, in order, at one instant: exactly what the
-- same steps sent one by one through ratelimit_gcra.lua would decide had they all arrived at
-- that instant. Follows gcra_common.lua. The global limiter sends the requests a worker takes
-- up together as one batch (src/policies/http/limiter/batch.rs), so a busy client costs one
-- round trip per batch rather than one per request. No idempotency keys here: the global
-- layer uses none.
-- KEYS[1]  the bucket, as in ratelimit_gcra.lua
-- ARGV[1], ARGV[2]  delay variation tolerance: whole seconds, then the microseconds below
-- ARGV[3 + 3i], ARGV[4 + 3i], ARGV[5 + 3i]  run i: how many steps in a row take the same
--          increment (emission interval x quantity), then that increment split the same way;
--          0 0 is a peek. Runs keep a batch of equal requests to five arguments.
-- Returns  { now, tat }: the clock and the TAT the first step saw (false: none), in
--          microseconds as decimal strings. The caller replays the steps from them
--          (decide_steps in src/ratelimit/logic.rs), which decides each as this loop does.
local key = KEYS[1]
local tol_s, tol_us = tonumber(ARGV[1]), tonumber(ARGV[2])

local now_s, now_us = clock()
local raw, stored, tat_s, tat_us = read_tat(key, now_s, now_us)

-- What to leave in the key at the end: nil keeps it as it is, false deletes it.
local final = nil
for i = 3, #ARGV, 3 do
  local inc_s, inc_us = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if inc_s > 0 or inc_us > 0 then
    for _ = 1, tonumber(ARGV[i]) do
      local limited, new_s, new_us, expire_ms =
        step(now_s, now_us, tat_s, tat_us, inc_s, inc_us, tol_s, tol_us)
      if not limited then
        if expire_ms > 0 then
          tat_s, tat_us = new_s, new_us
          final = expire_ms
        else
          -- As one step would: the key goes, and the next step starts from now.
          tat_s, tat_us = now_s, now_us
          final = false
        end
      end
    end
  end
end

if final then
  redis.call('SET', key, tat_text(tat_s, tat_us), 'PX', string.format('%.0f', final))
elseif final == false and raw then
  redis.call('DEL', key)
end
return { tat_text(now_s, now_us), stored }
