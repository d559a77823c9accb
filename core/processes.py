"""Running an agent program so that it ends when Reprise says so: every process it starts is
found and ended with it, its output is read against deadlines and kept within a byte cap (the
whole of it hashed and spooled to a file), and a turn never waits on a pipe a daemon holds.

On Linux, Reprise is a child subreaper while an agent runs, so a process that leaves the
agent's session (`setsid`, a sandbox supervisor) is reparented to Reprise instead of init and
stays in view; descendants are found through /proc. Elsewhere only the agent's process group
can be ended, and the result says so.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import hashlib
import os
import secrets
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from .errors import RepriseError
from .rooted import Root

TOKEN_VAR = "REPRISE_TURN_TOKEN"
INTERRUPT_GRACE = 3.0   # after SIGINT, before SIGTERM
TERM_GRACE = 3.0        # after SIGTERM, before SIGKILL
KILL_WAIT = 5.0         # after SIGKILL, before giving up on a process stuck in the kernel
LINGER_GRACE = 2.0      # after the agent exits, while a process it started still holds its output
SCAN_INTERVAL = 0.2
READ_CHUNK = 65536
STDERR_KEEP = 65536
SIGNAL_EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_PROC = Path("/proc")


# --- the child subreaper ---------------------------------------------------------------------

_NOT_LOADED = object()


def _load_libc() -> Any:
    """The C library, for prctl; None where there is none to call."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes.util  # it runs a program to find the library: only when an agent is run

    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return None


class _Subreaper:
    """Process-wide and reference-counted: on while at least one agent runs, then restored."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._was_on = False
        self._libc: Any = _NOT_LOADED   # on the first agent run: finding libc runs `ldconfig -p`

    def _prctl(self, option: int, value: int | ctypes.c_int) -> bool:
        if self._libc is _NOT_LOADED:
            self._libc = _load_libc()
        if self._libc is None:
            return False
        argument = ctypes.byref(value) if isinstance(value, ctypes.c_int) else ctypes.c_ulong(value)
        unused = ctypes.c_ulong(0)  # prctl is variadic: pass whole words
        status: int = self._libc.prctl(ctypes.c_int(option), argument, unused, unused, unused)  # restype c_int
        return status == 0

    def acquire(self) -> bool:
        with self._lock:
            if self._users == 0:
                current = ctypes.c_int(0)
                self._was_on = self._prctl(_PR_GET_CHILD_SUBREAPER, current) and current.value != 0
                if not self._was_on and not self._prctl(_PR_SET_CHILD_SUBREAPER, 1):
                    return False
            self._users += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and not self._was_on:
                self._prctl(_PR_SET_CHILD_SUBREAPER, 0)


_SUBREAPER = _Subreaper()


@contextlib.contextmanager
def subreaper() -> Iterator[bool]:
    """Be a child subreaper for the duration (True), or say it cannot be done here (False)."""
    acquired = _SUBREAPER.acquire()
    try:
        yield acquired
    finally:
        if acquired:
            _SUBREAPER.release()


# --- processes seen through /proc --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    command: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command})" if self.command else f"pid {self.pid}"


def process_stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state letter, start time in clock ticks), or None when the process is gone."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        return int(fields[1]), fields[0].decode("ascii", "replace"), int(fields[19])
    except (IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(_PROC / str(pid) / "task")
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            found.extend(int(item) for item in (_PROC / str(pid) / "task" / task / "children").read_text().split())
    return found


def _carries(pid: int, marker: bytes) -> bool:
    try:
        return marker in (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _command(pid: int) -> str:
    try:
        argv = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    text = " ".join(part.decode("utf-8", "replace") for part in argv if part)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= 80 else text[:79] + "…"


def _has_proc() -> bool:
    return (_PROC / str(os.getpid()) / "stat").exists()


class ProcessTree:
    """The agent and everything it started: its descendants, and the processes reparented to
    Reprise (the subreaper) that carry this run's token in their environment."""

    def __init__(self, root: subprocess.Popen[bytes], token: str, *, subreaper: bool):
        self.root = root
        self.marker = f"{TOKEN_VAR}={token}".encode()
        self.subreaper = subreaper
        self.visible = _has_proc()
        self.known: dict[int, int] = {}   # pid -> start time (guards against a reused pid)

    def _same(self, pid: int) -> tuple[int, str, int] | None:
        info = process_stat(pid)
        if info is None or (pid in self.known and info[2] != self.known[pid]):
            return None
        return info

    def scan(self) -> None:
        if not self.visible:
            return
        me = os.getpid()
        frontier = [self.root.pid, *self.known]
        frontier += [pid for pid in _children(me) if pid not in self.known and pid != self.root.pid
                     and _carries(pid, self.marker)]
        seen: set[int] = set()
        while frontier:
            pid = frontier.pop()
            if pid in seen or pid == me:
                continue
            seen.add(pid)
            info = self._same(pid)
            if info is None:
                self.known.pop(pid, None)
                continue
            self.known.setdefault(pid, info[2])
            frontier.extend(_children(pid))

    def alive(self) -> list[int]:
        """Live members (zombies Reprise is the parent of are reaped on the way)."""
        living = [self.root.pid] if self.root.poll() is None else []
        me = os.getpid()
        for pid in list(self.known):
            if pid == self.root.pid:
                continue
            info = self._same(pid)
            if info is None:
                self.known.pop(pid, None)
            elif info[1] == "Z":
                if info[0] == me:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, os.WNOHANG)
            else:
                living.append(pid)
        return living

    def signal(self, sig: int, *, skip: AbstractSet[int] = frozenset()) -> set[int]:
        """Send `sig` to every live member not in `skip`; return those it was sent to."""
        if not self.visible:  # no /proc: the agent's process group is all Reprise can reach
            if self.root.pid not in skip:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.root.pid, sig)
            return {self.root.pid}
        sent = set()
        for pid in self.alive():
            if pid not in skip:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
                sent.add(pid)
        return sent

    def holders(self, inodes: set[int]) -> list[ProcessInfo]:
        """Live members holding one of these pipes open (by inode)."""
        wanted = {f"pipe:[{inode}]" for inode in inodes}
        found = []
        for pid in self.alive():
            if pid == self.root.pid:
                continue
            try:
                links = {os.readlink(_PROC / str(pid) / "fd" / fd) for fd in os.listdir(_PROC / str(pid) / "fd")}
            except OSError:
                continue
            if links & wanted:
                found.append(ProcessInfo(pid, _command(pid)))
        return found


