-- Sessions (docs/api.md, "Sessions"): a run's kind (a one-shot run or a session), a session's idle
-- time, the status closed, and the steps of sessions. SQLite cannot change a CHECK constraint in
-- place, so the run table is rebuilt with the new one and every existing row copied as a run.
CREATE TABLE run_v4 (
  run_id        TEXT    PRIMARY KEY,
  agent         TEXT    NOT NULL,
  backend       TEXT    NOT NULL,
  runtime       TEXT,
  status        TEXT    NOT NULL
    CHECK (status IN ('pending', 'running', 'exited', 'deadline', 'failed', 'killed', 'refused',
                      'closed')),
  command       TEXT    NOT NULL,
  created_at_ms INTEGER NOT NULL,
  started_at_ms INTEGER,
  ended_at_ms   INTEGER,
  exit_status   INTEGER,
  end_reason    TEXT,
  output_tail   TEXT,
  expires_at_ms INTEGER,
  owner         TEXT,
  kind          TEXT    NOT NULL DEFAULT 'run' CHECK (kind IN ('run', 'session')),
  idle_seconds  INTEGER CHECK (idle_seconds IS NULL OR idle_seconds > 0)
);
INSERT INTO run_v4 (run_id, agent, backend, runtime, status, command, created_at_ms,
                    started_at_ms, ended_at_ms, exit_status, end_reason, output_tail,
                    expires_at_ms, owner, kind, idle_seconds)
SELECT run_id, agent, backend, runtime, status, command, created_at_ms, started_at_ms,
       ended_at_ms, exit_status, end_reason, output_tail, expires_at_ms, owner, 'run', NULL
FROM run;
DROP TABLE run;
ALTER TABLE run_v4 RENAME TO run;
CREATE INDEX run_status ON run (status);
CREATE INDEX run_created ON run (created_at_ms);
CREATE INDEX run_kind ON run (kind, created_at_ms);

-- One row per step of a session: inserted when it starts, updated once when it ends. The tails are
-- redacted, as every output the control plane keeps.
CREATE TABLE run_step (
  run_id           TEXT    NOT NULL,
  step             INTEGER NOT NULL CHECK (step > 0),
  actor            TEXT    NOT NULL,
  command          TEXT    NOT NULL,
  cwd              TEXT    NOT NULL,
  background       INTEGER NOT NULL,
  timeout_seconds  INTEGER NOT NULL,
  stdin_bytes      INTEGER NOT NULL,
  started_at_ms    INTEGER NOT NULL,
  ended_at_ms      INTEGER,
  end_reason       TEXT
    CHECK (end_reason IS NULL
           OR end_reason IN ('exit', 'timeout', 'killed', 'session_ended', 'error')),
  exit_status      INTEGER,
  duration_ms      INTEGER,
  output_bytes     INTEGER NOT NULL,
  output_truncated INTEGER NOT NULL,
  egress_denied    INTEGER NOT NULL,
  detail           TEXT    NOT NULL,
  stdout_tail      TEXT,
  stderr_tail      TEXT,
  PRIMARY KEY (run_id, step)
);
