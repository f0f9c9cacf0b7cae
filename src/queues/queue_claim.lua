-- Claim due jobs, oldest first, as one step: lapsed claims go back to the waiting set first
-- (attempts kept), a job that used up its attempts goes to the dead list instead of out.
-- ARGV[1] max jobs  ARGV[2] visibility ms  ARGV[3] most lapsed claims moved back
-- ARGV[4] most jobs sent to the dead list  ARGV[5] payload bytes after which to stop
-- ARGV[6] dead list cap  ARGV[7] idle expiry ms
-- Returns {next, {{id, payload, run_at, attempts, receipt}, ...}}: next is ms until the
-- earliest due time or deadline left (-1 when none)
local now = now_ms()
local changed = false

local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, ARGV[3])
for i = 1, #lapsed, 2 do
  local id = lapsed[i]
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZADD', KEYS[1], lapsed[i + 1], id)
  local meta = redis.call('HGET', KEYS[3], id)
  if meta then
    redis.call('HSET', KEYS[3], id, string.match(meta, '^(%S+ %S+ %S+)') .. ' -')
  end
  changed = true
end

local max, vis = tonumber(ARGV[1]), tonumber(ARGV[2])
local dead_max, byte_max, dead_cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local out, bytes, dead = {}, 0, 0
while #out < max and dead < dead_max and bytes < byte_max do
  local first = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
  if #first == 0 then
    break
  end
  local id = first[1]
  redis.call('ZREM', KEYS[1], id)
  changed = true
  local meta = redis.call('HGET', KEYS[3], id)
  if meta then
    local run_at, attempts, max_attempts = string.match(meta, '^(%S+) (%S+) (%S+)')
    attempts = tonumber(attempts)
    if attempts >= tonumber(max_attempts) then
      local seq = redis.call('HINCRBY', KEYS[6], 'dead', 1)
      redis.call('ZADD', KEYS[5], seq, id)
      redis.call('HSET', KEYS[3], id, run_at .. ' ' .. int(attempts) .. ' ' .. max_attempts .. ' -')
      if redis.call('ZCARD', KEYS[5]) > dead_cap then
        local oldest = redis.call('ZPOPMIN', KEYS[5])
        redis.call('HDEL', KEYS[3], oldest[1])
        redis.call('HDEL', KEYS[4], oldest[1])
      end
      dead = dead + 1
    else
      attempts = attempts + 1
      local receipt = int(attempts) .. '.' .. int(redis.call('HINCRBY', KEYS[6], 'receipt', 1))
      redis.call('HSET', KEYS[3], id, run_at .. ' ' .. int(attempts) .. ' ' .. max_attempts .. ' ' .. receipt)
      redis.call('ZADD', KEYS[2], int(now + vis), id)
      local payload = redis.call('HGET', KEYS[4], id) or 'null'
      bytes = bytes + #payload
      out[#out + 1] = { id, payload, run_at, attempts, receipt }
    end
  end
end

local next_at
for k = 1, 2 do
  local top = redis.call('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
  if top[2] and (not next_at or tonumber(top[2]) < next_at) then
    next_at = tonumber(top[2])
  end
end
if changed then
  touch(now, tonumber(ARGV[7]))
end
local next_in = -1
if next_at then
  next_in = math.max(0, next_at - now)
end
return { next_in, out }