_LEFT_RUNNING: dict[int, int] = {}
_LEFT_LOCK = threading.Lock()


def _leave_running(tree: ProcessTree) -> None:
    """Processes left alone after their agent exited: Reprise, their new parent, reaps them later."""
    with _LEFT_LOCK:
        _LEFT_RUNNING.update({pid: start for pid, start in tree.known.items() if pid != tree.root.pid})


def reap_left_running() -> None:
    me = os.getpid()
    with _LEFT_LOCK:
        for pid, start in list(_LEFT_RUNNING.items()):
            info = process_stat(pid)
            if info is None or info[2] != start or info[0] != me:
                _LEFT_RUNNING.pop(pid)
            elif info[1] == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                _LEFT_RUNNING.pop(pid)


# --- output within a cap -----------------------------------------------------------------------

@dataclass(slots=True)
class CapturedOutput:
    """What a program wrote to stdout: the first `cap` bytes, and the whole of it counted and
    hashed; when it was over the cap and a spool folder was given, the whole of it in `spool`."""

    head: bytes
    total_bytes: int
    total_chars: int
    sha256: str
    cap: int
    spool: Path | None = None
    spool_error: str | None = None

    @property
    def over(self) -> bool:
        return self.total_bytes > self.cap

    def head_text(self) -> str:
        """The head decoded, without a character cut in half at the cap."""
        return codecs.getincrementaldecoder("utf-8")("replace").decode(self.head, final=not self.over)

    def text(self) -> str:
        return self.head.decode("utf-8", "replace")

    def discard(self) -> None:
        if self.spool is not None:
            with contextlib.suppress(OSError):
                self.spool.unlink()
            self.spool = None


