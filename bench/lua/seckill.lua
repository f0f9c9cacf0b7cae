-- Raw reference for the seckill rows (raw, floor and webdis): one purchase doing the Redis work
-- the gateway does for a purchase without an idempotency key (src/seckill/redis/seckill_buy.lua,
-- one purchase): the voucher read, the sale window by the server's clock, the stock, the
-- per-user limit, the order appended to the voucher's stream, the user's order ids, stock and
-- sold.
-- KEYS[1]  voucher hash (stock, begin, end, limit, cap)   KEYS[2] hash user -> orders bought
-- KEYS[3]  hash user -> the user's order ids               KEYS[4] stream, one entry per order
-- ARGV[1]  user id
-- Returns  the order's stream id, or -1 (sold out, not open, no voucher), or -2 (already bought)
local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'cap')
local stock, b, e = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
if not stock or not b or not e then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < b or now >= e or stock <= 0 then return -1 end
local user = ARGV[1]
local held = tonumber(redis.call('HGET', KEYS[2], user)) or 0
if held >= (tonumber(v[4]) or 1) then return -2 end
local id = redis.call('XADD', KEYS[4], 'MAXLEN', v[5], '*', 'user', user, 'voucher', KEYS[1],
  'nth', held + 1)
redis.call('HINCRBY', KEYS[2], user, 1)
local ids = redis.call('HGET', KEYS[3], user)
redis.call('HSET', KEYS[3], user, ids and (ids .. ' ' .. id) or id)
redis.call('HINCRBY', KEYS[1], 'stock', -1)
redis.call('HINCRBY', KEYS[1], 'sold', 1)
return id
