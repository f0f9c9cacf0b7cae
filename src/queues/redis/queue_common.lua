-- Shared head of every queue script (prepended by queues.rs). Every script gets the queue's
-- keys in this order, all under the queue's hash tag:
-- KEYS[1] q:{queue}:due     zset id -> due ms (waiting jobs, delayed or ready)
-- KEYS[2] q:{queue}:flight  zset id -> visibility deadline ms (claimed jobs)
-- KEYS[3] q:{queue}:meta    hash id -> '<run_at> <attempts> <max_attempts> <receipt or ->'
-- KEYS[4] q:{queue}:pay     hash id -> payload JSON
-- KEYS[5] q:{queue}:dead    zset id -> death sequence (capped)
-- KEYS[6] q:{queue}:ctr     hash: 'dead' and 'receipt' sequences

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Keeps the queue's keys until idle_ms past the later of now and the latest due time or
-- deadline they hold, so an abandoned queue expires and a delayed job never does early. Every
-- script that writes the keys ends with it (callers pass the idle expiry plus its slack, see
-- IDLE_SLACK_SECS in src/queues/mod.rs); queue_enqueue.lua only when the expiry it finds is
-- not far enough already (what holds, and why that keeps it: there).
local function touch(now, idle_ms)
  local last = now
  for k = 1, 2 do
    local top = redis.call('ZRANGE', KEYS[k], -1, -1, 'WITHSCORES')
    if top[2] and tonumber(top[2]) > last then
      last = tonumber(top[2])
    end
  end
  local ttl = string.format('%d', last - now + idle_ms)
  for k = 1, 6 do
    redis.call('PEXPIRE', KEYS[k], ttl)
  end
end

local function int(n)
  return string.format('%d', n)
end
