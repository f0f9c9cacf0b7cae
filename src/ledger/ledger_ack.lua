-- Acknowledge order entries whose rows are committed, and forget their refusal counts.
-- KEYS[1]  sk:{voucher}:orders (stream)   KEYS[2] sk:{voucher}:attempts (hash)
-- ARGV[1]  consumer group   ARGV[2..] entry ids
-- Returns  the number of entries acknowledged
local ids = {}
for i = 2, #ARGV do
  ids[#ids + 1] = ARGV[i]
end
if #ids == 0 then
  return 0
end
redis.call('HDEL', KEYS[2], unpack(ids))
return redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
