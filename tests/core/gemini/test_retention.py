"""Gemini CLI's sweep as Reprise reads it: the settings merged as the client merges them, its
validation, and when each session is deleted (by `lastUpdated`, by count)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reprise.core.sources.gemini.retention import (
    DAY_S,
    Sweeps,
    last_updated,
    parse_period,
    read_policy,
    strip_comments,
)

NOW = 1_800_000_000.0


def _iso(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _settings(path: Path, retention: object, **more: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"general": {"sessionRetention": retention}, **more}))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    (tmp_path / "home" / ".gemini").mkdir(parents=True)
    return tmp_path / "home" / ".gemini"


def _policy(store: Path, folder: Path | None = None):
    return read_policy(store, folder, system=None, env={"HOME": str(store.parent)})


@pytest.mark.parametrize(("text", "seconds"), [("30d", 30 * DAY_S), ("24h", 86400.0), ("2w", 14 * DAY_S),
                                               ("1m", 30 * DAY_S), ("0d", None), ("30", None), ("1.5d", None),
                                               (" 30d", None), ("30D", None), (30, None), ("٣d", None)])
def test_periods_are_read_as_the_client_reads_them(text: object, seconds: float | None) -> None:
    assert parse_period(text) == seconds


def test_without_settings_the_default_deletes_after_30_days(store: Path) -> None:
    policy = _policy(store)
    assert policy.sweeps and policy.max_age == 30 * DAY_S and policy.max_count is None
    deletion = policy.deletion(NOW - 20 * DAY_S, None, NOW)
    assert deletion is not None and deletion.phrase == "deleted by Gemini CLI in 10 days"
    assert deletion.at == NOW + 10 * DAY_S and not deletion.at_risk


def test_a_session_past_max_age_is_due_at_the_next_start_in_its_folder(store: Path) -> None:
    deletion = _policy(store).deletion(NOW - 31 * DAY_S, None, NOW)
    assert deletion is not None and deletion.at_risk
    assert deletion.phrase == "due for deletion at Gemini CLI's next start in its folder"


def test_user_settings_merge_key_by_key_over_the_defaults(store: Path) -> None:
    _settings(store / "settings.json", {"maxCount": 5})
    policy = _policy(store)
    assert policy.max_age == 30 * DAY_S and policy.max_count == 5
    assert policy.origins == (str(store / "settings.json"),)


@pytest.mark.parametrize(("retention", "why"), [
    ({"enabled": False}, "enabled"), ({"maxAge": "1h"}, "minRetention"), ({"maxAge": "forever"}, "not a period"),
    ({"maxCount": 0}, "below 1"), ({"maxCount": None}, "below 1"), ({"maxAge": ""}, "neither"),
    ({"maxAge": "2d", "minRetention": "3d"}, "minRetention"), ("off", "enabled"),
])
def test_settings_the_client_refuses_turn_its_sweep_off(store: Path, retention: object, why: str) -> None:
    _settings(store / "settings.json", retention)
    policy = _policy(store)
    assert not policy.sweeps and why in (policy.off or "")
    assert policy.deletion(NOW - 400 * DAY_S, 99, NOW) is None
    assert "off" in policy.describe()


def test_an_unreadable_min_retention_counts_as_one_day(store: Path) -> None:
    _settings(store / "settings.json", {"maxAge": "1d", "minRetention": "soon"})
    assert _policy(store).max_age == DAY_S


def test_comments_and_environment_variables_are_read_as_the_client_reads_them(store: Path) -> None:
    (store / "settings.json").write_text('// mine\n{"general": {/* keep less */ "sessionRetention": '
                                         '{"maxAge": "${AGE}"}}, "url": "http://x//y"}\n')
    policy = read_policy(store, None, system=None, env={"AGE": "7d", "HOME": "/nowhere"})
    assert policy.max_age == 7 * DAY_S
    assert json.loads(strip_comments('{"a": "//not", "b": "/*x*/"} // c')) == {"a": "//not", "b": "/*x*/"}


def test_a_trusted_folders_settings_win_over_the_users(store: Path, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    _settings(store / "settings.json", {"maxAge": "10d"})
    _settings(folder / ".gemini" / "settings.json", {"maxAge": "3d"})
    assert _policy(store, folder).max_age == 10 * DAY_S   # not trusted: the client ignores its settings
    (store / "trustedFolders.json").write_text(json.dumps({str(folder): "TRUST_FOLDER"}))
    assert _policy(store, folder).max_age == 3 * DAY_S
    (store / "trustedFolders.json").write_text(json.dumps({str(folder / "sub"): "TRUST_PARENT"}))
    assert _policy(store, folder).max_age == 3 * DAY_S
    (store / "trustedFolders.json").write_text(json.dumps({str(tmp_path): "TRUST_FOLDER",
                                                           str(folder): "DO_NOT_TRUST"}))
    assert _policy(store, folder).max_age == 10 * DAY_S


def test_the_sweep_of_many_trusted_folders_reads_the_store_s_settings_once(store: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """Each folder's sweep reads that folder's own settings alone, where it has some: the user's settings
    and the trust rules are read once for the store (with a rule per folder, they were read again for
    each)."""
    from reprise.core.sources.gemini import retention

    folders = [tmp_path / f"project-{number}" for number in range(3)]
    _settings(store / "settings.json", {"maxAge": "10d"})
    _settings(folders[1] / ".gemini" / "settings.json", {"maxAge": "3d"})
    (store / "trustedFolders.json").write_text(json.dumps({str(folder): "TRUST_FOLDER" for folder in folders}))
    read: list[str] = []
    real_read = retention.read_settings
    monkeypatch.setattr(retention, "read_settings", lambda path: read.append(path.name) or real_read(path))
    sweeps = Sweeps([store], system=None, folder_of=lambda chats: str(folders[int(Path(chats).parent.name)]))
    ages = [sweeps.policy(store / "tmp" / str(number) / "chats").max_age for number in range(3)]
    assert ages == [10 * DAY_S, 3 * DAY_S, 10 * DAY_S]
    assert sorted(read) == ["settings.json"] * 2 + ["trustedFolders.json"]   # the user's, the one folder's own


def test_a_rule_that_names_a_link_trusts_the_folder_it_leads_to_and_a_missing_folder_is_taken_as_written(
        store: Path, tmp_path: Path) -> None:
    """As the client's `getRealPath`: an existing folder with its links resolved, a missing one as it is."""
    folder = tmp_path / "project"
    _settings(store / "settings.json", {"maxAge": "10d"})
    _settings(folder / ".gemini" / "settings.json", {"maxAge": "3d"})
    (tmp_path / "link").symlink_to(folder)
    (store / "trustedFolders.json").write_text(json.dumps({str(tmp_path / "link"): "TRUST_FOLDER",
                                                           str(tmp_path / "gone" / "x"): "TRUST_FOLDER"}))
    assert _policy(store, folder).max_age == 3 * DAY_S
    assert _policy(store, tmp_path / "link").max_age == 3 * DAY_S


