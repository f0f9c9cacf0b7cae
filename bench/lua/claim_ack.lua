-- Raw reference for the claim+ack row: one claim (the oldest due job moves to the in-flight
-- set, scored by its visibility deadline) and one ack (it leaves that set), then the job goes
-- back so the queue never runs dry. One call does both halves; the gateway needs two requests.
-- KEYS[1]  the due-time zset   KEYS[2]  the in-flight zset
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local first = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
if #first == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], first[1])
redis.call('ZADD', KEYS[2], now + 60000, first[1])
redis.call('ZREM', KEYS[2], first[1])
redis.call('ZADD', KEYS[1], now, first[1])
return 1
