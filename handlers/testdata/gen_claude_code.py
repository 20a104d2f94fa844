#!/usr/bin/env python3
"""Writes request fixtures shaped like Claude Code 2.x's own /v1/messages
bodies: a block system prompt of three text blocks (about 28K characters,
cache_control on two), user turns made of <system-reminder> blocks plus the
prompt, a dozen tools with large JSON Schemas (some with defer_loading),
metadata, thinking, context_management and output_config, and later turns
of parallel tool_use and tool_result blocks. The text is our own; only the
structure follows Claude Code. Run from this directory:

    python3 gen_claude_code.py
"""
import json

EPH = {"type": "ephemeral"}

RULES = [
    "Read a file before you edit it, and keep each edit as small as the change it makes.",
    "Prefer the dedicated file tools to shell commands for reading, searching and editing files.",
    "Run the project's tests after a change and report honestly what passed and what did not.",
    "Never commit, push or delete branches unless the user asks for it in so many words.",
    "When a command fails, read its output before trying again; do not repeat the same call blindly.",
    "Keep answers short in the terminal: lead with the result, then the detail that matters.",
    "Use the task list for work of three steps or more, and mark each step done as soon as it is.",
    "Quote paths as they are, with line numbers where it helps the user find the place.",
    "Ask before doing anything destructive or irreversible outside the working directory.",
    "Follow the style of the code around you: names, error handling, tests next to the code.",
]


def section(title, n):
    lines = [f"# {title}"]
    for i in range(n):
        rule = RULES[i % len(RULES)]
        lines.append(f"- ({i + 1}) {rule} This holds in every repository and every language you meet.")
    return "\n".join(lines)


def system_blocks():
    intro = "You are a coding agent running in the user's terminal, an interactive command-line tool that helps with software engineering tasks."
    body = "\n\n".join(section(t, 30) for t in ["Doing tasks", "Tool use policy", "Tone and style", "Code references", "Git safety", "Testing"])
    env = "\n".join([
        "<env>",
        "Working directory: /home/dev/project",
        "Is directory a git repo: Yes",
        "Platform: linux",
        "Today's date: 2026-11-23",
        "</env>",
        "gitStatus: This is the git status at the start of the conversation.",
        "Current branch: main",
        "Status:\nM src/server.go\n?? notes.md",
    ])
    return [
        {"type": "text", "text": intro, "cache_control": EPH},
        {"type": "text", "text": body},
        {"type": "text", "text": env, "cache_control": EPH},
    ]


def prop(typ, desc, **extra):
    p = {"type": typ, "description": desc}
    p.update(extra)
    return p


def schema(props, required):
    return {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": props,
            "required": required, "additionalProperties": False}


def long_desc(what):
    return what + "\n\nUsage notes:\n" + "\n".join(f"- {r}" for r in RULES[:6])


