"""Codex's sample sessions (the `--demo` store's and the conformance suite's): rollouts written in
the byte form of Codex CLI 0.171.0 (the records, their field order and compact JSON lines of the real
rollouts in `tests/fixtures/codex-store/`), in their own `CODEX_HOME` (`env.root/codex`), with the
sample project folders as `cwd`, and a `session_index.jsonl` that renames one. The long preamble
Codex writes into every first turn (its ~26 KB tool list and base instructions, the skills list) is
there in shape, its texts shortened. The interactive session's `originator` and `source` ("cli") are
what Codex's terminal UI writes by its own code, not seen in a captured file (the captured rollouts
are all `codex exec` runs)."""

from __future__ import annotations

import json
import random
import string
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..samples import Sample, SampleEnv, SampleSet, compact, write_json_lines

CODEX_VERSION = "0.171.0"
CODEX_MODEL = "gpt-6.2-sol"
CONTEXT_WINDOW = 475_000
_ID_CHARS = string.ascii_lowercase + string.digits
_BASE_INSTRUCTIONS = ("You are Codex, an agent based on GPT-6. You and the user share a workspace, and your job "
                      "is to collaborate with them until their intended goal is completely handled.")
_EXEC_TOOL = ("Run JavaScript code to orchestrate/compose tool calls\n- Evaluates the provided JavaScript code in "
              "a fresh V8 isolate as an async module.\n- All nested tools are available on the global `tools` "
              "object, for example `await tools.exec_command(...)`.")
_NO_LIMITS = {"limit_id": "codex", "limit_name": None, "primary": None, "secondary": None, "credits": None,
              "individual_limit": None, "spend_control_reached": None, "plan_type": None,
              "rate_limit_reached_type": None}
