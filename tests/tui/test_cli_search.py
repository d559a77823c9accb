"""`reprise search` as a pipe sees it: the answer's end is the end of stdout, while the index is
built after it (its worker processes, their forkserver and its resource tracker never hold the
pipe), so `reprise search x | head` or `| less` is not held for the indexing."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from reprise.core.paths import SessionRef, workspace_key
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.store import Store

from ..core.test_store import make_state

REPRISE = Path(sys.executable).with_name("reprise")
SESSIONS = 90   # more than the index's build takes to worker processes (search_build.PARALLEL_MIN)


def test_the_pipe_ends_with_the_answer_while_the_index_is_built(isolated_paths: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for number in range(SESSIONS):
        state = make_state(2, f"{number:08x}-0000-4000-8000-000000000000")
        if number % 30 == 0:   # a few hold the word: the others are left for the index
            state.summary.turns[1].user.message = state.history[1].user_message = "the zebra crossing"
        path = Store(isolated_paths).paths.session_file(SessionRef(workspace_key(work), state.session_id, "fractal"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode(state))
    gate = tmp_path / "gate"
    env = {**os.environ, "REPRISE_FAULTS": f"search_index_batch=wait:{gate}"}   # held after an index batch
    child = subprocess.Popen([str(REPRISE), "search", "zebra", "--all"], cwd=work, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    answer: list[bytes] = []
    ended = threading.Event()

    def read_to_the_end() -> None:
        assert child.stdout is not None
        answer.append(child.stdout.read())
        ended.set()

    reader = threading.Thread(target=read_to_the_end)
    reader.start()
    try:
        assert ended.wait(120)   # its end while the process is held at the gate (else only once it exits)
        assert child.poll() is None
        assert b"3 matching turns in 3 sessions" in answer[0]
    finally:
        gate.touch()
        reader.join()
        errors = child.stderr.read()
        child.wait()
    assert child.returncode == 0, errors
    assert Path(f"{gate}.reached").exists(), (answer, errors)   # the index was built: worker processes ran


def test_a_reader_gone_before_the_answer_ends_the_search_quietly(isolated_paths: Path, tmp_path: Path) -> None:
    """`reprise --json search x | true`: the answer's flush meets a closed pipe; the pipe is put back
    on descriptor 1, so the run ends as any closed pipe does (141, nothing on stderr), not with an
    error printed to /dev/null."""
    work = tmp_path / "work"
    work.mkdir()
    state = make_state(2, "0000000a-0000-4000-8000-000000000000")
    state.summary.turns[1].user.message = state.history[1].user_message = "the zebra crossing"
    path = Store(isolated_paths).paths.session_file(SessionRef(workspace_key(work), state.session_id, "fractal"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(state))
    read, write = os.pipe()
    os.close(read)   # the reader is gone before a byte is written
    try:
        done = subprocess.run([str(REPRISE), "--json", "search", "zebra", "--all"], cwd=work, stdin=subprocess.DEVNULL,
                              stdout=write, stderr=subprocess.PIPE, check=False)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == b""
