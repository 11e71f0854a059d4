// Configuration: the current document and its version; an editor whose changes are previewed by
// the server (PUT ?dry_run=true: the same validation, version and governance checks as a save,
// nothing stored) before they can be saved, with the change's impact on recorded egress. Loosenings
// need governance.weaken and a reason. The sandbox configuration also offers each agent's egress
// proposal, which goes into the editor and through the same preview.
import { ApiError, BASE, EGRESS, api, problem } from "./api.js";
import { announce, field, h, replace, section, table, time } from "./dom.js";
import { diffView } from "./diff.js";
import { impactView, proposalSection } from "./proposal.js";

const DOCUMENTS = {
  sandbox: { path: BASE, title: "Sandbox configuration" },
  egress: { path: EGRESS, title: "Instance egress policy" },
};
const COMPUTED = ["version", "updated_at", "updated_by", "change"];

/** The document as it can be sent back: computed fields removed. */
function editable(view) {
  const doc = {};
  for (const [k, v] of Object.entries(view)) if (!COMPUTED.includes(k)) doc[k] = v;
  if (doc.agents) {
    const agents = {};
    for (const [name, agent] of Object.entries(doc.agents)) {
      const { effective_allow: _computed, ...rest } = agent;
      agents[name] = rest;
    }
    doc.agents = agents;
  }
  return doc;
}

const pretty = (doc) => JSON.stringify(doc, null, 2);

export function configPage(root) {
  const choice = h("select", { id: "config-doc" }, Object.entries(DOCUMENTS).map(([k, d]) => h("option", { value: k }, d.title)));
  const body = h("div", {});
  replace(root, h("h1", {}, "Configuration"), h("div", { class: "toolbar" }, field("Document", choice)), body);
  choice.addEventListener("change", () => load(DOCUMENTS[choice.value], body));
  load(DOCUMENTS.sandbox, body);
  return null;
}

async function load(doc, body) {
  replace(body, h("p", { "aria-busy": "true" }, "Loading…"));
  let view;
  try {
    view = await api("GET", doc.path);
  } catch (e) {
    replace(body, problem(e));
    return;
  }
  editor(doc, view, body);
}

function editor(doc, view, body, draft) {
  const base = pretty(editable(view));
  const text = h("textarea", { id: "config-text", rows: 24, spellcheck: "false", class: "mono" });
  text.value = draft || base;
  const reason = h("input", { id: "config-reason", type: "text", maxlength: 1000, autocomplete: "off" });
  const previewButton = h("button", { type: "button", id: "config-preview" }, "Preview changes");
  const saveButton = h("button", { type: "button", id: "config-save", class: "primary", disabled: true }, "Save");
  const result = h(
    "div",
    { id: "config-result", "aria-live": "polite" },
    h("p", { class: "empty" }, "Edit the document and preview: the diff and every loosening show here, checked by the server, before anything is saved."),
  );
  let previewed = null; // { text, weakening } of the last clean preview

  const meta = h(
    "dl",
    { class: "meta" },
    h("dt", {}, "Version"),
    h("dd", { id: "config-version" }, String(view.version)),
    h("dt", {}, "Saved"),
    h("dd", {}, view.version === 0 ? "never (defaults apply)" : time(view.updated_at) + " by " + view.updated_by),
  );
  const effective = view.agents
    ? section(
        "Effective allow-lists",
        table(
          "Effective allow-lists",
          ["Agent", "Allow", "Effective (what the proxy enforces)"],
          Object.entries(view.agents).map(([name, a]) =>
            h("tr", {}, h("td", {}, name), h("td", {}, (a.allow || []).join(", ") || "—"), h("td", {}, (a.effective_allow || []).join(", ") || "nothing")),
          ),
          "No agent is configured.",
        ),
      )
    : null;

  text.addEventListener("input", () => {
    previewed = null;
    saveButton.disabled = true;
  });
  reason.addEventListener("input", () => {
    if (previewed) saveButton.disabled = !canSave(previewed, reason.value);
  });

  previewButton.addEventListener("click", async () => {
    const sent = parse(text.value, result);
    if (!sent) return;
    previewed = null;
    saveButton.disabled = true;
    replace(result, h("p", { "aria-busy": "true" }, "Checking with the server…"));
    try {
      const answer = await put(doc, view.version, sent, reason.value, true);
      previewed = { text: text.value, weakening: answer.change.weakening, allowed: true };
      replace(result, diffView(base, pretty(editable(answer)), "version " + view.version, "your edit"), loosenings(answer.change.loosenings, [], true), impactView(answer.change.impact));
    } catch (e) {
      if (e instanceof ApiError && e.code === "weakening_refused") {
        const missing = e.body.missing || [];
        const allowed = !missing.includes("governance.weaken");
        previewed = { text: text.value, weakening: true, allowed };
        replace(result, diffView(base, pretty(sent), "version " + view.version, "your edit"), loosenings(e.body.loosenings, missing, allowed), impactView(e.body.impact));
      } else if (e instanceof ApiError && e.code === "version_conflict") {
        conflict(doc, view, text.value, body, result);
      } else {
        replace(result, problem(e));
      }
    }
    if (previewed) saveButton.disabled = !canSave(previewed, reason.value);
    announce("Preview ready");
  });

  saveButton.addEventListener("click", async () => {
    const sent = parse(text.value, result);
    if (!sent || !previewed || previewed.text !== text.value) return;
    saveButton.disabled = true;
    try {
      const answer = await put(doc, view.version, sent, reason.value, false);
      replace(body);
      editor(doc, answer, body);
      const saved = h(
        "div",
        { class: "alert alert-ok", role: "status", id: "config-saved" },
        "Saved version " + answer.version + (answer.change.weakening ? " (a weakening, reason: " + answer.change.reason + ")" : "") + ".",
      );
      body.prepend(saved);
      announce("Saved version " + answer.version);
    } catch (e) {
      if (e instanceof ApiError && e.code === "version_conflict") conflict(doc, view, text.value, body, result);
      else replace(result, problem(e));
    }
  });

  // A proposal goes into the editor as an edit of the document it extends, then through the preview.
  const proposals =
    DOCUMENTS.sandbox === doc
      ? proposalSection(view, (agent, allowAfter) => {
          const edited = editable(view);
          edited.agents[agent] = { ...edited.agents[agent], allow: allowAfter };
          text.value = pretty(edited);
          text.dispatchEvent(new Event("input"));
          replace(result, h("p", { class: "empty", id: "config-proposal-loaded" }, "The proposal for " + agent + " is in the editor: preview it to see its loosenings and impact."));
          text.focus();
          announce("Proposal put into the editor");
        })
      : null;

  replace(
    body,
    section(
      DOCUMENTS.sandbox === doc ? "Sandbox configuration" : "Instance egress policy",
      meta,
      h(
        "div",
        { class: "editor-grid" },
        h(
          "div",
          {},
          field("Document (JSON; computed fields such as effective_allow are left out)", text),
          field("Reason", reason, "Required when the change loosens anything; recorded in the audit log (a change ticket, a sentence)."),
          h("div", { class: "actions" }, previewButton, saveButton),
        ),
        h("div", { class: "preview" }, h("h3", {}, "Before saving"), result),
      ),
    ),
    proposals,
    effective,
  );
}