_PERMISSIONS = {"type": "managed", "file_system": {"type": "restricted", "entries": [
    {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]}, "network": "restricted"}


def codex_root(root: Path) -> Path:
    """The samples' own Codex home under `root` (what `CODEX_HOME` points at)."""
    return root / "codex"


def _usage(input_tokens: int, cached: int, output: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
            "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input_tokens + output}


def _add(total: dict[str, int], usage: dict[str, int]) -> dict[str, int]:
    return {key: total[key] + usage[key] for key in total}


class CodexRollout:
    """One rollout as Codex writes it: `{"timestamp", "ordinal", "type", "payload"}` lines (plus
    `metadata` on response items), ordinals from 0 without gaps, a turn from `task_started` to
    `task_complete`, the prompt as a user message and a `UserMessage` item, each model reply's usage
    as a `token_usage_record` and a `token_count` whose `last_token_usage` is the context then."""

    def __init__(self, rng: random.Random, folder: Path, start: datetime, *, interactive: bool = False):
        self.rng, self.cwd, self.clock, self.interactive = rng, str(folder), start, interactive
        self.session_id = self._uuid7()
        self.created = start
        self.lines: list[dict[str, object]] = []
        self.sequence = 0                       # metadata.history_sequence of the next response item
        self.context = 15_100 + rng.randrange(400)   # the first request: tools, instructions, environment
        self.thread = _usage(0, 0, 0)
        self.turn_id = ""
        self.turn_usage = _usage(0, 0, 0)
        self.turn_started = start
        self.replies = 0
        self.turns = 0
        self.prompts: list[str] = []
        self.ran_tool = False
        self._record("session_meta", self._meta())

    # --- ids and clock -------------------------------------------------------------------------------

    def _uuid7(self) -> str:
        """A UUIDv7 of the clock (its first 12 hex digits are the milliseconds), as Codex's ids are."""
        millis = int(self.clock.timestamp() * 1000)
        tail = self.rng.getrandbits(74)
        value = (millis << 80) | (0x7 << 76) | ((tail >> 62) << 64) | (0b10 << 62) | (tail & ((1 << 62) - 1))
        text = f"{value:032x}"
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

    def _stamp(self, seconds: float) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def _record(self, kind: str, payload: dict[str, object], *, seconds: float = 0.002,
                metadata: dict[str, object] | None = None) -> None:
        record: dict[str, object] = {"timestamp": self._stamp(seconds), "ordinal": len(self.lines), "type": kind,
                                     "payload": payload}
        if metadata is not None:
            record["metadata"] = metadata
        self.lines.append(record)

    def _item(self, payload: dict[str, object], *, seconds: float = 0.002, sampled: int | None = None,
              **extra: object) -> None:
        self.sequence += 1
        metadata: dict[str, object] = {"history_sequence": self.sequence,
                                       "sampled_through_sequence": self.sequence - 1 if sampled is None else sampled,
                                       **extra, "client_authored": False, "model_search_state": "unused"}
        self._record("response_item", payload, seconds=seconds, metadata=metadata)

    def _event(self, payload: dict[str, object], *, seconds: float = 0.002) -> None:
        self._record("event_msg", payload, seconds=seconds)

    def _completed(self, item: dict[str, object], *, seconds: float = 0.002) -> None:
        millis = int((self.clock + timedelta(seconds=seconds)).timestamp() * 1000)
        self._event({"type": "item_completed", "thread_id": self.session_id, "turn_id": self.turn_id, "item": item,
                     "started_at_ms": millis, "completed_at_ms": millis}, seconds=seconds)

    # --- records -------------------------------------------------------------------------------------

    def _meta(self) -> dict[str, object]:
        return {"account_scoped": True, "session_id": self.session_id, "id": self.session_id,
                "timestamp": self._stamp(0), "cwd": self.cwd, "runtime_workspace_roots": [self.cwd],
                "originator": "codex_cli_rs" if self.interactive else "codex_exec", "cli_version": CODEX_VERSION,
                "source": "cli" if self.interactive else "exec", "thread_source": "user", "model_provider": "openai",
                "base_instructions": {"text": _BASE_INSTRUCTIONS,
                                      "provenance": {"type": "model", "model": CODEX_MODEL}},
                "history_mode": "paginated", "context_window": {"window_id": self._uuid7()},
                "git": {"commit_hash": f"{self.rng.getrandbits(160):040x}", "branch": "main"}}

    def _passthrough(self, kinds: list[str], provenance: dict[str, object]) -> dict[str, object]:
        return {"turn_id": self.turn_id, "create_time": round(self.clock.timestamp(), 7),
                "content_item_kinds": kinds, "content_item_metadata": [{"provenance": provenance}]}

    def _developer(self, text: str, kind: str, provenance: dict[str, object]) -> None:
        self._item({"type": "message", "id": f"msg_{self._uuid7()}", "role": "developer",
                    "content": [{"type": "input_text", "text": text}],
                    "internal_chat_message_metadata_passthrough": self._passthrough([kind], provenance)},
                   sampled=0)

    def _preamble(self) -> None:
        """What the first turn puts before the prompt: the tool list, the instructions, the environment."""
        tool = {"type": "custom", "name": "exec", "description": _EXEC_TOOL,
                "format": {"type": "grammar", "syntax": "lark", "definition": "start: /[\\s\\S]+/"}}
        self._item({"type": "additional_tools", "id": f"at_{self._uuid7()}", "role": "developer",
                    "tools": [{"type": "namespace", "name": "functions", "description": "", "tools": [tool]}]},
                   sampled=0, mcp_attribution={"status": "none"})
        self._developer(_BASE_INSTRUCTIONS, "model.base_instructions", {"type": "harness", "hook": False})
        self._developer("<skills_instructions>\n## Skills\nA skill is a set of local instructions to follow that is "
                        "stored in a `SKILL.md` file.\n</skills_instructions>", "host_skills.instructions",
                        {"type": "skills"})
        filesystem = (f"<filesystem><workspace_roots><root>{self.cwd}</root></workspace_roots></filesystem>")
        environment = (f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n  <shell>bash</shell>\n  <current_date>"
                       f"{self.clock:%Y-%m-%d}</current_date>\n  <timezone>Etc/UTC</timezone>\n  {filesystem}\n"
                       "</environment_context>")
        self._item({"type": "message", "id": f"msg_{self._uuid7()}", "role": "user",
                    "content": [{"type": "input_text", "text": environment}],
                    "internal_chat_message_metadata_passthrough": self._passthrough(
                        ["environments.environment_context"], {"type": "harness", "hook": False})}, sampled=0)
        self._record("world_state", {"full": True, "state": {
            "agents_md": {}, "collaboration_mode": {"mode": "default", "model": CODEX_MODEL},
            "environments": {"environments": {"local": {"cwd": self.cwd, "status": "available", "shell": "bash"}},
                             "current_date": f"{self.clock:%Y-%m-%d}", "timezone": "Etc/UTC",
                             "filesystem": filesystem},
            "model": {"model": CODEX_MODEL}, "realtime": {"active": False}}})

    def prompt(self, text: str, *, after_minutes: float = 0) -> None:
        """A turn's start and its prompt."""
        self.clock += timedelta(minutes=after_minutes)
        self.turn_id, self.turn_started, self.turn_usage = self._uuid7(), self.clock, _usage(0, 0, 0)
        trigger = "user" if self.interactive else "exec"
        self._event({"type": "task_started", "turn_attribution": {
            "turn_id": self.turn_id, "turn_trigger": trigger, "parent_turn_id": None, "initiating_agent_path": None,
            "root_turn_id": self.turn_id}, "turn_id": self.turn_id, "root_turn_id": self.turn_id,
            "started_at": int(self.clock.timestamp()), "model_context_window": CONTEXT_WINDOW,
            "collaboration_mode_kind": "default"})
        if self.turns == 0:
            self._preamble()
        self.prompts.append(text)
        self.turns += 1
        self._record("turn_context", {"turn_id": self.turn_id, "root_turn_id": self.turn_id, "disabled_plugin_ids": [],
                                      "cwd": self.cwd, "approval_policy": "on-request", "approvals_reviewer": "user",
                                      "permission_profile": _PERMISSIONS, "model": CODEX_MODEL,
                                      "collaboration_mode": {"mode": "default", "settings": {
                                          "model": CODEX_MODEL, "reasoning_effort": None,
                                          "developer_instructions": None}},
                                      "summary": "none", "sandbox_policy": {"type": "workspace-write"}})
        self._event({"type": "thread_settings_applied", "thread_id": self.session_id, "thread_settings": {
            "model": CODEX_MODEL, "model_provider_id": "openai", "approval_policy": "on-request", "cwd": self.cwd,
            "runtime_workspace_roots": [self.cwd]}})
        message_id = f"msg_{self._uuid7()}"
        self._item({"type": "message", "id": message_id, "role": "user", "content": [
            {"type": "input_text", "text": text}], "internal_chat_message_metadata_passthrough": self._passthrough(
                ["user.text"], {"type": "user"})},
            retained_source={"id": {"message_id": message_id, "turn_id": self.turn_id, "role": "user"},
                             "revision": f"retained_{self._uuid7()}", "complete": True})
        self._completed({"type": "UserMessage", "id": self._uuid7(),
                         "content": [{"type": "text", "text": text, "text_elements": []}]})
        self.context += len(text) // 4 + 12

    def _agent_message(self, text: str, seconds: float) -> None:
        """A message of the model's reply: the `AgentMessage` item and the assistant response item."""
        self.replies += 1
        message_id = f"msg_{''.join(self.rng.choice(_ID_CHARS) for _ in range(24))}"
        self._completed({"type": "AgentMessage", "id": message_id, "content": [{"type": "Text", "text": text}]},
                        seconds=seconds)
        self._item({"type": "message", "status": "completed", "id": message_id, "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                    "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id,
                                                                   "content_item_kinds": ["unknown"]}})

    def _reply(self, text: str, seconds: float) -> None:
        """One model reply: its message and its usage (the context the request measured)."""
        self._agent_message(text, seconds)
        self._usage_of(len(text) // 4 + self.rng.randrange(20, 200))

    def _usage_of(self, output: int) -> None:
        usage = _usage(self.context, self.context // 2 if self.replies > 1 else 0, output)
        self.turn_usage, self.thread = _add(self.turn_usage, usage), _add(self.thread, usage)
        self._record("token_usage_record", {"thread_id": self.session_id, "turn_id": self.turn_id,
                                            "session_id": self.session_id, "root_turn_id": self.turn_id,
                                            "response_id": f"resp_{self._uuid7()}", "usage": usage,
                                            "turn_token_usage": self.turn_usage, "thread_token_usage": self.thread})
        self._event({"type": "token_count", "info": {"total_token_usage": self.thread, "last_token_usage": usage,
                                                     "last_usage_includes_reasoning": True,
                                                     "model_context_window": CONTEXT_WINDOW},
                     "rate_limits": _NO_LIMITS})
        self.context += output

    def say(self, text: str, *, seconds: float = 20) -> None:
        """The turn's last reply, and the turn's end."""
        self._reply(text, seconds)
        took = int((self.clock - self.turn_started).total_seconds() * 1000)
        self._event({"type": "task_complete", "root_turn_id": self.turn_id, "turn_id": self.turn_id,
                     "last_agent_message": text, "started_at": int(self.turn_started.timestamp()),
                     "completed_at": int(self.clock.timestamp()), "duration_ms": took,
                     "time_to_first_token_ms": self.rng.randrange(300, 900)})

    def command(self, intro: str, command: str, output: str, *, exit_code: int = 0, seconds: float = 8) -> None:
        """A command run through Codex's code-mode `exec` tool: the call, the command, its output."""
        self._agent_message(intro, seconds)
        self.ran_tool = True
        call_id = f"call_{''.join(self.rng.choice(_ID_CHARS) for _ in range(24))}"
        script = f"const done = await tools.exec_command({json.dumps({'cmd': command})});\ntext(done.output);\n"
        self._item({"type": "custom_tool_call", "id": f"fc_{call_id[5:]}", "status": "completed", "call_id": call_id,
                    "name": "exec", "input": script,
                    "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id}},
                   sampled=self.sequence - 1)
        self._usage_of(len(intro + script) // 4)
        wall = 0.4 + self.rng.random() * 6
        self._completed({"type": "CommandExecution", "id": f"exec-{self._uuid7()}",
                         "process_id": str(self.rng.randrange(2_000, 90_000)), "command": ["/bin/bash", "-lc", command],
                         "cwd": f"file://{self.cwd}", "parsed_cmd": [{"type": "unknown", "cmd": command}],
                         "source": "unified_exec_startup", "status": "completed", "aggregated_output": output,
                         "exit_code": exit_code, "duration": {"secs": int(wall), "nanos": int(wall % 1 * 1e9)}},
                        seconds=wall)
        self._item({"type": "custom_tool_call_output", "id": f"ctco_{self._uuid7()}", "call_id": call_id,
                    "output": [{"type": "input_text", "text": f"Script completed\nWall time {wall:.1f} seconds\n"
                                                              "Output:\n"},
                               {"type": "input_text", "text": output}],
                    "internal_chat_message_metadata_passthrough": {"turn_id": self.turn_id,
                                                                   "create_time": round(self.clock.timestamp(), 6)}},
                   sampled=self.sequence - 2, fallback_token_limit_override=12000)
        self.context += len(output) // 4 + 20

    def write(self, root: Path) -> Path:
        """The rollout under `root/sessions/YYYY/MM/DD/`, modified when its last line was written."""
        name = f"rollout-{self.created:%Y-%m-%dT%H-%M-%S}-{self.session_id}.jsonl"
        folder = root / "sessions" / f"{self.created:%Y}" / f"{self.created:%m}" / f"{self.created:%d}"
        return write_json_lines(folder / name, self.lines, self.clock)

    def sample(self, root: Path, title: str | None = None) -> Sample:
        """The rollout written under `root`, and what it holds."""
        path = self.write(root)
        return Sample(self.session_id, Path(self.cwd), tuple(self.prompts), title=title, tool_call=self.ran_tool,
                      files=(str(path.relative_to(root)),))


def write_session_index(root: Path, names: list[tuple[CodexRollout, str]]) -> None:
    """Codex's `session_index.jsonl`: one `{"id", "thread_name", "updated_at"}` line per rename."""
    lines = [{"id": rollout.session_id, "thread_name": name,
              "updated_at": rollout.clock.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")} for rollout, name in names]
    (root / "session_index.jsonl").write_bytes(b"".join(compact(line).encode() + b"\n" for line in lines))


def write_samples(env: SampleEnv) -> SampleSet:
    """Four Codex sessions: three in the main project (one from Codex's terminal UI with a command,
    one `codex exec` run, which Codex's own picker hides, and one renamed in `session_index.jsonl`)
    and one `codex exec` run in another project."""
    root, now, rng = codex_root(env.root), env.now, random.Random(env.seed + 2)
    webapp, cli_tool = env.project("webapp"), env.project("cli-tool")
    written = []

    typed = CodexRollout(rng, webapp, now - timedelta(days=5, hours=2), interactive=True)
    typed.prompt("The cart total is wrong when a coupon and a sale price both apply")
    typed.say("The coupon was applied to the list price, not the sale price: `applyDiscounts` in src/cart/total.ts "
              "now takes the lower price first and applies the coupon to it.", seconds=42)
    typed.prompt("Run the cart tests", after_minutes=3)
    typed.command("Running the cart tests.", "pnpm vitest run src/cart",
                  " ✓ src/cart/total.test.ts (14 tests)\n ✓ src/cart/coupon.test.ts (6 tests)\n\n Test Files  2 passed "
                  "(2)\n      Tests  20 passed (20)\n")
    typed.say("All 20 cart tests pass, the 3 new coupon cases included.", seconds=5)
    written.append(typed.sample(root))

    renamed = CodexRollout(rng, webapp, now - timedelta(days=6, hours=4), interactive=True)
    renamed.prompt("Add a setting for the number of items per page in the order history")
    renamed.say("Added `ordersPerPage` (10, 25 or 50) to the account settings; the order history reads it and keeps "
                "the page in the URL.", seconds=50)
    written.append(renamed.sample(root, "Orders: page size setting"))
    write_session_index(root, [(renamed, "Orders: page size setting")])

    run = CodexRollout(rng, webapp, now - timedelta(days=9, hours=1))
    run.prompt("List the TODO comments in src/ with their file and line")
    run.say("There are 4: src/cart/total.ts:18 (round once, at the end), src/api/client.ts:52 (retry on 503), "
            "src/checkout/AddressForm.tsx:9 (postcode formats) and src/settings/Theme.tsx:31 (system theme).",
            seconds=15)
    written.append(run.sample(root))

    other = CodexRollout(rng, cli_tool, now - timedelta(days=2, hours=7))
    other.prompt("Why does `cli-tool --version` print nothing when stdout is a pipe?")
    other.say("The version is printed with `print(..., end='')` and the process exits through `os._exit`, which "
              "skips flushing stdout; it now returns from main instead.", seconds=30)
    written.append(other.sample(root))
    return SampleSet("codex", root, tuple(written), shared=("session_index.jsonl",), dumps=compact,
                     environment={"CODEX_HOME": str(root)})
