"""When Gemini CLI will delete a session: its sweep of old sessions (`general.sessionRetention`).

What Gemini CLI 0.61.0 does, read from its code (packages/cli/src/utils/sessionCleanup.ts,
sessionUtils.ts, config/settings.ts, config/trustedFolders.ts):
- The sweep runs at every start of the client (`gemini`, `gemini -p`, `gemini --resume`), in the
  background, over the session files of the folder it starts in only (`tmp/<slug>/chats/`): a session
  is deleted at the first start *in its own folder* after it is due, never from elsewhere.
- Its settings are merged key by key: the schema's defaults (`enabled: true`, `maxAge: "30d"`,
  `minRetention: "1d"`), then the system defaults file, the user's `settings.json`
  (`$GEMINI_CLI_HOME/.gemini/settings.json`), the folder's own `.gemini/settings.json` (only when the
  folder is trusted: `trustedFolders.json`, or folder trust turned off), and last the system settings
  (`/etc/gemini-cli/settings.json`, or `GEMINI_CLI_SYSTEM_SETTINGS_PATH`). Comments are allowed.
- It is off when `enabled` is false, when `maxAge` is not `<whole number><h|d|w|m>` (a month is 30
  days; 0 is refused) or is shorter than `minRetention` (an unreadable `minRetention` counts as
  "1d"), when `maxCount` is set below 1, or when neither `maxAge` nor `maxCount` is set.
- A session's age is its recorded `lastUpdated` (written after every message), not the file's
  modification time: it is deleted once `lastUpdated` is more than `maxAge` ago (a file without
  `lastUpdated` counts as updated now, so never by age). With `maxCount`, the files of the folder are
  ranked by `lastUpdated`, newest first, the session being started left out: every one past the
  first `maxCount` (`maxCount - 1` when the started session has a file already) is deleted.
- A deletion takes every file of the folder whose name ends with the session's first 8 id
  characters, its subagent folder `chats/<id>/`, its tool outputs and its log.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...problems import Problem
from ...session_files import ReadProblem, opened_regular_file, read_head
from ...times import parse_time
from ...times import whole_span as _span
from .. import agent_json
from ..base import AgentDeletion
from .layout import CHATS, TMP, is_session_name, join_id, marker_folder

if TYPE_CHECKING:
    from ...rows import SessionRow

AGENT = "Gemini CLI"
DAY_S = 86400.0
AT_RISK_DAYS = 7.0   # a session deleted within a week is at risk (what the doctor lists)
AT_RISK_S = AT_RISK_DAYS * DAY_S
DEFAULTS: dict[str, Any] = {"enabled": True, "maxAge": "30d", "minRetention": "1d"}
DEFAULT_MIN_RETENTION = "1d"
SETTINGS_NAME = "settings.json"
TRUSTED_NAME = "trustedFolders.json"
SYSTEM_SETTINGS = Path("/etc/gemini-cli/settings.json")
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
TAIL_BYTES = 64 * 1024   # where the newest `lastUpdated` of a session file is looked for
_PERIOD = re.compile(r"([0-9]+)([dhwm])")
_UNITS = {"h": 3600.0, "d": DAY_S, "w": 7 * DAY_S, "m": 30 * DAY_S}
_ENV = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_LAST_UPDATED = b'"lastUpdated"'
_DOCUMENT_UPDATED = re.compile(rb'"lastUpdated"\s*:\s*"([^"\\]{1,64})"')


def parse_period(value: object) -> float | None:
    """A retention period ("30d", "24h", "1w", "1m") in seconds, as Gemini CLI reads it; None when it
    refuses it (another form, a 0, not a string)."""
    if not isinstance(value, str):
        return None
    match = _PERIOD.fullmatch(value)
    if match is None or int(match.group(1)) == 0:
        return None
    return int(match.group(1)) * _UNITS[match.group(2)]


def _truthy(value: object) -> bool:
    """JavaScript's truthiness of a JSON value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return value is not None


