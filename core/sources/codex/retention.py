"""What Codex does with old rollouts: nothing by age. Codex CLI has no sweep of its session files
(unlike Claude Code's `cleanupPeriodDays`); a rollout leaves `sessions/` only when the user archives
it (`codex archive`, into `archived_sessions/`) or deletes it (`codex delete`). So no Codex row
carries a deletion date, and Reprise offers no keep for them.
"""

from __future__ import annotations

NO_SWEEP = ("Codex does not delete rollouts by age (it has no clean-up sweep): they stay until archived "
            "(`codex archive`) or deleted (`codex delete`).")
ARCHIVED_NOTE = "archived by Codex (archived_sessions/): its own picker does not show it"
