// A run's artifacts: the files it left in /workspace/out, kept for review. A download is a fetch
// with the bearer header (never a link carrying the token), checked against the listed SHA-256
// before the browser is handed the bytes to save.
import { api, problem, runPath } from "./api.js";
import { h, replace, table } from "./dom.js";
import { artifactsSummary } from "./timeline.js";

/**
 * Lists the artifacts of {@code runId} in {@code el}. {@code outputsRow} is the detail of the run's
 * agent_sandbox.artifacts audit row (from its timeline), which says what was dropped and why, or
 * why nothing was collected; null when unknown.
 */
export async function showArtifacts(el, runId, outputsRow, signal) {
  let listing;
  try {
    listing = await api("GET", runPath(runId, "artifacts"), { signal });
  } catch (e) {
    if (e.name !== "AbortError") replace(el, problem(e));
    return;
  }
  const rows = listing.artifacts.map((a) => artifactRow(runId, a));
  const dropped = outputsRow && Array.isArray(outputsRow.dropped) ? outputsRow.dropped : [];
  replace(
    el,
    h("p", { class: "hint" }, "Kept in ", h("code", {}, listing.store), outputsRow ? "; " + artifactsSummary(outputsRow) + "." : "."),
    table("Artifacts", ["Path", "Size", "SHA-256", ""], rows, outputsRow && outputsRow.collected === false ? "Nothing was collected: " + outputsRow.reason + "." : "The run left no file in /workspace/out."),
    dropped.length > 0
      ? h(
          "details",
          { id: "artifacts-dropped" },
          h("summary", {}, dropped.length + " dropped"),
          h("ul", {}, dropped.map((d) => h("li", {}, h("code", {}, d.path), " — " + d.reason))),
        )
      : null,
  );
}

function artifactRow(runId, artifact) {
  const state = h("span", { class: "hint", "aria-live": "polite" });
  const button = h("button", { type: "button", class: "download", "aria-label": "Download " + artifact.path }, "Download");
  button.addEventListener("click", () => download(runId, artifact, button, state));
  return h(
    "tr",
    { "data-path": artifact.path },
    h("td", {}, h("code", {}, artifact.path)),
    h("td", { class: "num", title: artifact.size + " bytes" }, size(artifact.size)),
    h("td", { class: "hash" }, h("code", {}, artifact.sha256)),
    h("td", {}, button, " ", state),
  );
}

async function download(runId, artifact, button, state) {
  button.disabled = true;
  replace(state, "downloading…");
  delete state.dataset.verified;
  try {
    // The path is sent as the listing named it; the URL is built here, not taken from the answer.
    const url = runPath(runId, "artifacts", "file") + "?path=" + encodeURIComponent(artifact.path);
    const response = await api("GET", url, { stream: true, accept: "application/octet-stream" });
    const blob = await response.blob();
    const digest = await sha256(blob);
    if (digest !== null && digest !== artifact.sha256) {
      replace(state, h("span", { class: "alert-inline", role: "alert" }, "Not saved: the bytes received hash to " + digest + ", not the listed " + artifact.sha256 + " (download again)."));
      state.dataset.verified = "false";
      return;
    }
    const link = h("a", { href: URL.createObjectURL(blob), download: artifact.path.split("/").pop() }, "");
    document.body.append(link);
    link.click();
    link.remove();
    window.setTimeout(() => URL.revokeObjectURL(link.href), 60000);
    replace(state, "saved, " + blob.size + " bytes" + (digest === null ? " (SHA-256 not checked: the browser offers no digest outside a secure context)" : ", SHA-256 matches"));
    state.dataset.verified = digest === null ? "unchecked" : "true";
  } catch (e) {
    replace(state, problem(e));
  } finally {
    button.disabled = false;
  }
}

/** The SHA-256 of {@code blob} in hex, or null where the browser has no WebCrypto (plain HTTP off loopback). */
async function sha256(blob) {
  if (!window.crypto || !window.crypto.subtle) return null;
  const bytes = new Uint8Array(await window.crypto.subtle.digest("SHA-256", await blob.arrayBuffer()));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function size(bytes) {
  if (bytes < 1024) return bytes + " B";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KiB";
  return (bytes / 1024 / 1024).toFixed(1) + " MiB";
}
