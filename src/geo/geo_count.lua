-- How many places of a layer have scores in the given ranges (the geohash cells covering a
-- search area): ZCOUNT per range, O(log n) each, so the gateway can size a search before it
-- reads any place.
-- KEYS[1]  the layer's geo set
-- ARGV     score ranges as pairs: low (inclusive), high (exclusive)
-- Returns  the number of places in them
local n = 0
for i = 1, #ARGV, 2 do
  n = n + redis.call('ZCOUNT', KEYS[1], ARGV[i], '(' .. ARGV[i + 1])
end
return n
