// The overview's chart: runs started and egress denials per hour, drawn as SVG elements by this
// code (no library, no inline style: colours come from classes in console.css).
import { h } from "./dom.js";

const WIDTH = 720;
const HEIGHT = 200;
const PAD = { left: 36, right: 12, top: 12, bottom: 28 };

/** Counts rows per hour over the last {@code hours} hours, for each series' audit types (a row weighing what {@code weight} says). */
export function bucket(rows, series, hours, now) {
  const end = Math.ceil(now / 3600000) * 3600000;
  const start = end - hours * 3600000;
  const counts = series.map(() => new Array(hours).fill(0));
  for (const row of rows) {
    const t = Date.parse(row.time);
    if (!(t >= start && t < end)) continue;
    const i = Math.floor((t - start) / 3600000);
    series.forEach((s, k) => {
      if (s.types.includes(row.type)) counts[k][i] += s.weight ? s.weight(row) : 1;
    });
  }
  return { start, counts };
}

export function chart(title, series, data, hours) {
  const max = Math.max(1, ...data.counts.flat());
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotW / hours;
  const barW = Math.max(2, (slot - 4) / series.length);
  const y = (v) => PAD.top + plotH - (v / max) * plotH;
  const nodes = [];
  for (const tick of [0, Math.ceil(max / 2), max]) {
    nodes.push(h("svg:line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(tick), y2: y(tick), class: "grid" }));
    nodes.push(h("svg:text", { x: PAD.left - 6, y: y(tick) + 4, class: "axis", "text-anchor": "end" }, String(tick)));
  }
  for (let i = 0; i < hours; i++) {
    series.forEach((s, k) => {
      const v = data.counts[k][i];
      const x = PAD.left + i * slot + 2 + k * barW;
      const label = s.label + " " + hourLabel(data.start, i) + ": " + v;
      nodes.push(
        h("svg:rect", { x, y: y(v), width: barW, height: Math.max(0, PAD.top + plotH - y(v)), class: "bar " + s.cls }, h("svg:title", {}, label)),
      );
    });
    if (i % 4 === 0) {
      nodes.push(h("svg:text", { x: PAD.left + i * slot + slot / 2, y: HEIGHT - 8, class: "axis", "text-anchor": "middle" }, hourLabel(data.start, i)));
    }
  }
  const totals = series.map((s, k) => s.label + ": " + data.counts[k].reduce((a, b) => a + b, 0));
  const desc = title + ". " + totals.join(", ") + ".";
  return h(
    "figure",
    { class: "chart" },
    h("svg:svg", { viewBox: "0 0 " + WIDTH + " " + HEIGHT, role: "img", "aria-label": desc, class: "chart-svg" }, nodes),
    h(
      "figcaption",
      {},
      series.map((s, k) => h("span", { class: "legend" }, h("span", { class: "swatch " + s.cls, "aria-hidden": "true" }), s.label + " (" + data.counts[k].reduce((a, b) => a + b, 0) + ")")),
      h("span", { class: "hint" }, title),
    ),
  );
}

function hourLabel(start, i) {
  const d = new Date(start + i * 3600000);
  return String(d.getUTCHours()).padStart(2, "0") + ":00";
}
