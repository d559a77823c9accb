"""Session bytes to models and back, in Fractal's exact byte format, with every way a file
can be wrong named as a typed problem.

`decode` never raises for bad input: it returns the state or the problem, plus warnings for
files Fractal loads but a rewrite would change. `encode` produces the bytes Fractal itself
writes (`json.dumps(state, indent=2) + "\\n"`, ASCII escapes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .models import FRACTAL_MAX_HISTORY, SCHEMA_VERSION, SessionState

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a file cannot be used (severity "error") or should not be rewritten ("warning")."""

    path: str
    code: str
    message: str
    field: str | None = None
    severity: str = "error"

    def as_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "code": self.code, "message": self.message,
                "field": self.field, "severity": self.severity}


@dataclass(slots=True)
class Decoded:
    state: SessionState | None
    problem: Problem | None = None
    warnings: list[Problem] = field(default_factory=list)

    @property
    def rewrite_safe(self) -> bool:
        """True when writing the model back keeps every value as it is on disk."""
        return self.state is not None and not self.warnings


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def encode(state: SessionState) -> bytes:
    """The bytes Fractal writes for this state."""
    return (json.dumps(state.model_dump(mode="json"), indent=2) + "\n").encode("ascii")


def encode_data(data: Any) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode("ascii")


def decode(data: bytes, *, path: str, expected_id: str | None) -> Decoded:
    """Parse and validate one session file the way Fractal loads it, naming what is wrong."""
    def fail(code: str, message: str, field_path: str | None = None) -> Decoded:
        return Decoded(None, Problem(path, code, message, field_path))

    if not data.strip():
        return fail("empty", "the file is empty")
    if data.startswith(BOM):
        return fail("bom", "the file starts with a UTF-8 byte order mark, which Fractal rejects")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return fail("invalid_utf8", f"invalid UTF-8 at byte {exc.start}")
    try:
        raw = json.loads(text, parse_constant=_reject_constant)
    except _NonFinite as exc:
        return fail("non_finite", f"the file contains {exc}, which is not valid JSON")
    except RecursionError:
        return fail("too_deep", "JSON nesting is too deep to read")
    except json.JSONDecodeError as exc:
        return fail("invalid_json", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")
    if not isinstance(raw, dict):
        return fail("not_object", f"the top level is a JSON {_json_type(raw)}, not an object")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, str):
        shown = json.dumps(version)[:40] if "schema_version" in raw else "missing"
        return fail("schema_version", f"schema_version is {shown}; Reprise and Fractal read version 1",
                    "schema_version")
    try:
        state = SessionState.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        first = errors[0]
        loc = ".".join(str(part) for part in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return fail("validation", f"{loc}: {first['msg']}{more}", loc)
    except RecursionError:
        return fail("too_deep", "JSON nesting is too deep to validate")
    if expected_id is not None and state.session_id != expected_id:
        return fail("id_mismatch",
                    f"the embedded session_id {state.session_id!r} differs from the file name {expected_id!r}",
                    "session_id")
    decoded = Decoded(state)
    try:
        rewritten = encode(state)
    except (RecursionError, ValueError) as exc:
        decoded.warnings.append(Problem(path, "unencodable", f"cannot be written back: {exc}", severity="warning"))
        return decoded
    if rewritten != data:
        decoded.warnings.extend(_rewrite_changes(text, raw, rewritten, path))
    return decoded


def _rewrite_changes(text: str, raw: dict, rewritten: bytes, path: str) -> list[Problem]:
    """Why a rewrite would not give back the same JSON (formatting alone is not a reason)."""
    warnings = []
    duplicates = _duplicate_keys(text)
    if duplicates:
        warnings.append(Problem(
            path, "duplicate_keys",
            f"duplicate keys ({', '.join(duplicates[:3])}); Fractal keeps the last, a rewrite would drop the others",
            duplicates[0], "warning"))
    difference = _first_difference(raw, json.loads(rewritten))
    if difference is not None:
        where, what = difference
        warnings.append(Problem(path, "noncanonical", f"{where}: a rewrite would change {what}", where, "warning"))
    return warnings


def _duplicate_keys(text: str) -> list[str]:
    found: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                found.append(key)
            seen.add(key)
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return found


def _first_difference(before: Any, after: Any, where: str = "") -> tuple[str, str] | None:
    """The first place where two JSON values differ, comparing types strictly (1 is not 1.0 or true)."""
    if type(before) is not type(after):
        return where or "(top)", f"{json.dumps(before)[:30]} to {json.dumps(after)[:30]}"
    if isinstance(before, dict):
        for key in before.keys() | after.keys():
            if key not in after:
                return f"{where}.{key}".lstrip("."), "it by dropping it"
            if key not in before:
                return f"{where}.{key}".lstrip("."), "it by adding a default"
            found = _first_difference(before[key], after[key], f"{where}.{key}")
            if found:
                return found[0].lstrip("."), found[1]
        return None
    if isinstance(before, list):
        if len(before) != len(after):
            return where or "(top)", "its length"
        for index, (b, a) in enumerate(zip(before, after)):
            found = _first_difference(b, a, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if before == after else (where or "(top)", f"{before!r} to {after!r}")


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def fractal_would_drop(state: SessionState) -> list[str]:
    """What Fractal's next save of this session would lose, as short reasons (empty: nothing)."""
    reasons = []
    if state.has_unknown_fields():
        reasons.append("fields Fractal does not know")
    if len(state.history) > FRACTAL_MAX_HISTORY:
        reasons.append(f"{len(state.history) - FRACTAL_MAX_HISTORY} history turns beyond Fractal's {FRACTAL_MAX_HISTORY}")
    return reasons
