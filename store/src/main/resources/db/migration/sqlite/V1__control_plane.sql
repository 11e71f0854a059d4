-- Control-plane schema for SQLite. Times are epoch milliseconds (UTC) in INTEGER columns, in both
-- dialects, so that the audit hash covers the same number whichever database stored the row.
-- JSON is stored as canonical text (sorted keys), never as a native JSON type that would
-- reformat it and break the audit hashes.

-- Every saved version of every configuration document; the current one is the highest version.
CREATE TABLE config_version (
  config_key    TEXT    NOT NULL,
  version       INTEGER NOT NULL CHECK (version > 0),
  document      TEXT    NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  updated_by    TEXT    NOT NULL,
  PRIMARY KEY (config_key, version)
);

-- The audit log. Ids are assigned by the store as the chain head's id + 1 inside the append
-- transaction, never by a sequence: a sequence leaves gaps on rollback, and a gap must mean a
-- deleted row.
CREATE TABLE audit_log (
  id        INTEGER PRIMARY KEY,
  time_ms   INTEGER NOT NULL,
  type      TEXT    NOT NULL CHECK (substr(type, 1, 14) = 'agent_sandbox.'),
  actor     TEXT    NOT NULL,
  agent     TEXT,
  run_id    TEXT,
  data      TEXT    NOT NULL,
  prev_hash TEXT    NOT NULL,
  hash      TEXT    NOT NULL
);
CREATE INDEX audit_log_agent ON audit_log (agent, id);
CREATE INDEX audit_log_run ON audit_log (run_id, id);
CREATE INDEX audit_log_time ON audit_log (time_ms);

-- The chain head: the single row every append reads and advances while it holds the write lock.
CREATE TABLE audit_head (
  id        INTEGER PRIMARY KEY CHECK (id = 1),
  last_id   INTEGER NOT NULL,
  last_hash TEXT    NOT NULL
);
INSERT INTO audit_head (id, last_id, last_hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- Refuse edits and deletes through SQL. Anyone who can write the file can drop these triggers;
-- the hash chain is what detects that (docs/store.md).
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only');
END;

-- API tokens: only the SHA-256 of the secret is stored. A name is unique among unrevoked tokens.
CREATE TABLE api_token (
  token_id      INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT    NOT NULL,
  secret_hash   TEXT    NOT NULL UNIQUE,
  scopes        TEXT    NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER,
  revoked_at_ms INTEGER
);
CREATE UNIQUE INDEX api_token_unrevoked_name ON api_token (name) WHERE revoked_at_ms IS NULL;

-- Runs, one row per run, updated as it moves through its states.
CREATE TABLE run (
  run_id        TEXT    PRIMARY KEY,
  agent         TEXT    NOT NULL,
  backend       TEXT    NOT NULL,
  runtime       TEXT,
  status        TEXT    NOT NULL
    CHECK (status IN ('pending', 'running', 'exited', 'deadline', 'failed', 'killed', 'refused')),
  command       TEXT    NOT NULL,
  created_at_ms INTEGER NOT NULL,
  started_at_ms INTEGER,
  ended_at_ms   INTEGER,
  exit_status   INTEGER,
  end_reason    TEXT,
  output_tail   TEXT,
  expires_at_ms INTEGER,
  owner         TEXT
);
CREATE INDEX run_status ON run (status);
CREATE INDEX run_created ON run (created_at_ms);
