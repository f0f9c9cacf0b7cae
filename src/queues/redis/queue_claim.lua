-- Claim due jobs for N claims of one queue, in order, each as if it came alone: lapsed claims
-- go back to the waiting set first (attempts kept), then each claim takes up to its `max` due
-- jobs, oldest first (so no job goes to two claims), a job that used up its attempts going to
-- the dead list instead of out. The claims a gateway worker takes up in one turn come in one
-- call (src/queues/redis/group.rs). The run's work is bounded as one claim's is: at most ARGV[1]
-- lapsed claims moved back, ARGV[2] jobs sent to the dead list and ARGV[3] bytes of payloads
-- in all; a claim whose turn comes once the dead or byte bound is spent is answered 'later'
-- and goes in the next call (so the first claim of a call always has the whole of both).
-- ARGV[1] most lapsed claims moved back  ARGV[2] most jobs sent to the dead list
-- ARGV[3] payload bytes after which to stop  ARGV[4] dead list cap  ARGV[5] idle expiry ms
-- ARGV[4+2i], ARGV[5+2i]  claim i's max jobs and visibility ms
-- Returns {next, claim 1's, claim 2's, ...}: next is ms until the earliest due time or deadline
-- left (-1 when none); a claim's is {{id, payload, run_at, attempts, receipt}, ...} or 'later'
local now = now_ms()
local n = (#ARGV - 5) / 2
local changed = false

local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, ARGV[1])
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

local dead_max, byte_max, dead_cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local bytes, dead = 0, 0
-- Once the waiting set has nothing due, the later claims of the run find nothing either.
local drained = false
local replies = { 0 }
for c = 1, n do
  local max, vis = tonumber(ARGV[4 + 2 * c]), tonumber(ARGV[5 + 2 * c])
  local out = {}
  if dead >= dead_max or bytes >= byte_max then
    out = 'later'
  else
    while not drained and #out < max and dead < dead_max and bytes < byte_max do
      local first = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
      if #first == 0 then
        drained = true
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
  end
  replies[c + 1] = out
end

local next_at
for k = 1, 2 do
  local top = redis.call('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
  if top[2] and (not next_at or tonumber(top[2]) < next_at) then
    next_at = tonumber(top[2])
  end
end
if changed then
  touch(now, tonumber(ARGV[5]))
  -- The gateways streaming the queue's ready jobs, once per run (see queue_enqueue.lua).
  redis.call('SPUBLISH', string.match(KEYS[1], '^(.*):[^:]*$') .. ':events', '')
end
if next_at then
  replies[1] = math.max(0, next_at - now)
else
  replies[1] = -1
end
return replies
