// Runs one case (JS_CASE) of the Vercel AI SDK or LangChain.js against the
// gateway, set up as each library's own docs set up a provider, and prints
// what the user would see as JSON lines (handlers/js_frameworks_test.go).
//
// Environment: JS_FRAMEWORKS_DIR (a directory whose node_modules holds ai,
// @ai-sdk/*, @langchain/*, zod), GATEWAY_URL, GATEWAY_KEY, JS_CASE.
import { writeSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const out = (v) => writeSync(1, JSON.stringify(v) + "\n");
const require = createRequire(path.join(process.env.JS_FRAMEWORKS_DIR, "noop.js"));
const load = (name) => import(require.resolve(name));

const url = process.env.GATEWAY_URL;
const apiKey = process.env.GATEWAY_KEY;
const model = "claude-sonnet-4.6";
// JS_CASE is a case's name, then optionally "+object" or "+throw": the
// AI SDK's weather tool then returns an object, or fails.
const [caseName, resultMode] = process.env.JS_CASE.split("+");

const timer = setTimeout(() => {
  out({ type: "driver_error", error_message: "driver timed out" });
  process.exit(3);
}, 60000);

// The weather tool every case offers: the model's arguments and a result
// the test looks for in the upstream's second request.
const forecast = (city) => `Sunny, 21 C in ${city}`;

// aiSDKTools runs generateText with an executed zod tool and two steps
// (more settings of generateText's in extra).
async function aiSDKTools(languageModel, extra = {}) {
  const { generateText, tool, isStepCount } = await load("ai");
  const { z } = await load("zod");
  const result = await generateText({
    model: languageModel,
    tools: {
      weather: tool({
        description: "Get the weather in a city",
        inputSchema: z.object({ city: z.string().describe("The city") }),
        execute: async ({ city }) => {
          out({ type: "executed", args: { city } });
          if (resultMode === "object") return { city, forecast: forecast(city), celsius: 21 };
          if (resultMode === "throw") throw new Error(`weather service down for ${city}`);
          return forecast(city);
        },
      }),
    },
    stopWhen: isStepCount(2),
    prompt: "What is the weather in Paris?",
    ...extra,
  });
  out({
    type: "result",
    text: result.text,
    reasoning: result.steps.map((s) => s.reasoningText ?? ""),
    finish_reason: result.finishReason,
    steps: result.steps.map((s) => ({
      finish_reason: s.finishReason,
      tool_calls: s.toolCalls.map((c) => ({ name: c.toolName, input: c.input })),
      tool_results: s.toolResults.map((r) => ({ name: r.toolName, output: r.output })),
    })),
    usage: result.totalUsage,
  });
}

async function openaiProvider() {
  const { createOpenAI } = await load("@ai-sdk/openai");
  return createOpenAI({ baseURL: url + "/v1", apiKey });
}

async function anthropicProvider() {
  const { createAnthropic } = await load("@ai-sdk/anthropic");
  return createAnthropic({ baseURL: url + "/v1", apiKey });
}

// langchainTools binds a tool, invokes, runs the tool call and invokes
// again with its ToolMessage (or streams both turns).
async function langchainTools(chat, stream) {
  const { tool } = await load("@langchain/core/tools");
  const { HumanMessage } = await load("@langchain/core/messages");
  const { z } = await load("zod");
  const weather = tool(async ({ city }) => forecast(city), {
    name: "weather",
    description: "Get the weather in a city",
    schema: z.object({ city: z.string().describe("The city") }),
  });
  const bound = chat.bindTools([weather]);
  const call = async (messages) => {
    if (!stream) return bound.invoke(messages);
    let full;
    let chunks = 0;
    for await (const chunk of await bound.stream(messages)) {
      full = full ? full.concat(chunk) : chunk;
      chunks++;
    }
    out({ type: "streamed", chunks });
    return full;
  };
  const messages = [new HumanMessage("What is the weather in Paris?")];
  const first = await call(messages);
  out({
    type: "first",
    tool_calls: (first.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args, id: c.id })),
    usage: first.usage_metadata,
  });
  messages.push(first);
  for (const c of first.tool_calls ?? []) messages.push(await weather.invoke(c));
  const second = await call(messages);
  out({ type: "second", text: second.text, tool_calls: second.tool_calls ?? [], usage: second.usage_metadata });
}

