// The inspected suite's Node probe: fetch through the sandbox's proxy (undici's ProxyAgent: Node
// 18's fetch reads no proxy variable), trusting NODE_EXTRA_CA_CERTS, which the platform set to the
// run's CA. Usage: node inspect-probe.js ROUNDS ALLOWED_URL REFUSED_URL.
const { ProxyAgent } = require("undici");
const [rounds, allowed, refused] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
(async () => {
  for (let i = 1; i <= rounds; i++) {
    for (const [cell, url] of [["inspected", allowed], ["refused-path", refused]]) {
      let result;
      try {
        const dispatcher = new ProxyAgent(process.env.https_proxy);
        const answer = await fetch(url, { dispatcher, signal: AbortSignal.timeout(20000) });
        const body = (await answer.text()).replace(/\s+/g, " ").slice(0, 200);
        result = `status=${answer.status} body=${body}`;
      } catch (e) {
        const cause = e.cause ? ` (${e.cause.code || e.cause.message})` : "";
        result = `error=${e.name}: ${String(e.message).replace(/\s+/g, " ")}${cause}`;
      }
      console.log(`@@ node ${cell} ${i} ${result}`);
    }
  }
})();
