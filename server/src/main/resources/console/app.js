// The console's entry point: sign-in, the page router (the URL fragment names the page, never
// a secret), and the sign-out that forgets the token.
import { TOKEN, api, isRunId, problem, session } from "./api.js";
import { announce, field, h, replace, visible } from "./dom.js";
import { overviewPage } from "./overview.js";
import { configPage } from "./config.js";
import { planPage } from "./plan.js";
import { runsPage } from "./runs.js";
import { runPage } from "./run.js";
import { auditPage } from "./audit.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
let cleanup = null;

const PAGES = {
  overview: { title: "Overview", render: overviewPage },
  config: { title: "Configuration", render: configPage },
  plan: { title: "Plan", render: planPage },
  runs: { title: "Runs", render: runsPage },
  run: { title: "Run", render: runPage },
  audit: { title: "Audit", render: auditPage },
};

function route() {
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  if (!session.token()) {
    showSignIn();
    return;
  }
  nav.hidden = false;
  showWho();
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  let name = parts[0] || "overview";
  let arg = null;
  try {
    arg = parts[1] ? decodeURIComponent(parts[1]) : null;
  } catch (e) {
    arg = parts[1]; // malformed percent-encoding: shown as written, and refused below
  }
  if (name === "runs" && arg) name = "run";
  // A run's id comes from the address, which anyone can write into a link: only an id of the id
  // alphabet reaches a page that builds requests from it (#/runs/x%2F..%2FVICTIM is no run).
  if ((name === "run" || (name === "audit" && arg !== null)) && !isRunId(arg)) {
    showNotARun(arg);
    return;
  }
  const page = PAGES[name] || PAGES.overview;
  for (const link of nav.querySelectorAll("a")) {
    const current = link.dataset.page === (name === "run" ? "runs" : name);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = page.title + " · Agent Sandbox console";
  const container = h("div", { class: "page", "data-page": name });
  replace(main, container);
  cleanup = page.render(container, arg) || null;
  main.focus({ preventScroll: true });
  announce(page.title);
}

// Who is signed in: the token's name and, for a token limited to agents, which ones. Only what the
// server said of the token is kept (never the token itself outside the session's one slot).
let self = null;

function showWho() {
  const out = h("button", { type: "button", class: "link", onclick: signOut }, "Sign out");
  if (!self) {
    replace(who, h("span", {}, "Signed in"), " ", out);
    api("GET", TOKEN)
      .then((answer) => {
        self = answer;
        showWho();
      })
      .catch(() => {}); // the pages say what the token may not do; the header stays short
    return;
  }
  const agents = Array.isArray(self.agents)
    ? h("span", { class: "agents", id: "who-agents" }, " · limited to agents: ", self.agents.join(", "))
    : h("span", { class: "agents", id: "who-agents" }, " · every agent");
  replace(who, h("span", { id: "who-name" }, "Signed in as ", visible(self.name)), agents, " ", out);
}

function showNotARun(arg) {
  document.title = "Not a run · Agent Sandbox console";
  replace(
    main,
    h(
      "div",
      { class: "page", "data-page": "not-a-run" },
      h("h1", {}, "Not a run"),
      h(
        "div",
        { class: "alert alert-error", role: "alert", id: "run-invalid" },
        h("p", {}, "This address names no run: ", h("code", {}, visible(JSON.stringify(arg))), " is not a run id (1 to 32 lowercase letters and digits). Nothing was asked of the control plane."),
        h("p", {}, h("a", { href: "#/runs" }, "Runs")),
      ),
    ),
  );
  main.focus({ preventScroll: true });
  announce("Not a run");
}

function showSignIn(reason) {
  nav.hidden = true;
  replace(who);
  const input = h("input", { type: "password", name: "token", autocomplete: "off", spellcheck: "false", required: true, id: "token" });
  const status = h("div", { class: "status" });
  const form = h(
    "form",
    { class: "card signin", "aria-labelledby": "signin-title", novalidate: true },
    h("h1", { id: "signin-title" }, "Sign in"),
    h("p", {}, "Paste an API token (", h("code", {}, "agent-sandbox token create"), "). It is kept in this tab only and sent as a bearer header."),
    field("API token", input),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
    status,
  );
  if (reason) replace(status, h("div", { class: "alert alert-error", role: "alert" }, reason));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      replace(status, h("div", { class: "alert alert-error", role: "alert" }, "Enter a token."));
      input.focus();
      return;
    }
    session.signIn(token);
    try {
      // Any valid token may ask who it is; a token without agent_sandbox.read is still a valid
      // token, and each page says what it lacks.
      self = await api("GET", TOKEN);
    } catch (e) {
      session.signOut();
      self = null;
      replace(status, problem(e));
      input.select();
      return;
    }
    input.value = "";
    if (!location.hash || location.hash === "#/") location.hash = "#/overview";
    else route();
  });
  replace(main, h("div", { class: "page page-signin" }, form));
  input.focus();
}

function signOut() {
  session.signOut();
  self = null;
  location.hash = "#/";
  route();
}

window.addEventListener("asb-signed-out", (event) => {
  session.signOut();
  self = null;
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  showSignIn("Signed out: " + (event.detail.message || "the token was refused") + ".");
});
window.addEventListener("hashchange", route);
route();
