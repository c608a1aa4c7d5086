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

local f = redis.pcall('HMGET', key, 'state', 'expires_at', 'lease_until', 'steps_kept_until')
if f['err'] then
  return {'lost'}
end
local state, expires_at, lease, kept = f[1], f[2], f[3], f[4]
if state == 'completed' then
  if not is_millis(expires_at) or before(now, expires_at) then
    return {'lost'}
  end
elseif state == 'in_progress' then
  if not is_millis(lease) or before(abandoned_before, lease) then
    return {'lost'}
  end
  -- Steps without a readable `steps_kept_until` make the record unreadable: kept.
  local steps_held = kept == false or not is_millis(kept) or before(now, kept)
  if steps_held then
    for _, name in ipairs(redis.call('HKEYS', key)) do
      if is_step_field(name) then
        return {'lost'}
      end
    end
  end
else
  return {'lost'}
end
redis.call('DEL', key)
if state == 'in_progress' then
  -- Waiters on an abandoned reservation look again, and may reserve the key at once.
  redis.call('PUBLISH', key, 'purged')
end
return {'ok'}