class _OutputSink:
    def __init__(self, cap: int, spool_dir: Path | None, spool_root: Root | None = None):
        self.cap = cap
        self.spool_dir = spool_dir
        self.spool_root = spool_root
        self.head = bytearray()
        self.total = 0
        self.chars = 0
        self.hasher = hashlib.sha256()
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.spool_fd: int | None = None
        self.spool: Path | None = None
        self.spool_error: str | None = None

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.hasher.update(chunk)
        self.chars += len(self.decoder.decode(chunk))
        room = self.cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
        if self.total > self.cap and self.spool_dir is not None and self.spool_error is None:
            try:
                if self.spool_fd is None:
                    self._open_spool(chunk[room:] if room > 0 else chunk)
                else:
                    _write_all(self.spool_fd, chunk)
            except (OSError, RepriseError) as exc:
                self._spool_failed(exc)

    def _open_spool(self, overflow: bytes) -> None:
        """The spool file, created through the root that holds its folder (no link followed)."""
        folder = self.spool_dir
        assert folder is not None
        root = self.spool_root or Root(folder, "archive folder")
        spool = folder / f".output.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        self.spool_fd = root.create_exclusive(spool)
        self.spool = spool
        _write_all(self.spool_fd, bytes(self.head))
        _write_all(self.spool_fd, overflow)

    def _spool_failed(self, exc: OSError | RepriseError) -> None:
        self.spool_error = (exc.strerror or str(exc)) if isinstance(exc, OSError) else exc.message
        self._close_spool()
        if self.spool is not None:
            with contextlib.suppress(OSError):
                self.spool.unlink()
            self.spool = None

    def _close_spool(self) -> None:
        if self.spool_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.spool_fd)
            self.spool_fd = None

    def finish(self) -> CapturedOutput:
        self.chars += len(self.decoder.decode(b"", final=True))
        if self.spool_fd is not None:
            try:
                os.fsync(self.spool_fd)
            except OSError as exc:
                self._spool_failed(exc)
            self._close_spool()
        return CapturedOutput(bytes(self.head), self.total, self.chars, self.hasher.hexdigest(), self.cap,
                              self.spool, self.spool_error)


class _TailSink:
    def __init__(self, keep: int):
        self.keep = keep
        self.data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * self.keep:
            del self.data[:-self.keep]

    def text(self) -> str:
        return bytes(self.data[-self.keep:]).decode("utf-8", "replace")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# --- running one agent -------------------------------------------------------------------------

