// Plays an MCP Apps host (SEP-1865) in headless chromium for tests/test_mcp_app.py. argv[2] is a JSON job:
// {chromium, html (the app's document), result (a tools/call result to push), mcp (the server's /mcp URL),
// shots (a folder), also (optional: more results to push at the end, each reported as the words it shows)}.
// The host page frames the app (sandbox="allow-scripts", srcdoc), answers its
// ui/initialize, pushes the result as ui/notifications/tool-result once initialized, and forwards the app's
// tools/call to the server from node (so the page itself makes no request). Prints one JSON report.

import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { createRequire } from "node:module";
import puppeteer from "puppeteer-core";

const require = createRequire(import.meta.url);
const AXE_SOURCE = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const job = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const report = { messages: [], requests: [], errors: [], forwarded: [], axe: {}, shown: {}, words: [] };

const HOST = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Test host</title>
<style>body{margin:0}iframe{border:0;width:100%;height:2400px;display:block}</style></head><body>
<iframe id="app" title="Reviews app" sandbox="allow-scripts"></iframe>
<script>
const frame = document.getElementById("app");
const log = window.__log = [];
function post(message) { frame.contentWindow.postMessage(message, "*"); }
window.__push = (result) => post({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: result});
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const message = event.data;
  log.push(message.method || "response");
  if (message.method === "ui/initialize") {
    post({jsonrpc: "2.0", id: message.id, result: {protocolVersion: "2026-01-26",
      hostCapabilities: {serverTools: {}}, hostInfo: {name: "reviewsd-test-host", version: "1.0.0"},
      hostContext: {theme: "light", displayMode: "inline", platform: "web"}}});
  } else if (message.method === "ui/notifications/initialized") {
    post({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: window.__pushed});
  } else if (message.method === "tools/call") {
    const result = await window.forwardToolCall(message.params);
    post({jsonrpc: "2.0", id: message.id, result});
  }
});
</script></body></html>`;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "reviewsd-app-host-"));
const browser = await puppeteer.launch({
  executablePath: job.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`],
});
try {
  const page = await browser.newPage();
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    const url = request.url();
    if (url.startsWith("data:") || url === "about:blank" || url === "about:srcdoc") return request.continue();
    report.requests.push(url.slice(0, 200));
    return request.abort();
  });
  page.on("console", (message) => { if (message.type() === "error") report.errors.push(message.text()); });
  page.on("pageerror", (error) => report.errors.push(error.message));
  await page.exposeFunction("forwardToolCall", async (params) => {
    report.forwarded.push(params);
    const response = await fetch(job.mcp, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
                 "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": params.name },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { ...params, _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { name: "reviewsd-test-host", version: "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": {} } } }),
    });
    return (await response.json()).result;
  });
  await page.setViewport({ width: 800, height: 900 });
  await page.setContent(HOST, { waitUntil: "load" });
  await page.evaluate((pushed, html) => {
    window.__pushed = pushed;
    document.getElementById("app").srcdoc = html;
  }, job.result, job.html);
  const app = async () => page.frames().find((f) => f !== page.mainFrame());
  const shown = async () => (await app()).evaluate(() => document.querySelectorAll("#reviews li").length);
  await page.waitForFunction(() => window.__log.includes("ui/notifications/initialized"), { timeout: 20000 });
  const frame = await app();
  await frame.waitForFunction(() => document.querySelectorAll("#reviews li").length > 0, { timeout: 20000 });
  report.shown.pushed = await shown();
  report.status = await frame.evaluate(() => document.getElementById("status").textContent);

  await frame.evaluate(AXE_SOURCE);
  const axe = await frame.evaluate(async () => {
    const results = await window.axe.run(document, { resultTypes: ["violations"] });
    return results.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length})`);
  });
  report.axe.violations = axe;

  for (const width of [800, 400]) {
    await page.setViewport({ width, height: 900 });
    const height = await frame.evaluate(() => document.documentElement.scrollHeight);
    await page.setViewport({ width, height: Math.min(height, 2400) });
    await page.screenshot({ path: path.join(job.shots, `mcp-app-${width}.png`) });
    report.overflow = report.overflow || await frame.evaluate(
      () => document.documentElement.scrollWidth > window.innerWidth);
  }

  // A filter through the host: the form's tools/call is forwarded, and its result shown.
  await frame.select("select[name=max_rating]", "2");
  await frame.click("#search");
  await page.waitForFunction(() => window.__log.filter((m) => m === "tools/call").length === 1, { timeout: 20000 });
  await frame.waitForFunction(
    () => /shown|No reviews/.test(document.getElementById("status").textContent) &&
      !document.getElementById("status").textContent.startsWith("Searching"), { timeout: 20000 });
  report.shown.filtered = await shown();
  report.ratings = await frame.evaluate(() => Array.from(document.querySelectorAll("#reviews li .stars"))
    .map((s) => (s.textContent.match(/\u2605/g) || []).length));
  report.links = await frame.evaluate(() => Array.from(document.querySelectorAll("#reviews li a"))
    .map((a) => a.href));

  // Each further result pushed: the figures and aspect lines it shows.
  const words = () => frame.evaluate(() => Array.from(document.querySelectorAll("#figures p, #aspects p"))
    .map((p) => p.textContent));
  for (const result of job.also || []) {
    const before = JSON.stringify(await words());
    await page.evaluate((pushed) => window.__push(pushed), result);
    await frame.waitForFunction((was) => JSON.stringify(Array.from(
      document.querySelectorAll("#figures p, #aspects p")).map((p) => p.textContent)) !== was,
      { timeout: 20000 }, before);
    report.words.push(await words());
  }
  report.messages = await page.evaluate(() => window.__log);
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(report));