def tools():
    todo = {"type": "object", "properties": {
        "content": prop("string", "What to do, in the imperative.", minLength=1),
        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
        "activeForm": prop("string", "The same step in the present continuous.", minLength=1)},
        "required": ["content", "status", "activeForm"], "additionalProperties": False}
    out = [
        {"name": "Task", "description": long_desc("Starts a sub-agent for a self-contained piece of work."),
         "input_schema": schema({"description": prop("string", "A three-to-five word summary."),
                                 "prompt": prop("string", "The full task for the agent."),
                                 "subagent_type": prop("string", "Which kind of agent to start.")},
                                ["description", "prompt", "subagent_type"])},
        {"name": "Bash", "description": long_desc("Runs a shell command in a persistent session."),
         "input_schema": schema({"command": prop("string", "The command to run."),
                                 "timeout": prop("number", "Milliseconds before the command is stopped (max 600000)."),
                                 "description": prop("string", "What the command does, in five to ten words."),
                                 "run_in_background": prop("boolean", "Run it in the background and read its output later.")},
                                ["command"])},
        {"name": "Glob", "description": long_desc("Finds files by glob pattern, newest first."),
         "input_schema": schema({"pattern": prop("string", "The glob to match."), "path": prop("string", "Where to search.")}, ["pattern"])},
        {"name": "Grep", "description": long_desc("Searches file contents with regular expressions."),
         "input_schema": schema({"pattern": prop("string", "The regular expression."), "path": prop("string", "File or directory."),
                                 "glob": prop("string", "Only files matching this glob."),
                                 "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "What to print."},
                                 "-i": prop("boolean", "Case-insensitive."), "-n": prop("boolean", "Line numbers."),
                                 "-A": prop("number", "Lines after."), "-B": prop("number", "Lines before."),
                                 "multiline": prop("boolean", "Let . match newlines."), "head_limit": prop("number", "At most this many lines.")},
                                ["pattern"])},
        {"name": "Read", "description": long_desc("Reads a file from the local filesystem."),
         "input_schema": schema({"file_path": prop("string", "The absolute path."), "offset": prop("number", "The line to start at."),
                                 "limit": prop("number", "How many lines.")}, ["file_path"])},
        {"name": "Edit", "description": long_desc("Replaces an exact string in a file."),
         "input_schema": schema({"file_path": prop("string", "The absolute path."), "old_string": prop("string", "The text to replace."),
                                 "new_string": prop("string", "The replacement."), "replace_all": {"type": "boolean", "default": False, "description": "Replace every occurrence."}},
                                ["file_path", "old_string", "new_string"])},
        {"name": "Write", "description": long_desc("Writes a whole file."),
         "input_schema": schema({"file_path": prop("string", "The absolute path."), "content": prop("string", "The content.")}, ["file_path", "content"])},
        {"name": "NotebookEdit", "description": long_desc("Edits a cell of a Jupyter notebook."), "defer_loading": True,
         "input_schema": schema({"notebook_path": prop("string", "The absolute path."), "cell_id": prop("string", "The cell."),
                                 "new_source": prop("string", "The new source."),
                                 "cell_type": {"type": "string", "enum": ["code", "markdown"]},
                                 "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]}}, ["notebook_path", "new_source"])},
        {"name": "WebFetch", "description": long_desc("Fetches a URL and answers a question about it."), "defer_loading": True,
         "input_schema": schema({"url": prop("string", "The URL.", format="uri"), "prompt": prop("string", "What to find out.")}, ["url", "prompt"])},
        {"name": "WebSearch", "description": long_desc("Searches the web."), "defer_loading": True,
         "input_schema": schema({"query": prop("string", "The query.", minLength=2),
                                 "allowed_domains": {"type": "array", "items": {"type": "string"}},
                                 "blocked_domains": {"type": "array", "items": {"type": "string"}}}, ["query"])},
        {"name": "TodoWrite", "description": long_desc("Writes the task list of the session."),
         "input_schema": schema({"todos": {"type": "array", "items": todo, "description": "The whole updated list."}}, ["todos"])},
        {"name": "BashOutput", "description": long_desc("Reads the new output of a background shell."),
         "input_schema": schema({"bash_id": prop("string", "The shell."), "filter": prop("string", "Only lines matching this regular expression.")}, ["bash_id"])},
        {"name": "ExitPlanMode", "description": long_desc("Presents the plan and leaves plan mode."),
         "input_schema": schema({"plan": prop("string", "The plan, in markdown.")}, ["plan"]), "cache_control": EPH},
    ]
    return out


def reminder(text):
    return {"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}


def base(messages):
    return {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "stream": True,
        "system": system_blocks(),
        "tools": tools(),
        "metadata": {"user_id": "user_0123456789abcdef_account__session_00000000-0000-4000-8000-000000000000"},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "medium"},
        "messages": messages,
    }


first_user = {"role": "user", "content": [
    reminder("As you answer, use this context:\n# claudeMd\nThe project is a Go HTTP gateway. Run go test ./... before you finish."),
    reminder("The task list is empty. Do not mention this reminder to the user."),
    {"type": "text", "text": "Find where the server starts and tell me which port it listens on.", "cache_control": EPH},
]}

first = base([first_user])

rounds = base([
    first_user,
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should find the main package and the listener.", "signature": "c2a-fixture-signature-1"},
        {"type": "text", "text": "I'll look for the entry point and the listen address."},
        {"type": "tool_use", "id": "toolu_01Fixture0000000000000001", "name": "Grep", "input": {"pattern": "ListenAndServe|net.Listen", "output_mode": "files_with_matches"}},
        {"type": "tool_use", "id": "toolu_01Fixture0000000000000002", "name": "Glob", "input": {"pattern": "**/main.go"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01Fixture0000000000000001", "content": "Found 1 file\n/home/dev/project/main.go"},
        {"type": "tool_result", "tool_use_id": "toolu_01Fixture0000000000000002", "content": [{"type": "text", "text": "/home/dev/project/main.go\n/home/dev/project/tools/gen/main.go"}], "cache_control": EPH},
    ]},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_01Fixture0000000000000003", "name": "Read", "input": {"file_path": "/home/dev/project/main.go", "offset": 1, "limit": 80}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01Fixture0000000000000003", "is_error": True, "content": "<tool_use_error>File is too large; use offset and limit.</tool_use_error>"},
        reminder("The user opened main.go in the IDE."),
    ]},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_01Fixture0000000000000004", "name": "Bash", "input": {"command": "grep -n PORT main.go config/config.go", "description": "Find the port setting"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01Fixture0000000000000004", "content": [{"type": "text", "text": "config/config.go:51:\tPort int `env:\"PORT\" envDefault:\"8002\"`"}]},
    ]},
])

for name, body in [("claude_code_first_turn.json", first), ("claude_code_tool_rounds.json", rounds)]:
    with open(name, "w") as f:
        json.dump(body, f, indent=1, ensure_ascii=False)
        f.write("\n")
