// Drives the official @cursor/sdk for nativetest's sdk_test.go: one agent,
// one or more prompts (a conversation), printing every SDK message and
// each run's result as JSON lines on stdout.
//
// Environment: CURSOR_SDK_DIR (a directory whose node_modules holds
// @cursor/sdk), CURSOR_BACKEND_URL (the fake), CURSOR_API_KEY, DRIVER_MODEL,
// DRIVER_PROMPTS (a JSON array of prompts), DRIVER_CWD, and DRIVER_TOOL=1 to
// declare the custom tool "lookup".
import { writeSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

// Written synchronously: the driver exits as soon as it is done, which
// would cut asynchronous writes to a pipe.
const out = (v) => writeSync(1, JSON.stringify(v) + "\n");

const sdkDir = process.env.CURSOR_SDK_DIR;
const require = createRequire(path.join(sdkDir, "noop.js"));
// Resolve the package's ESM entry next to its CommonJS one.
const cjs = require.resolve("@cursor/sdk");
const pkgRoot = cjs.slice(0, cjs.lastIndexOf(path.join("dist", "cjs")));
const { Agent } = await import(pathToFileURL(path.join(pkgRoot, "dist", "esm", "index.js")).href);

const customTools = {};
if (process.env.DRIVER_TOOL === "1") {
  customTools.lookup = {
    description: "Looks up the weather of a city.",
    inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    execute: async (args, ctx) => {
      out({ type: "driver_tool", args, toolCallId: ctx?.toolCallId });
      return `sunny in ${args.city}`;
    },
  };
}

const timer = setTimeout(() => {
  out({ type: "driver_error", error_message: "driver timed out" });
  process.exit(3);
}, Number(process.env.DRIVER_TIMEOUT_MS || 60000));

try {
  const agent = await Agent.create({
    apiKey: process.env.CURSOR_API_KEY,
    model: { id: process.env.DRIVER_MODEL },
    local: { cwd: process.env.DRIVER_CWD, customTools, enableAgentRetries: false },
  });
  for (const prompt of JSON.parse(process.env.DRIVER_PROMPTS)) {
    const run = await agent.send(prompt);
    for await (const m of run.stream()) out({ type: "sdk_message", message: m });
    const res = await run.wait();
    out({ type: "driver_result", status: res.status, result: res.result ?? null, error: res.error ?? null, usage: res.usage ?? null });
  }
  await agent[Symbol.asyncDispose]?.();
} catch (e) {
  out({ type: "driver_error", name: e?.name, error_message: String(e?.message ?? e), code: e?.code ?? null });
  clearTimeout(timer);
  process.exit(2);
}
clearTimeout(timer);
process.exit(0);
