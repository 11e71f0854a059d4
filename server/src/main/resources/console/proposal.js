// Allow-lists from evidence: an agent's egress proposal (GET .../agents/{agent}/egress-proposal:
// the entries its recorded refusals call for, each with its evidence, and the refusals no entry
// fixes), and the impact of a change as every preview and save answers it (change.impact, or a
// refused preview's impact): the refusals it would have allowed, the runs it would have broken.
import { BASE, api, problem } from "./api.js";
import { announce, field, h, replace, section, table, time } from "./dom.js";

const plural = (n, one, many) => n + " " + (n === 1 ? one : many);

/** One host line of an impact or a proposal: host:port, counts, first example runs. */
function hostLine(host, count, what) {
  const runs = (host.example_runs || []).slice(0, 3).join(" ");
  return h(
    "li",
    { "data-host": host.host + ":" + host.port },
    h("code", {}, host.host + ":" + host.port),
    " — " + plural(host[count], what, what + "s") + " in " + plural(host.runs, "run", "runs"),
    host.refused_as && host.refused_as.length ? ", " + host.refused_as.join("/") : "",
    runs ? ", e.g. " + runs : "",
  );
}

/** The impact block of a preview; null when the answer carries none. */
export function impactView(impact) {
  if (!impact) return null;
  const agents = impact.agents || [];
  if (agents.length === 0) {
    return h(
      "div",
      { class: "alert alert-ok", id: "config-impact", "data-agents": "0" },
      "Impact on recorded egress since " + time(impact.since) + ": this change alters no agent's allow-lists.",
    );
  }
  const breaks = agents.some((a) => a.would_refuse.connections > 0);
  const items = agents.map((a) => {
    const opened = a.would_allow;
    const closed = a.would_refuse;
    const parts = [h("strong", {}, a.agent), ": "];
    if (opened.refusals === 0 && closed.connections === 0) parts.push("nothing recorded would change.");
    if (opened.refusals > 0) {
      parts.push(
        "would have allowed " + plural(opened.refusals, "refusal", "refusals") + " in " + plural(opened.runs, "run", "runs") + " (" + plural(opened.hosts, "host", "hosts") + ")",
        h("ul", {}, opened.top.map((t) => hostLine(t, "refusals", "refusal"))),
      );
    }
    if (closed.connections > 0) {
      parts.push(
        h("span", { class: "alert-inline" }, "would have broken " + plural(closed.runs, "run", "runs") + " of " + a.agent),
        " (" + plural(closed.hosts, "host", "hosts") + ")",
        h("ul", {}, closed.top.map((t) => hostLine(t, "connections", "connection"))),
      );
    }
    return h(
      "li",
      { "data-agent": a.agent, "data-would-allow": String(opened.refusals), "data-would-break": String(closed.runs) },
      parts,
    );
  });
  return h(
    "div",
    { class: "alert " + (breaks ? "alert-warn" : "alert-ok"), id: "config-impact", "data-agents": String(agents.length) },
    h("p", {}, h("strong", {}, "Impact on recorded egress"), " since " + time(impact.since) + " (every agent whose lists change):"),
    h("ul", {}, items),
  );
}

/**
 * The proposal section of the configuration page: pick an agent and a window, read the proposal,
 * and put it into the editor (onUse(agent, allowAfter, version)), where it is previewed and saved
 * as any change is.
 */
