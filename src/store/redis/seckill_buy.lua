-- Buy one unit of a voucher: every check and the sale itself in one atomic step.
-- KEYS[1]  the voucher hash sk:{voucher} (stock, sold, begin, end, limit)
-- KEYS[2]  sk:{voucher}:buyers       hash user -> orders bought
-- KEYS[3]  sk:{voucher}:user_orders  hash user -> space-separated stream ids of those orders
-- KEYS[4]  sk:{voucher}:orders       stream, one entry per order (fields: user, voucher, nth:
--          the user's n-th order of this voucher, which the ledger keeps unique)
-- ARGV[1]  user id   ARGV[2] voucher id   ARGV[3] stream cap (MAXLEN; stock + sold never
--          exceeds it, so trimming never removes an order)
-- Returns  {'ok', stream id} | {'not_found'} | {'not_started'} | {'ended'} | {'sold_out'}
--          | {'already_ordered', 'id id ...'}
-- A missing voucher or missing field is an answer, never a Lua error.
local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit')
local stock, b, e = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
local limit = tonumber(v[4]) or 1
if not stock or not b or not e then
  return { 'not_found' }
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < b then
  return { 'not_started' }
end
if now >= e then
  return { 'ended' }
end
if stock <= 0 then
  return { 'sold_out' }
end
local held = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 0
if held >= limit then
  return { 'already_ordered', redis.call('HGET', KEYS[3], ARGV[1]) or '' }
end
local id = redis.call('XADD', KEYS[4], 'MAXLEN', ARGV[3], '*', 'user', ARGV[1], 'voucher', ARGV[2],
  'nth', held + 1)
redis.call('HINCRBY', KEYS[1], 'stock', -1)
redis.call('HINCRBY', KEYS[1], 'sold', 1)
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
local ids = redis.call('HGET', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ids and (ids .. ' ' .. id) or id)
return { 'ok', id }
