-- Enters a layer in the listing's index before a write to the layer (the index lives in another
-- slot than the layer: no script can write both), so a layer that exists is never missing from
-- it. Its expiry there only moves forward: never earlier than the layer's own, which the write
-- then sets (geo_put.lua), so sweeping entries past their expiry never drops a live layer.
-- Each write also sweeps out a couple of entries whose layer is gone for good (as a listing
-- does, geo_index_page.lua), so the index stays bounded by the layers there are even when
-- nobody lists, and both keys expire with the last layer entered (plus the slack).
-- KEYS[1]  the index by name, geor:{layers} (every score 0: read by name with BYLEX)
-- KEYS[2]  the index by expiry, geor:{layers}:expiry (unix seconds)
-- ARGV[1]  the layer   ARGV[2] the expiry the write sets (unix seconds)
-- ARGV[3]  seconds an entry outlives its expiry   ARGV[4] most entries to sweep
redis.call('ZADD', KEYS[1], 'NX', 0, ARGV[1])
redis.call('ZADD', KEYS[2], 'GT', ARGV[2], ARGV[1])
sweep(ARGV[3], ARGV[4])
-- (None left when this very entry was past its expiry and swept: the empty keys are gone.)
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if last[2] then
  local until_s = tonumber(last[2]) + tonumber(ARGV[3])
  redis.call('EXPIREAT', KEYS[1], until_s)
  redis.call('EXPIREAT', KEYS[2], until_s)
end
return 1
