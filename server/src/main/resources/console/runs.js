// Runs: start one, and the newest runs with filters (agent, status, text), refreshed while shown.
import { BASE, api, problem, splitCommand } from "./api.js";
import { badge, field, h, replace, section, table, time } from "./dom.js";
import { agentPicker } from "./plan.js";

const STATUSES = ["", "pending", "running", "exited", "deadline", "killed", "failed"];

export function runsPage(root) {
  const [agent, agentList] = agentPicker("run-agent");
  const command = h("input", { id: "run-command", type: "text", required: true, autocomplete: "off", class: "mono" });
  const startOut = h("div", { "aria-live": "polite" });
  const start = h(
    "form",
    { class: "card inline-form", "aria-label": "Start a run", novalidate: true },
    field("Agent", agent),
    agentList,
    field("Command", command, "Arguments separated by spaces; group with quotes."),
    h("button", { type: "submit", class: "primary", id: "run-start" }, "Start run"),
    startOut,
  );
  start.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const args = splitCommand(command.value);
      if (args.length === 0) throw new Error("the command is empty");
      const started = await api("POST", BASE + "/runs", { body: { agent: agent.value.trim(), command: args } });
      location.hash = "#/runs/" + started.run_id;
    } catch (e) {
      replace(startOut, e.status === undefined ? h("div", { class: "alert alert-error", role: "alert" }, "Read the command: " + e.message) : problem(e));
    }
  });

  const fAgent = h("input", { id: "filter-agent", type: "search", autocomplete: "off" });
  const fStatus = h("select", { id: "filter-status" }, STATUSES.map((s) => h("option", { value: s }, s || "any")));
  const fText = h("input", { id: "filter-text", type: "search", autocomplete: "off" });
  const list = h("div", { id: "runs-list", "aria-live": "polite" });
  let runs = [];
  const render = () => {
    const rows = runs
      .filter((r) => !fAgent.value || r.agent === fAgent.value.trim())
      .filter((r) => !fStatus.value || r.status === fStatus.value)
      .filter((r) => !fText.value || (r.run_id + " " + r.agent + " " + r.backend).includes(fText.value.trim()))
      .map((r) =>
        h(
          "tr",
          {},
          h("td", {}, h("a", { href: "#/runs/" + r.run_id }, h("code", {}, r.run_id))),
          h("td", {}, r.agent),
          h("td", {}, badge(r.status)),
          h("td", {}, r.backend || "—"),
          h("td", {}, time(r.created_at)),
          h("td", {}, time(r.ended_at)),
        ),
      );
    replace(list, table("Runs", ["Run", "Agent", "Status", "Backend", "Created", "Ended"], rows, "No run matches."));
  };
  for (const control of [fAgent, fStatus, fText]) control.addEventListener("input", render);
  const refresh = async () => {
    try {
      runs = (await api("GET", BASE + "/runs?limit=500")).runs;
      render();
    } catch (e) {
      replace(list, problem(e));
    }
  };
  const filters = h(
    "div",
    { class: "filters", role: "search", "aria-label": "Filter runs" },
    field("Agent", fAgent),
    field("Status", fStatus),
    field("Run id or text", fText),
  );
  replace(root, h("h1", {}, "Runs"), start, section("Newest runs", filters, list));
  refresh();
  const timer = window.setInterval(refresh, 5000);
  return () => window.clearInterval(timer);
}
