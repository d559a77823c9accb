"""Typed errors of Reprise: each carries one human sentence, an optional hint, the
file it concerns and the exit status the command line uses for it."""

from __future__ import annotations

from pathlib import Path

from .problems import Problem


class RepriseError(Exception):
    """Base of every error core raises on purpose."""

    code = "error"
    exit_status = 1

    def __init__(self, message: str, *, hint: str | None = None, path: Path | str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = str(path) if path is not None else None

    def __str__(self) -> str:
        text = self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class UsageError(RepriseError):
    code = "usage"
    exit_status = 2


class OverWindowError(UsageError):
    """The next turn would not fit the model's context window."""

    code = "over_window"


class InvalidIdError(UsageError):
    code = "invalid_id"


class ForkOnlyError(UsageError):
    """A trim in place of a session whose agent's files Reprise never rewrites (Claude Code's): it
    forks only. Exits 1, as a refused action, not a mistyped command."""

    code = "fork_only"
    exit_status = 1


class RoleMissingError(UsageError):
    """An action a session's source does not offer (its class lacks the role): one sentence naming the
    source, "Codex sessions cannot be kept by Reprise.". Exits 2 like any refused usage."""

    def __init__(self, message: str, *, source: str, role: str, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.source = source
        self.role = role


class NotFoundError(RepriseError):
    code = "not_found"
    exit_status = 3


class AmbiguousError(RepriseError):
    code = "ambiguous"
    exit_status = 3

    def __init__(self, message: str, candidates: list[str], *, hint: str | None = None,
                 path: Path | str | None = None):
        super().__init__(message, hint=hint, path=path)
        self.candidates = candidates


class ProblemFileError(RepriseError):
    """A session file cannot be used as asked (unreadable, invalid, or unsafe to rewrite)."""

    code = "problem_file"

    def __init__(self, problem: Problem, *, hint: str | None = None):
        super().__init__(f"{problem.path}: {problem.message}", hint=hint, path=problem.path)
        self.problem = problem


class ChangedOnDiskError(RepriseError):
    code = "changed_on_disk"


class LockedError(RepriseError):
    code = "locked"


class ArchiveError(RepriseError):
    code = "archive"


class AgentError(RepriseError):
    code = "agent"


class ConfigError(RepriseError):
    code = "config"
    exit_status = 2


class PendingTurnError(RepriseError):
    """An agent is probably writing this session right now."""

    code = "pending_turn"


class ConflictError(RepriseError):
    """The operation would collide with what is there now (a session or turn that already exists)."""

    code = "conflict"
