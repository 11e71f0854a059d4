// A session's steps, in order: each with its command, how it ended, its exit status, how long it
// ran and the decisions its proxy made while it ran. The list comes from GET .../steps (read on
// every poll while the session is live); the decisions from the session's timeline, whose step
// entries name the audited allows and refusals of each step.
import { api, problem, runPath } from "./api.js";
import { badge, h, replace, table, time, visible } from "./dom.js";

/** Loads the session's steps into {@code el}; {@code timeline} (may be null) gives each its decisions. */
export async function showSteps(el, runId, timeline, signal) {
  let listed;
  try {
    listed = await api("GET", runPath(runId, "steps"), { signal });
  } catch (e) {
    if (e.name !== "AbortError") replace(el, problem(e));
    return null;
  }
  const decided = new Map();
  for (const step of (timeline && timeline.steps) || []) decided.set(step.step, step.egress || { allowed: [], denied: [] });
  const rows = listed.steps.map((s) =>
    h(
      "tr",
      { "data-step": s.step, "data-status": s.status, "data-end": s.end || "" },
      h("td", {}, String(s.step)),
      h("td", {}, h("code", {}, visible(s.command.join(" "))), s.background ? h("span", { class: "hint" }, " (background)") : null),
      h("td", {}, s.status === "running" ? badge("running") : badge(s.end, s.end === "exit" ? "ok" : "bad")),
      h("td", { class: "num" }, s.exit_status === null ? "—" : String(s.exit_status)),
      h("td", { class: "num", title: time(s.started_at) }, s.duration_ms === null ? "running" : duration(s.duration_ms)),
      h("td", { class: "decisions" }, decisions(decided.get(s.step), s.egress_denied)),
    ),
  );
  replace(
    el,
    table("Steps", ["#", "Command", "End", "Exit", "Duration", "Decisions"], rows, "No step yet."),
    h("p", { class: "hint" }, "Decisions are the audited ones: every refusal, and the session's first allow per host."),
  );
  return listed;
}

function decisions(egress, deniedCount) {
  if (!egress) return deniedCount > 0 ? badge(deniedCount + " denied", "bad") : "—";
  const parts = [];
  for (const d of egress.denied) parts.push(h("span", { class: "deny" }, badge("deny", "bad"), " ", h("code", {}, visible(d.host + ":" + d.port)), " ", d.reason || ""));
  for (const d of egress.allowed) parts.push(h("span", { class: "allow" }, badge("allow", "ok"), " ", h("code", {}, visible(d.host + ":" + d.port))));
  if (parts.length === 0) return "—";
  return h("ul", { class: "plain" }, parts.map((p) => h("li", {}, p)));
}

function duration(ms) {
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
}
