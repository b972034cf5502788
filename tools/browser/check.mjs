// Loads each page in headless chromium at two widths and both colour schemes, and reports what fails:
// axe-core violations, horizontal overflow, requests leaving the origin, console errors (CSP included).
// Run by tools/browser-check, which starts the server; argv[2] is a JSON job:
// {chromium, origin, shots, only, maxShotHeight, pages: [{name, url}], framing: {embedder, widget, page}};
// `only` (optional) lists the screenshots to keep as "name-width-scheme"; `framing` (optional): the page
// at `embedder`, of another origin, frames `widget` and `page`, and must show the first and not the second.
// Prints one line per check; exit status 1 when anything failed.

import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { createRequire } from "node:module";
import puppeteer from "puppeteer-core";

const require = createRequire(import.meta.url);
const AXE_SOURCE = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const job = JSON.parse(process.argv[2]);
const WIDTHS = [375, 1280];
const SCHEMES = ["light", "dark"];

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "reviewsd-chromium-"));
const browser = await puppeteer.launch({
  executablePath: job.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`],
});

const failures = [];
function fail(where, what) {
  failures.push(`${where}: ${what}`);
  console.log(`FAIL ${where}: ${what}`);
}

async function checkPage(target, width, scheme) {
  const where = `${target.name} @${width}px ${scheme}`;
  const failedBefore = failures.length;
  const page = await browser.newPage();
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: scheme }]);
  await page.setViewport({ width, height: 900 });
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    const url = request.url();
    if (url.startsWith("data:") || new URL(url).origin === job.origin) return request.continue();
    fail(where, `request leaves the origin: ${url.slice(0, 120)}`);
    return request.abort();
  });
  page.on("console", (message) => {
    if (message.type() === "error") fail(where, `console error: ${message.text()}`);
  });
  page.on("pageerror", (error) => fail(where, `page error: ${error.message}`));
  const response = await page.goto(target.url, { waitUntil: "load" });
  if (!response.ok()) fail(where, `HTTP ${response.status()}`);

  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
  if (scrollWidth > innerWidth) fail(where, `horizontal overflow: ${scrollWidth} px > ${innerWidth} px`);

  // Runtime.evaluate is not subject to the page's CSP (script-src 'none'), so axe runs in the page as is.
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  for (const violation of result.violations) {
    const nodes = violation.nodes.slice(0, 3).map((node) => node.target.join(" ")).join(" | ");
    fail(where, `axe ${violation.id} (${violation.impact}): ${violation.help}: ${nodes}`);
  }
  const shot = `${target.name}-${width}-${scheme}`;
  if (job.shots && (!job.only || job.only.includes(shot))) {
    const file = path.join(job.shots, `${shot}.png`);
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    const clipHeight = job.maxShotHeight ? Math.min(height, job.maxShotHeight) : height;
    const clip = { x: 0, y: 0, width, height: clipHeight };
    await page.screenshot({ path: file, clip, captureBeyondViewport: true });
  }
  await page.close();
  if (failures.length === failedBefore) console.log(`ok   ${where}`);
}

// Another origin (tools/browser-check serves it on another port) frames the widget and a page.
async function checkFraming({ embedder, widget, page: other }) {
  const failedBefore = failures.length;
  const page = await browser.newPage();
  const refusals = [];
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    const url = request.url();
    const origin = url.startsWith("data:") ? null : new URL(url).origin;
    if (!origin || origin === job.origin || origin === new URL(embedder).origin) return request.continue();
    fail("framing", `request leaves the origin: ${url.slice(0, 120)}`);
    return request.abort();
  });
  page.on("console", (message) => {
    if (message.type() === "error") refusals.push(message.text());
  });
  await page.goto(embedder, { waitUntil: "load" });
  const shows = async (url) => {
    const frame = page.frames().find((f) => f.url() === url);
    return Boolean(frame && (await frame.$("h1")));
  };
  if (!(await shows(widget))) fail("framing", `another site cannot frame ${widget}`);
  if (await shows(other)) fail("framing", `another site can frame ${other}`);
  if (!refusals.some((text) => text.includes("frame-ancestors") && text.includes(other))) {
    fail("framing", `no frame-ancestors refusal for ${other}: ${JSON.stringify(refusals)}`);
  }
  if (refusals.some((text) => text.includes(widget))) fail("framing", `widget refused: ${refusals}`);
  await page.close();
  if (failures.length === failedBefore) console.log("ok   framing: another site frames the widget, not /");
}

try {
  if (job.framing) await checkFraming(job.framing);
  for (const target of job.pages) {
    for (const width of WIDTHS) {
      for (const scheme of SCHEMES) await checkPage(target, width, scheme);
    }
  }
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(failures.length ? `browser check: ${failures.length} failure(s)` : "browser check: no failures");
process.exit(failures.length ? 1 : 0);