@dataclass(frozen=True, slots=True)
class SweepPolicy:
    """What Gemini CLI's sweep does in one folder: off (`off` says why), or by age (`max_age`, seconds)
    and/or by count (`max_count`); `origins`: the settings files that set any of it."""

    max_age: float | None = None
    max_count: int | None = None
    off: str | None = None
    origins: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = field(default=(), compare=False)

    @property
    def sweeps(self) -> bool:
        return self.off is None

    def describe(self) -> str:
        """One sentence for `doctor`: what the sweep does, and from which settings."""
        where = f" ({', '.join(self.origins)})" if self.origins else " (Gemini CLI's defaults)"
        if self.off is not None:
            return f"Gemini CLI's session sweep is off{where}: {self.off}."
        rules = []
        if self.max_age is not None:
            rules.append(f"sessions not updated for {_span(self.max_age)}")
        if self.max_count is not None:
            rules.append(f"sessions past the newest {self.max_count} of a folder")
        return (f"Gemini CLI deletes {' and '.join(rules)}, at its next start in their folder{where}; "
                "`reprise keep ID` copies one out of its reach.")

    def deletion(self, last_updated: float | None, newer: int | None, now: float) -> AgentDeletion | None:
        """When and how a row says the sweep deletes a session last updated at `last_updated` (None: no
        usable `lastUpdated`, never by age) with `newer` sessions of its folder updated after it (None:
        not counted); None when the sweep never deletes it."""
        if self.off is not None:
            return None
        moment = last_updated + self.max_age if self.max_age is not None and last_updated is not None else None
        counted = self.max_count is not None and newer is not None
        if counted and newer is not None and self.max_count is not None and newer >= self.max_count:
            # due already: since its own last update (a fixed time, so listings agree)
            return AgentDeletion(last_updated if last_updated is not None else None, _DUE, True)
        if moment is None:
            if not counted:
                return None
            return AgentDeletion(None, _by_count(self.max_count or 0, newer or 0), False)
        phrase = _DUE if moment < now else _in(moment - now)
        if counted:
            phrase += f" (sooner once {self.max_count} newer sessions exist in its folder; {newer} do now)"
        return AgentDeletion(moment, phrase, (moment - now) / DAY_S <= AT_RISK_DAYS)


_DUE = f"due for deletion at {AGENT}'s next start in its folder"
_UNKNOWN = SweepPolicy(off="not looked up yet")   # a folder's policy before `deletions` looks it up


def _by_count(limit: int, newer: int) -> str:
    return f"deleted by {AGENT} once {limit} newer sessions exist in its folder ({newer} do now)"


@functools.lru_cache(maxsize=1024)
def _in_days(days: int) -> str:
    """The phrase of a deletion `days` whole days away (the same few for every row of a listing: made once)."""
    return f"deleted by {AGENT} in {_span(days * DAY_S)}"


