// The suite's Node probe: the global fetch, one line per attempt. Node 18's fetch reads no proxy
// variable: like any Node program behind a proxy, this one installs undici's ProxyAgent (Debian's
// node-undici) as the global dispatcher. The test's CA comes from NODE_EXTRA_CA_CERTS.
// Usage: node probe.js ROUNDS (CommonJS: require() finds Debian's modules through NODE_PATH)
const { Agent, ProxyAgent, setGlobalDispatcher } = require("undici");

async function main() {
  const rounds = Number(process.argv[2]);
  const { ASB_IP: ip, ASB_HTTP_PORT: httpPort, ASB_TLS_PORT: tlsPort, http_proxy: proxy } = process.env;
  setGlobalDispatcher(new ProxyAgent(proxy));
  const direct = new Agent();
  const cells = [
    ["allowed", `http://web.test:${httpPort}/`, false],
    ["allowed-tls", `https://web.test:${tlsPort}/hello`, false],
    ["refused", `http://node.refused.test:${httpPort}/`, false],
    ["by-ip", `http://${ip}:${httpPort}/`, false],
    ["direct-ip", `http://${ip}:${httpPort}/`, true],
  ];
  const oneLine = (text) => String(text).split(/\s+/).join(" ").trim().slice(0, 300);

  for (let attempt = 1; attempt <= rounds; attempt++) {
    for (const [cell, url, bypass] of cells) {
      let result;
      try {
        const options = { signal: AbortSignal.timeout(20000) };
        if (bypass) options.dispatcher = direct;
        const answer = await fetch(url, options);
        result = `status=${answer.status} body=${oneLine(await answer.text())}`;
      } catch (e) {
        result = `error=${oneLine(`${e.name}: ${e.message}${e.cause ? ` (${e.cause.code || e.cause.message})` : ""}`)}`;
      }
      console.log(`@@ node ${cell} ${attempt} ${result}`);
    }
  }
}

main().catch((e) => {
  console.log(`probe failed: ${e}`);
  process.exitCode = 1;
});