def test_system_settings_win_over_every_other(store: Path, tmp_path: Path) -> None:
    system = tmp_path / "etc" / "settings.json"
    _settings(store / "settings.json", {"maxAge": "10d"})
    _settings(system, {"enabled": False})
    assert not read_policy(store, None, system=system, env={"HOME": "/nowhere"}).sweeps
    _settings(tmp_path / "etc" / "system-defaults.json", {"maxAge": "90d"})
    system.unlink()
    assert read_policy(store, None, system=system, env={"HOME": "/nowhere"}).max_age == 10 * DAY_S


def test_a_settings_file_that_is_not_json_is_a_problem_and_ignored(store: Path) -> None:
    (store / "settings.json").write_text("{nope")
    policy = _policy(store)
    assert policy.max_age == 30 * DAY_S
    assert [problem.code for problem in policy.problems] == ["bad_settings"]


def test_max_count_says_how_many_newer_sessions_delete_it(store: Path) -> None:
    _settings(store / "settings.json", {"maxAge": "", "maxCount": 3})
    policy = _policy(store)
    waiting = policy.deletion(NOW - DAY_S, 1, NOW)
    assert waiting is not None and waiting.at is None and not waiting.at_risk
    assert waiting.phrase == "deleted by Gemini CLI once 3 newer sessions exist in its folder (1 do now)"
    due = policy.deletion(NOW - DAY_S, 3, NOW)
    assert due is not None and due.at == NOW - DAY_S and due.at_risk   # due since its own last update


def _session(chats: Path, name: str, session_id: str, updated: float | None, *, pad: int = 0) -> Path:
    head = {"sessionId": session_id, "projectHash": "h", "startTime": _iso(NOW - 90 * DAY_S)}
    if updated is not None:
        head["lastUpdated"] = _iso(updated - 60)
    lines = [json.dumps(head), json.dumps({"id": "m1", "type": "user", "content": "hello " + "x" * pad})]
    if updated is not None:
        lines.append(json.dumps({"$set": {"lastUpdated": _iso(updated)}}))
    path = chats / name
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (NOW, NOW))
    return path


