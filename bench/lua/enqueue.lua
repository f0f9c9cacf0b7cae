-- Raw reference for the enqueue row: the least an enqueue does — keep the payload and put the
-- job's id in the sorted set scored by its due time (the store's clock).
-- KEYS[1]  the due-time zset   KEYS[2]  the payload hash
-- ARGV[1]  job id   ARGV[2]  payload
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
return now
