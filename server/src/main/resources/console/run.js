// One run: its state, its output streamed live, its egress decisions, a kill button while it is
// live (a close button for a session, with its steps), and once it has ended its artifacts and
// its timeline. The output arrives over a fetch
// stream (bearer header), never an EventSource (which cannot send one) nor a URL carrying the token.
import { api, problem, runPath } from "./api.js";
import { announce, badge, h, replace, section, table, time, visible } from "./dom.js";
import { showArtifacts } from "./artifacts.js";
import { showTimeline } from "./timeline.js";
import { showSteps } from "./steps.js";

const LIVE = ["pending", "running"];
const MAX_SHOWN = 256 * 1024;

export function runPage(root, runId) {
  const abort = new AbortController();
  let timer = null;
  let recordShown = null; // the status the artifacts and timeline were last loaded at
  const state = h("div", { id: "run-state" }, h("p", { "aria-busy": "true" }, "Loading…"));
  const output = h("pre", { id: "run-output", class: "mono output", role: "log", "aria-label": "Output", tabindex: "0" });
  const streamState = h("span", { id: "run-stream", class: "hint" }, "connecting…");
  const egress = h("div", { id: "run-egress" });
  const killOut = h("div", { "aria-live": "polite" });
  const artifacts = h("div", { id: "run-artifacts" }, h("p", { "aria-busy": "true" }, "Loading…"));
  const timeline = h("div", { id: "run-timeline" }, h("p", { "aria-busy": "true" }, "Loading…"));
  const steps = h("div", { id: "run-steps" }, h("p", { "aria-busy": "true" }, "Loading…"));
  const stepsSection = section("Steps", steps);
  stepsSection.hidden = true;
  let loadedTimeline = null;
  let isSession = false;
  let stepsTimed = -1; // how many steps the loaded timeline knew of
  const kill = h("button", { type: "button", id: "run-kill", class: "danger", hidden: true }, "Kill run");
  kill.addEventListener("click", async () => {
    kill.disabled = true;
    try {
      await api("DELETE", runPath(runId));
      replace(killOut, h("div", { class: "alert alert-ok", role: "status" }, isSession ? "Session closed." : "Kill requested."));
      poll();
    } catch (e) {
      kill.disabled = false;
      replace(killOut, problem(e));
    }
  });
  replace(
    root,
    h("p", { class: "crumbs" }, h("a", { href: "#/runs" }, "Runs"), " / ", h("code", {}, runId)),
    h("h1", {}, h("span", { id: "run-noun" }, "Run"), " ", h("code", {}, runId)),
    h("p", {}, h("a", { href: "#/audit/" + encodeURIComponent(runId), id: "run-audit" }, "Audit rows of this run")),
    h("div", { class: "grid2 wide-right" }, section("State", state, h("div", { class: "actions" }, kill), killOut), section("Egress decisions", egress)),
    stepsSection,
    section("Output", h("p", {}, streamState), output),
    section("Artifacts", artifacts),
    section("Timeline", timeline),
  );

  async function poll() {
    let run;
    try {
      run = await api("GET", runPath(runId), { signal: abort.signal });
    } catch (e) {
      if (e.name !== "AbortError") replace(state, problem(e));
      return;
    }
    showState(state, run);
    showEgress(egress, run);
    const live = LIVE.includes(run.status);
    kill.hidden = !live;
    isSession = run.kind === "session";
    if (isSession) {
      stepsSection.hidden = false;
      kill.textContent = "Close session";
      replace(document.getElementById("run-noun"), "Session");
      // A new step since the timeline was read: read it again for that step's decisions.
      if (live && loadedTimeline && stepsTimed !== run.steps) {
        stepsTimed = run.steps;
        loadedTimeline = await showTimeline(timeline, runId, abort.signal);
      }
      await showSteps(steps, runId, loadedTimeline, abort.signal);
    }
    if (recordShown !== run.status && (recordShown === null || !live)) {
      recordShown = run.status;
      showRecord(live);
    }
    window.clearTimeout(timer);
    if (live) timer = window.setTimeout(poll, 2000);
  }

  // The timeline as far as it goes now; the artifacts only once the run has ended, when the
  // control plane has read /workspace/out. Both are loaded again when the run ends.
  async function showRecord(live) {
    if (live) replace(artifacts, h("p", { class: "empty" }, "Collected from /workspace/out when the run ends."));
    let loaded = await showTimeline(timeline, runId, abort.signal);
    loadedTimeline = loaded;
    stepsTimed = loaded && loaded.steps ? loaded.steps.length : stepsTimed;
    // The run's status turns before its teardown row is written: read again until that row is in
    // (a few seconds at most; a run that never gets one is shown as it is).
    for (let i = 0; !live && i < 10 && loaded && !loaded.end.teardown && !abort.signal.aborted; i++) {
      await new Promise((resolve) => window.setTimeout(resolve, 1000));
      loaded = await showTimeline(timeline, runId, abort.signal);
      loadedTimeline = loaded;
    }
    if (isSession) await showSteps(steps, runId, loadedTimeline, abort.signal);
    if (!live) {
      const outputs = loaded && loaded.end && loaded.end.artifacts ? loaded.end.artifacts.detail : null;
      await showArtifacts(artifacts, runId, outputs, abort.signal);
    }
  }

  async function stream() {
    try {
      const response = await api("GET", runPath(runId, "output"), { stream: true, accept: "text/plain", signal: abort.signal });
      replace(streamState, "streaming live");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        output.append(value);
        if (output.textContent.length > MAX_SHOWN) output.textContent = output.textContent.slice(-MAX_SHOWN);
        output.scrollTop = output.scrollHeight;
      }
      replace(streamState, isSession ? "the session has ended; this is all its steps' output" : "the run has ended; this is all its output");
      announce("The run's output has ended");
      output.dataset.ended = "true";
      poll();
    } catch (e) {
      if (e.name !== "AbortError") replace(streamState, problem(e));
    }
  }

  poll();
  stream();
  return () => {
    abort.abort();
    window.clearTimeout(timer);
  };
}

