-- One step of completing the voucher listing's index from the registry, for vouchers written
-- before the index existed (their puts entered them in the registry only): the next few
-- registry members, from where the last step stopped, that the index has never placed (no rev
-- in skr:{vouchers}:revs). The gateway reads each one's voucher and places it
-- (seckill_index_move.lua), then records where the next step starts (or 'done').
-- KEYS[1]  the registry set skr:{vouchers}   KEYS[2] the revs placed, skr:{vouchers}:revs
-- KEYS[3]  where the next step starts, skr:{vouchers}:backfill (an SSCAN cursor, or 'done')
-- ARGV[1]  the SSCAN COUNT
-- Returns  {'done'} once finished, else {next cursor ('0' at the end), id, id, ...}
local at = redis.call('GET', KEYS[3])
if at == 'done' then
  return { 'done' }
end
local step = redis.call('SSCAN', KEYS[1], at or '0', 'COUNT', ARGV[1])
local out = { step[1] }
for _, id in ipairs(step[2]) do
  if redis.call('HEXISTS', KEYS[2], id) == 0 then
    out[#out + 1] = id
  end
end
return out
