-- reserve_within: KEYS[1] = record key
-- ARGV = the claim's record, its expiry in ms, the longest record read (idem-core's
--        `max_record_len` of the call's longest outcome)
-- Replies as `SET key claim NX GET PX expiry` does (nil when it wrote the claim, else the record
-- found), or {'too_long', length, fingerprint, expires_at} for a completed record longer than
-- ARGV[3], which it neither writes over nor reads (its head alone, for the caller to judge):
-- `refused_by_length`. Sent instead of the plain `SET` when the call replays outcomes of a
-- bounded length, in the same one round trip.
local key, claim, px, max = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local refused = refused_by_length(key, max)
if refused then
  return refused
end
return redis.pcall('SET', key, claim, 'NX', 'GET', 'PX', px)
