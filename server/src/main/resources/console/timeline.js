// A run's timeline, from GET .../runs/{id}/timeline: who launched it, what ran, what its proxy
// allowed and denied, how it ended, every audit row of the run in order with its id, and whether
// the audit chain verifies up to the newest of them.
import { api, problem, runPath } from "./api.js";
import { badge, h, replace, table, time, visible } from "./dom.js";
import { EVENTS } from "./events.js";

/** Loads the timeline of {@code runId} into {@code el}; resolves to the timeline, or null. */
export async function showTimeline(el, runId, signal) {
  let timeline;
  try {
    timeline = await api("GET", runPath(runId, "timeline"), { signal });
  } catch (e) {
    if (e.name !== "AbortError") replace(el, problem(e));
    return null;
  }
  replace(el, chainStatement(timeline.chain), facts(timeline), events(timeline.events));
  return timeline;
}

function chainStatement(chain) {
  if (chain.verified) {
    return h(
      "div",
      { class: "alert alert-ok", id: "timeline-chain", "data-chain": "ok" },
      h("strong", {}, "Chain verified "),
      "up to row " + chain.up_to_id + " (" + chain.rows_checked + " rows checked, hash ",
      h("code", { title: chain.up_to_hash }, String(chain.up_to_hash).slice(0, 16) + "…"),
      chain.walked_from_id
        ? "): every row after row " + chain.walked_from_id + " was walked now and every row of this run re-hashed; the rows before it were verified earlier by this control plane (Audit verifies the whole chain)."
        : "): no row of this run, nor any before it, was edited, deleted or reordered.",
    );
  }
  if (chain.up_to_id === undefined) {
    return h("div", { class: "alert alert-warn", id: "timeline-chain", "data-chain": "none" }, "Nothing to verify: " + (chain.note || "the run has no audit rows") + ".");
  }
  return h(
    "div",
    { class: "alert alert-error", role: "alert", id: "timeline-chain", "data-chain": "broken" },
    h("strong", {}, "The chain does not verify "),
    "up to row " + chain.up_to_id + ": " + chain.problems.length + " problems.",
    h("ul", {}, chain.problems.slice(0, 50).map((p) => h("li", {}, p))),
  );
}

