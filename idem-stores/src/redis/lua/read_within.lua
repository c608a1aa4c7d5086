-- read_within: KEYS[1] = record key
-- ARGV = the longest completed record read (idem-core's `max_record_len` of the call's longest
--        outcome)
-- Replies as `GET key` does, or {'too_long', length, fingerprint, expires_at} for a completed
-- record longer than ARGV[1], which it does not read (its head alone).
-- Redis's copy of the size rule (idem-core's `check_record_len` is the rule), as in
-- reserve_within: the length is measured before the value is read.
local key, max = KEYS[1], tonumber(ARGV[1])
local length = redis.pcall('STRLEN', key)
if type(length) == 'table' then
  return length
end
if length > max and redis.call('GETRANGE', key, 0, 4) == MAGIC .. 'C' then
  return too_long(key, length)
end
return redis.call('GET', key)
