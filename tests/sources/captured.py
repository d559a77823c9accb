"""Stores captured from the real clients (tests/fixtures/claude-store, tests/fixtures/codex-store,
tests/fixtures/gemini/store-0.61.0) and a
Fractal session of the test factories: what the property test of hostile values mutates besides each
source's samples (the real clients' own bytes, a few sessions each). By source name."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import factories
from .hostile import Fixture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE_PROJECTS = FIXTURES / "claude-store" / "projects"
ALPHA_SLUG = "-tmp-reprise-claude-fixture-work-alpha"
BETA_SLUG = "-tmp-reprise-claude-fixture-work-beta"
CLAUDE_THREE = "33333333-3333-4333-8333-333333333333"   # three turns, in alpha
CLAUDE_NAMED = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"   # a custom title, in beta
CLAUDE_BASH = "55555555-5555-4555-8555-555555555555"    # tool calls and their results, in alpha
CODEX_DAY = FIXTURES / "codex-store" / "sessions" / "2026" / "12" / "01"
CODEX_THREE = "01a2331b-c3e0-7ab0-a9f5-6874c14f3431"
CODEX_NAMED = "01a2331b-de50-7ab2-a964-d899416039d8"   # named in session_index.jsonl
CODEX_TOOL = "01a2331b-cc0a-74b3-8c63-8c4e7c73f7a6"    # a tool call and its output
FRACTAL_ID = factories.session_id_for("hostile-values")
GEMINI_STORE = FIXTURES / "gemini" / "store-0.61.0" / "home" / ".gemini"
GEMINI_CHATS = "tmp/alpha/chats"
GEMINI_THREE = "e9b105e8-2eb0-4bfb-b1f9-a0e942bfdde1"   # three turns, resumed twice: its stub beside it
GEMINI_SHELL = "d6887d59-8d03-46d5-9d60-545549f8e303"   # a shell call and its output


def claude_fixture(slug: str, session_id: str) -> bytes:
    return (CLAUDE_PROJECTS / slug / f"{session_id}.jsonl").read_bytes()


def codex_fixture_path(session_id: str) -> Path:
    [path] = CODEX_DAY.glob(f"rollout-*-{session_id}.jsonl")
    return path


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _written(root: Path, files: dict[str, bytes]) -> dict[str, bytes]:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def _claude(root: Path) -> Fixture:
    title = {"type": "custom-title", "customTitle": "Plan MARKtitle", "sessionId": CLAUDE_THREE}
    three = claude_fixture(ALPHA_SLUG, CLAUDE_THREE) + _compact(title).encode() + b"\n"
    files = _written(root, {f"claude/projects/{ALPHA_SLUG}/{CLAUDE_THREE}.jsonl": three,
                            f"claude/projects/{ALPHA_SLUG}/{CLAUDE_BASH}.jsonl": claude_fixture(ALPHA_SLUG,
                                                                                              CLAUDE_BASH)})
    return Fixture("claude", root, ("claude",), files, (CLAUDE_THREE, CLAUDE_BASH), "MARKfirst", _compact)


def _codex(root: Path) -> Fixture:
    rollouts = [codex_fixture_path(session_id) for session_id in (CODEX_THREE, CODEX_TOOL)]
    index = json.dumps({"id": CODEX_THREE, "thread_name": "Named MARKindex", "updated_at": "2026-12-01T20:00:00Z"})
    files = {f"codex/sessions/2026/12/01/{rollout.name}": rollout.read_bytes() for rollout in rollouts}
    files = _written(root, {**files, "codex/session_index.jsonl": index.encode() + b"\n"})
    return Fixture("codex", root, ("codex",), files, (CODEX_THREE, CODEX_TOOL), "MARKfirst", _compact)


def _gemini(root: Path) -> Fixture:
    store = root / "gemini-home" / ".gemini"
    for name in ("projects.json", "tmp/alpha/.project_root"):
        (store / name).parent.mkdir(parents=True, exist_ok=True)
        (store / name).write_bytes((GEMINI_STORE / name).read_bytes())
    names = [path.name for path in sorted((GEMINI_STORE / GEMINI_CHATS).iterdir())
             if path.name.endswith(("-e9b105e8.jsonl", "-d6887d59.jsonl"))]
    chats = GEMINI_STORE / GEMINI_CHATS
    files = _written(root, {f"gemini-home/.gemini/{GEMINI_CHATS}/{name}": (chats / name).read_bytes()
                            for name in names})
    return Fixture("gemini", root, ("gemini-home",), files, (GEMINI_THREE, GEMINI_SHELL), "MARKfirst", _compact)


def _fractal(root: Path) -> Fixture:
    data = factories.session_dict(FRACTAL_ID, turns=3, statuses=("succeeded",), seed=24)
    data["summary"]["turns"][0]["user"]["message"] = data["history"][0]["user_message"] = "Start MARKfractal now"
    folder = root / "fractal-project"
    folder.mkdir(exist_ok=True)
    path = factories.write_session(root / "state", folder, factories.dumps(data), session_id=FRACTAL_ID)
    files = {str(path.relative_to(root)): path.read_bytes()}
    return Fixture("fractal", root, ("state",), files, (FRACTAL_ID,), "MARKfractal",
                   lambda value: json.dumps(value, indent=2), whole_files=True)


CAPTURED: dict[str, Callable[[Path], Fixture]] = {"claude": _claude, "codex": _codex, "fractal": _fractal,
                                                  "gemini": _gemini}
