// A line diff (longest common subsequence) of two texts, rendered as a table a screen reader can
// follow: each changed line says whether it was removed or added.
import { h } from "./dom.js";

const MAX_LINES = 3000;

export function diffLines(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  if (a.length > MAX_LINES || b.length > MAX_LINES) return null;
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push({ op: " ", text: a[i], old: i + 1, new: j + 1 });
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push({ op: "+", text: b[j], new: j + 1 });
      j++;
    } else {
      out.push({ op: "-", text: a[i], old: i + 1 });
      i++;
    }
  }
  return out;
}

/** The diff with three lines of context around each change; "No change" when there is none. */
export function diffView(before, after, beforeLabel, afterLabel) {
  const lines = diffLines(before, after);
  if (lines === null) return h("p", {}, "The documents are too long to compare here.");
  if (lines.every((l) => l.op === " ")) return h("p", { class: "empty", "data-diff": "none" }, "No change.");
  const keep = new Array(lines.length).fill(false);
  lines.forEach((l, k) => {
    if (l.op !== " ") for (let d = -3; d <= 3; d++) if (k + d >= 0 && k + d < lines.length) keep[k + d] = true;
  });
  const rows = [];
  let skipped = false;
  lines.forEach((l, k) => {
    if (!keep[k]) {
      if (!skipped) rows.push(h("tr", { class: "skip" }, h("td", { colspan: 3 }, "⋯")));
      skipped = true;
      return;
    }
    skipped = false;
    const cls = l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx";
    const sr = l.op === "+" ? "added: " : l.op === "-" ? "removed: " : "";
    rows.push(
      h(
        "tr",
        { class: cls },
        h("td", { class: "ln" }, l.old || ""),
        h("td", { class: "ln" }, l.new || ""),
        h("td", { class: "code" }, h("span", { class: "visually-hidden" }, sr), h("span", { "aria-hidden": "true" }, l.op + " "), l.text),
      ),
    );
  });
  return h(
    "table",
    { class: "diff", "data-diff": "changes" },
    h("caption", {}, "Changes from ", beforeLabel, " to ", afterLabel),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Old"), h("th", { scope: "col" }, "New"), h("th", { scope: "col" }, "Line"))),
    h("tbody", {}, rows),
  );
}