async function chatOpenAI(extra = {}) {
  const { ChatOpenAI } = await load("@langchain/openai");
  return new ChatOpenAI({ model, apiKey, configuration: { baseURL: url + "/v1" }, maxRetries: 0, ...extra });
}

async function chatAnthropic() {
  const { ChatAnthropic } = await load("@langchain/anthropic");
  return new ChatAnthropic({ model, apiKey, anthropicApiUrl: url, maxRetries: 0 });
}

// aiSDKStreamTools is aiSDKTools streamed: streamText's full stream, its
// parts' types in order, and the text of the last step.
async function aiSDKStreamTools(languageModel) {
  const { streamText, tool, isStepCount } = await load("ai");
  const { z } = await load("zod");
  const result = streamText({
    model: languageModel,
    tools: {
      weather: tool({
        description: "Get the weather in a city",
        inputSchema: z.object({ city: z.string().describe("The city") }),
        execute: async ({ city }) => {
          out({ type: "executed", args: { city } });
          return forecast(city);
        },
      }),
    },
    stopWhen: isStepCount(2),
    prompt: "What is the weather in Paris?",
  });
  const parts = [];
  const errors = [];
  for await (const p of result.fullStream) {
    if (parts[parts.length - 1] !== p.type) parts.push(p.type);
    if (p.type === "error") errors.push(String(p.error?.message ?? p.error));
  }
  const steps = await result.steps;
  out({
    type: "result",
    parts,
    errors,
    text: await result.text,
    finish_reason: await result.finishReason,
    steps: steps.map((s) => ({ finish_reason: s.finishReason, tool_calls: s.toolCalls.map((c) => ({ name: c.toolName, input: c.input })) })),
    usage: await result.totalUsage,
  });
}

// aiSDKObject asks for an object with generateText's Output.object.
async function aiSDKObject(languageModel) {
  const { generateText, Output } = await load("ai");
  const { z } = await load("zod");
  const result = await generateText({
    model: languageModel,
    output: Output.object({ schema: z.object({ city: z.string(), celsius: z.number() }), name: "temperature" }),
    prompt: "How warm is it in Paris?",
  });
  out({ type: "result", object: result.output, finish_reason: result.finishReason });
}

// aiSDKError makes one call the gateway refuses and prints the error the
// user sees.
async function aiSDKError(languageModel) {
  const { generateText } = await load("ai");
  try {
    await generateText({ model: languageModel, prompt: "hi", maxRetries: 0 });
    out({ type: "result", error: null });
  } catch (err) {
    out({ type: "result", error: { name: err.name, message: err.message, status: err.statusCode ?? err.lastError?.statusCode } });
  }
}

// aiSDKAbort aborts a stream after its first delta.
async function aiSDKAbort(languageModel) {
  const { streamText } = await load("ai");
  const ctl = new AbortController();
  const result = streamText({ model: languageModel, prompt: "Count slowly.", abortSignal: ctl.signal, onError: () => {} });
  const deltas = [];
  try {
    for await (const d of result.textStream) {
      deltas.push(d);
      ctl.abort();
    }
  } catch (err) {
    out({ type: "aborted", name: err.name });
  }
  out({ type: "result", deltas });
}

// bookingSchema is a tool schema with what zod users write: a reused
// object, an enum, optional, nullable, arrays, a union and a record.
function bookingSchema(z) {
  const place = z.object({ city: z.string(), country: z.string().length(2) });
  return z.object({
    from: place,
    to: place,
    class: z.enum(["economy", "business"]),
    seats: z.number().int().min(1).max(9),
    note: z.string().optional(),
    loyalty: z.string().nullable(),
    stops: z.array(place).max(3),
    when: z.union([z.string().datetime(), z.literal("asap")]),
    extras: z.record(z.string(), z.boolean()),
  });
}

