// Builds DOM nodes from data without ever parsing strings as HTML: every value becomes a text
// node or an attribute, so nothing an API answer contains can turn into markup or script.
const SVG_NS = "http://www.w3.org/2000/svg";

export function h(tag, attrs, ...children) {
  const svg = tag.startsWith("svg:");
  const el = svg ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "style") throw new Error("inline styles are refused by the console's CSP");
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

/** Says something to screen readers without moving focus. */
export function announce(text) {
  const region = document.getElementById("announce");
  region.textContent = "";
  window.setTimeout(() => (region.textContent = text), 30);
}

export function time(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function section(title, ...body) {
  const id = "h-" + title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), body);
}

export function field(label, control, hint) {
  const id = control.id || "f-" + Math.random().toString(36).slice(2, 9);
  control.id = id;
  const hintId = hint ? id + "-hint" : null;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    control,
    hint ? h("span", { class: "hint", id: hintId }, hint) : null,
  );
}

export function table(caption, headers, rows, empty) {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "table",
    {},
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows),
  );
}

export function badge(text, kind) {
  return h("span", { class: "badge badge-" + (kind || text) }, text);
}

/**
 * Text another user or a workload chose (a command, an id from the address), with each control,
 * bidirectional or invisible character written as <U+XXXX>: set as text it cannot inject markup,
 * and shown so it cannot reorder or hide what a reviewer reads either (U+202E would show a command
 * backwards from that point).
 */
export function visible(text) {
  return String(text).replace(
    /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g,
    (c) => "<U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + ">",
  );
}
