"""The test agent's spec: its store is `$REPRISE_SQLITE_AGENT_HOME/db/sessions.db` (default
`~/.sqlite-agent`), and the database's `folder` column maps its sessions to folders. A session may
span several records (`file_is_session` False), and the agent resumes a session only in the very
folder it ran in (`resume_folder = "exact"`): the seam's proof for an agent of that shape."""

from __future__ import annotations

from reprise.core.sources.spec import SourceSpec, StoreLocation

SPEC = SourceSpec(
    name="sqlite-test",
    label="SQLite Agent",
    mark="S",
    order=90,
    id_pattern=r"[0-9a-f]{16}",
    location=StoreLocation("REPRISE_SQLITE_AGENT_HOME", default=".sqlite-agent", marker="db"),
    workspaces="mapped",
    factory="reprise_sqlite_agent.source:SqliteSource",
    listing_module="reprise_sqlite_agent.listing",
    samples="reprise_sqlite_agent.samples:write_samples",
    isolate={"REPRISE_SQLITE_AGENT_HOME": "{tmp}/sqlite-agent"},
    session_files="rows",
    resume_folder="exact",
    file_is_session=False,
    resume_setting="sqlite-agent --resume",
    where_sessions_live="SQLite Agent keeps its sessions in {root}/db/sessions.db.",
)
