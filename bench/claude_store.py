"""A generated Claude Code store for the benchmarks: many session files in the byte form the real
client writes, built quickly and deterministically, cached under bench/.stores/ keyed by the
parameters (like the Fractal scale store in bench/stores.py) and reused while they are unchanged.

The records follow what Claude Code 2.1.332 wrote in real sessions made offline (the compat
scenario's files: one turn, three turns with --resume, a Bash tool call, a /compact, a
--fork-session, a named session): the same record types, keys in the same order, compact JSON
(no space after `:` or `,`), UTF-8 with non-ASCII text unescaped, one record a line. A session is
a series of client processes (one per turn for `claude -p`, entrypoint `sdk-cli`; several turns
for an interactive `cli` one); a process starts with the request-log header (a tool-listing
`api-request-shape` of ~38 KB, `prompt_snapshot` and `skill_listing` attachments, two
`api-request-blob`s), and a turn is: `queue-operation`s, the user prompt, attachments, one
`api-request` per model call, the assistant's messages split over several lines that share
`message.id` and repeat `usage` (thinking, text, tool_use), `tool_result` user records with their
`toolUseResult` (Bash stdout, Read file content, Edit's original file, Grep hits: the big
outputs), blobs duplicating big tool results, then `last-prompt` and `cost-state`. Some sessions
have `compact_boundary`s (auto when the context passes ~160k tokens, some manual `/compact`),
subagents (a sidecar `<id>/subagents/agent-*.jsonl`, or inline `isSidechain` records), rewound
branches (abandoned siblings in the parent chain), `custom-title`/`agent-name`, `ai-title`, an
`api_error` ending or an interrupted last turn. Where the real files showed no example (thinking
signatures, Read/Edit/Grep results, subagent files, api_error), the shapes are the public ones.

The text comes from pools of JSON-escaped lines built once per worker (prose, code, numbered file
lines) and sliced at line boundaries, so records are f-string templates with no json.dumps per
line; the build checks a sample of lines by decoding and re-encoding them byte for byte.

Bump GENERATOR_VERSION whenever the bytes this module writes change.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from . import stores

GENERATOR_VERSION = 3
STORES_DIR = stores.STORES_DIR
CLIENT_VERSIONS = ("2.1.332", "2.1.332", "2.1.330", "2.1.318")
MODELS = ("claude-opus-5-5", "claude-opus-5-5", "claude-sonnet-5-1", "claude-haiku-5")
AUTO_COMPACT_TOKENS = 160_000
_EPOCH = stores._EPOCH   # the Fractal store's time window too, so the listings interleave


@dataclass(frozen=True)
class ClaudeStoreParams:
    name: str = "claude"
    sessions: int = 2_000
    projects: int = 200
    min_kb: int = 100
    max_kb: int = 20 * 1024
    median_kb: int = 380            # lognormal sizes, clipped to [min_kb, max_kb], then scaled to total_mb
    sigma: float = 1.45
    total_mb: int = 2_000
    fractal_workspaces: int = 50    # the Fractal scale store's workspace count (its folder names)
    shared_projects: int = 40       # projects whose cwd is one of those Fractal workspace folders
    sdk_share: float = 0.35         # entrypoint sdk-cli (claude -p, the SDK): hidden by Claude's picker
    manual_compact_share: float = 0.12
    sidechain_share: float = 0.18
    rewind_share: float = 0.12
    custom_title_share: float = 0.1
    ai_title_share: float = 0.65
    error_share: float = 0.06       # the last turn ends in an API error
    interrupted_share: float = 0.06
    seed: int = 20261201
    version: int = GENERATOR_VERSION

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


FULL = ClaudeStoreParams()
QUICK = ClaudeStoreParams(name="claude-quick", sessions=200, projects=20, total_mb=200, fractal_workspaces=10,
                          shared_projects=5)


@dataclass
class ClaudeStore:
    """A built store: its config dir (CLAUDE_CONFIG_DIR) and what is in it."""

    params: ClaudeStoreParams
    dir: Path
    root: Path                                      # the config dir: root / "projects" / slug / id.jsonl
    projects: list[str]                             # cwd of each project
    sessions: int
    total_bytes: int                                # session files only
    sidecar_bytes: int                              # subagent files
    lines: int
    sizes: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)      # features: sdk, compacted, sidechain, rewound, titles...
    build_seconds: float | None = None              # None: reused from the cache
    first_build_seconds: float | None = None

    def session_files(self) -> list[Path]:
        return sorted(self.root.glob("projects/*/*.jsonl"))

    def all_files(self) -> list[Path]:
        """Session files and subagent sidecars."""
        return self.session_files() + sorted(self.root.glob("projects/*/*/subagents/*.jsonl"))

    def describe(self) -> str:
        s, c = self.sizes, self.counts
        slugs = len({self.slug(p) for p in self.projects})
        return (f"{self.sessions:,} Claude Code sessions in {len(self.projects)} project folders ({slugs} slugs; "
                f"{self.params.shared_projects} are Fractal workspace folders), {self.total_bytes / 2**30:.2f} GiB "
                f"in {self.lines:,} lines, plus {self.sidecar_bytes / 2**20:.0f} MB of subagent files; sizes median "
                f"{s['median_kb']:.0f} KB, p90 {s['p90_kb'] / 1024:.1f} MB, largest {s['max_kb'] / 1024:.1f} MB, "
                f"smallest {s['min_kb']:.0f} KB; {c['sdk']} sdk-cli, {c['compacted']} compacted "
                f"({c['compact_boundaries']} boundaries), {c['sidechain']} with subagents, {c['rewound']} rewound, "
                f"{c['custom_title']} renamed, {c['ai_title']} with an ai-title, {c['failed']} ending in an API "
                f"error, {c['interrupted']} interrupted")

    @staticmethod
    def slug(cwd: str) -> str:
        return slug(cwd)


def slug(cwd: str) -> str:
    """Claude Code's project folder name: every non-alphanumeric character becomes `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def project_paths(params: ClaudeStoreParams) -> list[str]:
    """The cwd of each project: the first `shared_projects` are Fractal scale-store workspace folders,
    the rest other folders (two of them share one slug, one has a non-ASCII name)."""
    fractal = stores.workspace_paths(stores.StoreParams(workspaces=params.fractal_workspaces))
    rng = random.Random(f"{params.seed}:projects")
    paths = list(fractal[:params.shared_projects])
    words = ("api web cli core infra data ml docs site app bot sdk ops tools lab mobile auth billing search "
             "pipeline etl dash admin gateway worker sync notes blog game").split()
    extra = ["/home/dev/src/my.app", "/home/dev/src/my-app", "/home/dev/src/café-menu",
             "/home/dev/src/mono/packages/ui", "/home/dev/src/mono/packages/server", "/home/dev/work/client_portal"]
    seen = set(paths)
    for path in extra:
        if len(paths) < params.projects and path not in seen:
            paths.append(path)
            seen.add(path)
    while len(paths) < params.projects:
        base = rng.choice(("/home/dev/src", "/home/dev/work", "/home/dev/oss", "/srv/repos"))
        path = f"{base}/{rng.choice(words)}-{rng.choice(words)}-{rng.randrange(1, 99)}"
        if path not in seen:
            paths.append(path)
            seen.add(path)
    return paths


