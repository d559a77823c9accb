"""The test agent's sample sessions: one database under `env.root/sqlite-agent`, three sessions in
two of the sample project folders, one titled by the agent, and one kept in two records (a resume
added the second, with its last turn)."""

from __future__ import annotations

import random
import sqlite3
from datetime import timedelta

from reprise.core.sources.samples import Sample, SampleEnv, SampleSet

from .database import SCHEMA, database_of
from .spec import SPEC

SESSIONS = [
    ("webapp", "Gallery: lazy images", [
        ("Make the gallery images load lazily", "The gallery's images now use loading=lazy with fixed sizes."),
        ("Also blur placeholders while they load", "Each image shows a blurred thumbnail until it has loaded.")]),
    ("webapp", None, [("Rename the helpers module to utilities", "Renamed it and updated the nine imports.")]),
    ("cli-tool", None, [
        ("Print the configuration path with --verbose", "It prints the configuration path first."),
        ("Write a changelog entry for it", "Added the entry under Unreleased."),
        ("Bump the patch version", "The version is 2.4.1 now.")]),
]
RESUMED = 2   # this one's last turn is in a second record, as a resume writes it


def write_samples(env: SampleEnv) -> SampleSet:
    root = env.root / "sqlite-agent"
    path = database_of(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(env.seed + 90)
    written = []
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA)
        for number, (project, title, turns) in enumerate(SESSIONS):
            session_id = f"{rng.getrandbits(64):016x}"
            folder = env.project(project)
            updated = env.now - timedelta(hours=3 * number + 1)
            parts = [turns[:-1], turns[-1:]] if number == RESUMED else [turns]
            first_turn = 1
            for part_number, part in enumerate(parts):
                record = f"rec-{rng.getrandbits(32):08x}"
                when = updated + timedelta(minutes=part_number)
                db.execute("INSERT INTO records VALUES (?, ?, ?, ?, ?)", (record, session_id, str(folder),
                           title if part_number == 0 else None, int(when.timestamp() * 1e9)))
                for turn, (prompt, reply) in enumerate(part, start=first_turn):
                    db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?)",
                                   [(record, turn, "user", prompt), (record, turn, "assistant", reply)])
                first_turn += len(part)
            written.append(Sample(session_id, folder, tuple(prompt for prompt, _ in turns), title=title,
                                  files=(str(path.relative_to(root)),)))
    db.close()
    return SampleSet(SPEC.name, root, tuple(written), environment={"REPRISE_SQLITE_AGENT_HOME": str(root)})
