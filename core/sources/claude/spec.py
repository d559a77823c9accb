"""Claude Code as the registry knows it before any of its code is imported (see `..spec`)."""

from __future__ import annotations

from ..spec import UUID_PATTERN, ClientSpec, SourceSpec, StoreLocation

_PACKAGE = "reprise.core.sources.claude"

SPEC = SourceSpec(
    name="claude", label="Claude Code", mark="C", order=10, id_pattern=UUID_PATTERN,
    settings=f"{_PACKAGE}.settings:ClaudeSettings",
    location=StoreLocation("CLAUDE_CONFIG_DIR", default=".claude", marker="projects"),
    factory=f"{_PACKAGE}.source:ClaudeSource", listing_module=f"{_PACKAGE}.listing", workspaces="recorded",
    samples="reprise.core.sources.claude.samples:write_samples",
    client=ClientSpec(
        "npm", ("@anthropic-ai/claude-code@2.1.332",),
        # bin/claude.exe is a small placeholder script until the package's postinstall replaces it
        binary=("node_modules/@anthropic-ai/claude-code/bin/claude.exe",
                "node_modules/@anthropic-ai/claude-code-linux-*/claude"),
        binary_env="REPRISE_CLAUDE_BIN", min_size=1_000_000,
        offline="runs in a loopback-only namespace against the tests' fake Anthropic server"),
    isolate={"CLAUDE_CONFIG_DIR": "{tmp}/claude"},
    resume_folder="any",   # `claude --resume ID` finds a session by id from any folder
    cost_label="API-equivalent cost (subscription users pay no such sum)",
    rename_note="Titles and pins are Reprise's own: Claude Code's own picker does not show them.",
    hidden_note="`claude -p`, SDK",
    where_sessions_live="Claude Code's sessions live in {root}/projects/<project>/.",
)
