-- reserve_within: KEYS[1] = record key
-- ARGV = the claim's record, its expiry in ms, the longest record read (idem-core's
--        `max_record_len` of the call's longest outcome)
-- Replies as `SET key claim NX GET PX expiry` does (nil when it wrote the claim, else the record
-- found), or {'too_long', length, fingerprint, expires_at} for a completed record longer than
-- ARGV[3], which it neither writes over nor reads (its head alone, for the caller to judge).
-- Sent instead of the plain `SET` when the call replays outcomes of a bounded length, in the
-- same one round trip. This is Redis's copy of the size rule (idem-core's `check_record_len` is
-- the rule): the length is measured before the value is read, so that an oversized record
-- never leaves the server.
local key, claim, px, max = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local length = redis.pcall('STRLEN', key)
if type(length) == 'table' then
  -- Another type under the key: answered as the plain `SET` would be (WRONGTYPE).
  return length
end
if length > max and redis.call('GETRANGE', key, 0, 4) == MAGIC .. 'C' then
  return too_long(key, length)
end
return redis.pcall('SET', key, claim, 'NX', 'GET', 'PX', px)
