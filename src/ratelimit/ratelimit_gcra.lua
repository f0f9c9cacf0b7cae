-- One GCRA step (docs/ratelimit.md): read the clock and the bucket's TAT, write the new TAT if the
-- request fits. Follows gcra_common.lua (its arithmetic, and why durations are pairs).
-- KEYS[1]  the bucket (rl:{key} or rlg:{client}): its TAT in whole microseconds since the epoch,
--          as a decimal string, expiring (PX) when the bucket is full again
-- ARGV[1], ARGV[2]  increment (emission interval x quantity): whole seconds, then the
--          microseconds below them; 0 0 is a peek, which never writes
-- ARGV[3], ARGV[4]  delay variation tolerance (emission interval x limit), split the same way
-- KEYS[2]  the idempotency record (<bucket>:idem:<sha256 of the key>, same slot): the string
--          "fingerprint\nnow\ntat" of the first check under that key; only read or written when
--          ARGV[5] is not empty
-- ARGV[5]  the check's fingerprint under an idempotency key, or ''   ARGV[6] the record's TTL (s)
-- Returns  { now, tat, flag }: the clock (TIME, read once) and the stored TAT, in microseconds
--          as decimal strings (tat false when the key is missing or does not hold a TAT);
--          flag '' for a check made now, 'replay' for the first check's { now, tat } under the
--          same key (nothing written), 'key_reused' when that key came with another check.
local key = KEYS[1]
local fp = ARGV[5]
if fp ~= '' then
  local first = redis.call('GET', KEYS[2])
  if first then
    local ffp, fnow, ftat = string.match(first, '^([^\n]*)\n([^\n]*)\n(.*)$')
    if ffp ~= fp then
      return { false, false, 'key_reused' }
    end
    return { fnow, ftat ~= '' and ftat or false, 'replay' }
  end
end
local inc_s, inc_us = tonumber(ARGV[1]), tonumber(ARGV[2])
local tol_s, tol_us = tonumber(ARGV[3]), tonumber(ARGV[4])

local now_s, now_us = clock()
local raw, stored, tat_s, tat_us = read_tat(key, now_s, now_us)
local limited, new_s, new_us, expire_ms =
  step(now_s, now_us, tat_s, tat_us, inc_s, inc_us, tol_s, tol_us)
if not limited and (inc_s > 0 or inc_us > 0) then
  if expire_ms > 0 then
    redis.call('SET', key, tat_text(new_s, new_us), 'PX', string.format('%.0f', expire_ms))
  elseif raw then
    redis.call('DEL', key)
  end
end

local now = tat_text(now_s, now_us)
if fp ~= '' then
  redis.call('SET', KEYS[2], fp .. '\n' .. now .. '\n' .. (stored or ''), 'EX', ARGV[6])
end
return { now, stored, '' }
