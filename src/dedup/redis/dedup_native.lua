-- Add or check items on a RedisBloom filter (the native engine) in one call: the metadata
-- both engines share, then BF.INSERT or BF.MEXISTS, then the TTLs. One round trip where a
-- script, the command and an EXPIRE were three.
-- KEYS[1]      metadata hash bf:{filter}: capacity, error_rate, engine
-- KEYS[2]      the RedisBloom filter bf:{filter}:rb
-- ARGV[1]      capacity the gateway expects stored
-- ARGV[2]      error_rate the gateway expects stored (its shortest round-trip text)
-- ARGV[3]      idle retention in seconds: both keys' TTL is reset to it
-- ARGV[4]      'add' (BF.INSERT, which creates the filter with these parameters if missing) or
--              'check' (BF.MEXISTS)
-- ARGV[5]      1 when an absent filter may be created (adding), else 0
-- ARGV[6]      the error rate of RedisBloom's first layer
-- ARGV[7..]    the items
-- Returns      {0, flag (0|1) per item}            added (add) or seen (check)
--              {1}                                 no such filter, and it may not be created
--              {2, capacity, error_rate, engine}   stored parameters or engine differ
--              {3, command}                        the server has no such command (its module
--                                                  is not loaded)
local meta, rb = KEYS[1], KEYS[2]
local stored = redis.call('HMGET', meta, 'capacity', 'error_rate', 'engine')
if not stored[1] then
  if ARGV[5] ~= '1' then return { 1 } end
  redis.call('HSET', meta, 'capacity', ARGV[1], 'error_rate', ARGV[2], 'engine', 'redisbloom')
elseif stored[1] ~= ARGV[1] or stored[2] ~= ARGV[2] or stored[3] ~= 'redisbloom' then
  return { 2, stored[1], stored[2], stored[3] }
end

local command, args
if ARGV[4] == 'add' then
  command = 'BF.INSERT'
  args = { rb, 'CAPACITY', ARGV[1], 'ERROR', ARGV[6], 'EXPANSION', '2', 'ITEMS' }
else
  command = 'BF.MEXISTS'
  args = { rb }
end
for i = 7, #ARGV do
  args[#args + 1] = ARGV[i]
end
-- pcall: a server without the module raises here, and says so in a reply the gateway names.
local flags = redis.pcall(command, unpack(args))
if type(flags) == 'table' and flags.err then
  if string.find(flags.err, 'nknown') then return { 3, command } end
  return redis.error_reply(flags.err)
end

redis.call('EXPIRE', meta, ARGV[3])
redis.call('EXPIRE', rb, ARGV[3])
local out = { 0 }
for i = 1, #flags do
  out[#out + 1] = flags[i]
end
return out
