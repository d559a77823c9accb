"""The terminal driver on a terminal that hangs up (tui/driver.py): writes never block once the
terminal is gone, the hang-up's SIGCONT restarts nothing, and input that ends is a SIGHUP."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from types import SimpleNamespace

import pytest
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread

from reprise.tui.driver import TerminalDriver, _TerminalOutput


@pytest.fixture
def hung_up():
    """A pty's own end whose other end is closed: reads end, writes fail with EIO."""
    leader, follower = os.openpty()
    os.close(leader)
    yield follower
    os.close(follower)


@pytest.fixture
def driver():
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}

    async def make() -> TerminalDriver:   # a driver takes the running loop
        return TerminalDriver(SimpleNamespace())   # the app is not needed by what is tested here

    loop = asyncio.new_event_loop()
    try:
        made = loop.run_until_complete(make())
    finally:
        loop.close()
    yield made
    for sig, handler in kept.items():
        signal.signal(sig, handler)


def test_writes_to_a_hung_up_terminal_are_dropped_and_never_block_the_writer(hung_up):
    output = _TerminalOutput(os.fdopen(os.dup(hung_up), "w"))
    writer = WriterThread(output)   # Textual's own output thread, over the driver's file
    writer.start()
    done = threading.Event()

    def write_many() -> None:
        for _ in range(MAX_QUEUED_WRITES * 10):
            writer.write("x" * 100)
        done.set()

    threading.Thread(target=write_many, daemon=True).start()
    assert done.wait(60), "a write blocked: the output thread died on EIO"
    writer.stop()
    assert output.gone


def test_the_sigcont_of_a_hang_up_restarts_nothing_and_a_stop_s_does(driver, monkeypatch):
    resumed = []
    monkeypatch.setattr(driver, "resume_application_mode", lambda: resumed.append(True))
    driver._sigcont_application(signal.SIGCONT, None)
    assert resumed == []
    monkeypatch.setattr(os, "kill", lambda pid, sig: None)   # the stop itself (SIGSTOP) is not sent
    monkeypatch.setattr(driver, "suspend_application_mode", lambda: None)
    driver._sigtstp_application(signal.SIGTSTP, None)
    driver._sigcont_application(signal.SIGCONT, None)
    assert resumed == [True]


def test_input_that_ends_on_a_hung_up_terminal_is_taken_for_sighup(driver, hung_up, monkeypatch):
    sent = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    driver.fileno = hung_up
    driver.input_tty = True
    reader = threading.Thread(target=driver.run_input_thread, daemon=True)
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), "the input thread spins on end of file"
    assert sent == [(os.getpid(), signal.SIGHUP)]
