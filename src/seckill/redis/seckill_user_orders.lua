-- A user's orders of one voucher.
-- KEYS[1]  the voucher hash sk:{voucher}   KEYS[2] sk:{voucher}:user_orders
-- ARGV[1]  user id
-- Returns  {'ok', 'id id ...'} (empty when none) or {'not_found'}
if redis.call('EXISTS', KEYS[1]) == 0 then
  return { 'not_found' }
end
return { 'ok', redis.call('HGET', KEYS[2], ARGV[1]) or '' }
