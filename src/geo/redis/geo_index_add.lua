-- Enters a layer in the listing's index before a write to the layer (the index lives in another
-- slot than the layer: no script can write both), so a layer that exists is never missing from
-- it. Its expiry there only moves forward: never earlier than the layer's own, which the write
-- then sets (geo_put.lua), so sweeping entries past their expiry never drops a live layer.
-- KEYS[1]  the index by name, geor:{layers} (every score 0: read by name with BYLEX)
-- KEYS[2]  the index by expiry, geor:{layers}:expiry (unix seconds)
-- ARGV[1]  the layer   ARGV[2] the expiry the write sets (unix seconds)
redis.call('ZADD', KEYS[1], 'NX', 0, ARGV[1])
redis.call('ZADD', KEYS[2], 'GT', ARGV[2], ARGV[1])
return 1
