-- One request's GCRA steps on several buckets (the global limiter's and the limit policies'
-- that apply to it), all or nothing, at one instant. Follows gcra_common.lua. Each bucket is
-- decided as ratelimit_gcra.lua would; the buckets are written only when no enforced step is
-- refused (a refused shadow step leaves its own bucket alone and refuses nothing), so a request
-- refused by one limit spends nothing of the others (docs/policies.md "Stacking").
-- KEYS[i]  a bucket, as in ratelimit_gcra.lua
-- ARGV[1]  "1": decide only, write nothing (a Cluster request already refused in another
--          slot, docs/policies.md "On a Cluster")
-- ARGV[2 + 5(i-1)] .. ARGV[6 + 5(i-1)]  bucket i: tolerance seconds and µs, increment
--          seconds and µs, "1" when its refusal refuses the request
-- Returns  { now, tat_1, ..., tat_n }: the clock and each TAT the step saw (false: none), µs as
--          decimal strings; the caller derives every decision from them (decide_all in
--          src/gcra.rs), which decides as this loop does.
local dry = ARGV[1] == '1'
local now_s, now_us = clock()
local reply = { tat_text(now_s, now_us) }
local writes = {}
local refused = false
for i, key in ipairs(KEYS) do
  local a = 2 + 5 * (i - 1)
  local tol_s, tol_us = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local inc_s, inc_us = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local raw, stored, tat_s, tat_us = read_tat(key, now_s, now_us)
  reply[i + 1] = stored
  local limited, new_s, new_us, expire_ms =
    step(now_s, now_us, tat_s, tat_us, inc_s, inc_us, tol_s, tol_us)
  if limited then
    if ARGV[a + 4] == '1' then
      refused = true
    end
  elseif inc_s > 0 or inc_us > 0 then
    writes[#writes + 1] = { key, raw, new_s, new_us, expire_ms }
  end
end

if not refused and not dry then
  for _, w in ipairs(writes) do
    if w[5] > 0 then
      redis.call('SET', w[1], tat_text(w[3], w[4]), 'PX', string.format('%.0f', w[5]))
    elseif w[2] then
      redis.call('DEL', w[1])
    end
  end
end
return reply
