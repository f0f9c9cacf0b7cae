-- Create a dedup filter's metadata (and, for the Lua engine, its first layer) unless it exists.
-- KEYS[1]      metadata hash bf:{filter}: capacity, error_rate, engine (+ layers, items, last for lua)
-- KEYS[2..]    the filter's data keys: the Lua layers bf:{filter}:0 .. bf:{filter}:L-1 for these
--              parameters, then the RedisBloom filter bf:{filter}:rb
-- ARGV[1]      capacity
-- ARGV[2]      error_rate (the gateway's shortest round-trip text, compared as a string)
-- ARGV[3]      engine for a new filter: 'lua' or 'redisbloom'
-- ARGV[4]      idle retention in seconds: every existing key's TTL is reset to it
-- ARGV[5]      bits of the first layer (lua), 0 for redisbloom (BF.RESERVE allocates it)
--              A first layer over ARGV[7] bytes is left for the gateway to build piece by
--              piece (dedup_grow.lua); smaller ones are allocated here.
-- ARGV[7]      most bytes one call allocates
-- ARGV[6]      1 when an absent filter may be created, else 0
-- Returns      {status, capacity, error_rate, engine} as stored, status 0 created,
--              1 existed with the same parameters, 2 existed with others, 3 absent (ARGV[6] = 0)
local meta = KEYS[1]
local stored = redis.call('HMGET', meta, 'capacity', 'error_rate', 'engine')
local status
if not stored[1] then
  if ARGV[6] ~= '1' then return { 3, false, false, false } end
  if ARGV[3] == 'lua' then
    redis.call('HSET', meta, 'capacity', ARGV[1], 'error_rate', ARGV[2], 'engine', 'lua',
      'layers', 1, 'items', 0, 'last', 0)
    local bytes = math.ceil(tonumber(ARGV[5]) / 8)
    if bytes <= tonumber(ARGV[7]) then
      redis.call('SETRANGE', KEYS[2], bytes - 1, '\0')
    end
  else
    redis.call('HSET', meta, 'capacity', ARGV[1], 'error_rate', ARGV[2], 'engine', ARGV[3])
  end
  stored = { ARGV[1], ARGV[2], ARGV[3] }
  status = 0
elseif stored[1] == ARGV[1] and stored[2] == ARGV[2] then
  status = 1
else
  return { 2, stored[1], stored[2], stored[3] }
end
for i = 1, #KEYS do
  redis.call('EXPIRE', KEYS[i], ARGV[4])
end
return { status, stored[1], stored[2], stored[3] }
