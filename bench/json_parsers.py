"""JSON parser benchmark: which parser should read Claude Code transcripts, measured on every line of
the generated Claude Code store (bench/claude_store.py, ~2 GB).

Each variant is one serial pass over every session file (sidecars included), reading it line by
line from the OS page cache and parsing each line (best of ROUNDS):
- `json.loads` (the standard library): the issue's "cold" baseline;
- `orjson.loads`, `msgspec.json.decode` (untyped), where installed;
- msgspec typed: each line decoded into a Struct holding only the top-level fields a listing reads,
  the `message` kept raw and decoded only for user and assistant records;
- a byte pre-filter before `json.loads` / `orjson.loads`: lines a listing never needs are skipped
  from their first bytes (attachments, the request log, queue operations: their kind shows in the
  first ~160 bytes, before any string value could fake it, as JSON escapes every `"` inside one);
  and a stricter one that also skips tool results (`"content":[{"tool_use_id"` at the head of a
  user record), for a listing that does not index tool output;
- reading and splitting the lines without parsing: the floor.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from . import claude_store

USES_STORE = False   # it builds the Claude Code store, not the Fractal one
ROUNDS = 3
HEAD = 160
SKIPPED_HEADS = (b'{"type":"api-request', b'{"type":"queue-operation"', b'{"type":"atis-latch"', b'{"type":"mode"',
                 b'{"type":"tools-used"')
ATTACHMENT = b'"attachment":{'
TOOL_RESULT = b'"content":[{"tool_use_id":'


def needed(line: bytes) -> bool:
    """False for a line a listing never needs (the byte pre-filter)."""
    if line.startswith(SKIPPED_HEADS):
        return False
    return ATTACHMENT not in line[:HEAD]


def needed_strict(line: bytes) -> bool:
    """`needed`, and not a tool result either."""
    return needed(line) and TOOL_RESULT not in line[:256]


def passes(files: Iterable[Path], parse: Callable[[bytes], object] | None,
           keep: Callable[[bytes], bool] | None = None) -> tuple[float, int, int, float]:
    """One serial pass: (seconds, lines parsed, bytes read, CPU seconds of this process)."""
    started, cpu = time.perf_counter(), time.process_time()
    parsed = total = 0
    for path in files:
        with open(path, "rb") as handle:
            for line in handle:
                total += len(line)
                if keep is not None and not keep(line):
                    continue
                if parse is not None:
                    parse(line)
                parsed += 1
    return time.perf_counter() - started, parsed, total, time.process_time() - cpu


def json_pass_seconds(files: list[Path]) -> float:
    """One serial pass of the standard library's json over every line of these files."""
    return passes(files, json.loads)[0]


try:
    import msgspec
except ImportError:   # the typed variant is then left out
    msgspec = None  # type: ignore[assignment]

if msgspec is not None:
    class _Usage(msgspec.Struct):
        input_tokens: int = 0
        cache_creation_input_tokens: int = 0
        cache_read_input_tokens: int = 0
        output_tokens: int = 0

    class _Assistant(msgspec.Struct):
        id: str | None = None
        model: str | None = None
        usage: _Usage | None = None
        stop_reason: str | None = None

    class _User(msgspec.Struct):
        content: msgspec.Raw = msgspec.Raw()

    class _Record(msgspec.Struct):
        type: str = ""
        subtype: str | None = None
        uuid: str | None = None
        parentUuid: str | None = None   # noqa: N815 (the record's own keys)
        isSidechain: bool = False   # noqa: N815
        timestamp: str | None = None
        cwd: str | None = None
        gitBranch: str | None = None   # noqa: N815
        entrypoint: str | None = None
        isMeta: bool = False   # noqa: N815
        isCompactSummary: bool = False   # noqa: N815
        customTitle: str | None = None   # noqa: N815
        aiTitle: str | None = None   # noqa: N815
        leafUuid: str | None = None   # noqa: N815
        totalCostUSD: float | None = None   # noqa: N815
        message: msgspec.Raw = msgspec.Raw()


def _msgspec_typed() -> Callable[[bytes], object] | None:
    if msgspec is None:
        return None
    records = msgspec.json.Decoder(_Record)
    users = msgspec.json.Decoder(_User)
    assistants = msgspec.json.Decoder(_Assistant)

    def parse(line: bytes) -> object:
        record = records.decode(line)
        if record.message:
            if record.type == "assistant":
                return assistants.decode(record.message)
            if record.type == "user":
                content = users.decode(record.message).content
                head = bytes(memoryview(content)[:16])
                # a prompt (a string, or text blocks) is decoded; a tool result is not
                return msgspec.json.decode(content) if head[:1] == b'"' or head == b'[{"type":"text"' else content
        return record

    return parse


def variants() -> list[tuple[str, Callable[[bytes], object] | None, Callable[[bytes], bool] | None, str]]:
    """(label, parse, keep, note) for every parser found."""
    out: list[tuple[str, Callable[[bytes], object] | None, Callable[[bytes], bool] | None, str]] = [
        ("json.loads (standard library), every line", json.loads, None, "baseline")]
    try:
        import orjson
        out.append((f"orjson {orjson.__version__} loads, every line", orjson.loads, None, ""))
    except ImportError:
        orjson = None  # type: ignore[assignment]
    if msgspec is not None:
        out.append((f"msgspec {msgspec.__version__} json.decode (untyped), every line", msgspec.json.decode, None, ""))
        out.append((f"msgspec {msgspec.__version__} typed: listing fields only, message decoded for user/assistant",
                    _msgspec_typed(), None, ""))
    out.append(("byte pre-filter, then json.loads", json.loads, needed, ""))
    if orjson is not None:
        out.append(("byte pre-filter, then orjson.loads", orjson.loads, needed, ""))
        out.append(("stricter pre-filter (tool results too), then orjson.loads", orjson.loads, needed_strict, ""))
    out.append(("read and split the lines only (no parsing): the floor", None, None, ""))
    return out


