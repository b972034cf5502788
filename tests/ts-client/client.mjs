// Drives a reviewsd server with the official MCP TypeScript SDK; tests/test_mcp_ts_sdk.py runs it as
// `node client.mjs http://127.0.0.1:PORT/mcp` and checks the JSON it prints on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "reviewsd-ts-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
await client.connect(transport);

const out = { protocolVersion: transport.protocolVersion, server: client.getServerVersion(), pages: {} };
let largest = 0;
async function call(name, args) {
  // The SDK checks structuredContent against the tool's outputSchema (listed first).
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  largest = Math.max(largest, JSON.stringify(result.structuredContent).length, result.content[0].text.length);
  return result;
}

out.tools = (await client.listTools()).tools.map((tool) => tool.name);
const found = await call("search", { query: "google reviews" });
out.search = found.structuredContent.results;
out.links = found.content.filter((block) => block.type === "resource_link").map((block) => block.uri);
out.fetched = [];
for (const result of out.search.slice(0, 5)) {
  out.fetched.push((await call("fetch", { id: result.id })).structuredContent);
}
async function pageThrough(name, first) {
  const ids = [];
  let args = first;
  for (;;) {
    const page = (await call(name, args)).structuredContent;
    ids.push(...page.reviews.map((review) => review.id));
    if (page.next_cursor === null) return ids;
    args = { ...args, cursor: page.next_cursor };
  }
}
for (const sort of ["newest", "oldest", "highest", "lowest"]) {
  out.pages[sort] = await pageThrough("search_reviews", { sort, limit: 100 });
}
out.since = await pageThrough("get_reviews_since", { since: "2000-01-01", limit: 500 });
out.largest = largest;
await client.close();
console.log(JSON.stringify(out));