def _in(left: float) -> str:
    return _in_days(int(left // DAY_S)) if left >= DAY_S else f"deleted by {AGENT} in {_span(left)}"



# --- the settings -------------------------------------------------------------------------------

# A string (kept, with its escapes; one left open runs to the end), a `//` comment (to the line's end) or
# a `/* */` comment (one left open runs to the end), in the order they start.
_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\])*(?:"|\\?\Z)|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)


def strip_comments(text: str) -> str:
    """JSON with `//` and `/* */` comments (as Gemini CLI allows in its settings) without them: a `//`
    comment removed, a `/* */` one made a space, the strings as they are."""
    if "/" not in text:
        return text
    return _COMMENT_OR_STRING.sub(_uncommented, text)


def _uncommented(match: re.Match[str]) -> str:
    found = match.group(0)
    return found if found.startswith('"') else "" if found.startswith("//") else " "


def _expand(value: object, env: Mapping[str, str]) -> object:
    """`$VAR` and `${VAR}` in a string replaced from the environment, as Gemini CLI does (unset: kept)."""
    if not isinstance(value, str):
        return value
    return _ENV.sub(lambda match: env.get(match.group(1) or match.group(2), match.group(0)), value)


def read_settings(path: Path) -> tuple[dict[str, Any] | None, Problem | None]:
    """The JSON object of one settings file (None when it is absent or unusable), and its problem."""
    try:
        data, size = read_head(path, MAX_SETTINGS_BYTES)
        if size > MAX_SETTINGS_BYTES:
            raise ReadProblem("too_large", f"over the {MAX_SETTINGS_BYTES:,}-byte limit")
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except (OSError, ReadProblem) as exc:
        reason = exc.message if isinstance(exc, ReadProblem) else exc.strerror or str(exc)
        return None, Problem(str(path), "unreadable", f"{path}: {reason}; Reprise read Gemini CLI's session "
                             "retention without it.", severity="warning")
    try:
        value = agent_json.loads(strip_comments(data.decode("utf-8")))
    except (ValueError, RecursionError):
        return None, Problem(str(path), "bad_settings", f"{path} is not valid JSON; Gemini CLI ignores it, and so "
                             "does Reprise's reading of its session retention.", severity="warning")
    if not isinstance(value, dict):
        return None, Problem(str(path), "bad_settings", f"{path} holds a JSON {type(value).__name__}, not an object; "
                             "Gemini CLI ignores it.", severity="warning")
    return value, None


def _retention_of(settings: dict[str, Any] | None) -> object:
    """`general.sessionRetention` of one settings file (a missing key: `_MISSING`)."""
    general = settings.get("general", _MISSING) if settings is not None else _MISSING
    if not isinstance(general, dict):
        return _MISSING
    return general.get("sessionRetention", _MISSING)


_MISSING = object()


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """What every folder's sweep of one store merges, read once: the system defaults, the user's
    settings, the system settings (each with the file it came from), what could not be read, and
    the trust rules of `trustedFolders.json` resolved (`trusts`)."""

    user: dict[str, Any] | None
    defaults: tuple[str, dict[str, Any] | None] | None
    system: tuple[str, dict[str, Any] | None] | None
    problems: tuple[Problem, ...]
    trust_off: bool                                 # folder trust turned off: every folder's settings apply
    rules: dict[str, tuple[int, int, object]]       # {folder a rule covers, resolved: (its length, -its place, value)}
    home: str = ""                                  # the home folder, resolved: its own settings are the user's
    policy: SweepPolicy | None = None               # the sweep where no folder's own settings apply

    @property
    def may_trust(self) -> bool:
        """Whether any folder's own settings can apply (folder trust off, or a rule that trusts)."""
        return self.trust_off or any(value in ("TRUST_FOLDER", "TRUST_PARENT") for _, _, value in self.rules.values())

    def trusts(self, folder: Path | str, *, resolved: bool = False) -> bool:
        """Whether Gemini CLI applies the folder's own settings: folder trust off in the user's settings,
        or the longest rule of `trustedFolders.json` that covers the folder trusts it (TRUST_PARENT covers
        the rule's parent; of rules as long, the first). `resolved`: the folder's links are resolved
        already (`os.path.realpath`). The folder and each folder above it looked up, not every rule."""
        if self.trust_off:
            return True
        target = str(folder) if resolved else real_path(folder)
        best: tuple[int, int, object] | None = None
        while True:
            found = self.rules.get(target)
            if found is not None and (best is None or found[:2] > best[:2]):
                best = found
            parent = os.path.dirname(target)
            if parent == target:
                break
            target = parent
        return best is not None and best[2] in ("TRUST_FOLDER", "TRUST_PARENT")


def real_path(path: str | Path) -> str:
    """A folder with its links resolved when it exists, else as it is (the client's `getRealPath`). The
    kernel's resolution, read from /proc, where there is one: `os.path.realpath` stats each part in turn."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except NotADirectoryError:
        return os.path.realpath(path)
    except OSError:
        return str(path)
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)


def trust_rules(found: dict[str, Any] | None) -> dict[str, tuple[int, int, object]]:
    """The rules of `trustedFolders.json` by the folder each covers, resolved (a TRUST_PARENT rule covers
    its folder's parent): of several covering one folder, the longest, then the first."""
    rules: dict[str, tuple[int, int, object]] = {}
    for place, (rule, value) in enumerate((found or {}).items()):
        effective = os.path.dirname(rule) if value == "TRUST_PARENT" else rule
        key = real_path(effective).rstrip("/") or "/"
        entry = (len(rule), -place, value)
        if key not in rules or entry[:2] > rules[key][:2]:
            rules[key] = entry
    return rules


def store_settings(store: Path, *, system: Path | None = SYSTEM_SETTINGS,
                   env: Mapping[str, str] | None = None) -> StoreSettings:
    """The settings of the store `store` (`$GEMINI_CLI_HOME/.gemini`) every folder's sweep merges."""
    env = os.environ if env is None else env
    if system is not None and env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH"):
        system = Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    problems: list[Problem] = []

    def load(path: Path) -> tuple[str, dict[str, Any] | None]:
        value, problem = read_settings(path)
        if problem is not None:
            problems.append(problem)
        return str(path), value

    defaults = load(system.parent / "system-defaults.json") if system is not None else None
    _, user = load(store / SETTINGS_NAME)
    system_layer = load(system) if system is not None else None
    security = user.get("security") if user is not None else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    trust_off = isinstance(folder_trust, dict) and folder_trust.get("enabled") is False
    rules = {} if trust_off else trust_rules(read_settings(store / TRUSTED_NAME)[0])
    home = real_path(env.get("HOME") or Path.home())
    found = StoreSettings(user, defaults, system_layer, tuple(problems), trust_off, rules, home)
    return dataclasses.replace(found, policy=_merged(store, found, None, env))


def read_policy(store: Path, folder: Path | None, *, system: Path | None = SYSTEM_SETTINGS,
                env: Mapping[str, str] | None = None, settings: StoreSettings | None = None) -> SweepPolicy:
    """The sweep Gemini CLI runs in `folder` (None: unknown, its own settings not read), for the store
    `store` (`$GEMINI_CLI_HOME/.gemini`): the files merged as the client merges them. `settings`: the
    store's, read once for many folders (`store_settings`), else read now."""
    env = os.environ if env is None else env
    if settings is None:
        settings = store_settings(store, system=system, env=env)
    own = _own_settings(folder, settings)
    if own is None and settings.policy is not None:
        return settings.policy
    return _merged(store, settings, own, env)


def _own_settings(folder: Path | str | None, settings: StoreSettings
                  ) -> tuple[str, dict[str, Any] | None, Problem | None] | None:
    """The folder's own settings file, when the client applies it (a trusted folder, not the home
    folder) and it is there: its path, its object, its problem."""
    if folder is None:
        return None
    real = real_path(folder)
    if real == settings.home or not settings.trusts(real, resolved=True):
        return None
    text = f"{folder}/.gemini/{SETTINGS_NAME}"
    try:
        os.stat(text)
    except (FileNotFoundError, NotADirectoryError):   # most folders have none: no read tried
        return None
    except OSError:
        pass   # read_settings says what is wrong
    found, problem = read_settings(Path(text))
    return None if found is None and problem is None else (text, found, problem)


def _merged(store: Path, settings: StoreSettings, own: tuple[str, dict[str, Any] | None, Problem | None] | None,
            env: Mapping[str, str]) -> SweepPolicy:
    """The store's layers and the folder's own (`own`, None: none applies) merged as the client merges them."""
    problems = list(settings.problems)
    layers: list[tuple[str, dict[str, Any] | None]] = []
    if settings.defaults is not None:
        layers.append(settings.defaults)
    layers.append((str(store / SETTINGS_NAME), settings.user))
    if own is not None:
        layers.append(own[:2])
        if own[2] is not None:
            problems.append(own[2])
    if settings.system is not None:
        layers.append(settings.system)
    merged: object = dict(DEFAULTS)
    origins = []
    for origin, layer in layers:
        value = _retention_of(layer)
        if value is _MISSING:
            continue
        origins.append(origin)
        merged = {**merged, **value} if isinstance(merged, dict) and isinstance(value, dict) else value
    return _policy(merged, tuple(origins), tuple(problems), env)


def _policy(merged: object, origins: tuple[str, ...], problems: tuple[Problem, ...],
            env: Mapping[str, str]) -> SweepPolicy:
    """The sweep of a merged `sessionRetention`, validated as Gemini CLI validates it."""
    def off(why: str) -> SweepPolicy:
        return SweepPolicy(off=why, origins=origins, problems=problems)

    if not isinstance(merged, dict) or not _truthy(merged.get("enabled")):
        return off("`general.sessionRetention.enabled` is not set to true")
    max_age_text = _expand(merged.get("maxAge"), env)
    max_age = None
    if _truthy(max_age_text):
        max_age = parse_period(max_age_text)
        if max_age is None:
            return off(f"its `maxAge` {json.dumps(max_age_text)[:40]} is not a period such as \"30d\"")
        minimum = parse_period(_expand(merged.get("minRetention"), env) or DEFAULT_MIN_RETENTION)
        minimum = parse_period(DEFAULT_MIN_RETENTION) if minimum is None else minimum
        assert minimum is not None
        if max_age < minimum:
            return off("its `maxAge` is shorter than `minRetention`")
    count = merged.get("maxCount", _MISSING)
    max_count = None
    if count is not _MISSING:
        if count is None or (isinstance(count, (int, float)) and not isinstance(count, bool) and count < 1):
            return off("its `maxCount` is below 1")
        if isinstance(count, (int, float)) and not isinstance(count, bool) and math.isfinite(count):
            max_count = math.ceil(count)
    elif max_age is None:
        return off("neither `maxAge` nor `maxCount` is set")
    if max_age is None and max_count is None:
        return off("neither `maxAge` nor a usable `maxCount` is set")
    return SweepPolicy(max_age, max_count, None, origins, problems)


# --- a session's `lastUpdated` ------------------------------------------------------------------

def last_updated(path: Path) -> float | None:
    """The newest `lastUpdated` a session file records (a `$set` or a header, read from its last
    TAIL_BYTES, else its first line; a whole-file `.json` session's, from its head), in seconds; None
    when it records none that can be read."""
    try:
        with opened_regular_file(path, None) as (fd, info):
            start = max(0, info.st_size - TAIL_BYTES)
            tail = os.pread(fd, TAIL_BYTES, start)
            found = _newest_in(tail.split(b"\n")[1:] if start else tail.split(b"\n"))
            if found is not None or not start:
                return found if found is not None or tail.lstrip()[:1] != b"{" else _in_document(tail)
            head = os.pread(fd, TAIL_BYTES, 0)
    except (OSError, ReadProblem):
        return None
    return _newest_in(head.split(b"\n", 1)[:1]) or _in_document(head)


def _in_document(head: bytes) -> float | None:
    """The `lastUpdated` of a session written whole as one JSON document (an older client's `.json`),
    from the head of its text (the client writes it before the messages)."""
    match = _DOCUMENT_UPDATED.search(head)
    moment = parse_time(match.group(1).decode("utf-8", "replace")) if match else None
    return moment.timestamp() if moment is not None else None


def _newest_in(lines: list[bytes]) -> float | None:
    """The `lastUpdated` of the last line of these that sets one."""
    for raw in reversed(lines):
        if _LAST_UPDATED not in raw:
            continue
        try:
            record = agent_json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        values = record.get("$set") if isinstance(record.get("$set"), dict) else record
        value = values.get("lastUpdated") if isinstance(values, dict) else None
        if isinstance(value, str) and value:
            moment = parse_time(value)
            if moment is not None:
                return moment.timestamp()
            return None   # an invalid date: Gemini CLI's comparisons with it are all false
    return None


# --- the sweep of each folder, for a listing ------------------------------------------------------

MAX_STUB_BYTES = 256 << 10   # a file beyond this is taken to hold conversation, unread (a stub is a few KB)
_EMPTY_HEAD = f"due for deletion at {AGENT}'s next start in its folder (of another session): its file "
_EMPTY_TAIL = " holds no conversation, and the client's sweep deletes such a file with every file of the session"


def has_conversation(path: Path) -> bool:
    """Whether the client's sweep counts this file as a session (`getAllSessionFiles`): it names a
    session, is no subagent's and holds a message the client resumes. A file too large to read here
    counts as one; one that cannot be read as none (the client deletes what it cannot load)."""
    from .lines import chat_of_bytes

    try:
        data, size = read_head(path, MAX_STUB_BYTES)
    except (OSError, ReadProblem):
        return False
    if size > MAX_STUB_BYTES:
        return True
    chat = chat_of_bytes(data)
    return talks(size, chat.session_id, chat.kind, chat.has_resumable_content)


def talks(size: int, session_id: str | None, kind: str | None, resumable: bool) -> bool:
    """`has_conversation` of a file of `size` bytes whose lines, merged, name this session id and
    kind and hold (or not) a message the client resumes."""
    return size > MAX_STUB_BYTES or (bool(session_id) and kind != "subagent" and resumable)


# --- what a listing stores of a session for the sweep --------------------------------------------

# One file of a session as the row stores it: its name, size, mtime_ns, `lastUpdated` (seconds; None
# without one) and whether it holds conversation (`has_conversation`); the file the client resumes first.
FileFacts = tuple[str, int, int, "float | None", bool]


def recorded_time(text: str | None) -> float | None:
    """A recorded `lastUpdated` in seconds (None: none, or not a date)."""
    moment = parse_time(text) if text else None
    return moment.timestamp() if moment is not None else None


def file_facts(path: Path) -> FileFacts:
    """The facts of a session file the listing does not read itself (a resume's stub): read now."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return path.name, -1, -1, None, False
    return path.name, info.st_size, info.st_mtime_ns, last_updated(path), has_conversation(path)


def facts_text(files: list[FileFacts]) -> str:
    """What the sweep needs of a session's files (the one the client resumes first), as the catalog
    stores it with the row: `<lastUpdated>|<mtime_ns>|<lastUpdated>,...|<name>`: the first file's
    `lastUpdated` ("" when none); the mtime_ns and name of the first file without conversation ("" and
    "" when none); every file's `lastUpdated` ("n" for a file without). Read for every row of every
    listing (`Sweeps.deletions`): split, never decoded, and the list only where a policy counts."""
    empty = next(((name, mtime) for name, _, mtime, _, talking in files if not talking), None)
    first = files[0][3] if files else None
    updates = ",".join("n" if at is None else repr(at) for _, _, _, at, _ in files)
    if empty is None:
        return f"{'' if first is None else repr(first)}||{updates}|"
    return f"{'' if first is None else repr(first)}|{empty[1]}|{updates}|{empty[0]}"


# What `facts_text` stored of a session, split: its `lastUpdated`, that file's mtime_ns ("": every file
# holds conversation), every file's `lastUpdated`, the first file without conversation.
UPDATED, EMPTY_MTIME, UPDATES, EMPTY = range(4)


def facts_of(text: str | None) -> list[str] | None:
    """The parts `facts_text` stored (None: none stored, or not as this version stores them)."""
    parts = text.split("|", 3) if text else None
    return parts if parts is not None and len(parts) == 4 else None


def _updates(parts: list[str], now: float) -> list[float]:
    """Every file's `lastUpdated` of a session's stored parts, now for a file without (ValueError: not
    a number)."""
    return [now if at == "n" else float(at) for at in parts[UPDATES].split(",")] if parts[UPDATES] else []


class Sweeps:
    """The sweep that reaches each session file of the stores `stores` (`.gemini` folders): the policy
    of its folder (read once a folder), its `lastUpdated` (read once a file version), whether a file
    of its holds no conversation (which the sweep deletes with the whole session) and, when the policy
    counts, how many sessions of its folder were updated after it. A file elsewhere (a kept copy in
    Reprise's data folder) is out of reach."""

    def __init__(self, stores: list[Path], *, system: Path | None = SYSTEM_SETTINGS,
                 folder_of: Callable[[str], str | None] | None = None):
        self.stores = [Path(store) for store in stores]
        self.system = system
        # the folder a project is of, by its `chats/` folder
        self.folder_of = folder_of or (lambda chats: marker_folder(Path(chats).parent))
        self._updated: dict[str, tuple[int, int, float | None]] = {}
        self._talking: dict[str, tuple[int, int, bool]] = {}
        self._folders: dict[tuple[Path, float], _Folder] = {}
        self._settings: dict[Path, StoreSettings] = {}
        self._texts = {str(store): store for store in self.stores}
        self._by_text: dict[str, SweepPolicy | None] = {}

    def policy(self, chats: Path) -> SweepPolicy | None:
        """The sweep of this `chats/` folder (None: not a folder of the stores)."""
        return self._policy_of_text(str(chats))

    def settings(self, store: Path) -> StoreSettings:
        """The store's own settings and trust rules, read once."""
        if store not in self._settings:
            self._settings[store] = store_settings(store, system=self.system)
        return self._settings[store]

    def _policy_of_text(self, chats: str) -> SweepPolicy | None:
        """The sweep of a `chats/` folder named by its text (a listing's rows name a few hundred), looked
        up once a folder: the store's, unless the client applies the folder's own settings there (it
        trusts the folder, which has some)."""
        if chats not in self._by_text:
            head, _, slug = chats.removesuffix(f"/{CHATS}").rpartition(f"/{TMP}/")
            store = self._texts.get(head) if slug and "/" not in slug and chats.endswith(f"/{CHATS}") else None
            if store is None:
                self._by_text[chats] = None
            else:
                settings = self.settings(store)
                folder = self.folder_of(chats) if settings.may_trust else None
                own = _own_settings(folder, settings)
                self._by_text[chats] = settings.policy if own is None else _merged(store, settings, own, os.environ)
        return self._by_text[chats]

    def updated(self, path: Path, size: int, mtime_ns: int) -> float | None:
        known = self._updated.get(str(path))
        if known is not None and known[:2] == (size, mtime_ns):
            return known[2]
        moment = last_updated(path)
        self._updated[str(path)] = (size, mtime_ns, moment)
        return moment

    def _talks(self, path: Path, size: int, mtime_ns: int) -> bool:
        known = self._talking.get(str(path))
        if known is not None and known[:2] == (size, mtime_ns):
            return known[2]
        talks = has_conversation(path)
        self._talking[str(path)] = (size, mtime_ns, talks)
        return talks

    def _scan(self, chats: Path, now: float) -> _Folder:
        """The session files of the folder by session (`join_id`), read once for a moment `now`."""
        key = (chats, now)
        if key not in self._folders:
            self._folders = {k: v for k, v in self._folders.items() if k[1] == now}
            folder = _Folder()
            try:
                with os.scandir(chats) as entries:
                    for entry in entries:
                        if is_session_name(entry.name) and entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            folder.by_id.setdefault(join_id(entry.name), []).append(
                                (entry.name, info.st_size, info.st_mtime_ns))
            except OSError:
                pass
            self._folders[key] = folder
        return self._folders[key]

    def _stamps(self, chats: Path, folder: _Folder, now: float) -> list[float]:
        """Every session file's `lastUpdated` in the folder (now for one without), sorted."""
        if folder.stamps is None:
            folder.stamps = sorted(self._at(chats / name, size, mtime, now)
                                   for files in folder.by_id.values() for name, size, mtime in files)
        return folder.stamps

    def _at(self, path: Path, size: int, mtime_ns: int, now: float) -> float:
        moment = self.updated(path, size, mtime_ns)
        return now if moment is None else moment   # no lastUpdated: the client takes "now"

    def deletion(self, path: str, mtime_ns: int, now: float) -> AgentDeletion | None:
        """When Gemini CLI deletes the session whose file is `path` (None: never, or out of reach)."""
        file = Path(path)
        policy = self.policy(file.parent)
        if policy is None or not policy.sweeps:
            return None
        folder = self._scan(file.parent, now)
        own = folder.by_id.get(join_id(file.name), [])
        for name, size, mtime in own:
            if not self._talks(file.parent / name, size, mtime):
                # due since the stub was written (its mtime: a fixed time, so two listings agree)
                return AgentDeletion(mtime / 1e9, _EMPTY_HEAD + name + _EMPTY_TAIL, True)
        size = next((size for name, size, _ in own if name == file.name), -1)
        moment = self.updated(file, size, mtime_ns)
        newer = None
        if policy.max_count is not None:
            mine = now if moment is None else moment
            stamps = self._stamps(file.parent, folder, now)
            newer = len(stamps) - bisect.bisect_right(stamps, mine) \
                - sum(self._at(file.parent / name, size, mtime, now) > mine for name, size, mtime in own)
        return policy.deletion(moment, newer, now)


    def deletions(self, rows: Sequence[SessionRow], listed: Sequence[SessionRow], now: float
                  ) -> list[AgentDeletion | None]:
        """`deletion` of each row, from the facts its listing stored (`facts_text`), no file read: the
        sessions of a folder ranked (when the policy counts) by the rows `listed` of it. A row that
        stored none (a file the listing could not read), and every row of its folder when the policy
        counts, is looked at as `deletion` does. Run for every row of every listing."""
        found: list[AgentDeletion | None] = [None] * len(rows)
        policies: dict[str, SweepPolicy | None] = {}
        counted: dict[str, tuple[SweepPolicy, list[int]]] = {}
        unread: list[int] = []
        for index, row in enumerate(rows):
            chats = row.path.rpartition("/")[0]
            policy = policies.get(chats, _UNKNOWN)
            if policy is _UNKNOWN:
                policy = policies[chats] = self._policy_of_text(chats)
                if policy is not None and not policy.sweeps:
                    policy = policies[chats] = None
            if policy is None:
                continue
            max_age = policy.max_age
            if max_age is None or policy.max_count is not None:
                counted.setdefault(chats, (policy, []))[1].append(index)
                continue
            text = row.sweep_facts   # the default: by age alone (`SweepPolicy.deletion`), from the text's first parts
            try:
                updated, _, rest = text.partition("|")   # type: ignore[union-attr]   # None: AttributeError
                empty_mtime, _, rest = rest.partition("|")
                if empty_mtime:   # due since that file was written (a fixed time, so listings agree)
                    found[index] = AgentDeletion(int(empty_mtime) / 1e9,
                                                 _EMPTY_HEAD + rest.partition("|")[2] + _EMPTY_TAIL, True)
                elif updated:   # else no `lastUpdated`: never by age
                    moment = float(updated) + max_age
                    left = moment - now
                    found[index] = AgentDeletion(moment, _DUE if left < 0 else _in(left), left <= AT_RISK_S)
            except (AttributeError, ValueError):   # no facts, or stored otherwise than this version
                unread.append(index)
        self._from_files(rows, unread, now, found)
        folders: dict[str, list[SessionRow]] = {}
        if counted:
            for row in listed:
                folders.setdefault(row.path.rpartition("/")[0], []).append(row)
        for chats, (policy, indexes) in counted.items():
            try:
                stamps = sorted(_stamps(folders.get(chats, []), now))
                for index in indexes:
                    found[index] = _counted(policy, rows[index].sweep_facts, stamps, now)
            except (ValueError, TypeError, IndexError):   # as above
                self._from_files(rows, indexes, now, found)
        return found

    def _from_files(self, rows: Sequence[SessionRow], indexes: list[int], now: float,
                    found: list[AgentDeletion | None]) -> None:
        """`deletion` of these rows read from their files (a row whose read stored no facts)."""
        for index in indexes:
            found[index] = self.deletion(rows[index].path, rows[index].mtime_ns, now)


def _stamps(rows: list[SessionRow], now: float) -> list[float]:
    """The `lastUpdated` of every file of these rows' sessions (now for a file without); ValueError when
    a row stored no facts."""
    found: list[float] = []
    for row in rows:
        parts = facts_of(row.sweep_facts)
        if parts is None:
            raise ValueError("a row without the facts")
        found.extend(_updates(parts, now))
    return found


def _counted(policy: SweepPolicy, text: str | None, stamps: list[float], now: float) -> AgentDeletion | None:
    """`Sweeps.deletion` of a session from what its read stored and every `lastUpdated` of its
    folder, sorted (now for a file without)."""
    parts = facts_of(text)
    if parts is None:
        raise ValueError("a row without the facts")
    if parts[EMPTY_MTIME]:   # due since that file was written (a fixed time, so listings agree)
        return AgentDeletion(int(parts[EMPTY_MTIME]) / 1e9, _EMPTY_HEAD + parts[EMPTY] + _EMPTY_TAIL, True)
    moment = float(parts[UPDATED]) if parts[UPDATED] else None
    mine = now if moment is None else moment
    newer = len(stamps) - bisect.bisect_right(stamps, mine) - sum(at > mine for at in _updates(parts, now))
    return policy.deletion(moment, newer, now)


@dataclass(slots=True)
class _Folder:
    """One look at a `chats/` folder: its session files (name, size, mtime_ns) by session, and their
    `lastUpdated`s sorted (read when a count needs them)."""

    by_id: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    stamps: list[float] | None = None
