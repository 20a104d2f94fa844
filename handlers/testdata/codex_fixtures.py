#!/usr/bin/env python3
"""Writes codex_first_turn.json and codex_tool_turn.json: requests in the
structure Codex CLI 0.16x sends to POST /v1/responses (a long base prompt
as a developer message, more developer and user context messages,
function, namespace and built-in tools, reasoning items with encrypted
content, function_call / function_call_output history), with our own
text. Run it from this directory; the tests read its output only."""
import json

base = "\n\n".join([
    "You are a coding agent running in a terminal on the user's machine. You help with software tasks: reading code, running commands, editing files and explaining what you did.",
    "## How you work\n\n- Read before you change. Prefer small, reviewable edits.\n- Run the project's own tests after a change when they exist.\n- Never print secrets. Never run destructive commands without being asked.",
    "## Tools\n\nUse exec_command to run shell commands and read their output. Use update_plan to keep a short plan for multi-step tasks. Tools in the docs namespace search the project's documentation.",
    "## Final answers\n\nBe brief. Name the files you touched with their paths. Use plain sentences; short lists are fine when they help.",
] * 40)  # a long base prompt, as Codex's is
env = "<environment_context>\n  <cwd>/home/dev/project</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>"
tools = [
    {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY and returns its output.", "strict": False,
     "parameters": {"type": "object", "properties": {"cmd": {"type": "string", "description": "The shell command to run."}, "workdir": {"type": "string"}, "yield_time_ms": {"type": "number"}}, "required": ["cmd"], "additionalProperties": False}},
    {"type": "function", "name": "update_plan", "description": "Updates the task plan.", "strict": False,
     "parameters": {"type": "object", "properties": {"explanation": {"type": "string"}, "plan": {"type": "array", "items": {"type": "object", "properties": {"step": {"type": "string"}, "status": {"type": "string"}}, "required": ["step", "status"], "additionalProperties": False}}}, "required": ["plan"], "additionalProperties": False}},
    {"type": "namespace", "name": "mcp__docs", "description": "Tools of the docs MCP server.", "tools": [
        {"type": "function", "name": "search", "description": "Searches the project documentation.", "strict": False,
         "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"], "additionalProperties": False}}]},
    {"type": "web_search", "external_web_access": False},
]
common = {
    "model": "claude-sonnet-4.6",
    "tools": tools, "tool_choice": "auto", "parallel_tool_calls": True,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False, "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "7f0c2a9e-3b1d-4e55-9a0f-2c8d1e6b4a73",
    "text": {"verbosity": "medium"},
    "client_metadata": {"x-codex-turn": "1"},
}
opening = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": base}]},
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>\nCommands run in a sandbox that can write inside the workspace only. Ask before anything else.\n</permissions instructions>"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "# AGENTS.md instructions for /home/dev/project\n\n<INSTRUCTIONS>\nRun go test ./... before you finish.\n</INSTRUCTIONS>"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": env}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Which Go files are in this project, and what does the docs say about configuration?"}]},
]
first = dict(common, input=opening)
history = opening + [
    {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAAABpZ2VuZXJhdGVkLWZvci10aGUtdGVzdC1vbmx5LW5vdC1hLXJlYWwtdG9rZW4="},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I'll list the files and search the docs."}]},
    {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"ls *.go\",\"workdir\":\"/home/dev/project\"}", "call_id": "call_Q1w2E3r4T5y6U7i8O9p0A1s2"},
    {"type": "function_call", "name": "search", "namespace": "mcp__docs", "arguments": "{\"query\":\"configuration\"}", "call_id": "call_Z9x8C7v6B5n4M3l2K1j0H9g8"},
    {"type": "function_call_output", "call_id": "call_Q1w2E3r4T5y6U7i8O9p0A1s2", "output": "Chunk ID: 4c1a\nWall time: 0.0102 seconds\nProcess exited with code 0\nOutput:\nconfig.go\nmain.go\nserver.go\n"},
    {"type": "function_call_output", "call_id": "call_Z9x8C7v6B5n4M3l2K1j0H9g8", "output": [{"type": "input_text", "text": "Configuration is read from environment variables; see .env.example."}]},
]
second = dict(common, input=history, client_metadata={"x-codex-turn": "2"})
for name, body in [("codex_first_turn.json", first), ("codex_tool_turn.json", second)]:
    with open(name, "w") as f:
        json.dump(body, f, indent=1, ensure_ascii=False)
        f.write("\n")
