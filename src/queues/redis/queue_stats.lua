-- A queue's counts by the store's clock; lapsed claims count as ready.
-- Returns {delayed, ready, in_flight, dead, ms until a delayed job falls due or a claim lapses
-- (the soonest; -1 when nothing will)}
local now = now_ms()
local ready = redis.call('ZCOUNT', KEYS[1], '-inf', now)
local lapsed = redis.call('ZCOUNT', KEYS[2], '-inf', now)
local next_in = -1
for k = 1, 2 do
  local top = redis.call('ZRANGEBYSCORE', KEYS[k], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if top[2] and (next_in < 0 or tonumber(top[2]) - now < next_in) then
    next_in = tonumber(top[2]) - now
  end
end
return {
  redis.call('ZCARD', KEYS[1]) - ready,
  ready + lapsed,
  redis.call('ZCARD', KEYS[2]) - lapsed,
  redis.call('ZCARD', KEYS[5]),
  next_in,
}
