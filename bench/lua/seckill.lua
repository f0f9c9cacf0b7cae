-- Raw reference for the seckill rows: the smallest atomic purchase (stock check, one order
-- per user, decrement) without the window check and order record the gateway also does.
-- KEYS[1]  voucher hash (field `stock`), KEYS[2] set of buyers
-- ARGV[1]  user id
-- Returns  remaining stock, or -1 sold out, or -2 already bought
local stock = tonumber(redis.call('HGET', KEYS[1], 'stock'))
if not stock or stock <= 0 then return -1 end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return -2 end
return redis.call('HINCRBY', KEYS[1], 'stock', -1)
