"""Session bytes to models and back, in Fractal's exact byte format, with every way a file
can be wrong named as a typed problem.

`decode` never raises for bad input: it returns the state or the problem, plus warnings for
files Fractal loads but a rewrite would change. `encode` produces the bytes Fractal itself
writes (`json.dumps(state, indent=2) + "\\n"`, ASCII escapes).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ...errors import RepriseError
from ...problems import Problem
from .models import FRACTAL_MAX_HISTORY, SCHEMA_VERSION, SessionState
from .trace import trace_losses

BOM = b"\xef\xbb\xbf"


@dataclass(slots=True)
class Decoded:
    state: SessionState | None
    problem: Problem | None = None
    warnings: list[Problem] = field(default_factory=list)

    @property
    def rewrite_safe(self) -> bool:
        """True when writing the model back keeps every value Fractal reads as it is on disk."""
        return self.state is not None and not self.warnings

    def failure(self) -> Problem:
        """The problem that kept the file from decoding: a Decoded without a state always carries one."""
        assert self.problem is not None, "a file that did not decode has its problem"
        return self.problem


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def encode(state: SessionState) -> bytes:
    """The bytes Fractal writes for this state; UnencodableError when they cannot be JSON.

    The same bytes as `json.dumps(state.model_dump(), indent=2)`, but encoded from a view of
    the models (their values referenced, not copied) and gathered a batch of chunks at a time:
    the indented encoder yields one small string per token, and a list of them all costs
    several times the file.
    """
    return _encoded(json_view(state), indent=2)


def encode_data(data: Any) -> bytes:
    return _encoded(data, indent=2)


def _encoded(data: Any, *, indent: int | None) -> bytes:
    try:
        return join_ascii(json.JSONEncoder(indent=indent, allow_nan=False).iterencode(data), end="\n")
    except RecursionError:
        raise UnencodableError("the data is nested too deeply to be written back as JSON") from None
    except ValueError as exc:  # an infinite or NaN float
        raise UnencodableError(f"it cannot be written back as JSON: {exc}") from None


def join_ascii(chunks: Iterable[str], *, end: str = "", batch: int = 8192) -> bytes:
    """ASCII text chunks (then `end`) as one bytes object, joined a batch at a time into one
    growing buffer that becomes the result without a copy."""
    buffer = io.BytesIO()
    pending: list[str] = []
    for chunk in chunks:
        if len(chunk) > 1 << 16:  # a long string: encoded a slice at a time, never copied whole
            buffer.write("".join(pending).encode("ascii"))
            pending.clear()
            for start in range(0, len(chunk), 1 << 20):
                buffer.write(chunk[start:start + (1 << 20)].encode("ascii"))
            continue
        pending.append(chunk)
        if len(pending) >= batch:
            buffer.write("".join(pending).encode("ascii"))
            pending.clear()
    pending.append(end)
    buffer.write("".join(pending).encode("ascii"))
    return buffer.getvalue()


def json_view(value: Any) -> Any:
    """What `model_dump()` gives for a model, as dicts that reference the models' values instead
    of copying them (opaque values such as traces are shared as they are). Declared fields come
    first, then the unknown ones, as pydantic dumps them."""
    if isinstance(value, BaseModel):
        view = {name: json_view(getattr(value, name)) for name in type(value).model_fields}
        if value.model_extra:
            view.update(value.model_extra)
        return view
    if isinstance(value, list) and any(isinstance(item, BaseModel) for item in value):
        return [json_view(item) for item in value]
    return value


class UnencodableError(RepriseError):
    code = "unencodable"


def decode(data: bytes, *, path: str, expected_id: str | None) -> Decoded:
    """Parse and validate one session file the way Fractal loads it, naming what is wrong.

    This is the listing's hot path: it never re-encodes (Python's indented JSON encoder is
    ten times slower than parsing). Instead it detects exactly the things a rewrite would
    change: duplicate keys, non-finite floats, and values Fractal coerces (`true` or `1.0`
    where an integer belongs).
    """
    text = text_of(data, path=path)
    return Decoded(None, text) if isinstance(text, Problem) else decode_text(text, path=path, expected_id=expected_id)


def text_of(data: bytes, *, path: str) -> str | Problem:
    """The file's text, or why the bytes cannot be a session file (empty, a BOM, not UTF-8)."""
    if not data.strip():
        return Problem(path, "empty", "the file is empty")
    if data.startswith(BOM):
        return Problem(path, "bom", "the file starts with a UTF-8 byte order mark, which Fractal rejects")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Problem(path, "invalid_utf8", f"invalid UTF-8 at byte {exc.start}")


