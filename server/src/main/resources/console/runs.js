// Runs: start one (with labels), and the newest runs with filters (agent, status, age, text),
// refreshed while shown.
import { BASE, api, problem, runHref, splitCommand } from "./api.js";
import { badge, field, h, replace, section, table, time } from "./dom.js";
import { agentPicker } from "./plan.js";

const STATUSES = ["", "pending", "running", "exited", "deadline", "killed", "failed", "closed"];
const KINDS = ["", "run", "session"];

export function runsPage(root) {
  const [agent, agentList] = agentPicker("run-agent");
  const command = h("input", { id: "run-command", type: "text", required: true, autocomplete: "off", class: "mono" });
  const labels = h("input", { id: "run-labels", type: "text", autocomplete: "off", placeholder: "owner=alice" });
  const startOut = h("div", { "aria-live": "polite" });
  const start = h(
    "form",
    { class: "card inline-form", "aria-label": "Start a run", novalidate: true },
    field("Agent", agent),
    agentList,
    field("Command", command, "Arguments separated by spaces; group with quotes."),
    field("Labels", labels, "key=value, separated by commas (optional)."),
    h("button", { type: "submit", class: "primary", id: "run-start" }, "Start run"),
    startOut,
  );
  start.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const args = splitCommand(command.value);
      if (args.length === 0) throw new Error("the command is empty");
      const body = { agent: agent.value.trim(), command: args };
      const parsed = parseLabels(labels.value);
      if (Object.keys(parsed).length > 0) body.labels = parsed;
      const started = await api("POST", BASE + "/runs", { body });
      location.hash = runHref(started.run_id);
    } catch (e) {
      replace(startOut, e.status === undefined ? h("div", { class: "alert alert-error", role: "alert" }, "Read the " + (e.field || "command") + ": " + e.message) : problem(e));
    }
  });

  const fAgent = h("input", { id: "filter-agent", type: "search", autocomplete: "off" });
  const fStatus = h("select", { id: "filter-status" }, STATUSES.map((s) => h("option", { value: s }, s || "any")));
  const fKind = h("select", { id: "filter-kind" }, KINDS.map((k) => h("option", { value: k }, k || "any")));
  const fSince = h("input", { id: "filter-since", type: "search", autocomplete: "off", placeholder: "24h" });
  const fText = h("input", { id: "filter-text", type: "search", autocomplete: "off" });
  const list = h("div", { id: "runs-list", "aria-live": "polite" });
  let runs = [];
  const render = () => {
    const rows = runs
      .filter((r) => !fText.value || (r.run_id + " " + r.agent + " " + r.backend).includes(fText.value.trim()))
      .map((r) =>
        h(
          "tr",
          {},
          h("td", {}, h("a", { href: runHref(r.run_id) }, h("code", {}, r.run_id))),
          h("td", {}, r.kind === "session" ? badge("session", "kind") : "run"),
          h("td", {}, r.agent),
          h("td", {}, badge(r.status)),
          h("td", {}, r.backend || "—"),
          h("td", {}, time(r.created_at)),
          h("td", {}, time(r.ended_at)),
        ),
      );
    replace(list, table("Runs", ["Run", "Kind", "Agent", "Status", "Backend", "Created", "Ended"], rows, "No run matches."));
  };
  // Agent, status and age are the API's own filters (so older runs are found too); the text
  // filter narrows what the API answered.
  let asked = 0;
  const refresh = async () => {
    const query = new URLSearchParams({ limit: "500" });
    if (fAgent.value.trim()) query.set("agent", fAgent.value.trim());
    if (fStatus.value) query.set("status", fStatus.value);
    if (fKind.value) query.set("kind", fKind.value);
    if (fSince.value.trim()) query.set("since", fSince.value.trim());
    const mine = ++asked;
    try {
      const answer = (await api("GET", BASE + "/runs?" + query)).runs;
      if (mine !== asked) return; // a newer filter was asked for meanwhile
      runs = answer;
      render();
    } catch (e) {
      if (mine === asked) replace(list, problem(e));
    }
  };
  let pending = null;
  for (const control of [fAgent, fStatus, fKind, fSince]) {
    control.addEventListener("input", () => {
      window.clearTimeout(pending);
      pending = window.setTimeout(refresh, 250);
    });
  }
  fText.addEventListener("input", render);
  const filters = h(
    "div",
    { class: "filters", role: "search", "aria-label": "Filter runs" },
    field("Agent", fAgent),
    field("Status", fStatus),
    field("Kind", fKind),
    field("Since", fSince, "An age (15m, 2h, 7d) or an instant."),
    field("Run id or text", fText),
  );
  replace(root, h("h1", {}, "Runs"), start, section("Newest runs", filters, list));
  refresh();
  const timer = window.setInterval(refresh, 5000);
  return () => {
    window.clearInterval(timer);
    window.clearTimeout(pending);
  };
}

/** "k=v, k2=v2" as an object; the server checks each key and value. */
export function parseLabels(text) {
  const labels = {};
  for (const pair of text.split(",").map((p) => p.trim()).filter((p) => p.length > 0)) {
    const at = pair.indexOf("=");
    if (at <= 0) {
      const error = new Error('"' + pair.slice(0, 80) + '" is not key=value');
      error.field = "labels";
      throw error;
    }
    labels[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return labels;
}
