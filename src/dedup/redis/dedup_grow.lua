-- Build a small Lua-engine layer, or one piece key of a big one (see dedup_add.lua), as zero
-- bytes. The gateway builds big layers one piece per call because one allocation of a layer of
-- tens of MiB held Redis ~30 ms; only bytes past the current end are written, so bits set
-- meanwhile are never lost.
-- KEYS[1]  the layer bitmap (bf:{filter}:<i>) or a piece of it (bf:{filter}:<i>:<n>)
-- ARGV[1]  the layer's full size in bytes
-- ARGV[2]  most bytes to add in this call
-- ARGV[3]  idle retention in seconds (the layer's TTL)
-- Returns  the layer's size in bytes after this call
local len = redis.call('STRLEN', KEYS[1])
local want = math.min(len + tonumber(ARGV[2]), tonumber(ARGV[1]))
if len < want then
  redis.call('SETRANGE', KEYS[1], want - 1, '\0')
  len = want
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return len
