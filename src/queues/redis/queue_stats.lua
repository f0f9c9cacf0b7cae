-- A queue's counts by the store's clock; lapsed claims count as ready.
-- Returns {delayed, ready, in_flight, dead}
local now = now_ms()
local ready = redis.call('ZCOUNT', KEYS[1], '-inf', now)
local lapsed = redis.call('ZCOUNT', KEYS[2], '-inf', now)
return {
  redis.call('ZCARD', KEYS[1]) - ready,
  ready + lapsed,
  redis.call('ZCARD', KEYS[2]) - lapsed,
  redis.call('ZCARD', KEYS[5]),
}
