-- A page of a voucher's orders in sale order.
-- KEYS[1]  the voucher hash sk:{voucher}   KEYS[2] sk:{voucher}:orders (stream)
-- ARGV[1]  first stream id to include ('-' for the start)   ARGV[2] most entries to return
-- Returns  {'ok', {{id, {field, value, ...}}, ...}} or {'not_found'}
if redis.call('EXISTS', KEYS[1]) == 0 then
  return { 'not_found' }
end
return { 'ok', redis.call('XRANGE', KEYS[2], ARGV[1], '+', 'COUNT', ARGV[2]) }
