-- read_within: KEYS[1] = record key
-- ARGV = the longest completed record read (idem-core's `max_record_len` of the call's longest
--        outcome)
-- Replies as `GET key` does, or {'too_long', length, fingerprint, expires_at} for a completed
-- record longer than ARGV[1], which it does not read (its head alone): `refused_by_length`.
local key, max = KEYS[1], tonumber(ARGV[1])
local refused = refused_by_length(key, max)
if refused then
  return refused
end
return redis.call('GET', key)
