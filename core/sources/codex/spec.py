"""Codex CLI's spec: what the registry, the settings and the front ends know of this source before
any of its code is imported (`reprise.core.sources.spec`)."""

from __future__ import annotations

from ..spec import UUID_PATTERN, ClientSpec, SourceSpec, StoreLocation

SPEC = SourceSpec(
    name="codex",
    label="Codex",
    mark="X",
    order=20,
    id_pattern=UUID_PATTERN,
    id_shown="tail",   # a UUIDv7: its first characters are the time its months of sessions share
    settings="reprise.core.sources.codex.settings:CodexSettings",
    location=StoreLocation("CODEX_HOME", default=".codex", marker="sessions"),
    workspaces="recorded",
    factory="reprise.core.sources.codex.source:CodexSource",
    listing_module="reprise.core.sources.codex.listing",
    samples="reprise.core.sources.codex.samples:write_samples",
    client=ClientSpec(
        "npm", ("@openai/codex@0.171.0",),
        binary=("node_modules/@openai/codex-linux-*/vendor/*/bin/codex",),
        binary_env="REPRISE_CODEX_BIN", min_size=1_000_000, needs=("tmux",),
        offline="runs in a loopback-only namespace against the tests' fake OpenAI Responses server"),
    isolate={"CODEX_HOME": "{tmp}/codex"},
    session_files="rollouts",
    resume_folder="any",   # `codex resume ID` finds a rollout by id, indexed or not
    rename_note="Titles and pins are Reprise's own: Codex's own picker does not show them.",
    trash_note=("Codex cannot resume it while it is in Reprise's trash (`codex resume` fails with \"no rollout "
                "found\"); `reprise trash restore` puts it back, and Codex resumes it again by id"),
)
