// Drives the official openai npm package's Responses client against a
// gateway serving Cursor Cloud Agents (handlers/cloud_node_test.go):
// background create, polling, stream resume with starting_after, a
// follow-up and a cancel, printing what it saw as JSON lines.
//
// Environment: OPENAI_NODE_DIR (a directory whose node_modules holds
// openai), GATEWAY_URL, GATEWAY_KEY.
import { writeSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const out = (v) => writeSync(1, JSON.stringify(v) + "\n");
const require = createRequire(path.join(process.env.OPENAI_NODE_DIR, "noop.js"));
const OpenAI = require("openai").default ?? require("openai");

const timer = setTimeout(() => {
  out({ type: "driver_error", error_message: "driver timed out" });
  process.exit(3);
}, 60000);

const client = new OpenAI({ baseURL: process.env.GATEWAY_URL + "/v1", apiKey: process.env.GATEWAY_KEY, maxRetries: 0 });
const metadata = { repository: "acme/widgets", ref: "main", auto_create_pr: "true" };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function poll(id) {
  for (let i = 0; i < 500; i++) {
    const r = await client.responses.retrieve(id);
    if (r.status !== "queued" && r.status !== "in_progress") return r;
    await sleep(20);
  }
  throw new Error("still running");
}

try {
  const created = await client.responses.create({ model: "cursor-cloud", input: "fix it slowly", background: true, metadata });
  out({ type: "created", id: created.id, status: created.status, background: created.background });
  const done = await poll(created.id);
  out({ type: "done", status: done.status, text: done.output_text, metadata: done.metadata });

  const seqs = [];
  for await (const ev of await client.responses.retrieve(created.id, { stream: true, starting_after: 4 })) {
    seqs.push([ev.sequence_number, ev.type]);
  }
  out({ type: "resumed", events: seqs });

  const follow = await client.responses.create({ model: "cursor-cloud", input: "now add a test", background: true, previous_response_id: created.id });
  const followDone = await poll(follow.id);
  out({ type: "follow_up", status: followDone.status, agent_id: followDone.metadata.agent_id, previous: followDone.previous_response_id ?? null });

  const long = await client.responses.create({ model: "cursor-cloud", input: "a long task", background: true, metadata });
  const cancelled = await client.responses.cancel(long.id);
  out({ type: "cancelled", status: cancelled.status });

  try {
    await client.responses.retrieve(created.id.slice(0, -2) + "AA");
    out({ type: "forged", status: 200 });
  } catch (e) {
    out({ type: "forged", status: e.status });
  }
} catch (e) {
  out({ type: "driver_error", error_message: String(e?.message ?? e), status: e?.status ?? null });
  clearTimeout(timer);
  process.exit(2);
}
clearTimeout(timer);
process.exit(0);
