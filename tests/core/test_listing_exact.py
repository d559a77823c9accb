"""A listing's read of a Claude Code or Codex file (orjson, skimmed lines, read on from where the last
read ended) gives every row field a full parse gives: every line decoded by `json`, nothing skimmed,
the file read whole. Checked field by field on the committed stores of the real clients, on generated
stores (bench/) and on files with hostile lines."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench import claude_store, codex_store, stores
from reprise.core.paths import OwnPaths
from reprise.core.sources.base import ListedFile, ListingSource, SessionFile
from reprise.core.sources.claude import listing as claude_listing
from reprise.core.sources.claude.listing import ClaudeListing
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.codex import listing as codex_listing
from reprise.core.sources.codex.listing import CodexListing
from reprise.core.sources.codex.records import parse_rollout
from tests.core.claude.builder import ClaudeFile, rewound
from tests.core.codex.builder import CodexRollout

FIXTURES = Path(__file__).parent.parent / "fixtures"


def full_claude_parse(data: bytes, start: int, first: int) -> claude_listing.Parsed:
    return parse_lines(data, start, first_line=first, skim=False)


def full_codex_parse(data: bytes, start: int, first: int) -> codex_listing.Parsed:
    return parse_rollout(data, start, first_line=first)


def listed(listing: ListingSource, path: Path, carry: bytes | None = None) -> ListedFile:
    info = path.stat()
    file_id = path.stem if isinstance(listing, ClaudeListing) else path.stem[-36:]   # a rollout's name ends in it
    return listing.read_listing(SessionFile(None, file_id, str(path), info.st_size, info.st_mtime_ns, carry,
                                            str(path.parent)), time.time_ns())


def compared(listing: ListingSource, module: object, full_parse: Callable[..., object], paths: list[Path],
             monkeypatch: pytest.MonkeyPatch) -> int:
    """Assert that each file's row is the full parse's, field by field; the number of files compared."""
    assert paths
    fast = {path: listed(listing, path) for path in paths}
    with monkeypatch.context() as patched:
        patched.setattr(module, "_parse", full_parse)
        full = {path: listed(listing, path) for path in paths}
    for path in paths:
        ours, reference = fast[path], full[path]
        assert (ours.workspace_key, ours.size, type(ours.fields)) == (
            reference.workspace_key, reference.size, type(reference.fields)), path
        mine, theirs = ours.fields, reference.fields
        for field in getattr(theirs, "__dataclass_fields__", {}):
            assert getattr(mine, field) == getattr(theirs, field), (path.name, field)
        assert mine == theirs, path
    return len(paths)


def hostile_claude(folder: Path) -> Iterator[Path]:
    """Files a full parse reads otherwise than a skim would if the skim were careless: rewinds, cut
    and bad lines, lone surrogates, integers beyond 64 bits, a large tool result carrying the
    interruption marker, type values that are not strings."""
    session = rewound("two", "three")
    session.compact()
    session.turn("after the compaction", "ok", usage=(10**25, 5, 6, 7))
    yield session.write(folder / "5e551011-0000-4000-8000-000000000101.jsonl")
    odd = ClaudeFile("5e551011-0000-4000-8000-000000000102", seed=2)
    odd.turn("one HALFEMOJI", "ok")
    odd.tool_result("toolu_1", "x" * 5000)
    odd.tool_result("toolu_2", "[Request interrupted by user for tool use]" + "y" * 5000)
    odd.attachment("big", size=9000)
    odd.unknown("assistant", message=[1, 2])
    odd.unknown("cost-state", totalCostUSD=123456789012345678901234567890)
    data = odd.data().replace(b"HALFEMOJI", b"\\ud83d half") + b'{"type":["list"]}\n{"type":"system","x":NaN}\n'
    data += b"not json\n" + b'{"type":"assistant","message":{"id":"m9","usage":{"input_tokens":' + b"9" * 30 + b"}}}\n"
    data += hostile_assistant_lines(odd)
    data += b'{"type":"user","uuid":"cut' + b"\n"[:0]   # a last line being written
    path = folder / "5e551011-0000-4000-8000-000000000102.jsonl"
    path.write_bytes(data)
    yield path


def hostile_assistant_lines(session: ClaudeFile) -> bytes:
    """Assistant lines a shortcut could read otherwise than a full parse: a usage object and the record's
    own keys inside the content, keys repeated, reordered and escaped, usage beyond 64 bits, bytes that
    are not UTF-8, a line cut mid-way and joined to the next."""
    session.records.clear()
    session.assistant("a text with \"usage\":{\"input_tokens\":999} and \"uuid\":\"x\" in it",
                      tools=(("toolu_9", "Write", {"usage": {"output_tokens": 7}, "uuid": "nested", "type": "user"}),),
                      usage=(1, 2, 3, 4))
    session.assistant("split", split=True, thinking="hm", tools=(("toolu_8", "Read", {"file_path": "/a"}),),
                      usage=(5, 6, 7, 8))
    session.assistant("after", usage=(9, 10, 11, 12))
    lines = session.data().splitlines(keepends=True)
    first = lines[0]
    repeated = first[:-2] + b',"uuid":"5e551011-0000-4000-8000-0000000009ff","gitBranch":"r\\u00e9peat"}\n'
    reordered = b'{"type":"assistant",' + first[1:].replace(b',"type":"assistant"', b"")
    escaped = first.replace(b'"sessionId"', b'"session\\u0049d"').replace(b'"cache_read_input_tokens":3',
                                                                           b'"cache_read_input_tokens":' + b"8" * 24)
    not_utf8 = lines[1].replace(b"hm", b"h\xffm")
    joined = lines[2][:len(lines[2]) // 2] + lines[3]
    return b"".join([repeated, reordered, escaped, not_utf8, joined] + lines[4:])


def generated_claude(folder: Path, count: int) -> list[Path]:
    pools = claude_store._Pools(11)
    paths = []
    for number in range(count):
        path = folder / f"{number:08d}-0000-4000-8000-000000000000.jsonl"
        claude_store.write_session(path, pools, random.Random(number), target=150_000 + 40_000 * number,
                                   cwd="/home/dev/generated", sdk=number % 3 == 0, start=1.7e9 + number * 9_000)
        paths.append(path)
    return paths


def test_claude_rows_equal_a_full_parse_on_the_client_store_generated_and_hostile_files(tmp_path, monkeypatch):
    fixture_root = FIXTURES / "claude-store"
    fixtures = sorted((fixture_root / "projects").glob("*/*.jsonl"))
    listing = ClaudeListing([fixture_root], OwnPaths(tmp_path / "data", "claude"))
    assert compared(listing, claude_listing, full_claude_parse, fixtures, monkeypatch) >= 10
    root = tmp_path / "claude"
    folder = root / "projects" / "-home-dev-generated"
    folder.mkdir(parents=True)
    files = generated_claude(folder, 12) + list(hostile_claude(folder))
    listing = ClaudeListing([root], OwnPaths(tmp_path / "data", "claude"))
    compared(listing, claude_listing, full_claude_parse, files, monkeypatch)
    row = listed(listing, folder / "5e551011-0000-4000-8000-000000000102.jsonl").fields
    assert "line" in (row.warning or "")   # the bad lines are counted as a full parse counts them


def hostile_codex(root: Path) -> Iterator[Path]:
    rollout = CodexRollout(cwd="/work/hostile", seed=5)
    rollout.turn("one", "ok")
    rollout.turn("two", "ok")
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count",'
                b'"info":{"total_token_usage":{"input_tokens":' + b"7" * 25 + b',"output_tokens":1}}}}\n')
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:01.000Z","type":"response_item","payload":{"type":"message",'
                b'"content":"\\udc00 lone"}}\n')
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:02.000Z","type":["event_msg"]}\n{"type":"event_msg","payload":NaN}\n')
    # events whose type is not where Codex writes it (read whole), one cut short and joined to the next line
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:03.000Z","type":"event_msg","payload":{"turn_id":"t9",'
                b'"type":"task_started","model_context_window":999}}\n')
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:04.000Z","type":"event_msg","payload":{"type":"item_completed",'
                b'"item":{"type":"UserMessage","content":[{"type":"text","text":"reordered prompt"}]}}}\n')
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:05.000Z","type":"response_item","payload":{"type":"mess'
                b'{"timestamp":"2026-11-20T10:00:06.000Z","type":"event_msg","payload":{"type":"task_complete"}}\n')
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:07.000Z","type":"event_msg","payload":{"type":"item_completed",'
                b'"thread_id":"x","turn_id":"y","item":{"type":"AgentMessage","content":[]}}}\n')
    rollout.raw(b'{"timestamp":"2026-11-20T10:00:09.000Z","type":"event_msg"')   # being written
    yield rollout.write(root)


def generated_codex(root: Path, count: int) -> list[Path]:
    templates = codex_store._Templates()
    corpus = stores._corpus(3, 1 << 16)
    paths = []
    for number in range(count):
        rng = random.Random(number)
        start = 1.7e9 + number * 86_400
        session_id = codex_store._uuid7(rng, start)
        path = root / "sessions" / "2026" / "11" / f"{number + 1:02d}" / codex_store.rollout_name(session_id, start)
        codex_store.write_rollout(path, templates, stores._Text(rng, corpus), rng, target=120_000 + 30_000 * number,
                                  session_id=session_id, cwd=f"/home/dev/folder-{number % 3}", start=start,
                                  source="exec" if number % 2 else "cli")
        paths.append(path)
    return paths


def test_codex_rows_equal_a_full_parse_on_the_client_store_generated_and_hostile_files(tmp_path, monkeypatch):
    fixture_root = FIXTURES / "codex-store"
    fixtures = sorted(fixture_root.glob("sessions/*/*/*/*.jsonl"))
    listing = CodexListing([fixture_root], OwnPaths(tmp_path / "data", "codex"))
    assert compared(listing, codex_listing, full_codex_parse, fixtures, monkeypatch) >= 5
    root = tmp_path / "codex"
    files = generated_codex(root, 10) + list(hostile_codex(root))
    listing = CodexListing([root], OwnPaths(tmp_path / "data", "codex"))
    compared(listing, codex_listing, full_codex_parse, files, monkeypatch)
    row = listed(listing, files[-1]).fields
    assert row.usage.output_tokens == 1 and row.usage.input_tokens == int("7" * 25)   # json's integer, not a float
    assert (row.turns, row.last_message, row.last_status, row.context_window) == (3, "reordered prompt",
                                                                                   "interrupted", 999)
    assert "not JSON" in (row.warning or "")   # the joined lines, as a full parse finds them


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_file_read_on_as_it_grew_equals_one_full_parse(agent, tmp_path, monkeypatch):
    # the listing's carry: a file read at each of its line ends, then on from there, as a full parse of it whole
    if agent == "claude":
        root = tmp_path / "claude"
        folder = root / "projects" / "-home-dev-generated"
        folder.mkdir(parents=True)
        whole = generated_claude(folder, 3)[2]
        listing: ListingSource = ClaudeListing([root], OwnPaths(tmp_path / "data", "claude"))
        module, full_parse = claude_listing, full_claude_parse
    else:
        root = tmp_path / "codex"
        whole = generated_codex(root, 3)[2]
        listing = CodexListing([root], OwnPaths(tmp_path / "data", "codex"))
        module, full_parse = codex_listing, full_codex_parse
    data = whole.read_bytes()
    cuts = [at + 1 for at in range(len(data)) if data[at:at + 1] == b"\n"][::7]
    carry = None
    whole.write_bytes(b"")
    for cut in cuts + [len(data)]:
        with open(whole, "r+b") as handle:
            handle.seek(0, os.SEEK_END)
            handle.write(data[handle.tell():cut])
        read = listed(listing, whole, carry)
        carry = read.carry
    with monkeypatch.context() as patched:
        patched.setattr(module, "_parse", full_parse)
        reference = listed(listing, whole)
    assert read.fields == reference.fields
