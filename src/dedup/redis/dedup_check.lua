-- Check items against a scalable Bloom filter on plain bitmaps (the Lua engine). Writes only TTLs.
-- (after dedup_common.lua, which describes the keys and ARGV[4..])
-- ARGV[1]       capacity the gateway expects stored
-- ARGV[2]       error_rate the gateway expects stored
-- ARGV[3]       idle retention in seconds: every existing key's TTL is reset to it
-- ARGV[4..]     the layout and the items (dedup_common.lua's ARGV[at..], at = 4)
-- Returns       {0, seen (0|1) per item}           seen: some layer has all the item's bits
--               {1}                                no such filter (nothing seen)
--               {2, capacity, error_rate, engine}  stored parameters differ from ARGV[1..2]
local stored = redis.call('HMGET', meta, 'capacity', 'error_rate', 'engine', 'layers')
if not stored[1] then return { 1 } end
if stored[1] ~= ARGV[1] or stored[2] ~= ARGV[2] or stored[3] ~= 'lua' then
  return { 2, stored[1], stored[2], stored[3] }
end
local layers = tonumber(stored[4])
layout(4)

local out = { 0 }
for at = first_item, #ARGV, 4 do
  local h = item(at)
  local seen = 0
  for i = layers, 1, -1 do
    if has(i, h) then
      seen = 1
      break
    end
  end
  out[#out + 1] = seen
end

expire(layers, ARGV[3])
return out
