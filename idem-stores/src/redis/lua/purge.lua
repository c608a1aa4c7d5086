-- purge: KEYS[1] = record key; ARGV = now, abandoned_before (now minus the lease grace)
-- Replies {'ok'} when it deleted the record
--       | {'lost'} when it kept it: gone, still counting, or unreadable (left for an operator)
-- Deletes the record if it stopped counting at `now`: a completed record at or past its
-- expiry, or an abandoned in-progress one (its lease passed at or before abandoned_before,
-- and no step holds the key: none recorded, or `steps_kept_until` at or before now). Judged
-- here, atomically with the delete, so a reservation that reused the key after the caller's
-- scan is kept. Not part of the protocol: the operators' purge (`Inventory::purge_expired`).
local key = KEYS[1]
local now, abandoned_before = ARGV[1], ARGV[2]

local r, refusal = load_record(key)
if refusal or not r then
  return {'lost'}
end
if r.state == 'completed' then
  if before(now, r.expires_at) then
    return {'lost'}
  end
else
  if before(abandoned_before, r.lease_until) then
    return {'lost'}
  end
  if #r.steps > 0 and before(now, r.kept) then
    return {'lost'}
  end
end
redis.call('DEL', key)
if r.state == 'in_progress' then
  -- Waiters on an abandoned reservation look again, and may reserve the key at once.
  redis.call('PUBLISH', key, 'purged')
end
return {'ok'}
