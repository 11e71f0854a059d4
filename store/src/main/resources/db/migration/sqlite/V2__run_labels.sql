-- A run's labels (owner, task reference, engagement code, ...), as the run request gave them. The
-- audit log copies them into the data of every row of the run when the row is appended (so they are
-- covered by the row's hash), and audit queries filter runs by them.
CREATE TABLE run_label (
  run_id      TEXT NOT NULL,
  label_key   TEXT NOT NULL,
  label_value TEXT NOT NULL,
  PRIMARY KEY (run_id, label_key)
);
CREATE INDEX run_label_pair ON run_label (label_key, label_value);
