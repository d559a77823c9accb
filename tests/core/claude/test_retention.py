"""Claude Code's transcript retention as Reprise reads it: the setting, its problems, and the moment
a file goes, at the edges."""

from __future__ import annotations

import json
import math
import os

import pytest

from reprise.core.sources.claude.retention import DAY_S, DEFAULT_DAYS, RetentionPolicy

NOW = 1_800_000_000.0


def _settings(root, value, name="settings.json"):
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(json.dumps(value) if not isinstance(value, str) else value)
    return root / name


def test_no_settings_file_means_the_default_thirty_days(tmp_path):
    policy, problem = RetentionPolicy.read(tmp_path / "claude", managed=None)
    assert (policy.days, policy.origin, problem) == (DEFAULT_DAYS, "default", None)


def test_the_users_settings_set_the_period(tmp_path):
    path = _settings(tmp_path, {"model": "x", "cleanupPeriodDays": 7})
    policy, problem = RetentionPolicy.read(tmp_path, managed=None)
    assert (policy.days, policy.origin, problem) == (7, str(path), None)


def test_an_integral_float_counts_and_an_unset_key_is_the_default(tmp_path):
    _settings(tmp_path, {"cleanupPeriodDays": 45.0})
    assert RetentionPolicy.read(tmp_path, managed=None)[0].days == 45
    _settings(tmp_path, {"theme": "dark"})
    assert RetentionPolicy.read(tmp_path, managed=None) == (RetentionPolicy(), None)


def test_an_empty_settings_file_is_no_settings(tmp_path):
    _settings(tmp_path, "")
    assert RetentionPolicy.read(tmp_path, managed=None) == (RetentionPolicy(), None)


def test_managed_settings_win_over_the_users(tmp_path):
    _settings(tmp_path / "root", {"cleanupPeriodDays": 90})
    managed = _settings(tmp_path / "etc", {"cleanupPeriodDays": 14}, "managed-settings.json")
    policy, problem = RetentionPolicy.read(tmp_path / "root", managed=managed)
    assert (policy.days, policy.origin, problem) == (14, str(managed), None)
    managed.write_text(json.dumps({"other": 1}))
    assert RetentionPolicy.read(tmp_path / "root", managed=managed)[0].days == 90


def test_an_invalid_managed_value_pauses_the_sweep_and_names_the_managed_file(tmp_path):
    user = _settings(tmp_path / "root", {"cleanupPeriodDays": 90})
    managed = _settings(tmp_path / "etc", {"cleanupPeriodDays": 0}, "managed-settings.json")
    policy, problem = RetentionPolicy.read(tmp_path / "root", managed=managed)
    assert (policy.days, policy.origin, policy.paused) == (90, str(user), True)
    assert problem is not None and problem.path == str(managed)


def test_a_valid_setting_does_not_pause_the_sweep(tmp_path):
    _settings(tmp_path, {"cleanupPeriodDays": 7})
    assert not RetentionPolicy.read(tmp_path, managed=None)[0].paused


def test_corrupt_settings_give_a_problem_naming_the_file_and_the_default(tmp_path):
    path = _settings(tmp_path, '{"cleanupPeriodDays": 7,')
    policy, problem = RetentionPolicy.read(tmp_path, managed=None)
    assert policy == RetentionPolicy(DEFAULT_DAYS, "default", paused=True)
    assert problem is not None and problem.path == str(path) and problem.code == "bad_settings"
    assert str(path) in problem.message and "not valid JSON" in problem.message


def test_settings_that_are_not_an_object_give_a_problem(tmp_path):
    _settings(tmp_path, [1, 2])
    policy, problem = RetentionPolicy.read(tmp_path, managed=None)
    assert policy.days == DEFAULT_DAYS and problem is not None and "a JSON list" in problem.message


@pytest.mark.parametrize("value", [0, -5, 2.5, "30", True, None, [30]])
def test_a_wrong_value_gives_a_problem_and_the_default(tmp_path, value):
    path = _settings(tmp_path, {"cleanupPeriodDays": value})
    policy, problem = RetentionPolicy.read(tmp_path, managed=None)
    assert policy == RetentionPolicy(paused=True)
    assert problem is not None and problem.field == "cleanupPeriodDays" and problem.path == str(path)
    assert json.dumps(value) in problem.message and "at least 1" in problem.message


def test_a_directory_where_the_settings_belong_is_a_problem_not_a_crash(tmp_path):
    (tmp_path / "settings.json").mkdir()
    policy, problem = RetentionPolicy.read(tmp_path, managed=None)
    assert policy.days == DEFAULT_DAYS and problem is not None and problem.code == "unreadable"


def test_a_fifo_is_never_opened_for_a_blocking_read(tmp_path):
    os.mkfifo(tmp_path / "settings.json")
    policy, problem = RetentionPolicy.read(tmp_path, managed=None)
    assert policy.days == DEFAULT_DAYS and problem is not None and "not a regular file" in problem.message


def test_exactly_at_the_limit_the_file_is_kept_and_just_past_it_is_due():
    policy = RetentionPolicy(30)
    mtime = NOW - 30 * DAY_S
    assert policy.deletes_at(mtime) == NOW
    assert not policy.due(mtime, NOW) and policy.days_left(mtime, NOW) == 0.0
    assert policy.phrase(mtime, NOW) == "deleted by Claude Code in under a minute"
    assert policy.due(mtime - 0.001, NOW)
    assert policy.phrase(mtime - 0.001, NOW) == "due for deletion at Claude Code's next start"
    assert policy.days_left(mtime - DAY_S, NOW) == -1.0


def test_days_left_and_the_phrase_far_from_the_limit():
    policy = RetentionPolicy(30)
    assert policy.days_left(NOW, NOW) == 30.0
    assert policy.phrase(NOW, NOW) == "deleted by Claude Code in 30 days"
    assert policy.phrase(NOW - 25.5 * DAY_S, NOW) == "deleted by Claude Code in 4 days"
    assert policy.phrase(NOW - 29 * DAY_S, NOW) == "deleted by Claude Code in 1 day"
    assert policy.phrase(NOW - 30 * DAY_S + 5 * 3600 + 1, NOW) == "deleted by Claude Code in 5 hours"
    assert policy.phrase(NOW - 30 * DAY_S + 61, NOW) == "deleted by Claude Code in 1 minute"
    assert policy.phrase(NOW - 400 * DAY_S, NOW) == "due for deletion at Claude Code's next start"


def test_at_risk_is_due_or_within_the_window():
    policy = RetentionPolicy(30)
    assert policy.at_risk(NOW - 23 * DAY_S, NOW) and not policy.at_risk(NOW - 22 * DAY_S, NOW)
    assert policy.at_risk(NOW - 40 * DAY_S, NOW)
    assert policy.at_risk(NOW - 10 * DAY_S, NOW, within_days=20)


def test_a_period_no_date_can_hold_never_deletes():
    policy = RetentionPolicy(10**9)
    assert policy.deletes_at(NOW) is None and policy.days_left(0.0, NOW) == math.inf
    assert policy.phrase(0.0, NOW) is None and not policy.due(0.0, NOW) and not policy.at_risk(0.0, NOW)
    assert RetentionPolicy(99999).phrase(NOW, NOW) == "deleted by Claude Code in 99999 days"
