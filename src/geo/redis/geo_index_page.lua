-- One read of the layer listing's index: the names after a cursor, by name (BYLEX, O(log n)
-- to the start whatever the number of layers). First it sweeps out a bounded number of entries
-- whose layer expired at least ARGV[3] seconds ago (by this node's TIME; the layer's own node
-- may run a little behind): no write has entered them since, so their layer is gone for good.
-- KEYS[1]  the index by name, geor:{layers}   KEYS[2] the index by expiry, geor:{layers}:expiry
-- ARGV[1]  the cursor ('' from the first)   ARGV[2] most names to return
-- ARGV[3]  seconds an entry outlives its expiry   ARGV[4] most entries to sweep
-- Returns  the names, in order (a layer that no longer exists among them is the caller's to skip)
sweep(ARGV[3], ARGV[4])
local from = ARGV[1] == '' and '-' or '(' .. ARGV[1]
return redis.call('ZRANGE', KEYS[1], from, '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[2]))
