-- Add or move places in a layer, within the layer's bound, and keep it until its expiry.
-- KEYS[1]   the layer (geo:{layer})
-- ARGV[1]   most places the layer may hold
-- ARGV[2]   unix time at which the layer expires (every write moves it forward)
-- ARGV[3..] lon, lat, member, lon, lat, member, ...
-- Returns   the number of new members, or -1 (nothing written) when they would not fit
local layer = KEYS[1]
local fresh = 0
local seen = {}
for i = 5, #ARGV, 3 do
  local member = ARGV[i]
  if not seen[member] then
    seen[member] = true
    if not redis.call('ZSCORE', layer, member) then fresh = fresh + 1 end
  end
end
if fresh > 0 and redis.call('ZCARD', layer) + fresh > tonumber(ARGV[1]) then
  return -1
end
local args = {}
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
local added = redis.call('GEOADD', layer, unpack(args))
redis.call('EXPIREAT', layer, ARGV[2])
return added
