// Plan: an agent and a command in, every object a run would create out, as a list and as YAML.
import { BASE, api, problem, splitCommand } from "./api.js";
import { badge, field, h, replace, section, table } from "./dom.js";

/** The agents the configuration names, for pickers; empty when it cannot be read. */
export async function agentNames() {
  try {
    return Object.keys((await api("GET", BASE)).agents || {});
  } catch (e) {
    return [];
  }
}

export function agentPicker(id) {
  const input = h("input", { id, type: "text", list: id + "-list", required: true, autocomplete: "off", pattern: "[a-z0-9][a-z0-9-]{0,62}" });
  const list = h("datalist", { id: id + "-list" });
  agentNames().then((names) => {
    replace(list, names.map((n) => h("option", { value: n })));
    if (!input.value && names.length > 0) input.value = names[0];
  });
  return [input, list];
}

export function planPage(root) {
  const [agent, agentList] = agentPicker("plan-agent");
  const command = h("input", { id: "plan-command", type: "text", required: true, autocomplete: "off", class: "mono" });
  command.value = "sh -c 'echo hello'";
  const out = h("div", { id: "plan-result", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "card inline-form", "aria-label": "Plan a run", novalidate: true },
    field("Agent", agent),
    agentList,
    field("Command", command, "Arguments separated by spaces; group with quotes."),
    h("button", { type: "submit", class: "primary", id: "plan-submit" }, "Show plan"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let args;
    try {
      args = splitCommand(command.value);
      if (args.length === 0) throw new Error("the command is empty");
    } catch (e) {
      replace(out, h("div", { class: "alert alert-error", role: "alert" }, "Read the command: " + e.message));
      return;
    }
    const request = { agent: agent.value.trim(), command: args };
    replace(out, h("p", { "aria-busy": "true" }, "Planning…"));
    try {
      const [plan, yaml] = await Promise.all([
        api("POST", BASE + "/plan", { body: request }),
        api("POST", BASE + "/plan", { body: request, accept: "application/yaml" }),
      ]);
      show(out, plan, yaml);
    } catch (e) {
      replace(out, problem(e));
    }
  });
  replace(root, h("h1", {}, "Plan"), h("p", { class: "lead" }, "What a run would create, created by nothing: review it before you enable or run."), form, out);
  return null;
}

function show(out, plan, yaml) {
  const facts = [
    ["Backend", plan.backend + (plan.available ? "" : " (unavailable here now)")],
    ["Isolation", plan.isolation + " (" + plan.runtime + ")"],
    ["Probe", plan.probe],
    ...((plan.probes_running || []).length
      ? [["Still probing", plan.probes_running.join(", ") + " (auto chose among the backends that had answered; plan again in a moment)"]]
      : []),
    ["Sandboxes enabled", plan.enabled ? "yes" : "no"],
    ["Agent configured", plan.agent_configured ? "yes" : "no (defaults shown)"],
    ["Image", plan.image],
    ["Effective allow-list", (plan.effective_allow || []).join(", ") || "nothing"],
    ["Instance policy", Array.isArray(plan.instance_allow) ? plan.instance_allow.join(", ") || "nothing" : plan.instance_allow],
    ["Deadline", plan.ttl_seconds + " s"],
    ["Limits", plan.resources.cpus + " CPU, " + plan.resources.memory_mb + " MB, " + plan.resources.pids + " pids"],
  ];
  const objects = plan.manifests.map((m, i) =>
    h(
      "tr",
      {},
      h("td", {}, String(i + 1)),
      h("td", {}, badge(m.kind, "kind")),
      h("td", {}, h("code", {}, m.name)),
      h("td", {}, h("details", {}, h("summary", {}, "Body"), h("pre", { class: "mono small" }, JSON.stringify(m.body, null, 2)))),
    ),
  );
  replace(
    out,
    h(
      "div",
      { class: "grid2" },
      h(
        "div",
        {},
        section("Summary", h("dl", { class: "meta" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))),
        section("Objects, in creation order (" + plan.manifests.length + ")", table("Objects", ["#", "Kind", "Name", ""], objects, "Nothing would be created.")),
      ),
      section("As YAML", h("pre", { class: "mono yaml", id: "plan-yaml", tabindex: "0", "aria-label": "The plan as YAML" }, yaml)),
    ),
  );
}
