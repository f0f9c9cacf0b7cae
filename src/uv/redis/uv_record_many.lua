-- Record the visits of several requests to one page on one day, as if they came one after the
-- other in the order given (the gateway groups the requests a worker takes up in one turn,
-- src/store/group.rs): one script run for the group instead of one per request.
-- KEYS[1]   the day's HyperLogLog (uv:{page}:DATE)
-- KEYS[2]   the day's page views (pv:{page}:DATE), same hash tag
-- ARGV[1]   unix time at which both day keys expire (set as uv_record.lua does: when the
--           HyperLogLog changed or either key is new)
-- ARGV[2]   n, the number of requests; ARGV[3 .. n+2] the number of visitors of each; then
--           every request's visitors, in the same order
-- Returns   { the day's page views after the last request, then per request 1 when the
--           HyperLogLog changed with its visitors else 0 }; request i's own page views are
--           the first figure less the visitors of the requests after it
local n = tonumber(ARGV[2])
local out = { 0 }
local any = 0
local first = n + 3
for i = 1, n do
  local last = first + tonumber(ARGV[i + 2]) - 1
  local changed = 0
  -- PFADD in slices: unpack() of a very large batch would overflow Lua's C stack.
  for from = first, last, 500 do
    if redis.call('PFADD', KEYS[1], unpack(ARGV, from, math.min(from + 499, last))) == 1 then
      changed = 1
    end
  end
  out[i + 1] = changed
  any = math.max(any, changed)
  first = last + 1
end
local visits = #ARGV - n - 2
local pv = redis.call('INCRBY', KEYS[2], visits)
if any == 1 or pv == visits then
  redis.call('EXPIREAT', KEYS[1], ARGV[1])
  redis.call('EXPIREAT', KEYS[2], ARGV[1])
end
-- The day, once per run, to the gateways streaming the page's counts: on uv:{page}:events
-- (sharded pub/sub, the page's slot), spelt from the day's key uv:{page}:DATE.
local page_key, day = string.match(KEYS[1], '^(.*):([^:]*)$')
redis.call('SPUBLISH', page_key .. ':events', day)
out[1] = pv
return out
