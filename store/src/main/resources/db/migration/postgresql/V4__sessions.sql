-- Sessions (docs/api.md, "Sessions"): a run's kind (a one-shot run or a session), a session's idle
-- time, the status closed, and the steps of sessions.
ALTER TABLE run DROP CONSTRAINT run_status_check;
ALTER TABLE run ADD CONSTRAINT run_status_check
  CHECK (status IN ('pending', 'running', 'exited', 'deadline', 'failed', 'killed', 'refused',
                    'closed'));
ALTER TABLE run ADD COLUMN kind TEXT NOT NULL DEFAULT 'run'
  CONSTRAINT run_kind_check CHECK (kind IN ('run', 'session'));
ALTER TABLE run ADD COLUMN idle_seconds INTEGER
  CONSTRAINT run_idle_seconds_check CHECK (idle_seconds IS NULL OR idle_seconds > 0);
CREATE INDEX run_kind ON run (kind, created_at_ms);

-- One row per step of a session: inserted when it starts, updated once when it ends. The tails are
-- redacted, as every output the control plane keeps.
CREATE TABLE run_step (
  run_id           TEXT    NOT NULL,
  step             INTEGER NOT NULL CHECK (step > 0),
  actor            TEXT    NOT NULL,
  command          TEXT    NOT NULL,
  cwd              TEXT    NOT NULL,
  background       BOOLEAN NOT NULL,
  timeout_seconds  INTEGER NOT NULL,
  stdin_bytes      BIGINT  NOT NULL,
  started_at_ms    BIGINT  NOT NULL,
  ended_at_ms      BIGINT,
  end_reason       TEXT
    CHECK (end_reason IS NULL
           OR end_reason IN ('exit', 'timeout', 'killed', 'session_ended', 'error')),
  exit_status      INTEGER,
  duration_ms      BIGINT,
  output_bytes     BIGINT  NOT NULL,
  output_truncated BOOLEAN NOT NULL,
  egress_denied    INTEGER NOT NULL,
  detail           TEXT    NOT NULL,
  stdout_tail      TEXT,
  stderr_tail      TEXT,
  PRIMARY KEY (run_id, step)
);