def _share(files: list[Path]) -> dict[str, int]:
    """Bytes per kind of line (what a pre-filter can skip)."""
    kinds = {"skipped by the pre-filter": 0, "tool results": 0, "other": 0}
    for path in files:
        with open(path, "rb") as handle:
            for line in handle:
                if not needed(line):
                    kinds["skipped by the pre-filter"] += len(line)
                elif not needed_strict(line):
                    kinds["tool results"] += len(line)
                else:
                    kinds["other"] += len(line)
    return kinds


def _check_filter(files: list[Path], limit: int = 200) -> int:
    """The pre-filter's claim, checked on the lines of some files: what it skips is an attachment,
    a request-log record, a queue operation, a latch or a mode record, and what the strict one also
    skips is a user record whose message starts with a tool result. Returns the lines checked."""
    checked = 0
    for path in files[:limit]:
        with open(path, "rb") as handle:
            for line in handle:
                record = json.loads(line)
                kind = record["type"]
                if not needed(line) and kind not in ("attachment", "api-request", "api-request-blob",
                                                     "api-request-shape", "queue-operation", "atis-latch",
                                                     "mode", "tools-used"):
                    raise AssertionError(f"{path}: the pre-filter skips a {kind} record")
                if needed(line) and kind == "attachment":
                    raise AssertionError(f"{path}: the pre-filter keeps an attachment")
                if needed(line) and not needed_strict(line):
                    content = record.get("message", {}).get("content")
                    if kind != "user" or not (isinstance(content, list) and content[0].get("type") == "tool_result"):
                        raise AssertionError(f"{path}: the strict pre-filter skips a {kind} record")
                checked += 1
    return checked


def run(store, report, *, quick: bool = False, log=print) -> None:
    params = claude_store.QUICK if quick else claude_store.FULL
    log(f"  Claude Code store: {params.name} ({params.sessions:,} sessions, ~{params.total_mb:,} MB)")
    claude = claude_store.build(params, log=log)
    built = f"  built in {claude.build_seconds:.1f} s: " if claude.build_seconds else "  reused: "
    log(built + claude.describe())
    files = claude.all_files()
    section = report.section("json_parsers", "Parsing Claude Code transcripts: JSON parsers")
    section.headers = ("", "CPU time", "MB/s (CPU)", "vs json.loads", "wall time; lines parsed", "")
    rounds = 1 if quick else ROUNDS
    log("  reading every file once (page cache) ...")
    passes(files, None)
    found = variants()
    runs: list[list[tuple[float, int, int, float]]] = [[] for _ in found]
    for round_number in range(rounds):   # round-robin, so that a burst of other work weighs on every variant
        for index, (label, parse, keep, _) in enumerate(found):
            runs[index].append(passes(files, parse, keep))
            log(f"    round {round_number + 1}, {label}: {runs[index][-1][0]:.2f} s, CPU {runs[index][-1][3]:.2f} s")
    results = [(label, min(r[0] for r in done), done[0][1], done[0][2], min(r[3] for r in done))
               for (label, *_), done in zip(found, runs, strict=True)]
    base = results[0][4]
    for label, seconds, parsed, total, cpu in results:
        section.row(label, report.seconds(cpu), f"{total / cpu / 1e6:,.0f}", report.ratio(base, cpu),
                    f"{report.seconds(seconds)}; {parsed:,} lines", None)
    total = results[0][3]
    shares = _share(files)
    checked = _check_filter(files)
    section.data.update(results=results, shares=shares, total_bytes=total)
    section.note(f"Store: {claude.describe()}. Every pass reads {total / 1e9:.2f} GB in {results[0][2]:,} lines "
                 f"({len(files):,} files, sidecars included), serially, best of {rounds} rounds (round-robin); "
                 "CPU seconds are this process's (user + system), which other work on the shared machine and "
                 "the disk do not inflate (the kernel's proactive reclaim, kdamond, evicts part of the page "
                 "cache between passes, so wall time also holds disk reads); MB/s = bytes read per CPU second "
                 "(10^6 bytes), the lines a pre-filter skips included.")
    section.note("Bytes by kind: " + ", ".join(f"{k} {v / total:.0%}" for k, v in shares.items())
                 + f". The pre-filter's claim was checked on {checked:,} lines: every line it skips is an attachment, "
                   "a request-log record, a queue operation, a latch or a mode record, and every line the strict one "
                   "also skips is a tool result.")
    section.note("msgspec typed: a Struct of the top-level fields a listing reads (type, subtype, uuid, parentUuid, "
                 "isSidechain, timestamp, cwd, gitBranch, entrypoint, isMeta, isCompactSummary, customTitle, "
                 "aiTitle, leafUuid, totalCostUSD) with `message` kept as raw bytes, decoded for user records into "
                 "the prompt (when the content is a string or text blocks; a tool result's content stays raw) and "
                 "for assistant records into id, model, usage and stop_reason; every other field is skipped by the "
                 "decoder without building objects.")