function facts(t) {
  const who = t.launched_by || {};
  const what = t.what_ran || {};
  const end = t.end || {};
  const labels = Object.entries(t.labels || {}).flatMap(([k, v], i) => [i > 0 ? " " : null, h("code", { class: "label" }, k + "=" + v)]);
  const row = (stamp) => (stamp && stamp.audit_id !== undefined ? " (row " + stamp.audit_id + ")" : "");
  const credentials = (what.credentials || []).map((c) => c.name + " (" + c.source + (c.expires_at ? ", until " + time(c.expires_at) : "") + ")");
  const ending = [end.status ? badge(end.status) : "—", end.end_reason ? " " + end.end_reason : "", end.exit_status !== undefined && end.exit_status !== null ? ", exit " + end.exit_status : "", end.ended_at ? " at " + time(end.ended_at) : ""];
  const list = [
    ["Launched by", who.token ? [h("strong", {}, who.token), " at " + time(who.at) + row(who)] : "— (no launch row)"],
    ["Labels", labels.length > 0 ? labels : "none"],
    ["Ran", what.command ? [h("code", {}, visible(what.command.join(" "))), " in ", h("code", {}, what.image || "?")] : "—"],
    ["Where", what.backend ? what.backend + " · " + what.runtime + " · " + what.isolation : "—"],
    ["Allow-list", (what.effective_allow || []).join(", ") || "nothing"],
    ["Credentials", credentials.join(", ") || "none"],
    ["Egress", (t.egress.allowed || []).length + " hosts allowed, " + (t.egress.denied_total !== undefined ? t.egress.denied_total + " denials (" + t.egress.denied.length + " in full, the rest counted)" : (t.egress.denied || []).length + " denials")],
    ["Ended", ending],
  ];
  if (end.killed_by) list.push(["Killed by", end.killed_by.token + " at " + time(end.killed_by.time) + row(end.killed_by)]);
  if (end.timeout) list.push(["Timed out", time(end.timeout.time) + row(end.timeout)]);
  if (end.failure) list.push(["Failed", time(end.failure.time) + row(end.failure)]);
  if (end.artifacts) list.push(["Outputs", artifactsSummary(end.artifacts.detail) + row(end.artifacts)]);
  if (end.revocation) list.push(["Credentials revoked", revocationSummary(end.revocation.detail) + row(end.revocation)]);
  if (end.teardown) list.push(["Torn down", time(end.teardown.time) + row(end.teardown) + (end.teardown.detail.removed === false ? ", not everything removed" : "")]);
  return h("dl", { class: "meta", id: "timeline-facts" }, list.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/** One line for a credentials.revoke row's data: what still works until its expiry. */
function revocationSummary(detail) {
  const live = (detail.credentials || []).filter((c) => c.outcome !== "revoked");
  if (live.length === 0) return "all revoked";
  return live.map((c) => c.name + " not revoked (" + (c.problem || c.outcome) + "), works until " + time(c.expires_at)).join("; ");
}

/** One line for an artifacts row's data. */
export function artifactsSummary(detail) {
  if (!detail) return "—";
  if (detail.collected === false) return "not collected: " + (detail.reason || "no reason given");
  const kept = (detail.files || []).length;
  const dropped = detail.dropped_count || (detail.dropped || []).length || 0;
  return kept + " kept (" + (detail.bytes || 0) + " bytes), " + dropped + " dropped";
}

function events(list) {
  const rows = list.map((e) =>
    h(
      "tr",
      { "data-type": e.type, "data-id": String(e.id) },
      h("td", {}, String(e.id)),
      h("td", {}, time(e.time)),
      h("td", {}, h("code", {}, e.type)),
      h("td", {}, e.actor || "—"),
      h("td", {}, h("details", {}, h("summary", {}, eventSummary(e)), h("pre", { class: "mono small" }, JSON.stringify(e.data, null, 2)))),
    ),
  );
  return h("div", { id: "timeline-events" }, table("Every audit row of the run, oldest first", ["Row", "Time (UTC)", "Type", "Actor", "What"], rows, "The run has no audit rows."));
}

function eventSummary(e) {
  const d = e.data || {};
  switch (e.type) {
    case EVENTS.LAUNCH:
      return "launched " + visible(d.command ? d.command.join(" ") : "") + " on " + (d.backend || "?");
    case EVENTS.EGRESS_ALLOW:
    case EVENTS.EGRESS_DENY:
      return (
        (e.type === EVENTS.EGRESS_DENY ? "denied " : "allowed ") +
        (d.host || "?") + ":" + (d.port || "?") +
        // An inspected host's request: its method and normalised path, the upstream's status and
        // the name (never the value) of the credential the proxy set.
        (d.path ? " " + (d.method || "") + " " + visible(d.path) : "") +
        (d.reason ? " — " + d.reason : "") +
        (d.status !== undefined && d.status !== null ? ", status " + d.status : "") +
        (d.credential ? ", credential " + visible(d.credential) : "")
      );
    case EVENTS.EGRESS_DENY_COUNTED:
      return "denied " + d.count + " more, counted (" + time(d.first_at) + " to " + time(d.last_at) + ")";
    case EVENTS.KILL:
      return "kill asked by " + (e.actor || "?");
    case EVENTS.ARTIFACTS:
      return "outputs " + artifactsSummary(d);
    case EVENTS.TEARDOWN:
      return "torn down: " + (d.end || (d.by ? "by " + d.by : "")) + (d.exit_status !== undefined && d.exit_status !== null ? ", exit " + d.exit_status : "");
    case EVENTS.CREDENTIALS_ISSUE:
      return "credentials issued: " + (d.credentials || []).map((c) => c.name).join(", ");
    case EVENTS.CREDENTIALS_REVOKE:
      return "credentials revoked (" + d.stage + "): " + revocationSummary(d);
    default:
      return Object.keys(d).filter((k) => k !== "labels").slice(0, 6).join(", ");
  }
}
