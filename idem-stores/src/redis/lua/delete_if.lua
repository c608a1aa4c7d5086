-- delete_if: KEYS[1] = record key
-- ARGV = the state expected ('in_progress' or 'completed'), then, in progress, its owner and
--        fencing token; completed, its fingerprint and expiry
-- Replies {'ok'} when it deleted the record | {'lost'} when the key holds another record or
-- none, left as it is | {'corrupt', reason}
-- The operators' delete of the record they read. This is Redis's copy of idem-core's
-- `is_same_record`: what tells one record of the key from a later one.
local key = KEYS[1]
local r, refusal = load_record(key)
if refusal then
  return refusal
end
if not r or r.state ~= ARGV[1] then
  return {'lost'}
end
if r.state == 'in_progress' then
  if r.owner ~= ARGV[2] or r.fencing_token ~= ARGV[3] then
    return {'lost'}
  end
elseif r.fingerprint ~= ARGV[2] or r.expires_at ~= ARGV[3] then
  return {'lost'}
end
redis.call('DEL', key)
if r.state == 'in_progress' then
  -- Waiters read the key again, as after a release.
  redis.call('PUBLISH', key, 'released')
end
return {'ok'}