const cases = {
  "ai-schema": async () => {
    const { generateText, tool } = await load("ai");
    const { z } = await load("zod");
    const result = await generateText({
      model: (await openaiProvider()).chat(model),
      tools: { book: tool({ description: "Book a flight", inputSchema: bookingSchema(z), execute: async (args) => { out({ type: "executed", args }); return "booked"; } }) },
      prompt: "Book it.",
    });
    out({ type: "result", finish_reason: result.finishReason, calls: result.toolCalls.length });
  },
  "lc-schema": async () => {
    const { tool } = await load("@langchain/core/tools");
    const { z } = await load("zod");
    const book = tool(async (args) => { out({ type: "executed", args }); return "booked"; }, { name: "book", description: "Book a flight", schema: bookingSchema(z) });
    const msg = await (await chatOpenAI()).bindTools([book]).invoke("Book it.");
    for (const c of msg.tool_calls ?? []) await book.invoke(c);
    out({ type: "result", calls: (msg.tool_calls ?? []).length, invalid: msg.invalid_tool_calls ?? [] });
  },
  "ai-abort-chat": async () => aiSDKAbort((await openaiProvider()).chat(model)),
  "ai-abort-responses": async () => aiSDKAbort((await openaiProvider())(model)),
  "ai-abort-anthropic": async () => aiSDKAbort((await anthropicProvider())(model)),
  "ai-error-chat": async () => aiSDKError((await openaiProvider()).chat(model)),
  "ai-error-responses": async () => aiSDKError((await openaiProvider())(model)),
  "ai-error-anthropic": async () => aiSDKError((await anthropicProvider())(model)),
  "ai-thinking-anthropic": async () =>
    aiSDKTools((await anthropicProvider())(model), { providerOptions: { anthropic: { thinking: { type: "enabled", budgetTokens: 2048 } } } }),
  "ai-stream-tools-responses": async () => aiSDKStreamTools((await openaiProvider())(model)),
  "ai-stream-tools-chat": async () => aiSDKStreamTools((await openaiProvider()).chat(model)),
  "ai-stream-tools-anthropic": async () => aiSDKStreamTools((await anthropicProvider())(model)),
  "ai-object-responses": async () => aiSDKObject((await openaiProvider())(model)),
  "ai-object-chat": async () => aiSDKObject((await openaiProvider()).chat(model)),
  "ai-object-anthropic": async () => aiSDKObject((await anthropicProvider())(model)),
  "ai-openai-responses": async () => aiSDKTools((await openaiProvider())(model)),
  "ai-openai-chat": async () => aiSDKTools((await openaiProvider()).chat(model)),
  "ai-anthropic": async () => aiSDKTools((await anthropicProvider())(model)),
  "ai-openai-compatible": async () => {
    const { createOpenAICompatible } = await load("@ai-sdk/openai-compatible");
    return aiSDKTools(createOpenAICompatible({ baseURL: url + "/v1", name: "cursor2api", apiKey }).chatModel(model));
  },
  "ai-stream": async () => {
    const { streamText } = await load("ai");
    const result = streamText({ model: (await openaiProvider()).chat(model), prompt: "Say hello." });
    const deltas = [];
    for await (const d of result.textStream) deltas.push(d);
    out({ type: "result", deltas, text: await result.text, finish_reason: await result.finishReason, usage: await result.totalUsage });
  },
  "lc-openai": async () => langchainTools(await chatOpenAI(), false),
  "lc-anthropic": async () => langchainTools(await chatAnthropic(), false),
  "lc-openai-stream": async () => langchainTools(await chatOpenAI(), true),
  "lc-openai-responses": async () => langchainTools(await chatOpenAI({ useResponsesApi: true }), false),
  "lc-openai-responses-stream": async () => langchainTools(await chatOpenAI({ useResponsesApi: true }), true),
  "lc-anthropic-stream": async () => langchainTools(await chatAnthropic(), true),
  "lc-structured": async () => structured(await chatOpenAI()),
  "lc-structured-tool": async () => structured(await chatOpenAI(), "functionCalling"),
  "lc-structured-responses": async () => structured(await chatOpenAI({ useResponsesApi: true })),
  "lc-structured-anthropic": async () => structured(await chatAnthropic()),
  "lc-structured-anthropic-json": async () => structured(await chatAnthropic(), "jsonSchema"),
};

// structured runs withStructuredOutput on a zod schema, with its default
// method (OpenAI: json_schema; Anthropic: a forced tool) or method.
async function structured(chat, method) {
  {
    const { z } = await load("zod");
    const schema = z.object({ city: z.string(), celsius: z.number() }).describe("A city's temperature");
    const structured = chat.withStructuredOutput(schema, { name: "temperature", ...(method && { method }) });
    const parsed = await structured.invoke("How warm is it in Paris?");
    out({ type: "result", parsed });
  }
}

try {
  const run = cases[caseName];
  if (!run) throw new Error(`no case ${caseName}`);
  await run();
} catch (err) {
  out({ type: "driver_error", error_message: String(err?.stack ?? err?.message ?? err), cause: String(err?.responseBody ?? err?.cause ?? "") });
}
clearTimeout(timer);