def decode_text(text: str, *, path: str, expected_id: str | None) -> Decoded:
    """`decode` of the file's text (from `text_of`): a caller can drop the bytes while it parses."""
    def fail(code: str, message: str, field_path: str | None = None) -> Decoded:
        return Decoded(None, Problem(path, code, message, field_path))

    duplicates: list[str] = []
    overflowed: list[str] = []

    # Any: a parsed JSON object's values are any JSON value, read by shape (isinstance) after.
    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    duplicates.append(key)
                else:
                    seen.add(key)
        return result

    def parse_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            overflowed.append(literal)
        return value

    try:
        raw = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=pairs_hook,
                         parse_float=parse_float)
    except _NonFinite as exc:
        return fail("non_finite", f"the file contains {exc}, which is not valid JSON")
    except RecursionError:
        return fail("too_deep", "JSON nesting is too deep to read")
    except json.JSONDecodeError as exc:
        return fail("invalid_json", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")
    except ValueError:   # Python's cap on the digits of an integer (4,300), the one other error json raises
        return fail("invalid_json", "the file holds a number too long to read")
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
    if duplicates:
        decoded.warnings.append(Problem(
            path, "duplicate_keys",
            f"duplicate keys ({', '.join(duplicates[:3])}); Fractal keeps the last, a rewrite would drop the others",
            duplicates[0], "warning"))
    if overflowed:
        decoded.warnings.append(Problem(
            path, "noncanonical", f"the number {overflowed[0][:30]} is too large for a float; a rewrite would "
            "turn it into Infinity", None, "warning"))
    coerced = _coerced(raw)
    if coerced is not None:
        where, value = coerced
        decoded.warnings.append(Problem(path, "noncanonical",
                                        f"{where}: a rewrite would write {value} as an integer", where, "warning"))
    return decoded


_INT_FIELDS = ("files_read_count", "files_changed_count", "commands_run_count")
_USAGE_INT_FIELDS = ("input_tokens", "output_tokens", "duration_ms", "iterations", "context_tokens")


def _coerced(raw: dict[str, Any]) -> tuple[str, Any] | None:   # Any: the file's raw JSON, checked by shape
    """The first value Fractal accepts but would write back differently (true or 1.0 for an integer)."""
    def is_int(value: Any) -> bool:
        return type(value) is int

    if not is_int(raw.get("schema_version")):
        return "schema_version", json.dumps(raw.get("schema_version"))
    for index, turn in enumerate(raw["summary"]["turns"] if isinstance(raw.get("summary"), dict) else []):
        agent = turn.get("agent") if isinstance(turn, dict) else None
        if not isinstance(agent, dict):
            continue
        for name in _INT_FIELDS:
            if name in agent and not is_int(agent[name]):
                return f"summary.turns[{index}].agent.{name}", json.dumps(agent[name])
        usage = agent.get("usage")
        if isinstance(usage, dict):
            for name in _USAGE_INT_FIELDS:
                if name in usage and not is_int(usage[name]):
                    return f"summary.turns[{index}].agent.usage.{name}", json.dumps(usage[name])
            if type(usage.get("cost")) is bool:
                return f"summary.turns[{index}].agent.usage.cost", json.dumps(usage["cost"])
    return None


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def fractal_would_drop(state: SessionState) -> list[str]:
    """What Fractal's next save of this session would lose, as short reasons (empty: nothing)."""
    reasons = []
    rejected = unknown_in_traces = 0
    for turn in state.history[-FRACTAL_MAX_HISTORY:]:
        bad, unknown = trace_losses(turn.trace)
        rejected += bad
        unknown_in_traces += bool(unknown)
    if rejected:
        reasons.append(f"the whole session, since {rejected} trace(s) are not valid predict-rlm RunTraces "
                       "(Fractal would load it empty and overwrite it on the next turn)")
    if state.has_unknown_fields() or unknown_in_traces:
        reasons.append("fields Fractal does not know")
    if len(state.history) > FRACTAL_MAX_HISTORY:
        reasons.append(f"{len(state.history) - FRACTAL_MAX_HISTORY} history turns beyond Fractal's "
                       f"{FRACTAL_MAX_HISTORY}")
    return reasons
