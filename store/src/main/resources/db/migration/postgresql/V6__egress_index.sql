-- An index of the audit log's egress rows (agent_sandbox.egress.allow and .deny), so that egress
-- proposals and the impact of a configuration change read typed columns instead of parsing each
-- row's JSON. Each entry is written in the transaction that appends its audit row (AuditLog) and
-- derived from that row alone (EgressIndexRow); rows appended before this migration are indexed by
-- the Java migration that follows it (version 7). It holds nothing the chain does not: `verify`
-- checks audit_log and audit_head only, and never reads this table.
CREATE TABLE audit_egress (
  audit_id BIGINT  PRIMARY KEY,
  time_ms  BIGINT  NOT NULL,
  agent    TEXT,
  run_id   TEXT,
  decision TEXT    NOT NULL CHECK (decision IN ('allow', 'deny')),
  host     TEXT    NOT NULL,
  port     INTEGER NOT NULL CHECK (port BETWEEN 0 AND 65535),
  reason   TEXT    NOT NULL,
  count    BIGINT  NOT NULL CHECK (count >= 1)
);
-- Covering: a proposal or an impact reads one agent's decisions of one kind in a window from the
-- index alone (an index-only scan once the table is vacuumed).
CREATE INDEX audit_egress_agent
  ON audit_egress (agent, decision, time_ms) INCLUDE (host, port, reason, run_id, count);

CREATE TRIGGER audit_egress_no_update_delete BEFORE UPDATE OR DELETE ON audit_egress
  FOR EACH ROW EXECUTE FUNCTION audit_log_reject_change();
CREATE TRIGGER audit_egress_no_truncate BEFORE TRUNCATE ON audit_egress
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_reject_change();