function showState(el, run) {
  const facts = [
    ["Status", badge(run.status)],
    ["Agent", run.agent],
    run.kind === "session"
      ? ["Session", run.steps + " steps · idle after " + run.idle_seconds + " s" + (run.idle_expires_at ? " (until " + time(run.idle_expires_at) + ")" : "")]
      : ["Command", h("code", {}, visible((run.command || []).join(" ")))],
    ["Backend", run.backend + " · " + run.runtime + " · " + run.isolation],
    ["Created", time(run.created_at)],
    ["Started", time(run.started_at)],
    ["Ended", run.ended_at ? time(run.ended_at) + " (" + run.end + (run.exit_status !== undefined && run.exit_status !== null ? ", exit " + run.exit_status : "") + ")" : "—"],
    ["Deadline", time(run.expires_at)],
    ["Output", (run.output_bytes || 0) + " bytes"],
  ];
  if (run.detail) facts.push(["Detail", run.detail]);
  replace(el, h("dl", { class: "meta", "data-status": run.status }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
}

// On an inspected host a decision has the request's normalised path (shown after the host), the
// upstream's status and the name of the credential the proxy set (never its value).
function inspected(d) {
  const parts = [];
  if (d.status !== undefined && d.status !== null) parts.push("status " + d.status);
  if (d.credential) parts.push("credential " + visible(d.credential) + " set by the proxy");
  return parts.join(", ");
}

function showEgress(el, run) {
  const rows = (run.egress || []).map((d) =>
    h(
      "tr",
      { class: d.decision === "deny" ? "deny" : "allow" },
      h("td", { title: time(d.time) }, time(d.time).slice(11)),
      h("td", {}, badge(d.decision, d.decision === "deny" ? "bad" : "ok")),
      h("td", {}, h("code", {}, d.host + ":" + d.port + (d.path ? visible(d.path) : ""))),
      h("td", {}, d.method || "—"),
      h("td", {}, d.reason || "—"),
      h("td", { class: "detail" }, inspected(d) || d.detail || (d.address ? "→ " + d.address : "")),
    ),
  );
  const note = run.egress_complete === false ? h("p", { class: "hint" }, "Not every decision is listed (" + (run.egress_not_listed || "some") + " more were made; the audit log holds every refusal).") : null;
  replace(el, table("Egress decisions", ["Time (UTC)", "Decision", "Destination", "Method", "Reason", "Detail"], rows, "No connection attempted yet."), note);
}
