-- Add or move places in a layer, within the layer's bound, and keep it until its expiry.
-- KEYS[1]   the layer (geo:{layer})
-- ARGV[1]   most places the layer may hold
-- ARGV[2]   unix time at which the layer expires (every write moves it forward)
-- ARGV[3..] lon, lat, member, lon, lat, member, ...
-- Returns   the number of new members, or -1 (nothing written) when they would not fit
local layer = KEYS[1]
local fresh = 0
local seen = {}
local members = {}
for i = 5, #ARGV, 3 do
  local member = ARGV[i]
  if not seen[member] then
    seen[member] = true
    members[#members + 1] = member
  end
end
-- One ZMSCORE for the batch: a ZSCORE per member made a 1,000-place batch ~1,000 calls.
local scores = redis.call('ZMSCORE', layer, unpack(members))
for i = 1, #members do
  if not scores[i] then fresh = fresh + 1 end
end
if fresh > 0 and redis.call('ZCARD', layer) + fresh > tonumber(ARGV[1]) then
  return -1
end
local args = {}
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
local added = redis.call('GEOADD', layer, unpack(args))
redis.call('EXPIREAT', layer, ARGV[2])
return added
