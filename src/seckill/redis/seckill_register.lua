-- Puts a voucher in the registry and the listing's index before the voucher itself is written
-- (they live in another slot than the voucher: no script can write both), so neither ever
-- misses a voucher that exists; an entry whose voucher was never written is skipped by readers.
-- KEYS[1]  the registry set skr:{vouchers} (the ledger reads it)
-- KEYS[2]  the index skr:{vouchers}:begin: voucher id scored by begin (unix ms)
-- ARGV[1]  the voucher id   ARGV[2] its begin as this put writes it
-- A voucher already listed keeps its place here: the move after the put
-- (seckill_index_move.lua) places it by the begin the voucher then holds, so a put that fails
-- never moves it.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
return 1
