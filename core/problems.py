"""A problem with one file: what is wrong, where, whether it stops the file's use, and what a
person can do next."""

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
    next_step: str | None = None   # what to do about it, when the one who found it knows better than `next_step_for`

    def as_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "code": self.code, "message": self.message,
                "field": self.field, "severity": self.severity}


# The next step for a problem of Reprise's own files, by code ({path} is the file's).
_STEPS = {
    "unreadable": "check the permissions of {path}",
    "not_regular": "look at what is at {path}: Reprise reads only regular files there",
    "not_a_folder": "look at what is at {path}: Reprise needs a folder there",
    "too_large": "open the file: {path} (over Reprise's size limit; Reprise leaves it as it is)",
    "vanished": "run `reprise doctor` again: the file was being replaced while it was read",
    "bad_audit_line": "nothing to do: the other lines of {path} are read; open the file to see the line",
    "bad_index_line": "the archive's other entries are read; open the file to see the line: {path}",
    "bad_settings": "open the file: {path}",
    "bad_setting": "open the file: {path}",
}


def next_step_for(problem: Problem) -> str:
    """What a person can do about a problem: the finder's own step, else one by its code, else
    to open the file."""
    if problem.next_step:
        return problem.next_step
    return _STEPS.get(problem.code, "open the file: {path}").format(path=problem.path)
