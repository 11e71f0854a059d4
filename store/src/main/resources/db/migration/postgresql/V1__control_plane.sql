-- Control-plane schema for PostgreSQL. Times are epoch milliseconds (UTC) in BIGINT columns, in
-- both dialects, so that the audit hash covers the same number whichever database stored the row.
-- JSON is stored as canonical TEXT (sorted keys), not jsonb: jsonb reorders and reformats, which
-- would break the audit hashes.

-- Every saved version of every configuration document; the current one is the highest version.
CREATE TABLE config_version (
  config_key    TEXT   NOT NULL,
  version       BIGINT NOT NULL CHECK (version > 0),
  document      TEXT   NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  updated_by    TEXT   NOT NULL,
  PRIMARY KEY (config_key, version)
);

-- The audit log. Ids are assigned by the store as the chain head's id + 1 inside the append
-- transaction, never by a sequence: a sequence leaves gaps on rollback, and a gap must mean a
-- deleted row.
CREATE TABLE audit_log (
  id        BIGINT PRIMARY KEY,
  time_ms   BIGINT NOT NULL,
  type      TEXT   NOT NULL CHECK (substr(type, 1, 14) = 'agent_sandbox.'),
  actor     TEXT   NOT NULL,
  agent     TEXT,
  run_id    TEXT,
  data      TEXT   NOT NULL,
  prev_hash TEXT   NOT NULL,
  hash      TEXT   NOT NULL
);
CREATE INDEX audit_log_agent ON audit_log (agent, id);
CREATE INDEX audit_log_run ON audit_log (run_id, id);
CREATE INDEX audit_log_time ON audit_log (time_ms);

-- The chain head: the single row every append locks FOR UPDATE and advances, which serializes
-- appends from every replica that shares this database.
CREATE TABLE audit_head (
  id        INTEGER PRIMARY KEY CHECK (id = 1),
  last_id   BIGINT  NOT NULL,
  last_hash TEXT    NOT NULL
);
INSERT INTO audit_head (id, last_id, last_hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- Refuse edits, deletes and truncation through SQL. A role with DDL rights on the table can
-- disable or drop these triggers; the hash chain is what detects that (docs/store.md).
CREATE FUNCTION audit_log_reject_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_reject_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_reject_change();

-- API tokens: only the SHA-256 of the secret is stored. A name is unique among unrevoked tokens.
CREATE TABLE api_token (
  token_id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name          TEXT   NOT NULL,
  secret_hash   TEXT   NOT NULL UNIQUE,
  scopes        TEXT   NOT NULL,
  created_at_ms BIGINT NOT NULL,
  expires_at_ms BIGINT,
  revoked_at_ms BIGINT
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
  created_at_ms BIGINT  NOT NULL,
  started_at_ms BIGINT,
  ended_at_ms   BIGINT,
  exit_status   INTEGER,
  end_reason    TEXT,
  output_tail   TEXT,
  expires_at_ms BIGINT,
  owner         TEXT
);
CREATE INDEX run_status ON run (status);
CREATE INDEX run_created ON run (created_at_ms);
