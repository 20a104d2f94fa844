// Drives the official @cursor/sdk's cloud client for cloudtest's
// sdk_test.go, printing what it saw as JSON lines on stdout.
//
// Environment: CURSOR_SDK_DIR (a directory whose node_modules holds
// @cursor/sdk), CURSOR_BACKEND_URL (the fake), CURSOR_API_KEY, DRIVER_REPO,
// and DRIVER_STEPS, a JSON array of steps run in order on one agent:
// {"op":"send","prompt":"…"} sends a prompt and waits for its result;
// {"op":"send","prompt":"…","cancel":true} cancels the run after its first
// message; {"op":"account"} lists models, the key's owner and repositories.
import { writeSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const out = (v) => writeSync(1, JSON.stringify(v) + "\n");

const sdkDir = process.env.CURSOR_SDK_DIR;
const require = createRequire(path.join(sdkDir, "noop.js"));
const cjs = require.resolve("@cursor/sdk");
const pkgRoot = cjs.slice(0, cjs.lastIndexOf(path.join("dist", "cjs")));
const { Agent, Cursor } = await import(pathToFileURL(path.join(pkgRoot, "dist", "esm", "index.js")).href);

const timer = setTimeout(() => {
  out({ type: "driver_error", error_message: "driver timed out" });
  process.exit(3);
}, Number(process.env.DRIVER_TIMEOUT_MS || 60000));

const apiKey = process.env.CURSOR_API_KEY;
try {
  let agent;
  for (const step of JSON.parse(process.env.DRIVER_STEPS)) {
    if (step.op === "account") {
      const models = await Cursor.models.list({ apiKey });
      const me = await Cursor.me({ apiKey });
      const repos = await Cursor.repositories.list({ apiKey });
      out({ type: "account", models: models.map((m) => m.id), me, repos });
      continue;
    }
    agent ??= await Agent.create({
      apiKey,
      model: { id: "composer-2" },
      cloud: { repos: [{ url: process.env.DRIVER_REPO, startingRef: "main" }], autoCreatePR: true },
    });
    try {
      const texts = [];
      const run = await agent.send(step.prompt, {
        onDelta: ({ update }) => {
          if (update?.type === "text-delta") texts.push(update.text);
        },
      });
      for await (const m of run.stream()) {
        out({ type: "sdk_message", message: m });
        if (step.cancel && (m.type === "assistant" || m.type === "status")) {
          await run.cancel();
          break;
        }
      }
      const res = await run.wait();
      out({ type: "driver_result", agentId: agent.agentId, runId: run.id, status: res.status, result: res.result ?? null, error: res.error ?? null, git: res.git ?? null, texts });
    } catch (e) {
      out({ type: "driver_send_error", name: e?.name, error_message: String(e?.message ?? e), code: e?.code ?? null, http_status: e?.status ?? null });
    }
  }
} catch (e) {
  out({ type: "driver_error", name: e?.name, error_message: String(e?.message ?? e), code: e?.code ?? null });
  clearTimeout(timer);
  process.exit(2);
}
clearTimeout(timer);
process.exit(0);
