// One run: its state, its output streamed live, its egress decisions, and a kill button while it
// is live. The output arrives over a fetch stream (bearer header), never an EventSource (which
// cannot send one) nor a URL carrying the token.
import { BASE, api, problem } from "./api.js";
import { announce, badge, h, replace, section, table, time } from "./dom.js";

const LIVE = ["pending", "running"];
const MAX_SHOWN = 256 * 1024;

export function runPage(root, runId) {
  const abort = new AbortController();
  let timer = null;
  const state = h("div", { id: "run-state" }, h("p", { "aria-busy": "true" }, "Loading…"));
  const output = h("pre", { id: "run-output", class: "mono output", role: "log", "aria-label": "Output", tabindex: "0" });
  const streamState = h("span", { id: "run-stream", class: "hint" }, "connecting…");
  const egress = h("div", { id: "run-egress" });
  const killOut = h("div", { "aria-live": "polite" });
  const kill = h("button", { type: "button", id: "run-kill", class: "danger", hidden: true }, "Kill run");
  kill.addEventListener("click", async () => {
    kill.disabled = true;
    try {
      await api("DELETE", BASE + "/runs/" + runId);
      replace(killOut, h("div", { class: "alert alert-ok", role: "status" }, "Kill requested."));
      poll();
    } catch (e) {
      kill.disabled = false;
      replace(killOut, problem(e));
    }
  });
  replace(
    root,
    h("p", { class: "crumbs" }, h("a", { href: "#/runs" }, "Runs"), " / ", h("code", {}, runId)),
    h("h1", {}, "Run ", h("code", {}, runId)),
    h("p", {}, h("a", { href: "#/audit/" + runId, id: "run-audit" }, "Audit rows of this run")),
    h("div", { class: "grid2 wide-right" }, section("State", state, h("div", { class: "actions" }, kill), killOut), section("Egress decisions", egress)),
    section("Output", h("p", {}, streamState), output),
  );

  async function poll() {
    let run;
    try {
      run = await api("GET", BASE + "/runs/" + runId, { signal: abort.signal });
    } catch (e) {
      if (e.name !== "AbortError") replace(state, problem(e));
      return;
    }
    showState(state, run);
    showEgress(egress, run);
    const live = LIVE.includes(run.status);
    kill.hidden = !live;
    window.clearTimeout(timer);
    if (live) timer = window.setTimeout(poll, 2000);
  }

  async function stream() {
    try {
      const response = await api("GET", BASE + "/runs/" + runId + "/output", { stream: true, accept: "text/plain", signal: abort.signal });
      replace(streamState, "streaming live");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        output.append(value);
        if (output.textContent.length > MAX_SHOWN) output.textContent = output.textContent.slice(-MAX_SHOWN);
        output.scrollTop = output.scrollHeight;
      }
      replace(streamState, "the run has ended; this is all its output");
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
    ["Command", h("code", {}, (run.command || []).join(" "))],
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

function showEgress(el, run) {
  const rows = (run.egress || []).map((d) =>
    h(
      "tr",
      { class: d.decision === "deny" ? "deny" : "allow" },
      h("td", { title: time(d.time) }, time(d.time).slice(11)),
      h("td", {}, badge(d.decision, d.decision === "deny" ? "bad" : "ok")),
      h("td", {}, h("code", {}, d.host + ":" + d.port)),
      h("td", {}, d.method || "—"),
      h("td", {}, d.reason || "—"),
      h("td", { class: "detail" }, d.detail || (d.address ? "→ " + d.address : "")),
    ),
  );
  const note = run.egress_complete === false ? h("p", { class: "hint" }, "Not every decision is listed (" + (run.egress_not_listed || "some") + " more were made; the audit log holds every refusal).") : null;
  replace(el, table("Egress decisions", ["Time (UTC)", "Decision", "Destination", "Method", "Reason", "Detail"], rows, "No connection attempted yet."), note);
}
