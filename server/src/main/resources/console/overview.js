// Overview: the backends as last probed (the server probes in the background), the live runs, recent refusals and a day's chart.
import { AUDIT, BASE, api, problem, runHref } from "./api.js";
import { badge, h, replace, section, table, time } from "./dom.js";
import { bucket, chart } from "./chart.js";
import { EVENTS } from "./events.js";

const REFUSAL_TYPES = [EVENTS.REFUSED, EVENTS.CONFIG_REFUSED, EVENTS.EGRESS_DENY, EVENTS.EGRESS_DENY_COUNTED];

export function overviewPage(root) {
  const backends = h("div", { class: "slot", "aria-busy": "true" }, "Probing backends…");
  const live = h("div", { class: "slot", "aria-busy": "true" }, "Loading runs…");
  const activity = h("div", { class: "slot", "aria-busy": "true" }, "Loading the audit log…");
  const refusals = h("div", { class: "slot", "aria-busy": "true" }, "Loading the audit log…");
  replace(
    root,
    h("h1", {}, "Overview"),
    h("div", { class: "grid2" }, section("Backends", backends), section("Live runs", live)),
    section("Runs and egress denials, last 24 hours", activity),
    section("Recent refusals", refusals),
  );
  load(backends, live, activity, refusals);
  return null;
}

async function load(backends, live, activity, refusals) {
  api("GET", BASE + "/backends")
    .then((body) => {
      const rows = body.backends.map((b) =>
        h(
          "tr",
          {},
          h("td", {}, h("strong", {}, b.backend)),
          // Until its first probe answers (probed_at null) a backend is still being probed, not down.
          h(
            "td",
            {},
            b.available
              ? badge("available", "ok")
              : b.probed_at === null
                ? badge("probing…", "warn")
                : badge("unavailable", "bad"),
          ),
          h("td", {}, b.isolation ? badge(b.isolation, "iso") : "—"),
          h("td", {}, b.runtime || "—"),
          h("td", { class: "detail" }, b.detail),
        ),
      );
      replace(backends, table("Backends", ["Backend", "State", "Isolation", "Runtime", "Probe"], rows, "This control plane was started without backends."));
    })
    .catch((e) => replace(backends, problem(e)))
    .finally(() => backends.removeAttribute("aria-busy"));

  api("GET", BASE + "/runs?limit=200")
    .then((body) => {
      const rows = body.runs
        .filter((r) => r.status === "pending" || r.status === "running")
        .map((r) =>
          h(
            "tr",
            {},
            h("td", {}, h("a", { href: runHref(r.run_id) }, h("code", {}, r.run_id))),
            h("td", {}, r.agent),
            h("td", {}, badge(r.status)),
            h("td", {}, time(r.created_at)),
          ),
        );
      replace(live, table("Live runs", ["Run", "Agent", "Status", "Started"], rows, "No run is live."));
    })
    .catch((e) => replace(live, problem(e)))
    .finally(() => live.removeAttribute("aria-busy"));

  api("GET", AUDIT + "?since=24h&limit=1000")
    .then((body) => {
      const series = [
        { types: [EVENTS.LAUNCH], label: "Runs started", cls: "s-runs" },
        // A counted row stands for its count of refusals.
        { types: [EVENTS.EGRESS_DENY, EVENTS.EGRESS_DENY_COUNTED], weight: (r) => (r.type === EVENTS.EGRESS_DENY_COUNTED ? r.data.count || 0 : 1), label: "Egress denials", cls: "s-deny" },
      ];
      const data = bucket(body.rows, series, 24, Date.now());
      const note = body.rows.length === 1000 ? " (the newest 1,000 audit rows of the day)" : "";
      replace(activity, chart("Per hour, UTC" + note, series, data, 24));
      const recent = body.rows
        .filter((r) => REFUSAL_TYPES.includes(r.type))
        .slice(-12)
        .reverse()
        .map((r) =>
          h(
            "tr",
            {},
            h("td", {}, time(r.time)),
            h("td", {}, h("code", {}, r.type)),
            h("td", {}, r.agent || "—"),
            h("td", {}, r.run_id ? h("a", { href: runHref(r.run_id) }, h("code", {}, r.run_id)) : "—"),
            h("td", { class: "detail" }, refusalSummary(r)),
          ),
        );
      replace(refusals, table("Recent refusals", ["Time", "Type", "Agent", "Run", "Why"], recent, "No refusal in the last 24 hours."));
    })
    .catch((e) => {
      replace(activity, problem(e));
      replace(refusals, problem(e));
    })
    .finally(() => {
      activity.removeAttribute("aria-busy");
      refusals.removeAttribute("aria-busy");
    });
}

function refusalSummary(row) {
  const d = row.data || {};
  if (row.type === EVENTS.EGRESS_DENY) {
    return (d.host || "?") + ":" + (d.port || "?") + " — " + (d.reason || "");
  }
  if (row.type === EVENTS.EGRESS_DENY_COUNTED) {
    return d.count + " refusals counted — " + Object.keys(d.reasons || {}).join(", ");
  }
  if (row.type === EVENTS.CONFIG_REFUSED) {
    return (d.config || "") + ": " + (d.loosenings || []).length + " loosening(s), missing " + (d.missing || []).join(", ");
  }
  return (d.reason || "") + (d.problems ? " — " + JSON.stringify(d.problems).slice(0, 160) : "");
}
