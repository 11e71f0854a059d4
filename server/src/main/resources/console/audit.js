// Audit: filter by type prefix, agent, run, label and time; the chain's verification state; export of
// the same rows as JSON lines.
import { AUDIT, api, problem, runHref } from "./api.js";
import { field, h, replace, section, table, time } from "./dom.js";
import { EVENTS, TYPE_PREFIXES } from "./events.js";

export function auditPage(root, preset) {
  const type = h("input", { id: "audit-type", type: "search", list: "audit-types", autocomplete: "off" });
  const agent = h("input", { id: "audit-agent", type: "search", autocomplete: "off" });
  const run = h("input", { id: "audit-run", type: "search", autocomplete: "off" });
  const label = h("input", { id: "audit-label", type: "search", autocomplete: "off", placeholder: "owner=alice" });
  const since = h("input", { id: "audit-since", type: "search", autocomplete: "off", placeholder: "24h" });
  const limit = h("select", { id: "audit-limit" }, ["100", "500", "1000"].map((n) => h("option", { value: n }, n)));
  const rows = h("div", { id: "audit-rows", "aria-live": "polite" });
  const chain = h("div", { id: "audit-chain" }, h("p", { "aria-busy": "true" }, "Verifying…"));
  const exportOut = h("span", { class: "hint", id: "audit-export-state" });
  const exportButton = h("button", { type: "button", id: "audit-export" }, "Export as JSON lines");
  if (preset) run.value = preset;

  const params = () => {
    const p = new URLSearchParams();
    if (type.value.trim()) p.set("type", type.value.trim());
    if (agent.value.trim()) p.set("agent", agent.value.trim());
    if (run.value.trim()) p.set("run", run.value.trim());
    if (label.value.trim()) p.set("label", label.value.replace(/\s+/g, ""));
    if (since.value.trim()) p.set("since", since.value.trim());
    return p;
  };

  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter the audit log", novalidate: true },
    field("Type prefix", type),
    h("datalist", { id: "audit-types" }, TYPE_PREFIXES.map((t) => h("option", { value: t }))),
    field("Agent", agent),
    field("Run id", run),
    field("Labels", label, "key=value; several, separated by commas, must all match."),
    field("Since", since, "An age (30s, 15m, 2h, 7d) or an instant (2026-11-30T12:00:00Z)."),
    field("Rows", limit),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", id: "audit-apply" }, "Apply filters"), exportButton, exportOut),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    query();
  });

  async function query() {
    const p = params();
    p.set("limit", limit.value);
    replace(rows, h("p", { "aria-busy": "true" }, "Loading…"));
    try {
      const body = await api("GET", AUDIT + "?" + p);
      const list = body.rows
        .slice()
        .reverse()
        .map((r) =>
          h(
            "tr",
            { "data-type": r.type },
            h("td", {}, String(r.id)),
            h("td", {}, time(r.time)),
            h("td", {}, h("code", {}, r.type)),
            h("td", {}, r.actor),
            h("td", {}, r.agent || "—"),
            h("td", {}, r.run_id ? h("a", { href: runHref(r.run_id) }, h("code", {}, r.run_id)) : "—"),
            h("td", {}, h("details", {}, h("summary", {}, summary(r)), h("pre", { class: "mono small" }, JSON.stringify(r.data, null, 2)))),
          ),
        );
      replace(
        rows,
        h("p", { class: "hint", id: "audit-count" }, body.rows.length + " rows, newest first"),
        table("Audit rows", ["Id", "Time", "Type", "Actor", "Agent", "Run", "Data"], list, "No row matches."),
      );
    } catch (e) {
      replace(rows, problem(e));
    }
  }

  exportButton.addEventListener("click", async () => {
    try {
      const text = await api("GET", AUDIT + "/export?" + params(), { accept: "application/x-ndjson" });
      const lines = text.split("\n").filter((l) => l.length > 0).length;
      const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
      const link = h("a", { href: url, download: "agent-sandbox-audit.jsonl" }, "");
      document.body.append(link);
      link.click();
      link.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 60000);
      replace(exportOut, "Exported " + lines + " lines.");
      exportOut.dataset.lines = String(lines);
    } catch (e) {
      replace(exportOut, problem(e));
    }
  });

  replace(root, h("h1", {}, "Audit"), section("Chain", chain), section("Rows", form, rows));
  verify(chain);
  query();
  return null;
}

async function verify(chain) {
  try {
    const v = await api("GET", AUDIT + "/verify");
    replace(
      chain,
      v.ok
        ? h("div", { class: "alert alert-ok", "data-chain": "ok" }, h("strong", {}, "Verified: "), v.rows_checked + " rows, every hash and link intact. Head ", h("code", {}, v.head), " — record it elsewhere to detect deletion of the newest rows.")
        : h(
            "div",
            { class: "alert alert-error", role: "alert", "data-chain": "broken" },
            h("strong", {}, "The chain is broken: "),
            v.problems.length + " problems in " + v.rows_checked + " rows.",
            h("ul", {}, v.problems.slice(0, 50).map((p) => h("li", {}, p))),
          ),
    );
  } catch (e) {
    replace(chain, problem(e));
  }
}

function summary(row) {
  const d = row.data || {};
  switch (row.type) {
    case EVENTS.EGRESS_DENY:
    case EVENTS.EGRESS_ALLOW:
      return (d.host || "?") + ":" + (d.port || "?") + " " + (d.reason || "");
    case EVENTS.EGRESS_DENY_COUNTED:
      return d.count + " refusals counted, " + Object.keys(d.hosts || {}).length + " hosts named";
    case EVENTS.CONFIG_UPDATE:
    case EVENTS.CONFIG_REFUSED:
      return d.config + " v" + d.version + (d.weakening ? " — weakening" : "") + (d.reason ? " — " + d.reason : "");
    case EVENTS.LAUNCH:
      return (d.image || "") + " " + (d.command ? JSON.stringify(d.command) : "");
    case EVENTS.TEARDOWN:
      return (d.end || (d.by ? "by " + d.by : "")) + (d.exit_status !== undefined ? " exit " + d.exit_status : "");
    default:
      return Object.keys(d).slice(0, 6).join(", ");
  }
}
