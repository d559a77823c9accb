"""Gemini CLI as the registry knows it before any of its code is imported (see `..spec`)."""

from __future__ import annotations

from ..spec import UUID_PATTERN, ClientSpec, SourceSpec, StoreLocation

_PACKAGE = "reprise.core.sources.gemini"
_AFTER_TRASH = ("Gemini CLI cannot resume it while it is in Reprise's trash (`gemini --resume` says \"Invalid "
                "session identifier\", or \"No previous sessions found for this project.\" when the folder has no "
                "other); `reprise trash restore` puts it back, and Gemini CLI resumes it again by id")

SPEC = SourceSpec(
    name="gemini", label="Gemini CLI", mark="G", order=30, id_pattern=UUID_PATTERN,
    settings=f"{_PACKAGE}.settings:GeminiSettings",
    # GEMINI_CLI_HOME names a home: the store is $GEMINI_CLI_HOME/.gemini, else ~/.gemini
    location=StoreLocation("GEMINI_CLI_HOME", variable_is_home=True, default=".gemini", marker="tmp"),
    factory=f"{_PACKAGE}.source:GeminiSource", listing_module=f"{_PACKAGE}.listing", workspaces="mapped",
    samples=f"{_PACKAGE}.samples:write_samples",
    client=ClientSpec(
        "npm", ("@google/gemini-cli@0.61.0",), needs=("tmux",),   # its TUI meter case runs in tmux
        binary=("node_modules/@google/gemini-cli/bundle/gemini.js",),   # a small launcher of its bundle's chunks
        binary_env="REPRISE_GEMINI_BIN", min_size=4_096,   # the launcher is 5,381 bytes in 0.61.0
        env={"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_TELEMETRY_ENABLED": "false"},
        offline="runs in a loopback-only namespace against the tests' fake Gemini API server"),
    isolate={"GEMINI_CLI_HOME": "{tmp}/gemini-home"},
    resume_folder="exact",   # `gemini --resume ID` looks only among the sessions of the very folder it runs in
    file_is_session=False,   # a session is its sessionId: a resume in a later minute leaves a second file of it
    session_files="session files",
    hidden_note="Gemini CLI subagents",
    where_sessions_live="Gemini CLI keeps its sessions in {root}/tmp/<project>/chats/.",
    rename_note="Titles and pins are Reprise's own: Gemini CLI's own picker does not show them.",
    trash_note=_AFTER_TRASH,
)
