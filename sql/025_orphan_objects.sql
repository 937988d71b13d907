-- Objects of uploads that are gone, kept until the object store confirms
-- they are deleted.
--
-- The sweeper deletes upload rows first and their objects after (an object
-- without a row is an orphan nobody can reach, never an attachment without
-- bytes). A delete that failed (the object store away, a crash between the
-- two) used to leave the object for good. Now the statement that deletes
-- the rows (the sweeper's, or the discarding of an upload whose bytes were
-- refused) records their object keys here, in the same transaction, and a
-- key goes only once its object is deleted (or found missing: S3 answers
-- the delete of a missing object as done). Uploads whose bytes are in the
-- database (`upload_chunks`, the default) have no object: nothing is
-- recorded for them.
--
-- Every instance's sweeper takes keys from here, its own and any left by
-- an earlier pass or another instance. It claims a batch for a while
-- (`claimed_until`, under `FOR UPDATE SKIP LOCKED`: two sweepers never claim
-- the same key), deletes their objects, removes the keys whose objects are
-- deleted and frees the others for its next pass. The claim of a sweeper
-- that stopped half way runs out, and another takes its keys.
CREATE TABLE orphan_objects (
    object_key    text        PRIMARY KEY,
    -- When its upload's row was deleted.
    since         timestamptz NOT NULL DEFAULT now(),
    -- NULL: never tried. Later than now: a sweeper is deleting it. Earlier:
    -- free again (its delete failed then, or its claim ran out).
    claimed_until timestamptz
);

-- The order of claims: keys never tried first, oldest first, then those
-- tried before, longest ago first (a key that keeps failing does not hold
-- back the others).
CREATE INDEX orphan_objects_to_claim ON orphan_objects (claimed_until NULLS FIRST, since);
