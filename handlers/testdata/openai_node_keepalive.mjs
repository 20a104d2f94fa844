// Streams one answer through the official openai npm package's Responses
// helper (client.responses.stream) from a gateway whose upstream falls
// silent mid-answer (handlers/codex_idle_cli_test.go), and prints the
// event types it emitted and its final response as one JSON line.
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
try {
  const stream = client.responses.stream({ model: "claude-sonnet-4.6", input: "Say something in two halves." });
  const types = [];
  for await (const ev of stream) types.push(ev.type);
  const final = await stream.finalResponse();
  out({ type: "result", types, status: final.status, text: final.output_text });
} catch (err) {
  out({ type: "driver_error", error_message: String(err?.message ?? err) });
}
clearTimeout(timer);