def test_the_age_is_the_recorded_last_updated_not_the_files_time(store: Path, tmp_path: Path) -> None:
    chats = store / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(str(tmp_path / "project"))
    old = _session(chats, "session-2026-01-01T10-00-aaaaaaaa.jsonl", "aaaaaaaa-0000-4000-8000-000000000000",
                   NOW - 29 * DAY_S)
    big = _session(chats, "session-2026-01-01T10-01-bbbbbbbb.jsonl", "bbbbbbbb-0000-4000-8000-000000000000",
                   NOW - 40 * DAY_S, pad=200_000)
    never = _session(chats, "session-2026-01-01T10-02-cccccccc.jsonl", "cccccccc-0000-4000-8000-000000000000", None)
    assert last_updated(big) == NOW - 40 * DAY_S
    sweeps = Sweeps([store], system=None)
    first = sweeps.deletion(str(old), os.stat(old).st_mtime_ns, NOW)
    assert first is not None and first.at == NOW + DAY_S and first.at_risk
    second = sweeps.deletion(str(big), os.stat(big).st_mtime_ns, NOW)
    assert second is not None and second.phrase.startswith("due for deletion")
    assert sweeps.deletion(str(never), os.stat(never).st_mtime_ns, NOW) is None   # counts as updated now
    assert sweeps.deletion(str(tmp_path / "elsewhere" / old.name), 0, NOW) is None


def test_max_count_ranks_the_folders_sessions_by_last_updated(store: Path, tmp_path: Path) -> None:
    chats = store / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    _settings(store / "settings.json", {"maxCount": 2})
    paths = [_session(chats, f"session-2026-01-01T10-0{n}-{n}aaaaaaa.jsonl", f"{n}aaaaaaa-0000-4000-8000-000000000000",
                      NOW - n * DAY_S) for n in range(1, 5)]
    sweeps = Sweeps([store], system=None)
    phrases = [sweeps.deletion(str(path), os.stat(path).st_mtime_ns, NOW) for path in paths]
    assert [deletion.at_risk for deletion in phrases if deletion is not None] == [False, False, True, True]
    assert phrases[1] is not None
    assert phrases[1].phrase.endswith("(sooner once 2 newer sessions exist in its folder; 1 do now)")


FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "gemini" / "store-0.61.0" / "home" / ".gemini"


def test_a_resumes_stub_without_conversation_makes_the_whole_session_due(tmp_path: Path) -> None:
    """The real client's store: the three-turn session's resume left a stub holding no conversation,
    which the client's next start in that folder deletes with every file of the session."""
    import shutil

    store = tmp_path / ".gemini"
    shutil.copytree(FIXTURE, store)
    chats = store / "tmp" / "alpha" / "chats"
    sweeps = Sweeps([store], system=None)
    now = datetime_of("2026-12-07T00:00:00Z")
    main = chats / "session-2026-12-06T19-46-e9b105e8.jsonl"
    deletion = sweeps.deletion(str(main), main.stat().st_mtime_ns, now)
    stub = chats / "session-2026-12-06T19-48-e9b105e8.jsonl"
    # due since the stub was written: a fixed time, so two listings in different seconds agree
    assert deletion is not None and deletion.at_risk and deletion.at == stub.stat().st_mtime_ns / 1e9
    assert sweeps.deletion(str(main), main.stat().st_mtime_ns, now + 5) == deletion
    assert "session-2026-12-06T19-48-e9b105e8.jsonl holds no conversation" in deletion.phrase
    single = chats / "session-2026-12-06T19-48-0b721226.jsonl"
    kept = sweeps.deletion(str(single), single.stat().st_mtime_ns, now)
    assert kept is not None and kept.phrase == "deleted by Gemini CLI in 29 days" and not kept.at_risk


def datetime_of(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text).timestamp()


def test_a_whole_file_session_of_an_older_client_is_aged_by_its_last_updated() -> None:
    legacy = FIXTURE.parents[2] / "legacy-0.38.2" / "home" / ".gemini" / "tmp" / "old" / "chats"
    path = legacy / "session-2026-12-06T19-51-fb6431e3.json"
    assert last_updated(path) == datetime_of("2026-12-06T19:51:22.941+00:00")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    from reprise.tui import cli

    status = cli.main([*argv, "--json"])
    out, _ = capsys.readouterr()
    return status, json.loads(out)


