-- Places a voucher in the listing's index by its begin as of one put (its 'rev', counted by
-- seckill_put.lua): a later put's begin is never overwritten by an earlier one's, whichever
-- gateway gets here first. Run after each put, and by a listing that reads a voucher whose
-- place disagrees with its begin (a put whose move was lost, or a voucher written before the
-- index existed, rev 0).
-- KEYS[1]  the index skr:{vouchers}:begin   KEYS[2] the revs placed, skr:{vouchers}:revs
-- ARGV[1]  the voucher id   ARGV[2] its begin (unix ms)   ARGV[3] its rev
-- Returns  1 when it moved the voucher, 0 when a later (or the same) rev is placed already
local placed = redis.call('HGET', KEYS[2], ARGV[1])
if placed and tonumber(placed) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
