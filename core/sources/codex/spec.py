"""The Codex CLI's spec: its name, mark, id shape, store and client, read without importing its code."""

from __future__ import annotations

from ..spec import UUID_PATTERN, ClientSpec, SourceSpec, StoreLocation

_PACKAGE = "reprise.core.sources.codex"
_AFTER_TRASH = ("Codex cannot resume it while it is in Reprise's trash (`codex resume` fails with \"no rollout "
                "found\"); `reprise trash restore` puts it back, and Codex resumes it again by id")

SPEC = SourceSpec(
    name="codex", label="Codex", mark="X", order=20,
    id_pattern=UUID_PATTERN, id_shown="tail",   # a UUIDv7: its first characters are the time its months share
    settings=f"{_PACKAGE}.settings:CodexSettings",
    location=StoreLocation("CODEX_HOME", default=".codex", marker="sessions"),
    factory=f"{_PACKAGE}.source:CodexSource", listing_module=f"{_PACKAGE}.listing", workspaces="recorded",
    client=ClientSpec("npm", ("@openai/codex@0.171.0",), needs=("tmux",),   # its TUI's meter cases run in tmux
                      binary=("node_modules/@openai/codex-linux-*/vendor/*/bin/codex",),
                      binary_env="REPRISE_CODEX_BIN", min_size=1_000_000,
                      offline="runs in a loopback-only namespace against the tests' fake OpenAI Responses server"),
    isolate={"CODEX_HOME": "{tmp}/codex"}, session_files="rollouts",
    samples="reprise.core.sources.codex.samples:write_samples",
    resume_folder="any",   # `codex resume ID` finds a rollout by id, indexed or not
    rename_note="Titles and pins are Reprise's own: Codex's own picker does not show them.",
    trash_note=_AFTER_TRASH,
    hidden_note="`codex exec`",
    where_sessions_live="Codex's sessions live in {root}/sessions/<year>/<month>/<day>/.",
)
