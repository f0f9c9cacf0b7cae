-- Record visits to a page on one day; under an idempotency key, the lookup of the key's first
-- outcome and the record of this one happen in the same step.
-- KEYS[1]   the day's HyperLogLog (uv:{page}:DATE)
-- KEYS[2]   the day's page views (pv:{page}:DATE), same hash tag
-- KEYS[3]   only under an idempotency key: its record (uv:{page}:idem:<sha256 of the key>),
--           same hash tag, "fingerprint\nchanged\npv\nday"
-- ARGV[1]   unix time at which both day keys expire: set whenever the HyperLogLog changes or
--           either key is new, not on every visit (the time is fixed by the day; two EXPIREATs
--           were a third of the script's cost in Redis)
-- With KEYS[3]: ARGV[2] the request's fingerprint, ARGV[3] the record's TTL (s), ARGV[4] the
--           day (YYYY-MM-DD), ARGV[5..] the visitors. Without: ARGV[2..] the visitors. A visit
--           without a key carries only what it uses: the arguments are most of a call's cost.
-- Returns   { 1 when the HyperLogLog changed else 0, the day's page views after this call }
--           and, under a key, { …, the day, flag }: flag '' when recorded now, 'replay' for the
--           key's first outcome (nothing written), 'key_reused' (nothing written) when the key
--           came with another request
local idem = #KEYS == 3
local first_visitor = 2
if idem then
  first_visitor = 5
  local first = redis.call('GET', KEYS[3])
  if first then
    local ffp, changed, pv, day = string.match(first, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')
    if ffp ~= ARGV[2] then
      return { 0, 0, '', 'key_reused' }
    end
    return { tonumber(changed), tonumber(pv), day, 'replay' }
  end
end
local changed = 0
-- PFADD in slices: unpack() of a very large batch would overflow Lua's C stack.
for first = first_visitor, #ARGV, 500 do
  local last = math.min(first + 499, #ARGV)
  if redis.call('PFADD', KEYS[1], unpack(ARGV, first, last)) == 1 then
    changed = 1
  end
end
local visits = #ARGV - first_visitor + 1
local pv = redis.call('INCRBY', KEYS[2], visits)
-- A new HyperLogLog always counts as changed; a new page-view counter holds exactly this
-- call's views. Either way both keys get the day's expiry, so neither outlives it even when
-- one was evicted and recreated without the other.
if changed == 1 or pv == visits then
  redis.call('EXPIREAT', KEYS[1], ARGV[1])
  redis.call('EXPIREAT', KEYS[2], ARGV[1])
end
-- The day, once per run, to the gateways streaming the page's counts: on uv:{page}:events
-- (sharded pub/sub, the page's slot), spelt from the day's key uv:{page}:DATE.
local page_key, day = string.match(KEYS[1], '^(.*):([^:]*)$')
redis.call('SPUBLISH', page_key .. ':events', day)
if not idem then
  return { changed, pv }
end
redis.call('SET', KEYS[3], ARGV[2] .. '\n' .. changed .. '\n' .. pv .. '\n' .. ARGV[4], 'EX', ARGV[3])
return { changed, pv, ARGV[4], '' }
