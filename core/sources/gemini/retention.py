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
import functools
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

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


def _by_count(limit: int, newer: int) -> str:
    return f"deleted by {AGENT} once {limit} newer sessions exist in its folder ({newer} do now)"


@functools.lru_cache(maxsize=1024)
@functools.lru_cache(maxsize=1024)
def _in_days(days: int) -> str:
    """The phrase of a deletion `days` whole days away (the same few for every row of a listing: made once)."""
    return f"deleted by {AGENT} in {_span(days * DAY_S)}"


def _in(left: float) -> str:
    return _in_days(int(left // DAY_S)) if left >= DAY_S else f"deleted by {AGENT} in {_span(left)}"



# --- the settings -------------------------------------------------------------------------------

def strip_comments(text: str) -> str:
    """JSON with `//` and `/* */` comments (as Gemini CLI allows in its settings) without them."""
    out: list[str] = []
    at, size, in_string = 0, len(text), False
    while at < size:
        char = text[at]
        if in_string:
            out.append(char)
            if char == "\\" and at + 1 < size:
                out.append(text[at + 1])
                at += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", at):
            end = text.find("\n", at)
            at = size if end < 0 else end
            continue
        elif text.startswith("/*", at):
            end = text.find("*/", at + 2)
            out.append(" ")
            at = size if end < 0 else end + 2
            continue
        else:
            out.append(char)
        at += 1
    return "".join(out)


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


def trusted(folder: Path, trusted_file: Path, user: dict[str, Any] | None) -> bool:
    """Whether Gemini CLI applies the folder's own settings: folder trust off in the user's settings,
    or the longest rule of `trustedFolders.json` that covers the folder trusts it (TRUST_PARENT covers
    the rule's parent)."""
    security = user.get("security") if user is not None else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return True
    rules, _ = read_settings(trusted_file)
    target = os.path.realpath(folder)
    longest, level = -1, None
    for rule, value in (rules or {}).items():
        effective = os.path.dirname(rule) if value == "TRUST_PARENT" else rule
        real = os.path.realpath(effective) if os.path.exists(effective) else effective
        if (target == real or target.startswith(real.rstrip("/") + "/")) and len(rule) > longest:
            longest, level = len(rule), value
    return level in ("TRUST_FOLDER", "TRUST_PARENT")


def read_policy(store: Path, folder: Path | None, *, system: Path | None = SYSTEM_SETTINGS,
                env: Mapping[str, str] | None = None) -> SweepPolicy:
    """The sweep Gemini CLI runs in `folder` (None: unknown, its own settings not read), for the store
    `store` (`$GEMINI_CLI_HOME/.gemini`): the files merged as the client merges them."""
    env = os.environ if env is None else env
    if system is not None and env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH"):
        system = Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    problems: list[Problem] = []

    def load(path: Path | None) -> dict[str, Any] | None:
        if path is None:
            return None
        value, problem = read_settings(path)
        if problem is not None:
            problems.append(problem)
        return value

    user = load(store / SETTINGS_NAME)
    layers: list[tuple[str, dict[str, Any] | None]] = []
    if system is not None:
        layers.append((str(system.parent / "system-defaults.json"), load(system.parent / "system-defaults.json")))
    layers.append((str(store / SETTINGS_NAME), user))
    home = Path(env.get("HOME") or Path.home())
    if folder is not None and os.path.realpath(folder) != os.path.realpath(home) \
            and trusted(folder, store / TRUSTED_NAME, user):
        layers.append((str(folder / ".gemini" / SETTINGS_NAME), load(folder / ".gemini" / SETTINGS_NAME)))
    if system is not None:
        layers.append((str(system), load(system)))
    merged: object = dict(DEFAULTS)
    origins = []
    for origin, settings in layers:
        value = _retention_of(settings)
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
_EMPTY = (f"due for deletion at {AGENT}'s next start in its folder (of another session): its file {{name}} holds "
          "no conversation, and the client's sweep deletes such a file with every file of the session")


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
    stores it with the row: `[lastUpdated of the first, the first file without conversation (its name
    and mtime_ns) or null, null, every file's lastUpdated]` (`SessionFacts`)."""
    empty = next(([name, mtime] for name, _, mtime, _, talking in files if not talking), None)
    return orjson.dumps([files[0][3] if files else None, *(empty or (None, None)),
                         [at for _, _, _, at, _ in files]]).decode()


# What `facts_text` stored of a session, by position: its `lastUpdated`, the first of its files without
# conversation (None: none), that file's mtime_ns, and every file's `lastUpdated` (a list: made for each
# row of each listing, where a named tuple costs its construction).
SessionFacts = list[Any]
UPDATED, EMPTY, EMPTY_MTIME, UPDATES = range(4)


def facts_of(text: str | None) -> SessionFacts | None:
    """The facts `facts_text` stored (None: none stored, or not as this version stores them). Run for
    every row of every listing: the catalog's own text, its shape checked, its values where used."""
    if not text:
        return None
    try:
        found = orjson.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, list) and len(found) == 4 else None


class Sweeps:
    """The sweep that reaches each session file of the stores `stores` (`.gemini` folders): the policy
    of its folder (read once a folder), its `lastUpdated` (read once a file version), whether a file
    of its holds no conversation (which the sweep deletes with the whole session) and, when the policy
    counts, how many sessions of its folder were updated after it. A file elsewhere (a kept copy in
    Reprise's data folder) is out of reach."""

    def __init__(self, stores: list[Path], *, system: Path | None = SYSTEM_SETTINGS):
        self.stores = [Path(store) for store in stores]
        self.system = system
        self._policies: dict[Path, SweepPolicy] = {}
        self._updated: dict[str, tuple[int, int, float | None]] = {}
        self._talking: dict[str, tuple[int, int, bool]] = {}
        self._folders: dict[tuple[Path, float], _Folder] = {}
        self._trusting: dict[Path, bool] = {}
        self._texts = {str(store): store for store in self.stores}

    def store_of(self, chats: Path) -> Path | None:
        """The store whose `tmp/<slug>/chats/` folder this is, or None."""
        store = chats.parent.parent.parent
        return store if chats.name == CHATS and chats.parent.parent.name == TMP and store in self.stores else None

    def policy(self, chats: Path) -> SweepPolicy | None:
        """The sweep of this `chats/` folder (None: not a folder of the stores)."""
        store = self.store_of(chats)
        if store is None:
            return None
        if chats not in self._policies:
            if self._may_trust(store):
                folder = marker_folder(chats.parent)
                self._policies[chats] = read_policy(store, Path(folder) if folder else None, system=self.system)
            else:   # no folder's own settings apply: the store's policy, read once
                self._policies[chats] = self._policies.get(store) or read_policy(store, None, system=self.system)
                self._policies[store] = self._policies[chats]
        return self._policies[chats]

    def _policy_of_text(self, chats: str) -> SweepPolicy | None:
        """`policy` of a `chats/` folder named by its text (a listing's rows name a few hundred)."""
        head, _, slug = chats.removesuffix(f"/{CHATS}").rpartition(f"/{TMP}/")
        store = self._texts.get(head) if slug and "/" not in slug and chats.endswith(f"/{CHATS}") else None
        if store is None:
            return None
        if not self._may_trust(store):
            return self.policy(store / TMP / slug / CHATS) if store not in self._policies else self._policies[store]
        return self.policy(Path(chats))

    def _may_trust(self, store: Path) -> bool:
        """Whether the client may apply a folder's own settings in this store (`trusted`): folder trust
        is off in the user's settings, or `trustedFolders.json` trusts some folder. When not, every
        folder's sweep is the store's, read once."""
        if store not in self._trusting:
            user, _ = read_settings(store / SETTINGS_NAME)
            security = user.get("security") if user is not None else None
            folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
            rules, _ = read_settings(store / TRUSTED_NAME)
            self._trusting[store] = (isinstance(folder_trust, dict) and folder_trust.get("enabled") is False) \
                or any(value in ("TRUST_FOLDER", "TRUST_PARENT") for value in (rules or {}).values())
        return self._trusting[store]

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
                return AgentDeletion(mtime / 1e9, _EMPTY.format(name=name), True)
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
        sessions of a folder ranked (when the policy counts) by the rows `listed` of it. A folder with a
        row that stored none (a file the listing could not read) is looked at as `deletion` does. Each
        row's facts are decoded once, even when its folder is also ranked."""
        found: list[AgentDeletion | None] = [None] * len(rows)
        wanted: dict[str, list[int]] = {}
        for index, row in enumerate(rows):
            wanted.setdefault(row.path.rpartition("/")[0], []).append(index)
        folders: dict[str, list[SessionRow]] | None = None
        decoded: dict[int, SessionFacts | None] = {}   # by id(row): the rows of `rows` are rows of `listed`
        for chats, indexes in wanted.items():
            policy = self._policy_of_text(chats)
            if policy is None or not policy.sweeps:
                continue
            try:
                stamps: list[float] = []
                if policy.max_count is not None:
                    if folders is None:
                        folders = {}
                        for row in listed:
                            folders.setdefault(row.path.rpartition("/")[0], []).append(row)
                    stamps = sorted(_stamps(folders.get(chats, []), now, decoded))
                for index in indexes:
                    row = rows[index]
                    facts = decoded[id(row)] if id(row) in decoded else facts_of(row.sweep_facts)
                    if facts is None:
                        raise ValueError("a row without the facts")
                    found[index] = _deletion_of(policy, facts, stamps, now)
            except (ValueError, TypeError, IndexError):   # no facts, or stored otherwise than this version
                self._from_files(rows, indexes, now, found)
        return found

    def _from_files(self, rows: Sequence[SessionRow], indexes: list[int], now: float,
                    found: list[AgentDeletion | None]) -> None:
        """`deletion` of these rows read from their files (a row whose read stored no facts)."""
        for index in indexes:
            found[index] = self.deletion(rows[index].path, rows[index].mtime_ns, now)


def _stamps(rows: list[SessionRow], now: float, decoded: dict[int, SessionFacts | None]) -> list[float]:
    """The `lastUpdated` of every file of these rows' sessions (now for a file without); ValueError when
    a row stored no facts. Each row's facts go into `decoded` (by id(row)), for its own deletion."""
    found: list[float] = []
    for row in rows:
        facts = decoded[id(row)] = facts_of(row.sweep_facts)
        if facts is None:
            raise ValueError("a row without the facts")
        found.extend(now if at is None else float(at) for at in facts[UPDATES])
    return found


def _deletion_of(policy: SweepPolicy, facts: SessionFacts, stamps: list[float], now: float) -> AgentDeletion | None:
    """`Sweeps.deletion` of a session from what its read stored and every `lastUpdated` of its
    folder, sorted (now for a file without)."""
    if facts[EMPTY] is not None:   # due since that file was written (a fixed time, so listings agree)
        return AgentDeletion(int(facts[EMPTY_MTIME]) / 1e9, _EMPTY.format(name=facts[EMPTY]), True)
    moment = None if facts[UPDATED] is None else float(facts[UPDATED])
    newer = None
    if policy.max_count is not None:
        mine = now if moment is None else moment
        newer = len(stamps) - bisect.bisect_right(stamps, mine) \
            - sum((now if at is None else float(at)) > mine for at in facts[UPDATES])
    return policy.deletion(moment, newer, now)


@dataclass(slots=True)
class _Folder:
    """One look at a `chats/` folder: its session files (name, size, mtime_ns) by session, and their
    `lastUpdated`s sorted (read when a count needs them)."""

    by_id: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    stamps: list[float] | None = None
