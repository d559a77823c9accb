"""Claude Code's spec: what the registry, the settings and the front ends know of this source before
any of its code is imported (`reprise.core.sources.spec`)."""

from __future__ import annotations

from ..spec import UUID_PATTERN, ClientSpec, SourceSpec, StoreLocation

SPEC = SourceSpec(
    name="claude",
    label="Claude Code",
    mark="C",
    order=10,
    id_pattern=UUID_PATTERN,
    settings="reprise.core.sources.claude.settings:ClaudeSettings",
    location=StoreLocation("CLAUDE_CONFIG_DIR", default=".claude", marker="projects"),
    workspaces="recorded",
    factory="reprise.core.sources.claude.source:ClaudeSource",
    listing_module="reprise.core.sources.claude.listing",
    samples="reprise.core.sources.claude.samples:write_samples",
    client=ClientSpec(
        "npm", ("@anthropic-ai/claude-code@2.1.332",),
        binary=("node_modules/@anthropic-ai/claude-code/bin/claude.exe",
                "node_modules/@anthropic-ai/claude-code-linux-*/claude"),
        binary_env="REPRISE_CLAUDE_BIN", min_size=1_000_000,
        offline="runs in a loopback-only namespace against the tests' fake Anthropic server"),
    isolate={"CLAUDE_CONFIG_DIR": "{tmp}/claude"},
    resume_folder="any",
    cost_label="API-equivalent cost (subscription users pay no such sum)",
    rename_note="Titles and pins are Reprise's own: Claude Code's own picker does not show them.",
)