export function proposalSection(view, onUse) {
  const agents = Object.keys(view.agents || {});
  if (agents.length === 0) return null;
  const agent = h("select", { id: "proposal-agent" }, agents.map((a) => h("option", { value: a }, a)));
  const since = h("input", { id: "proposal-since", type: "text", value: "7d", size: 8, autocomplete: "off" });
  const go = h("button", { type: "button", id: "proposal-run" }, "Propose");
  const out = h(
    "div",
    { id: "proposal-result", "aria-live": "polite" },
    h("p", { class: "empty" }, "The entries an agent's refused connections call for, with the evidence for each, read from the audit log."),
  );
  go.addEventListener("click", async () => {
    replace(out, h("p", { "aria-busy": "true" }, "Reading the refusals…"));
    let proposal;
    try {
      proposal = await api("GET", BASE + "/agents/" + encodeURIComponent(agent.value) + "/egress-proposal?since=" + encodeURIComponent(since.value.trim() || "7d"));
    } catch (e) {
      replace(out, problem(e));
      return;
    }
    replace(out, proposalView(proposal, view, onUse));
    announce("Proposal ready");
  });
  return section(
    "Proposals from refusals",
    h("div", { class: "actions" }, field("Agent", agent), field("Since", since, "An age such as 7d or 12h, at most 90d."), go),
    out,
  );
}

function proposalView(p, view, onUse) {
  const parts = [
    h(
      "p",
      { id: "proposal-summary", "data-entries": String(p.entries.length) },
      plural(p.refusals_read, "refusal", "refusals") + " of " + p.agent + " since " + time(p.since) + " (configuration version " + p.version + ").",
    ),
  ];
  if (p.entries.length === 0) {
    parts.push(h("p", { class: "empty" }, "Nothing to add: no refusal in that time is one an allow-list entry fixes."));
  } else {
    parts.push(
      table(
        "Proposed entries",
        ["Entry", "Refusals", "Runs", "First seen", "Last seen", "Example runs", "Note"],
        p.entries.map((e) =>
          h(
            "tr",
            { "data-entry": e.entry },
            h("td", {}, h("code", {}, e.entry), e.hosts.length > 1 ? h("div", { class: "hint" }, "covers " + e.hosts.join(", ") + (e.hosts_left_out ? " and " + e.hosts_left_out + " more" : "")) : null),
            h("td", {}, String(e.refusals)),
            h("td", {}, String(e.runs)),
            h("td", {}, time(e.first_seen)),
            h("td", {}, time(e.last_seen)),
            h("td", {}, e.example_runs.map((r) => h("div", {}, h("a", { href: "#/runs/" + encodeURIComponent(r) }, r)))),
            h("td", {}, e.blocked_by_instance_policy ? h("span", { class: "badge badge-warn" }, "the instance policy still refuses " + e.instance_policy_blocks.join(", ")) : "—"),
          ),
        ),
        "",
      ),
    );
    const use = h("button", { type: "button", id: "proposal-use", class: "primary" }, "Put into the editor");
    use.addEventListener("click", () => onUse(p.agent, p.allow_after, p.version));
    parts.push(
      h(
        "div",
        { class: "actions" },
        use,
        p.version === view.version ? null : h("span", { class: "alert-inline" }, "The configuration changed since this page loaded: reload before using it."),
        h("span", { class: "hint" }, "Adds " + plural(p.entries.length, "entry", "entries") + " to " + p.agent + "'s allow-list; preview and save it as any change (a loosening: it needs governance.weaken and a reason)."),
      ),
    );
  }
  if (p.not_fixable.length > 0) {
    parts.push(
      h("h3", {}, "Stays refused (no entry fixes these)"),
      table(
        "Refusals no entry fixes",
        ["Host", "Port", "Reason", "Refusals", "Runs", "Why"],
        p.not_fixable.map((n) =>
          h("tr", { "data-why": n.why }, h("td", {}, h("code", {}, n.host || "(not a host name)")), h("td", {}, String(n.port)), h("td", {}, n.reason), h("td", {}, String(n.refusals)), h("td", {}, String(n.runs)), h("td", {}, n.detail)),
        ),
        "",
      ),
    );
  }
  if (p.now_allowed.length > 0) {
    parts.push(h("p", { class: "hint" }, plural(p.now_allowed.length, "refused host is", "refused hosts are") + " allowed by the configuration as it is now."));
  }
  return parts;
}