function canSave(previewed, reasonText) {
  if (!previewed.allowed) return false;
  return !previewed.weakening || reasonText.trim().length > 0;
}

function parse(value, result) {
  try {
    const doc = JSON.parse(value);
    if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new Error("the document must be a JSON object");
    return doc;
  } catch (e) {
    replace(result, h("div", { class: "alert alert-error", role: "alert" }, "Read the document: " + e.message + " (fix the JSON and preview again)"));
    return null;
  }
}

function put(doc, version, sent, reason, dryRun) {
  const body = { ...sent };
  delete body.version;
  if (reason.trim()) body.reason = reason.trim();
  else delete body.reason;
  return api("PUT", doc.path + (dryRun ? "?dry_run=true" : ""), { body, headers: { "If-Match": '"' + version + '"' } });
}

function loosenings(list, missing, allowed) {
  if (list.length === 0) {
    return h("div", { class: "alert alert-ok", id: "config-loosenings", "data-loosenings": "0" }, "This change loosens nothing: it needs only agent_sandbox.configure.");
  }
  const needs = [];
  if (!allowed) {
    needs.push(h("p", { class: "refusal", id: "config-refusal" }, "Refused: this token lacks the scope ", h("code", {}, "governance.weaken"), ", which every loosening needs. Ask someone who holds it to save this change."));
  } else if (missing.includes("reason")) {
    needs.push(h("p", {}, "Saving needs a reason: enter one above."));
  }
  return h(
    "div",
    { class: "alert " + (allowed ? "alert-warn" : "alert-error"), id: "config-loosenings", "data-loosenings": String(list.length), role: allowed ? null : "alert" },
    h("p", {}, h("strong", {}, "This change loosens " + list.length + (list.length === 1 ? " thing" : " things")), " and needs governance.weaken and a reason:"),
    h("ul", {}, list.map((l) => h("li", {}, h("code", {}, l.path), " ", h("span", { class: "badge badge-warn" }, l.kind), " ", l.detail))),
    needs,
  );
}

async function conflict(doc, view, draft, body, result) {
  let newer;
  try {
    newer = await api("GET", doc.path);
  } catch (e) {
    replace(result, problem(e));
    return;
  }
  const newerText = pretty(editable(newer));
  const restart = h("button", { type: "button", id: "config-rebase" }, "Edit version " + newer.version + " (your edit stays below to copy from)");
  restart.addEventListener("click", () => {
    editor(doc, newer, body, null);
    body.append(section("Your earlier edit", h("pre", { class: "mono" }, draft)));
  });
  replace(
    result,
    h(
      "div",
      { class: "alert alert-error", role: "alert", id: "config-conflict" },
      h("p", {}, h("strong", {}, "Version conflict: "), "you edited version " + view.version + ", but version " + newer.version + " was saved since (" + time(newer.updated_at) + " by " + newer.updated_by + ")."),
      restart,
    ),
    diffView(newerText, draft, "version " + newer.version, "your edit"),
  );
}
