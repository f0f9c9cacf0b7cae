-- Shared by the layer index's scripts (put before each): the sweep of entries whose layer is
-- gone for good, expired at least `outlive` seconds ago by this node's TIME (the layer's own
-- node may run a little behind), no more than `most` of them.
-- KEYS[1]  the index by name, geor:{layers}   KEYS[2] the index by expiry, geor:{layers}:expiry
local function sweep(outlive, most)
  local t = redis.call('TIME')
  local gone = redis.call('ZRANGE', KEYS[2], '-inf', '(' .. (tonumber(t[1]) - tonumber(outlive)),
    'BYSCORE', 'LIMIT', 0, tonumber(most))
  if #gone > 0 then
    redis.call('ZREM', KEYS[1], unpack(gone))
    redis.call('ZREM', KEYS[2], unpack(gone))
  end
end
