"""The meter against live Fractal turns: `reprise meter --json` beside the first request a real
Fractal turn sends, on a 0-, 5- and 60-turn session with a short and a 14,000-character message.

The turns run offline through the live-Fractal harness of the compat tests
(tests/compat/live/: a loopback-only namespace, a recording fake chat-completions server, an
`sbx` stand-in); the request is counted with o200k_base and OpenAI's chat framing. Needs the
real Fractal ($REPRISE_FRACTAL_PYTHON) and root (network namespaces); without them the section
says why and has no rows. The scale store is not used.
"""

from __future__ import annotations

import dataclasses

GAP_TARGET = 0.01


def run(store, report, *, quick: bool = False, log=print) -> None:
    from tests.compat.live.harness import MAX_ITERATIONS, MODEL, LiveUnavailable
    from tests.compat.live.measure import fixed_text_line, measure_isolated

    section = report.section("live_meter", "Meter vs a live Fractal turn (first request, gpt-5)")
    section.headers = ("session, message", "meter", "real request", "gap", "target", "met?")
    log("  six real Fractal turns in a loopback-only namespace ...")
    try:
        rows = measure_isolated()
    except LiveUnavailable as exc:
        section.note(f"Not measured: {exc}.")
        return
    for row in rows:
        section.row(f"{row.turns} turns, {row.message_chars:,}-character message", f"{row.meter:,}",
                    f"{row.real:,}", f"{row.gap:+.2%}", f"within {GAP_TARGET:.0%}", abs(row.gap) < GAP_TARGET)
    section.note(f"meter: `reprise meter ID --message-file F --model {MODEL} --json` on the session before the "
                 "turn; real request: the first chat-completions request the fake server received in that turn, "
                 "counted with o200k_base and OpenAI's chat framing (3 tokens per message, its role, 3 more). "
                 f"Fractal 0.1.1, `--max-iterations {MAX_ITERATIONS}`, workspace paths of fixed length, an "
                 "AGENTS.md in the workspace; the 5- and 60-turn sessions are fixtures written by Fractal's own "
                 "code (tests/compat/live/sessions.py), each turn on its own copy.")
    section.note(fixed_text_line(rows[0]) + "; the configured gpt-5 overhead is set from it (README, \"Measuring "
                 "the overhead\"). The same check runs in CI (tests/compat/live/test_live_meter.py); "
                 "`python -m tests.compat.live.measure` prints the table alone.")
    section.data.update(rows=[dataclasses.asdict(row) for row in rows])
