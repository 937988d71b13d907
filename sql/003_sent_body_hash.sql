-- Idempotent sends compare a retry with what was first sent, not with the
-- message as it is now: an edit must not turn the retry of the original send
-- into a conflict. A hash of the sent body is kept for messages sent with a
-- client_id, and cleared when the message is deleted, so nothing of an erased
-- body stays behind (a retry of a deleted message returns its tombstone).
ALTER TABLE messages ADD COLUMN sent_body_hash text;

-- Unedited messages still hold the body they were sent with.
UPDATE messages SET sent_body_hash = md5(body)
WHERE client_id IS NOT NULL AND edited_at IS NULL AND NOT deleted;