def test_list_keep_due_and_doctor_cover_gemini_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """On the real client's store: the session whose stub the client's next start deletes with it is due
    (`list`, `doctor`), `keep --due` keeps it, and then it is listed as kept."""
    import shutil

    shutil.copytree(FIXTURE, tmp_path / "home" / ".gemini")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "home"))
    three = "e9b105e8-2eb0-4bfb-b1f9-a0e942bfdde1"
    status, listed = _cli(capsys, "list", "--all")
    rows = {row["session_id"]: row for row in listed["sessions"]}   # type: ignore[attr-defined]
    assert status == 0 and rows[three]["deleted_by_agent_at"] is not None and not rows[three]["kept"]
    status, doctor = _cli(capsys, "doctor")
    assert "e9b105e8" in json.dumps(doctor) and "within a week" in json.dumps(doctor)
    status, kept = _cli(capsys, "keep", "--due", "7")
    assert status == 0 and three in json.dumps(kept)
    status, listed = _cli(capsys, "list", "--all")
    rows = {row["session_id"]: row for row in listed["sessions"]}   # type: ignore[attr-defined]
    assert rows[three]["kept"] and rows[three]["deleted_by_agent_at"] is None
    status, doctor = _cli(capsys, "doctor")
    assert "e9b105e8" not in json.dumps(doctor)   # kept as it is: not listed as due any more


def _listed_deletions(home: Path, tmp_path: Path, now: float) -> dict[str, object]:
    """{path: the deletion a listing marks its row with}, a new Service (as `reprise list` makes one)."""
    from reprise.core import config
    from reprise.core.service import Service

    cache = tmp_path / "cache"
    env = {"HOME": str(cache), "PATH": os.environ.get("PATH", ""), "GEMINI_CLI_HOME": str(home)}
    (tmp_path / "state").mkdir(exist_ok=True)
    loaded = config.load(state_dir=str(tmp_path / "state"), config_path=cache / "no-config.toml", env=env)
    service = Service(loaded, workspace=tmp_path, cache=cache)
    service.clock = lambda: now
    return {row.path: row.agent_deletion for row in service.list_sessions(all_workspaces=True).rows
            if row.source == "gemini"}


@pytest.mark.parametrize("retention", [None, {"maxAge": "30d", "maxCount": 2}, {"maxCount": 3}, "trusted"])
def test_a_listing_marks_each_row_as_the_sweep_reads_its_files_without_reading_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retention: object) -> None:
    """The real client's store (a resume's stub without conversation) and a folder of sessions of
    several ages: each row's deletion, from the facts its read stored, is what `Sweeps.deletion` reads
    from the files; a warm listing reads none of them for it."""
    import shutil

    from reprise.core.sources.gemini import retention as module

    home = tmp_path / "home"
    store = home / ".gemini"
    shutil.copytree(FIXTURE, store)
    if retention == "trusted":   # the folder's own settings apply in it, not in the fixture's folders
        (store / "trustedFolders.json").write_text(json.dumps({str(tmp_path / "sweep-test"): "TRUST_FOLDER"}))
        _settings(tmp_path / "sweep-test" / ".gemini" / "settings.json", {"maxCount": 2})
    elif retention is not None:
        _settings(store / "settings.json", retention)
    chats = store / "tmp" / "sweep-test" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(str(tmp_path / "sweep-test"))
    now = datetime_of("2026-12-07T00:00:00Z")
    for n in range(1, 6):
        _session(chats, f"session-2026-01-01T10-0{n}-{n}bbbbbbb.jsonl", f"{n}bbbbbbb-0000-4000-8000-000000000000",
                 now - n * 9 * DAY_S)
    _session(chats, "session-2026-01-01T10-07-7bbbbbbb.jsonl", "7bbbbbbb-0000-4000-8000-000000000000", None)
    resumed = "8bbbbbbb-0000-4000-8000-000000000000"   # resumed later: a stub holding conversation, newer
    _session(chats, "session-2026-01-01T10-08-8bbbbbbb.jsonl", resumed, now - DAY_S)
    _session(chats, "session-2026-01-02T10-08-8bbbbbbb.jsonl", resumed, now - DAY_S / 2)
    sweeps = Sweeps([store])
    expected = {str(path): sweeps.deletion(str(path), path.stat().st_mtime_ns, now)
                for path in store.glob("tmp/*/chats/*.jsonl")}
    cold = _listed_deletions(home, tmp_path, now)
    assert {path: cold[path] for path in expected if path in cold} == {path: expected[path] for path in cold}
    assert any(deletion is not None and deletion.at_risk for deletion in cold.values())
    assert len([path for path in cold if path in expected]) >= 7
    counted = [path for path, deletion in cold.items() if deletion is not None and "newer sessions" in deletion.phrase]
    assert bool(counted) == (retention not in (None, {})) and all(
        retention != "trusted" or "/sweep-test/" in path for path in counted)   # its own settings: its folder only

    def unread(path: Path) -> object:
        raise AssertionError(f"a warm listing read {path} for the sweep")

    monkeypatch.setattr(module, "last_updated", unread)
    monkeypatch.setattr(module, "has_conversation", unread)
    assert _listed_deletions(home, tmp_path, now) == cold
