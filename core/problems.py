"""A problem with one file: what is wrong, where, and whether it stops the file's use."""

from __future__ import annotations

from dataclasses import dataclass


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
