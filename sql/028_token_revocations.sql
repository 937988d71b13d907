-- Revoked tokens: a user's tokens issued before `revoked_before` are refused
-- (`POST /v1/admin/users/{id}/revoke`, and an erasure). The time is whole
-- seconds, as a token's `iat` is: a token issued in the second of the
-- revocation, or after, is taken. A revocation only moves forward. Instances
-- learn of one through the change feed (`v:`), and read this table for the
-- users they do not know yet.
--
-- Not a user's data to export or erase: the row stays after an erasure, so
-- the erased user's tokens stay refused until they expire.
CREATE TABLE token_revocations (
    user_id        text        PRIMARY KEY,
    revoked_before timestamptz NOT NULL
);
