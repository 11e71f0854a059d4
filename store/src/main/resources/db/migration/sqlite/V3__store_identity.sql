-- The store's identity: 32 random hex digits, drawn once when this migration runs and never
-- changed. Control planes on this store label what they create on a shared daemon with it, so
-- that their reaper removes their own leftovers (after a restart too) and leaves another store's
-- alone until its expiry.
CREATE TABLE store_identity (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id  TEXT NOT NULL
);
INSERT INTO store_identity (singleton, store_id) VALUES (1, lower(hex(randomblob(16))));