@dataclass(slots=True)
class Finished:
    """How an agent program ended."""

    status: int | None                               # None when Reprise ended it
    stdout: CapturedOutput
    stderr: str
    stopped: str | None = None                       # "timeout", "interrupted" or None
    output_held: bool = False                        # it exited, but something kept its output open
    left_running: list[ProcessInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Pipes:
    """Non-blocking reads of stdout and stderr and a write of stdin, multiplexed."""

    def __init__(self, process: subprocess.Popen[bytes], stdin: bytes, out: _OutputSink, err: _TailSink):
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.selector = selectors.DefaultSelector()
        self.inodes = {os.fstat(process.stdout.fileno()).st_ino, os.fstat(process.stderr.fileno()).st_ino}
        self.files: dict[int, IO[bytes]] = {}
        for stream, sink in ((process.stdout, out), (process.stderr, err)):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream.fileno(), selectors.EVENT_READ, sink)
            self.files[stream.fileno()] = stream
        self.pending = memoryview(stdin)
        self.stdin: IO[bytes] = process.stdin
        if self.pending:
            os.set_blocking(self.stdin.fileno(), False)
            self.selector.register(self.stdin.fileno(), selectors.EVENT_WRITE, None)
        else:
            self._close_stdin()

    @property
    def reading(self) -> bool:
        return bool(self.files)

    def pump(self, wait: float) -> None:
        if not self.selector.get_map():
            time.sleep(wait)
            return
        for key, _ in self.selector.select(wait):
            if key.data is None:
                self._write()
                continue
            try:
                chunk = os.read(key.fd, READ_CHUNK)
            except BlockingIOError:
                continue
            if chunk:
                key.data.feed(chunk)
            else:
                self.selector.unregister(key.fd)
                self.files.pop(key.fd).close()

    def _write(self) -> None:
        try:
            written = os.write(self.stdin.fileno(), self.pending[:READ_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # the agent closed its stdin: it does not want the rest
            written = len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self.selector.unregister(self.stdin.fileno())
            self._close_stdin()

    def _close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()

    def close(self) -> None:
        for fd in list(self.selector.get_map()):
            self.selector.unregister(fd)
        for stream in self.files.values():
            stream.close()
        self.files.clear()
        self._close_stdin()


def run_agent(argv: list[str], *, stdin: str, cwd: Path, env: dict[str, str], timeout: float,
              cancel: threading.Event, stdout_cap: int, spool_dir: Path | None = None,
              spool_root: Root | None = None, linger: float = LINGER_GRACE) -> Finished:
    """Run a program to its end, to the deadline, or until `cancel` is set; then make sure it
    and every process it started are gone, except those still holding its output after it
    exited by itself, which are named and left alone. Raises OSError when it cannot start."""
    reap_left_running()
    token = secrets.token_hex(16)
    out, err = _OutputSink(stdout_cap, spool_dir, spool_root), _TailSink(STDERR_KEEP)
    notes = []
    with subreaper() as reaping:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd=cwd, env={**env, TOKEN_VAR: token}, start_new_session=True)
        tree = ProcessTree(process, token, subreaper=reaping)
        pipes = _Pipes(process, stdin.encode("utf-8", "replace"), out, err)
        try:
            stopped, held = _supervise(process, tree, pipes, timeout, cancel, linger)
            left = tree.holders(pipes.inodes) if held else []
            if stopped:
                _end_tree(tree, pipes, interrupted=stopped == "interrupted")
                if not (reaping and tree.visible):
                    notes.append("This system cannot keep an agent's detached processes in view "
                                 "(no child subreaper); Reprise ended the agent's process group only.")
            else:
                _leave_running(tree)
        except BaseException:
            _end_tree(tree, pipes, interrupted=True)
            out.finish().discard()
            raise
        finally:
            pipes.close()
            pipes.selector.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(KILL_WAIT)
    return Finished(None if stopped else process.returncode, out.finish(), err.text(), stopped, held, left, notes)


def _supervise(process: subprocess.Popen[bytes], tree: ProcessTree, pipes: _Pipes, timeout: float,
               cancel: threading.Event, linger: float) -> tuple[str | None, bool]:
    """(why Reprise must stop it, or None; whether its output was still held open after it exited)."""
    deadline = time.monotonic() + timeout
    exited_at = None
    next_scan = 0.0
    while True:
        now = time.monotonic()
        if cancel.is_set():
            return "interrupted", False
        if now >= deadline:
            return "timeout", False
        if now >= next_scan:
            tree.scan()
            next_scan = now + SCAN_INTERVAL
        if exited_at is None and process.poll() is not None:
            exited_at = now
            tree.scan()
        if exited_at is not None:
            if not pipes.reading:
                return None, False
            if now - exited_at >= linger:
                return None, True
        pipes.pump(0.05)


def _end_tree(tree: ProcessTree, pipes: _Pipes, *, interrupted: bool) -> None:
    """Interrupt (or terminate), wait a grace period, escalate, until every member is gone.
    The pipes are drained meanwhile, so nobody blocks on a full pipe instead of exiting."""
    steps: list[tuple[int, float]] = [(signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, KILL_WAIT)]
    if interrupted:
        steps.insert(0, (signal.SIGINT, INTERRUPT_GRACE))
    for sig, grace in steps:
        signalled: set[int] = set()
        until = time.monotonic() + grace
        while True:
            tree.scan()
            signalled |= tree.signal(sig, skip=signalled)  # each member once; latecomers too
            if not tree.alive():
                return
            if time.monotonic() >= until:
                break
            pipes.pump(0.05)


# --- signals to Reprise during a turn -----------------------------------------------------------

class TurnSignals:
    """While a turn runs: SIGINT, SIGTERM and SIGHUP set `cancel` (the turn's agent and its
    processes are then interrupted and ended) and the first one is kept for the exit status.
    Installed from the main thread only; the previous handlers come back on exit."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, cancel: threading.Event):
        self.cancel = cancel
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def handle(self, signum: int, _frame: FrameType | None = None) -> None:
        if self.received is None:
            self.received = signum
        self.cancel.set()

    def __enter__(self) -> TurnSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self.handle)
        return self

    def __exit__(self, *_exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""

    @property
    def exit_status(self) -> int:
        if self.received is None:
            return 0
        return SIGNAL_EXIT_STATUS.get(signal.Signals(self.received), 128 + self.received)