def target_sizes(params: ClaudeStoreParams) -> list[int]:
    """Each session file's target size in bytes: lognormal around median_kb, clipped to
    [min_kb, max_kb], scaled (a few rounds) so that they sum to about total_mb."""
    rng = random.Random(f"{params.seed}:sizes")
    raw = [math.exp(rng.gauss(math.log(params.median_kb), params.sigma)) for _ in range(params.sessions)]
    lo, hi = params.min_kb, params.max_kb
    scale = 1.0
    for _ in range(20):
        clipped = [min(hi, max(lo, r * scale)) for r in raw]
        total = sum(clipped) / 1024
        if abs(total - params.total_mb) < params.total_mb * 0.002:
            break
        scale *= params.total_mb / total
    return [int(kb * 1024) for kb in clipped]


# --- text pools ----------------------------------------------------------------------------------

def _esc(text: str) -> str:
    """JSON string content as Claude Code writes it (UTF-8 unescaped)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class _Pool:
    """JSON-escaped lines joined by an escaped newline; slices are cut at line boundaries, so each
    slice is valid JSON string content."""

    def __init__(self, lines: list[str]):
        escaped = [_esc(line) for line in lines if line]
        self.text = "\\n".join(escaped)
        self.starts = []
        position = 0
        for line in escaped:
            self.starts.append(position)
            position += len(line) + 2

    def take(self, rng: random.Random, n: int) -> str:
        """About `n` escaped characters (at least one line)."""
        parts = []
        need = max(1, int(n))
        while need > 0:
            i = rng.randrange(len(self.starts))
            start = self.starts[i]
            j = bisect.bisect_left(self.starts, start + need, lo=i + 1)
            end = self.starts[j] - 2 if j < len(self.starts) else len(self.text)
            parts.append(self.text[start:end])
            need -= end - start + 2
        return "\\n".join(parts)


class _Pools:
    def __init__(self, seed: int):
        rng = random.Random(f"{seed}:pools")
        prose_lines: list[str] = []
        size = 0
        while size < 1 << 20:
            block = stores._response(rng, rng.randrange(300, 3000))
            prose_lines.extend(block.split("\n"))
            size += len(block)
        self.prose = _Pool(prose_lines)
        code_lines = stores._corpus(seed, chars=1 << 20).split("\n")
        self.code = _Pool(code_lines)
        self.numbered = _Pool([f"{(i % 900) + 1:>6}→{line}" for i, line in enumerate(code_lines)])
        self.prompts = [stores._request(rng) for _ in range(400)]
        self.prompts += ["Lancez les tests et corrigez l'échec — merci ✓", "修复登录页面的错误",
                         "¿Puedes revisar el parser?"]
        verbs = ("Fix", "Refactor", "Speed up", "Document", "Test", "Rename", "Debug", "Add", "Remove", "Cache")
        self.titles = [f"{rng.choice(verbs)} the {rng.choice(stores._ADJECTIVES)} {rng.choice(stores._NOUNS)} "
                       f"{rng.choice(stores._NOUNS)}" for _ in range(300)]
        # The per-process header's big bodies (shared by every session of a worker, as the real
        # client's differ only by version, folder and tool set).
        self.shapes = [self._shape(rng) for _ in range(3)]
        self.snapshots_small = [self._snapshot(rng, 10, 700, tools=False) for _ in range(3)]
        self.snapshots_big = [self._snapshot(rng, 10, 2000, tools=True) for _ in range(3)]
        self.skills = [self._skills(rng) for _ in range(2)]
        self.system_blob = [self.prose.take(rng, 9000) for _ in range(3)]

    def _tools(self, rng: random.Random, schema_key: str) -> str:
        names = ("Agent", "Bash", "Edit", "Glob", "Grep", "Read", "Write", "TodoWrite", "ToolSearch", "Skill",
                 "AskUserQuestion", "ExitPlanMode")
        tools = []
        for name in names:
            description = self.prose.take(rng, rng.randrange(300, 3000))
            props = ",".join(f'"{p}":{{"description":"{self.prose.take(rng, rng.randrange(30, 400))}","type":"string"}}'
                             for p in rng.sample(("command", "description", "file_path", "pattern", "path",
                                                  "content", "old_string", "new_string", "prompt", "timeout"),
                                                 rng.randrange(1, 5)))
            schema = (f'"input_schema":{{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",'
                      f'"properties":{{{props}}},"required":[],"additionalProperties":false}}')
            if schema_key == "shape":
                tools.append(f'{{"name":"{name}","description":"{description}",{schema}}}')
            else:
                tools.append(f'{{"name":"{name}","description":"{description}","schema":{{"name":"{name}",'
                             f'"description":"{description}",{schema}}}}}')
        return "[" + ",".join(tools) + "]"

    def _shape(self, rng: random.Random) -> str:
        system = (f'[{{"type":"text","text":"You are a Claude agent, built on Anthropic\'s Claude Agent SDK."}},'
                  f'{{"type":"text","text":"{self.prose.take(rng, 9000)}"}}]')
        return f'{{"system":{system},"tools":{self._tools(rng, "shape")}}}'

    def _snapshot(self, rng: random.Random, parts: int, chars: int, *, tools: bool) -> str:
        prompt = ",".join(f'"{self.prose.take(rng, chars)}"' for _ in range(parts))
        listing = (f',"tools":{self._tools(rng, "snapshot")},"cliPrefix":"You are a Claude agent, built on '
                   'Anthropic\'s Claude Agent SDK.","reminderFold":false,"systemTurns":true,"toolChangeHeader":true,'
                   '"inlineTools":false,"keptReminders":false') if tools else ',"reminderFold":false'
        return (f'{{"type":"prompt_snapshot","systemPrompt":[{prompt}]{listing},"echoWireToolInputs":false,'
                f'"contextRendering":"announced"}}')

    def _skills(self, rng: random.Random) -> str:
        names = [f"skill-{i}" for i in range(13)]
        content = self.prose.take(rng, 6200)
        return (f'{{"type":"skill_listing","content":"{content}","skillCount":13,"isInitial":true,'
                f'"names":[{",".join(chr(34) + n + chr(34) for n in names)}],'
                f'"digests":[{",".join(chr(34) + f"{rng.getrandbits(64):016x}" + chr(34) for _ in names)}]}}')


# --- one session ---------------------------------------------------------------------------------

def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def _stamp(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _ref(value: str | None) -> str:
    return "null" if value is None else f'"{value}"'


@dataclass
class SessionFacts:
    """What one generated session is, for the manifest and for checks."""

    session_id: str
    cwd: str
    path: str
    bytes: int = 0
    lines: int = 0
    sidecar_bytes: int = 0
    turns: int = 0                   # user prompts on the main chain (abandoned branches excluded)
    sdk: bool = False
    compactions: int = 0
    sidechain: bool = False
    rewound: bool = False
    custom_title: str | None = None
    ai_title: str | None = None
    ending: str = "ok"               # ok | failed | interrupted
    mtime: float = 0.0


class SessionWriter:
    """Writes one session's records, turn by turn, to a file (and its subagent sidecars)."""

    def __init__(self, pools: _Pools, rng: random.Random, *, session_id: str, cwd: str, sdk: bool, start: float,
                 model: str, version: str, branch: str, path: Path, mode: str = "w"):
        self.p, self.rng = pools, rng
        self.sid, self.cwd, self.sdk, self.model = session_id, cwd, sdk, model
        self.now = start
        self.path = path
        self.facts = SessionFacts(session_id, cwd, str(path), sdk=sdk)
        entry = "sdk-cli" if sdk else "cli"
        self.tail = (f'"userType":"external","entrypoint":"{entry}","cwd":"{_esc(cwd)}","sessionId":"{session_id}",'
                     f'"version":"{version}","gitBranch":"{branch}"')
        self.parent: str | None = None      # the newest record of the main chain
        self.buffer: list[str] = []
        self.size = 0                       # characters written (≈ bytes)
        self.handle = open(path, mode, encoding="utf-8", newline="\n")
        self.context = 0                    # tokens in context now (what usage reports)
        self.cost = 0.0
        self.usage_totals = [0, 0, 0, 0]    # input, output, cache read, cache creation
        self.msg = rng.getrandbits(40)
        self.turn_index = 0
        self.header_written = False
        self.big_snapshot = False           # the ~57 KB prompt_snapshot after the first reply (lean sessions skip it)
        self.shape = rng.randrange(len(pools.shapes))
        self.last_prompt = ""
        self.sidecars = 0

    # -- plumbing --
    def emit(self, line: str) -> None:
        self.buffer.append(line)
        self.size += len(line) + 1
        if len(self.buffer) >= 256:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.handle.write("\n".join(self.buffer) + "\n")
            self.facts.lines += len(self.buffer)
            self.buffer = []

    def close(self) -> SessionFacts:
        self.flush()
        self.handle.close()
        self.facts.bytes = os.path.getsize(self.path)
        self.facts.mtime = self.now
        os.utime(self.path, (self.now, self.now))
        return self.facts

    def tick(self, low: float = 0.002, high: float = 0.05) -> str:
        self.now += self.rng.uniform(low, high)
        return _stamp(self.now)

    def hexid(self, bits: int = 64) -> str:
        return f"{self.rng.getrandbits(bits):0{bits // 4}x}"

    # -- records --
    def attachment(self, body: str, *, rendered: str | None = None, role: str = "system",
                   sidechain: str = "false") -> None:
        uuid = _uuid(self.rng)
        extra = (f',"rendered":[{{"content":"<system-reminder>\\n{rendered}\\n</system-reminder>"}}],'
                 f'"renderedRole":"{role}"') if rendered is not None else ""
        self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":{sidechain},"attachment":{body},'
                  f'"type":"attachment","uuid":"{uuid}","timestamp":"{self.tick()}"{extra},{self.tail}}}')
        self.parent = uuid

    def header(self, *, full: bool) -> None:
        """The records a client process writes before its first model call."""
        rng, p = self.rng, self.p
        cwd = _esc(self.cwd)
        self.attachment(f'{{"type":"environment","snapshot":{{"workingDirectory":"{cwd}","isWorktree":false,'
                        f'"isGitRepo":true,"additionalWorkingDirectories":[],"platform":"linux","shell":"bash",'
                        f'"osVersion":"Linux 6.18.44"}}}}',
                        rendered=f"# Environment\\nYou have been invoked in the following environment: \\n - "
                                 f"Primary working directory: {cwd}\\n - Is a git repository: true\\n - Platform: "
                                 f"linux\\n - Shell: bash")
        self.attachment(f'{{"type":"model","identity":{{"modelId":"{self.model}","marketingName":"Claude",'
                        f'"knowledgeCutoff":"June 2026"}},"text":"You are powered by the model {self.model}."}}',
                        rendered=f"You are powered by the model {self.model}.")
        if full:
            self.attachment('{"type":"deferred_tools_delta","addedNames":["CronCreate","CronDelete","Monitor",'
                            '"WebFetch","WebSearch"],"addedLines":["CronCreate","CronDelete","Monitor","WebFetch",'
                            '"WebSearch"],"removedNames":[],"wireHiddenNames":[],"readdedNames":[],'
                            '"pendingMcpServers":[],"needsAuthMcpServers":[],"failedMcpServers":[]}',
                            rendered="The following deferred tools are now available via ToolSearch.")
            lines = ",".join(f'"- {p.prose.take(rng, 400)}"' for _ in range(5))
            self.attachment(f'{{"type":"agent_listing_delta","addedTypes":["claude","Explore","general-purpose",'
                            f'"Plan","statusline-setup"],"addedLines":[{lines}],"builtInTypes":["claude","Explore",'
                            f'"general-purpose","Plan","statusline-setup"],"builtInPluginTypes":[],"removedTypes":[],'
                            f'"isInitial":true,"showConcurrencyNote":true}}',
                            rendered=p.prose.take(rng, 2000))
            self.attachment(p.skills[rng.randrange(len(p.skills))], rendered=p.prose.take(rng, 6500))
            self.emit(f'{{"type":"atis-latch","atis":"","sessionId":"{self.sid}"}}')
            self.attachment('{"type":"session_context","context":{}}')
        self.attachment(f'{{"type":"date","date":"{_stamp(self.now)[:10]}"}}',
                        rendered=f"Today's date is {_stamp(self.now)[:10]}.")
        if full:
            self.attachment(p.snapshots_small[rng.randrange(len(p.snapshots_small))])
            self.shape = rng.randrange(len(p.shapes))
            self.emit(f'{{"type":"api-request-shape","sessionId":"{self.sid}","shapeHash":"{self.hexid(256)}",'
                      f'"timestamp":"{self.tick()}","version":"2.1.332","shape":{p.shapes[self.shape]}}}')
            self.emit(f'{{"type":"api-request-blob","sessionId":"{self.sid}","hash":"{self.hexid(256)}",'
                      f'"message":{{"role":"system","content":[{{"type":"text","text":"'
                      f'{p.system_blob[rng.randrange(len(p.system_blob))]}"}}],"output_config":{{"effort":"medium"}}}}}}')

    def api_request(self, keep: int) -> str:
        request = _uuid(self.rng)
        tail = ",".join(f'"{self.hexid(256)}"' for _ in range(self.rng.randrange(1, 4)))
        self.emit(f'{{"type":"api-request","sessionId":"{self.sid}","id":"{request}","timestamp":"{self.tick()}",'
                  f'"version":"2.1.332","querySource":"{"sdk" if self.sdk else "repl_main_thread"}",'
                  f'"shapeHash":"{self.hexid(256)}","params":{{"model":"{self.model}","betas":["claude-code-20250219",'
                  f'"interleaved-thinking-2025-05-14","context-management-2025-06-27","effort-2025-11-24"],'
                  f'"max_tokens":128000,"thinking":{{"type":"adaptive","display":"omitted"}},"context_management":'
                  f'{{"edits":[{{"type":"clear_thinking_20251015","keep":"all"}}]}},"output_config":{{"effort":"medium"}}}},'
                  f'"thread":{{"type":"none"}},"echoWireToolInputs":false,"keep":{keep},"tail":[{tail}],'
                  f'"cacheControl":[{{"path":["system",0],"value":{{"type":"ephemeral"}}}}],'
                  f'"requestDigest":"{self.hexid(256)}"}}')
        return request

    def usage(self, output: int) -> str:
        rng = self.rng
        total = max(self.context, 6_000)
        fresh = rng.randrange(1, 12)
        creation = min(total - fresh, rng.randrange(200, 6000))
        read = total - fresh - creation
        self.usage_totals[0] += fresh
        self.usage_totals[1] += output
        self.usage_totals[2] += read
        self.usage_totals[3] += creation
        self.cost += (fresh * 5 + creation * 6.25 + read * 0.5 + output * 25) / 1e6
        return (f'{{"input_tokens":{fresh},"cache_creation_input_tokens":{creation},"cache_read_input_tokens":{read},'
                f'"output_tokens":{output},"output_tokens_details":{{"thinking_tokens":{output // 3}}},'
                f'"server_tool_use":{{"web_search_requests":0,"web_fetch_requests":0}},"service_tier":"standard",'
                f'"cache_creation":{{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":{creation}}},'
                f'"inference_geo":"","iterations":[],"speed":"standard","fallback_credit":null}}')

    def assistant(self, blocks: list[str], stop: str, request: str, *, sidechain: str = "false",
                  agent: str = "") -> str:
        """One API message split over one line per content block (shared id, repeated usage)."""
        self.msg += 1
        message_id = f"msg_01{self.msg:012x}{self.hexid(32)}"
        output = self.rng.randrange(20, 2500)
        usage = self.usage(output)
        uuid = ""
        for index, block in enumerate(blocks):
            uuid = _uuid(self.rng)
            self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":{sidechain}{agent},"message":{{"id":'
                      f'"{message_id}","type":"message","role":"assistant","model":"{self.model}","content":[{block}],'
                      f'"stop_reason":"{stop}","stop_sequence":null,"usage":{usage},"stop_details":null}},'
                      f'"apiBlockIndex":{index},"requestRef":"{request}","requestedModel":"{self.model}",'
                      f'"promptCacheRequested":"5m","type":"assistant","uuid":"{uuid}","timestamp":"{self.tick()}",'
                      f'"effort":"medium","perTurnEffort":"medium","madeBy":"model",{self.tail}}}')
            self.parent = uuid
        self.context += output + 40
        return uuid

    def prompt(self, text: str, *, meta: str = "") -> str:
        rng = self.rng
        uuid = _uuid(rng)
        self.turn_index += 1
        origin = ('"promptSource":"sdk","sentAtMs":{ms},"rowSource":"local","turnOrigin":"sdk",'
                  if self.sdk else '"promptSource":"repl","sentAtMs":{ms},"rowSource":"local",')
        origin = origin.format(ms=int(self.now * 1000))
        self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":false,"promptId":"{_uuid(rng)}","type":"user",'
                  f'"message":{{"role":"user","content":"{text}"}}{meta},"uuid":"{uuid}","timestamp":"{self.tick()}",'
                  f'"permissionMode":"default",{origin}"turnPosition":{{"promptIndex":0,"turnIndex":{self.turn_index}}},'
                  f'{self.tail}}}')
        self.parent = uuid
        self.context += len(text) // 4 + 10
        return uuid

    def tool_call(self, request_budget: int, *, sidechain: str = "false", agent: str = "") -> tuple[str, str, str]:
        """(tool_use block, tool_result content, toolUseResult) for one call of about this many bytes."""
        rng, p = self.rng, self.p
        tool_id = f"toolu_01{self.hexid(88)}"[:32]
        kind = rng.random()
        n = max(80, request_budget)
        if kind < 0.38:
            command = rng.choice(("pytest -q", "git status", "git diff", "npm test", "make build", "ls -la src",
                                  "cargo test", "python -m mypy src", "rg -n TODO"))
            out = p.code.take(rng, min(n // 2, 30_000))   # Claude Code cuts Bash output at 30,000 characters
            use = (f'{{"type":"tool_use","id":"{tool_id}","name":"Bash","input":{{"command":"{command}",'
                   f'"description":"Run {command.split()[0]}"}}}}')
            result = f'"{out}"'
            extra = (f'{{"stdout":"{out}","stderr":"","interrupted":false,"isImage":false,'
                     f'"noOutputExpected":false}}')
        elif kind < 0.68:
            file_path = f"{_esc(self.cwd)}/{stores._file_path(rng)}"
            out = p.numbered.take(rng, min(n // 2, 100_000))   # a Read is at most 2,000 lines
            lines = out.count("\\n") + 1
            start = rng.randrange(1, 400)
            use = f'{{"type":"tool_use","id":"{tool_id}","name":"Read","input":{{"file_path":"{file_path}"}}}}'
            result = f'"{out}"'
            extra = (f'{{"type":"text","file":{{"filePath":"{file_path}","content":"{out}","numLines":{lines},'
                     f'"startLine":{start},"totalLines":{start + lines + rng.randrange(0, 600)}}}}}')
        elif kind < 0.85:
            file_path = f"{_esc(self.cwd)}/{stores._file_path(rng)}"
            old, new = p.code.take(rng, rng.randrange(40, 600)), p.code.take(rng, rng.randrange(40, 900))
            original = p.code.take(rng, min(200_000, max(100, n - len(old) - len(new))))
            use = (f'{{"type":"tool_use","id":"{tool_id}","name":"Edit","input":{{"file_path":"{file_path}",'
                   f'"old_string":"{old}","new_string":"{new}","replace_all":false}}}}')
            result = f'"The file {file_path} has been updated successfully."'
            extra = (f'{{"filePath":"{file_path}","oldString":"{old}","newString":"{new}","originalFile":'
                     f'"{original}","structuredPatch":[{{"oldStart":{rng.randrange(1, 500)},"oldLines":3,"newStart":'
                     f'{rng.randrange(1, 500)},"newLines":4,"lines":["-{old[:60].rstrip(chr(92))}","+'
                     f'{new[:60].rstrip(chr(92))}"]}}],"userModified":false,"replaceAll":false}}')
        else:
            pattern = rng.choice(stores._NOUNS)
            out = p.numbered.take(rng, min(n // 2, 20_000))
            files = ",".join(f'"{stores._file_path(rng)}"' for _ in range(rng.randrange(1, 6)))
            use = (f'{{"type":"tool_use","id":"{tool_id}","name":"Grep","input":{{"pattern":"{pattern}",'
                   f'"output_mode":"content","-n":true}}}}')
            result = f'"{out}"'
            extra = (f'{{"mode":"content","numFiles":{files.count(",") + 1},"filenames":[{files}],"content":"{out}",'
                     f'"numLines":{out.count(chr(92) + "n") + 1}}}')
        return use, f'[{{"tool_use_id":"{tool_id}","type":"tool_result","content":{result},"is_error":false}}]', extra

    def tool_result(self, content: str, extra: str, source: str, *, sidechain: str = "false", agent: str = "") -> None:
        uuid = _uuid(self.rng)
        self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":{sidechain}{agent},"promptId":"{_uuid(self.rng)}",'
                  f'"type":"user","message":{{"role":"user","content":{content}}},"uuid":"{uuid}",'
                  f'"timestamp":"{self.tick(0.05, 3)}","toolUseResult":{extra},"sandboxed":false,'
                  f'"sourceToolAssistantUUID":"{source}",{self.tail}}}')
        self.parent = uuid
        self.context += len(content) // 4

    def text_blocks(self, budget: int) -> list[str]:
        rng, p = self.rng, self.p
        blocks = []
        if rng.random() < 0.5:
            blocks.append(f'{{"type":"thinking","thinking":"{p.prose.take(rng, rng.randrange(100, 1500))}",'
                          f'"signature":"{self.hexid(256)}{self.hexid(256)}{self.hexid(256)}"}}')
        blocks.append(f'{{"type":"text","text":"{p.prose.take(rng, budget)}"}}')
        return blocks

    # -- a turn --
    def turn(self, budget: int, *, ending: str = "ok", subagent: bool = False) -> None:
        """One user prompt and the agent's work, about `budget` bytes in all (starting with an Agent
        call when `subagent`)."""
        rng, p = self.rng, self.p
        start_size = self.size
        self.now += rng.uniform(20, 1800)
        text = _esc(rng.choice(p.prompts)) if rng.random() < 0.85 else p.prose.take(rng, rng.randrange(200, 4000))
        self.last_prompt = text
        if self.sdk:
            self.emit(f'{{"type":"queue-operation","operation":"enqueue","timestamp":"{self.tick()}",'
                      f'"sessionId":"{self.sid}","content":"{text}"}}')
            self.emit(f'{{"type":"queue-operation","operation":"dequeue","timestamp":"{self.tick()}",'
                      f'"sessionId":"{self.sid}"}}')
        self.prompt(text)
        self.facts.turns += 1
        if not self.header_written:
            self.header(full=True)
            self.header_written = True
        elif self.sdk and rng.random() < 0.25:
            self.header(full=False)
        elif rng.random() < 0.3:
            self.attachment(f'{{"type":"edited_text_file","filename":"{_esc(self.cwd)}/{stores._file_path(rng)}",'
                            f'"snippet":"{p.code.take(rng, rng.randrange(200, 3000))}"}}',
                            rendered=p.code.take(rng, 300), role="user")
        # the composite message the request log stores (reminders + prompt)
        self.emit(f'{{"type":"api-request-blob","sessionId":"{self.sid}","hash":"{self.hexid(256)}","message":'
                  f'{{"role":"user","content":[{{"type":"text","text":"<system-reminder>\\n'
                  f'{p.prose.take(rng, rng.randrange(300, 3000))}\\n</system-reminder>\\n"}},'
                  f'{{"type":"text","text":"{text}"}}]}}}}')
        if ending == "failed":
            for attempt in range(1, rng.randrange(2, 5)):
                uuid = _uuid(rng)
                self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":false,"type":"system","subtype":'
                          f'"api_error","level":"error","error":{{"status":529,"headers":{{}},"requestID":null,'
                          f'"error":{{"type":"error","error":{{"type":"overloaded_error","message":"Overloaded"}}}},'
                          f'"type":"new_api_error"}},"retryInMs":{round(500 * 2 ** attempt + rng.random(), 2)!r},'
                          f'"retryAttempt":{attempt},"maxRetries":10,"timestamp":"{self.tick(0.5, 8)}",'
                          f'"uuid":"{uuid}",{self.tail}}}')
                self.parent = uuid
            uuid = _uuid(rng)
            self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":false,"type":"assistant","uuid":"{uuid}",'
                      f'"timestamp":"{self.tick()}","message":{{"id":"{_uuid(rng)}","container":null,"model":'
                      f'"<synthetic>","role":"assistant","stop_reason":"stop_sequence","stop_sequence":"","type":'
                      f'"message","usage":{{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,'
                      f'"cache_read_input_tokens":0}},"content":[{{"type":"text","text":"API Error: 529 '
                      f'{{\\"type\\":\\"error\\",\\"error\\":{{\\"type\\":\\"overloaded_error\\",\\"message\\":'
                      f'\\"Overloaded\\"}}}}"}}]}},"error":"unknown","isApiErrorMessage":true,{self.tail}}}')
            self.parent = uuid
            self.last_prompt_record()
            return
        if subagent:
            self.subagent()
        keep = 0
        steps = 0
        while True:
            request = self.api_request(keep)
            keep += 2
            left = budget - (self.size - start_size)
            steps += 1
            if left <= 4000 or steps > 80 or (steps > 2 and rng.random() < 0.06):
                break
            # a model call that uses tools: text, then 1-3 tool_use lines of the same message
            count = rng.randrange(1, 4)
            calls = [self.tool_call(int(left * rng.uniform(0.02, 0.25) / count)) for _ in range(count)]
            blocks = (self.text_blocks(rng.randrange(40, 400)) if rng.random() < 0.6 else []) + [c[0] for c in calls]
            source = self.assistant(blocks, "tool_use", request)
            if rng.random() < 0.015 and ending == "ok":
                self.subagent()
            for _, content, extra in calls:
                self.tool_result(content, extra, source)
                if len(content) > 20_000:   # the request log's copy of a big result
                    self.emit(f'{{"type":"api-request-blob","sessionId":"{self.sid}","hash":"{self.hexid(256)}",'
                              f'"message":{{"role":"user","content":{content}}}}}')
            if self.context > AUTO_COMPACT_TOKENS:
                self.compact("auto")
        spent = budget - (self.size - start_size)
        if ending == "interrupted":
            self.assistant(self.text_blocks(rng.randrange(40, 300)), "tool_use", request)
            uuid = _uuid(rng)
            self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":false,"type":"user","message":{{"role":'
                      f'"user","content":[{{"type":"text","text":"[Request interrupted by user]"}}]}},"uuid":"{uuid}",'
                      f'"timestamp":"{self.tick(1, 30)}",{self.tail}}}')
            self.parent = uuid
            self.last_prompt_record()
            return
        self.assistant(self.text_blocks(max(200, min(spent, 12_000))), "end_turn", request)
        if self.big_snapshot:
            self.attachment(p.snapshots_big[rng.randrange(len(p.snapshots_big))])
            self.big_snapshot = False
        if not self.sdk:
            uuid = _uuid(rng)
            self.emit(f'{{"parentUuid":{_ref(self.parent)},"isSidechain":false,"type":"system","subtype":'
                      f'"turn_duration","durationMs":{rng.randrange(2000, 900_000)},"isMeta":false,'
                      f'"timestamp":"{self.tick()}","uuid":"{uuid}",{self.tail}}}')
            self.parent = uuid
        self.last_prompt_record()

    def last_prompt_record(self) -> None:
        self.emit(f'{{"type":"last-prompt","lastPrompt":"{self.last_prompt[:200].rstrip(chr(92))}",'
                  f'"leafUuid":"{self.parent}","sessionId":"{self.sid}"}}')

    def end_process(self) -> None:
        rng = self.rng
        if rng.random() < 0.3:
            self.emit(f'{{"type":"mode","mode":"normal","sessionId":"{self.sid}"}}')
        i, o, r, c = self.usage_totals
        cost = round(self.cost, 7)
        self.emit(f'{{"type":"cost-state","sessionId":"{self.sid}","totalCostUSD":{cost!r},"totalAPIDuration":'
                  f'{rng.randrange(1000, 900_000)},"totalAPIDurationWithoutRetries":{rng.randrange(1000, 900_000)},'
                  f'"totalToolDuration":{rng.randrange(0, 90_000)},"totalLinesAdded":{rng.randrange(0, 900)},'
                  f'"totalLinesRemoved":{rng.randrange(0, 400)},"totalDuration":{rng.randrange(1000, 3_600_000)},'
                  f'"startTime":{int(self.now * 1000) - rng.randrange(1000, 3_600_000)},"modelUsage":{{"{self.model}":'
                  f'{{"inputTokens":{i},"outputTokens":{o},"thinkingTokens":{o // 3},"cacheReadInputTokens":{r},'
                  f'"cacheCreationInputTokens":{c},"cacheCreationEphemeral5mInputTokens":{c},'
                  f'"cacheCreationEphemeral1hInputTokens":0,"webSearchRequests":0,"costUSD":{cost!r}}}}},'
                  f'"hasUnknownModelCost":false}}')

    def compact(self, trigger: str) -> None:
        rng, p = self.rng, self.p
        pre = self.context
        post = rng.randrange(2_500, 30_000)
        boundary = _uuid(rng)
        self.emit(f'{{"parentUuid":null,"logicalParentUuid":{_ref(self.parent)},"isSidechain":false,"type":"system",'
                  f'"subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":'
                  f'"{self.tick(5, 90)}","uuid":"{boundary}","level":"info","compactMetadata":{{"trigger":"{trigger}",'
                  f'"preTokens":{pre},"durationMs":{rng.randrange(5000, 90_000)},"postTokens":{post},'
                  f'"cumulativeDroppedTokens":{pre - post}}},{self.tail}}}')
        self.parent = boundary
        summary = _uuid(rng)
        self.emit(f'{{"parentUuid":"{boundary}","isSidechain":false,"promptId":"{_uuid(rng)}","type":"user",'
                  f'"message":{{"role":"user","content":"This session is being continued from a previous conversation '
                  f'that ran out of context. The summary below covers the earlier portion of the conversation.\\n\\n'
                  f'Summary:\\n{p.prose.take(rng, rng.randrange(2000, 9000))}"}},"isVisibleInTranscriptOnly":true,'
                  f'"isCompactSummary":true,"uuid":"{summary}","timestamp":"{self.tick()}",{self.tail}}}')
        self.parent = summary
        if trigger == "manual":   # as the real client writes a /compact: after the boundary and the summary
            uuid = _uuid(rng)
            self.emit(f'{{"parentUuid":"{summary}","isSidechain":false,"promptId":"{_uuid(rng)}","type":"user",'
                      f'"message":{{"role":"user","content":"<local-command-caveat>The command below was run directly '
                      f'in Claude Code, not sent to you as a request, and its output goes straight to the user.'
                      f'</local-command-caveat>"}},"isMeta":true,"rowSource":"harness","uuid":"{uuid}",'
                      f'"timestamp":"{self.tick()}",{self.tail}}}')
            self.parent = uuid
            for content in ("<command-name>/compact</command-name>\\n            <command-message>compact"
                            "</command-message>\\n            <command-args></command-args>",
                            "<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>"):
                uuid = _uuid(rng)
                self.emit(f'{{"parentUuid":"{self.parent}","isSidechain":false,"promptId":"{_uuid(rng)}",'
                          f'"type":"user","message":{{"role":"user","content":"{content}"}},"rowSource":"local",'
                          f'"uuid":"{uuid}","timestamp":"{self.tick()}",{self.tail}}}')
                self.parent = uuid
        self.context = post
        self.facts.compactions += 1
        self.header(full=True)

    def subagent(self) -> None:
        """An Agent (Task) call: the subagent's records in a sidecar file (or inline, older style),
        then its report as the tool result."""
        rng, p = self.rng, self.p
        self.facts.sidechain = True
        agent_id = self.hexid(64)[:17]
        tool_id = f"toolu_01{self.hexid(88)}"[:32]
        task = p.prose.take(rng, rng.randrange(200, 1500))
        request = self.api_request(0)
        source = self.assistant([f'{{"type":"tool_use","id":"{tool_id}","name":"Agent","input":{{"description":'
                                 f'"Explore the code","prompt":"{task}","subagent_type":"Explore"}}}}'], "tool_use",
                                request)
        inline = rng.random() < 0.35
        main_parent, main_context, main_handle = self.parent, self.context, self.handle
        main_size = self.size
        side_path = None
        if not inline:
            directory = self.path.parent / self.sid / "subagents"
            directory.mkdir(parents=True, exist_ok=True)
            side_path = directory / f"agent-{agent_id}.jsonl"
            self.flush()
            self.handle = open(side_path, "w", encoding="utf-8", newline="\n")
        marks = f',"agentId":"{agent_id}"'
        self.parent = None
        uuid = _uuid(rng)
        self.emit(f'{{"parentUuid":null,"isSidechain":true{marks},"promptId":"{_uuid(rng)}","type":"user","message":'
                  f'{{"role":"user","content":"{task}"}},"uuid":"{uuid}","timestamp":"{self.tick()}",{self.tail}}}')
        self.parent = uuid
        self.context = 8_000
        for _ in range(rng.randrange(2, 8)):
            calls = [self.tool_call(rng.randrange(500, 20_000)) for _ in range(rng.randrange(1, 3))]
            sub = self.assistant([c[0] for c in calls], "tool_use", _uuid(rng), sidechain="true", agent=marks)
            for _, content, extra in calls:
                self.tool_result(content, extra, sub, sidechain="true", agent=marks)
        report = p.prose.take(rng, rng.randrange(500, 4000))
        self.assistant([f'{{"type":"text","text":"{report}"}}'], "end_turn", _uuid(rng), sidechain="true", agent=marks)
        if side_path is not None:
            self.flush()   # (the sidecar's lines are counted with the session's)
            self.handle.close()
            self.facts.sidecar_bytes += os.path.getsize(side_path)
            self.handle = main_handle
            self.size = main_size
        self.parent, self.context = main_parent, main_context
        content = (f'[{{"tool_use_id":"{tool_id}","type":"tool_result","content":[{{"type":"text",'
                   f'"text":"{report}"}}]}}]')
        extra = (f'{{"status":"completed","prompt":"{task}","agentId":"{agent_id}","content":[{{"type":"text","text":'
                 f'"{report}"}}],"totalDurationMs":{rng.randrange(5000, 600_000)},"totalTokens":'
                 f'{rng.randrange(5000, 90_000)},"totalToolUseCount":{rng.randrange(2, 30)}}}')
        self.tool_result(content, extra, source)


def write_session(path: Path, pools: _Pools, rng: random.Random, *, target: int, cwd: str, sdk: bool,
                  start: float, params: ClaudeStoreParams = FULL) -> SessionFacts:
    """One session file of about `target` bytes (and its sidecars), from `rng` alone."""
    session_id = path.stem
    writer = SessionWriter(pools, rng, session_id=session_id, cwd=cwd, sdk=sdk, start=start,
                           model=rng.choice(MODELS), version=rng.choice(CLIENT_VERSIONS),
                           branch=rng.choice(("main", "main", "HEAD", f"feature/{rng.choice(stores._NOUNS)}")),
                           path=path)
    facts = writer.facts
    draw = rng.random()
    ending = ("failed" if draw < params.error_share else
              "interrupted" if draw < params.error_share + params.interrupted_share else "ok")
    facts.ending = ending
    rewind = rng.random() < params.rewind_share
    manual_compact = rng.random() < params.manual_compact_share
    wants_ai_title = rng.random() < params.ai_title_share
    wants_custom = rng.random() < params.custom_title_share
    subagent_due = rng.random() < params.sidechain_share
    # turns: small sessions have few turns; each turn's budget is long-tailed
    bulky = target >= 400_000        # subagents and manual compactions only in sessions with room for them
    subagent_due = subagent_due and bulky
    writer.big_snapshot = target >= 250_000
    header = 80_000 + (57_000 if writer.big_snapshot else 0)
    turns_wanted = max(1, int(rng.triangular(1, 12, 3) * max(1.0, math.sqrt(target / 400_000))))
    if target < 200_000:
        turns_wanted = rng.randrange(1, 3)
    per_turn = max(4_000, (target - header) / turns_wanted)
    process_turns = 1 if sdk else rng.randrange(3, 30)
    turn_in_process = 0
    turn_number = 0
    rewound_at = rng.randrange(1, max(2, turns_wanted)) if rewind else -1
    compact_at = rng.randrange(1, max(2, turns_wanted)) if manual_compact and bulky else -1
    custom_at = rng.randrange(0, max(1, turns_wanted))
    while True:
        left = target - writer.size
        last = left < per_turn * 1.5 or turn_number > 4000
        budget = max(2_000, left if last else int(per_turn * rng.uniform(0.3, 1.7)))
        if not writer.header_written and last:
            budget = max(2_000, budget - header)
        branch_point = writer.parent
        writer.turn(budget, ending=ending if last else "ok", subagent=subagent_due and turn_number >= 1)
        if turn_number >= 1:
            subagent_due = False
        turn_number += 1
        turn_in_process += 1
        if turn_number == 1 and wants_ai_title:
            facts.ai_title = rng.choice(pools.titles)
            writer.emit(f'{{"type":"ai-title","aiTitle":"{_esc(facts.ai_title)}","sessionId":"{session_id}"}}')
        if turn_number - 1 == custom_at and wants_custom:
            for _ in range(rng.randrange(1, 3)):
                facts.custom_title = rng.choice(pools.titles) + (" ✓" if rng.random() < 0.2 else "")
                title = _esc(facts.custom_title)
                writer.emit(f'{{"type":"custom-title","customTitle":"{title}","sessionId":"{session_id}"}}')
                writer.emit(f'{{"type":"agent-name","agentName":"{title}","sessionId":"{session_id}"}}')
        if turn_number == rewound_at and not last:
            # the user rewound to before this turn: what follows branches from its parent
            writer.parent = branch_point
            facts.turns -= 1
            facts.rewound = True
        if turn_number == compact_at and not last:
            writer.compact("manual")
        if last:
            writer.end_process()
            break
        if turn_in_process >= process_turns:
            writer.end_process()
            writer.now += min(rng.expovariate(1 / 7200), 5 * 86400) + 30
            writer.emit(f'{{"type":"atis-latch","atis":"","sessionId":"{session_id}"}}')
            turn_in_process = 0
            process_turns = 1 if sdk else rng.randrange(3, 30)
    return writer.close()


# --- building ------------------------------------------------------------------------------------

_worker: dict = {}


def _init_worker(params: ClaudeStoreParams, root: str) -> None:
    _worker.update(params=params, root=root, pools=_Pools(params.seed), projects=project_paths(params),
                   sizes=target_sizes(params))


def _project_of(index: int, params: ClaudeStoreParams) -> int:
    rng = random.Random(f"{params.seed}:project:{index}")
    return rng.choices(range(params.projects), cum_weights=stores._weights(params.projects))[0]


def _write_range(bounds: tuple[int, int]) -> list[dict]:
    params, root, pools, projects, sizes = (_worker[k] for k in ("params", "root", "pools", "projects", "sizes"))
    out = []
    for index in range(*bounds):
        rng = random.Random(f"{params.seed}:session:{index}")
        project = _project_of(index, params)
        cwd = projects[project]
        session_id = _uuid(rng)
        directory = Path(root) / "projects" / slug(cwd)
        directory.mkdir(parents=True, exist_ok=True)
        start = (_EPOCH.timestamp() - rng.uniform(0, 120 * 86400))
        facts = write_session(directory / f"{session_id}.jsonl", pools, rng, target=sizes[index], cwd=cwd,
                              sdk=rng.random() < params.sdk_share, start=start, params=params)
        record = asdict(facts)
        record["index"], record["project"] = index, project
        out.append(record)
    return out


def check_lines(path: Path, *, every: int = 1) -> int:
    """Decode and re-encode lines of `path` (every `every`-th): each must be compact JSON, UTF-8
    unescaped, one object with a `type`. Returns the lines checked; raises ValueError."""
    checked = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle):
            if number % every:
                continue
            line = raw.rstrip(b"\n")
            record = json.loads(line)
            again = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
            if again != line or not isinstance(record, dict) or "type" not in record:
                raise ValueError(f"{path}:{number + 1}: not in Claude Code's byte form: {line[:200]!r}")
            checked += 1
    return checked


def _stats(sizes: list[int]) -> dict:
    sizes = sorted(sizes)
    n = len(sizes)
    return {"min_kb": sizes[0] / 1024, "median_kb": sizes[n // 2] / 1024, "p90_kb": sizes[int(n * 0.9)] / 1024,
            "p99_kb": sizes[int(n * 0.99)] / 1024, "max_kb": sizes[-1] / 1024,
            "share_100kb_1mb": sum(s < 2**20 for s in sizes) / n,
            "count_over_5mb": sum(s > 5 * 2**20 for s in sizes)}


def _store(params: ClaudeStoreParams, directory: Path, data: dict, build_seconds: float | None) -> ClaudeStore:
    return ClaudeStore(params, directory, directory / "config", project_paths(params), data["sessions"],
                       data["total_bytes"], data["sidecar_bytes"], data["lines"], data["sizes"], data["counts"],
                       build_seconds, data.get("build_seconds"))


def build(params: ClaudeStoreParams = FULL, *, force: bool = False, processes: int = 2, log=print) -> ClaudeStore:
    """The store for these parameters: reused from bench/.stores/ when already built. `processes`
    defaults to 2 (the machine is shared)."""
    directory = STORES_DIR / f"{params.name}-{params.digest}"
    manifest = directory / "manifest.json"
    if manifest.exists() and not force:
        return _store(params, directory, json.loads(manifest.read_text()), None)
    STORES_DIR.mkdir(parents=True, exist_ok=True)
    for old in STORES_DIR.glob(f"{params.name}-" + "?" * 12):
        shutil.rmtree(old, ignore_errors=True)
    started = time.perf_counter()
    root = directory / "config"
    (root / "projects").mkdir(parents=True, exist_ok=True)
    # large sessions first, so the two workers finish together
    order = sorted(range(params.sessions), key=lambda i: -target_sizes(params)[i])
    chunks = [order[i::max(1, params.sessions // 20)] for i in range(max(1, params.sessions // 20))]
    log(f"  building {params.name} store: {params.sessions:,} Claude Code sessions, about {params.total_mb:,} MB, "
        f"with {processes} processes ...")
    results: list[dict] = []
    context = multiprocessing.get_context("fork")
    with context.Pool(processes, initializer=_init_worker, initargs=(params, str(root))) as pool:
        for part in pool.imap_unordered(_write_indices, chunks):
            results.extend(part)
    results.sort(key=lambda r: r["index"])
    checked = 0
    check_rng = random.Random(f"{params.seed}:check")
    for record in check_rng.sample(results, min(len(results), 40)):
        checked += check_lines(Path(record["path"]), every=1 if record["bytes"] < 2**21 else 7)
    sizes = [r["bytes"] for r in results]
    counts = {"sdk": sum(r["sdk"] for r in results), "compacted": sum(r["compactions"] > 0 for r in results),
              "compact_boundaries": sum(r["compactions"] for r in results),
              "sidechain": sum(r["sidechain"] for r in results), "rewound": sum(r["rewound"] for r in results),
              "custom_title": sum(r["custom_title"] is not None for r in results),
              "ai_title": sum(r["ai_title"] is not None for r in results),
              "failed": sum(r["ending"] == "failed" for r in results),
              "interrupted": sum(r["ending"] == "interrupted" for r in results),
              "turns": sum(r["turns"] for r in results), "lines_checked": checked}
    build_seconds = time.perf_counter() - started
    data = {"params": asdict(params), "sessions": len(results), "total_bytes": sum(sizes),
            "sidecar_bytes": sum(r["sidecar_bytes"] for r in results), "lines": sum(r["lines"] for r in results),
            "sizes": _stats(sizes), "counts": counts, "build_seconds": build_seconds,
            "files": [{k: r[k] for k in ("session_id", "cwd", "path", "bytes", "turns", "sdk", "compactions",
                                         "sidechain", "rewound", "custom_title", "ai_title", "ending", "mtime")}
                      for r in results]}
    manifest.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return _store(params, directory, data, build_seconds)


def _write_indices(indices: list[int]) -> list[dict]:
    out = []
    for index in indices:
        out.extend(_write_range((index, index + 1)))
    return out


def manifest_files(store: ClaudeStore) -> list[dict]:
    """Per session: id, cwd, path, bytes, turns and the features it was generated with."""
    return json.loads((store.dir / "manifest.json").read_text())["files"]


# --- one big session, and appending a turn (the catalog's incremental read) ----------------------

def write_big_session(directory: Path, target: int, *, seed: int = 20261201, cwd: str = "/home/dev/project-00",
                      pools: _Pools | None = None) -> SessionFacts:
    """One interactive session of about `target` bytes under `directory/projects/<slug>/`."""
    rng = random.Random(f"{seed}:big:{target}")
    folder = Path(directory) / "projects" / slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    session_id = _uuid(rng)
    params = ClaudeStoreParams(error_share=0, interrupted_share=0, rewind_share=0, sidechain_share=0)
    return write_session(folder / f"{session_id}.jsonl", pools or _Pools(seed), rng, target=target, cwd=cwd,
                         sdk=False, start=_EPOCH.timestamp() - 86400, params=params)


def append_turn(path: Path, *, seed: int = 1, budget: int = 60_000, pools: _Pools | None = None,
                parent: str | None = None) -> int:
    """Append one more turn (prompt, tool calls, reply, last-prompt, cost-state) to a session file,
    chained to its newest leaf as the client would (or to `parent`: a rewind); returns the bytes
    appended."""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - 2**20))
        tail = handle.read().split(b"\n")
    leaf: str | None = None
    cwd = version = branch = entry = ""
    for raw in reversed(tail):
        if not raw.startswith(b"{"):
            continue
        record = json.loads(raw)
        if leaf is None and record.get("type") == "last-prompt":
            leaf = record["leafUuid"]
        if not cwd and record.get("cwd"):
            cwd, version, branch, entry = (record["cwd"], record["version"], record["gitBranch"],
                                           record["entrypoint"])
        if leaf and cwd:
            break
    if leaf is None or not cwd:
        raise ValueError(f"{path}: no last-prompt or cwd in its last MB")
    before = os.path.getsize(path)
    rng = random.Random(f"append:{seed}")
    writer = SessionWriter(pools or _Pools(seed), rng, session_id=path.stem, cwd=cwd, sdk=entry == "sdk-cli",
                           start=time.time() - 60, model=MODELS[0], version=version, branch=branch, path=path,
                           mode="a")
    writer.parent, writer.header_written, writer.context = parent or leaf, True, 40_000
    writer.turn(budget)
    writer.end_process()
    writer.close()
    return os.path.getsize(path) - before


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Build (or reuse) the Claude Code benchmark store.")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    built = build(QUICK if args.quick else FULL, force=args.force, processes=args.processes)
    print(built.root)
    print(built.describe())
    print(f"built in {built.build_seconds:.1f} s" if built.build_seconds else "reused")
