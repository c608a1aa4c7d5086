-- complete: KEYS[1] = record key
-- ARGV = owner, fingerprint, outcome ('ok' | 'err'), body, expires_at
-- Replies {'ok'} | {'lost'} | {'corrupt', reason}
local key = KEYS[1]
local owner, fingerprint, outcome, body, expires_at = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local refusal, offset = owned(key, owner)
if refusal then
  if refusal[1] == 'lost' then
    local f = redis.call('HMGET', key, 'state', 'owner')
    if f[1] == 'completed' and f[2] == owner then
      -- A retry of this very completion whose reply was lost.
      return {'ok'}
    end
  end
  return refusal
end
local remaining = tonumber(expires_at) - (server_millis() + offset)
overwrite(key, {
  'state', 'completed',
  'fingerprint', fingerprint,
  'owner', owner,
  'outcome', outcome,
  'body', body,
  'expires_at', expires_at})
redis.call('PEXPIRE', key, expiry(remaining))
redis.call('PUBLISH', key, 'completed')
return {'ok'}
