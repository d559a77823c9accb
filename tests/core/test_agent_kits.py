"""The kits the agents' stores share (core/sources/jsonl_listing.py, fork_steps.py, agent_transcript.py,
uuid_ids.py): a listing pickles by its roots into the same class, the fork ladder's answers whatever
the agent, a cut text says its size, an id that is not a UUID is refused naming the agent."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reprise.core.errors import InvalidIdError, UsageError
from reprise.core.paths import OwnPaths
from reprise.core.sources import fork_steps
from reprise.core.sources.agent_transcript import TEXT_CHARS, cut
from reprise.core.sources.claude.listing import ClaudeListing
from reprise.core.sources.codex.listing import CodexListing
from reprise.core.sources.jsonl_listing import JsonlListing
from reprise.core.sources.uuid_ids import checked_uuid
from reprise.core.trimming import Original, TrimOptions, TrimPlan, TurnChange


@pytest.mark.parametrize("kind", [ClaudeListing, CodexListing])
def test_a_listing_pickles_by_its_roots_into_its_own_class(kind: type[JsonlListing], tmp_path: Path) -> None:
    roots = [tmp_path / "one", tmp_path / "two"]
    listing = kind(roots, OwnPaths(tmp_path / "data", kind.name))
    again = pickle.loads(pickle.dumps(listing))
    assert type(again) is kind
    assert [root.path for root in again.roots] == roots
    assert again.own_paths.root == tmp_path / "data" and again.own_paths.source == kind.name
    assert again.fold is listing.fold and again.parse is listing.parse


@dataclass
class _Turn:
    turn_id: str
    number: int


@dataclass
class _State:
    removed_tokens: int
    kept_turns: list[str] = field(default_factory=list)


def _build(turns: list[_Turn]):
    def build(steps: fork_steps.Steps) -> fork_steps.BuiltFork[_State]:
        changes, kept = fork_steps.turn_changes(turns, steps.drop, {})
        return fork_steps.BuiltFork(b"", _State(100 * len(steps.drop), kept), changes)
    return build


TURNS = [_Turn(f"t{n}", n) for n in range(1, 5)]


def test_the_fork_ladder_drops_the_turns_asked_and_keeps_the_rest() -> None:
    chosen = fork_steps.chosen_fork("s", TrimOptions(drop=("2-3",)), Original.of(b"x"), TURNS, 1000, [], _build(TURNS))
    assert not isinstance(chosen, TrimPlan)
    built, dropped, fit = chosen
    assert dropped == {1, 2} and fit is None
    assert built.changes == [TurnChange(2, "t2", "dropped"), TurnChange(3, "t3", "dropped")]
    assert built.state.kept_turns == ["t1", "t4"]


def test_the_fork_ladder_refuses_to_drop_every_turn_and_says_when_nothing_changes() -> None:
    with pytest.raises(UsageError, match="drop every turn"):
        fork_steps.chosen_fork("s", TrimOptions(drop=("1-4",)), Original.of(b"x"), TURNS, 1000, [], _build(TURNS))
    plan = fork_steps.chosen_fork("s", TrimOptions(cap_replies=10), Original.of(b"x"), TURNS, 1000, ["n"],
                                  _build(TURNS))
    assert isinstance(plan, TrimPlan) and not plan.changed and plan.notes == ["n", "nothing to trim with these options"]


def test_fit_picks_the_first_rung_under_the_target_or_changes_nothing() -> None:
    chosen = fork_steps.chosen_fork("s", TrimOptions(fit=700), Original.of(b"x"), TURNS, 1000, [], _build(TURNS))
    assert not isinstance(chosen, TrimPlan)
    built, _, fit = chosen
    assert fit is not None and fit.fits and built.state.kept_turns == ["t4"]   # keep the newest 1: 1000 - 300
    plan = fork_steps.chosen_fork("s", TrimOptions(fit=1), Original.of(b"x"), TURNS, 1000, [], _build(TURNS))
    assert isinstance(plan, TrimPlan) and not plan.changed and "no plan on the ladder" in plan.notes[-1]
    with pytest.raises(UsageError, match="measured context"):
        fork_steps.chosen_fork("s", TrimOptions(fit=700), Original.of(b"x"), TURNS, None, [], _build(TURNS))


def test_a_cut_text_says_how_much_more_there_was() -> None:
    assert cut("short") == "short"
    assert cut("y" * (TEXT_CHARS + 5)) == "y" * TEXT_CHARS + "… (5 more characters)"
    assert cut("y" * (TEXT_CHARS + 1_234), brackets="[]").endswith("… [1,234 more characters]")


def test_an_id_that_is_not_a_uuid_is_refused_naming_the_agent() -> None:
    assert checked_uuid("0f3a9c1e-1b2c-4d5e-8f90-123456789abc", "Codex") == "0f3a9c1e-1b2c-4d5e-8f90-123456789abc"
    with pytest.raises(InvalidIdError, match=r"'\.\./x' is not a Codex session id \(a UUID\)"):
        checked_uuid("../x", "Codex")
