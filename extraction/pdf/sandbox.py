"""Runs child commands under CPU, memory and wall-clock limits (parent side).

A subprocess rather than multiprocessing: django-q2 workers are daemonic processes, which
may not fork multiprocessing children, and a fresh interpreter shares nothing with them.

Starting an interpreter and importing pikepdf costs about 0.1 s, more than reading a typical
PDF, so a child is kept warm and given one command after another (`Limits.child_reuse` of
them, then it is replaced). A child that is stopped by a limit or crashes is never reused:
the next command gets a fresh one. Each command gets its own CPU budget (the child raises its
soft RLIMIT_CPU by `cpu_seconds` before each) and wall clock; the memory limit holds for the
child's whole life. `child_reuse=1` gives every PDF a fresh process.
"""

import atexit
import json
import os
import resource
import select
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import IO, Any, cast

from .errors import SandboxError, WorkerStopping
from .exits import ChildStopped, Usage, cpu_time, reply_of
from .limits import Limits
from .protocol import MODULE, READY, limits_to_json

# The directory holding the `extraction` package: `-m` must import from here, wherever
# the caller's working directory is.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
STDERR_TAIL = 4000
STOP_GRACE_SECONDS = 2
# glibc grows and trims the heap's top by this much at a time (default 128 KiB). qpdf allocates and frees
# buffers of a few hundred KiB per image; at the default each one moved the heap's top, and the page
# faults that followed made the 240-page bundle 1.5x slower. Peak memory is unchanged (RLIMIT_AS holds).
MALLOC_TOP_PAD = 16 * 1024 * 1024


def run_child(args: list[str], limits: Limits) -> dict[str, Any]:
    """Run one child command and return its JSON reply; WorkerStopping once `stop_children` was called."""
    if _pool.stopping:
        raise WorkerStopping()
    child = _pool.take(limits)
    _pool.busy.add(child)
    try:
        reply = child.ask(args, limits)
    except BaseException as exc:
        child.stop()  # stopped, crashed, or interrupted mid-command: never reused
        if _pool.stopping:
            raise WorkerStopping() from exc  # killed by stop_children: says nothing of the input
        raise
    finally:
        _pool.busy.discard(child)
    _pool.give_back(child, limits)
    return reply


class Child:
    """One warm child process, answering one JSON line per command line it is sent."""

    def __init__(self, limits: Limits):
        self.memory_bytes = limits.memory_bytes
        self.commands = 0
        self.stderr = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", MODULE, "serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                cwd=PROJECT_ROOT,
                env=child_env(),
                preexec_fn=partial(apply_rlimits, rlimits(limits)),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self.stderr.close()
            raise SandboxError(
                "child_unavailable", f"The PDF process could not start ({exc}).", permanent=False
            ) from None
        self.pid = self.process.pid
        # Popen's pipes (stdin=PIPE, stdout=PIPE): never None.
        self.stdin, self.stdout = cast(IO[bytes], self.process.stdin), cast(IO[bytes], self.process.stdout)
        self.ready = False
        self.cpu_before = 0.0  # its CPU seconds when its last command began
        # One selector for the child's life: making one per reply cost three system calls a command.
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)

    def wait_ready(self, timeout: float) -> bytes | None:
        """READY once the child has imported everything (at once if it said so before); b"" when
        it exited first, None when `timeout` ran out. Nothing else is written before it."""
        if not self.ready:
            line = self._read_line(timeout)
            self.ready = line == READY
            return line
        return READY

    def ask(self, args: list[str], limits: Limits) -> dict[str, Any]:
        self.commands += 1
        stderr_from = self.stderr.seek(0, os.SEEK_END)
        if started := (line := self.wait_ready(limits.wall_seconds)) == READY:
            request = json.dumps({"args": args, "limits": limits_to_json(limits)}) + "\n"
            self.cpu_before = cpu_time(self.pid)
            try:
                self.stdin.write(request.encode())
                self.stdin.flush()
            except OSError:
                pass  # it died while idle: its exit status below says how
            line = self._read_line(limits.wall_seconds)
        if line is None:
            self.process.kill()
            self.process.wait()
            raise ChildStopped("timeout", f"Reading the PDF took longer than its {limits.wall_seconds} s limit.")
        if line:
            try:
                reply: dict[str, Any] = json.loads(line)
                return reply
            except ValueError:
                pass
        return reply_of(*self._exit_status(), self._stderr_since(stderr_from), limits, started)

    def _read_line(self, timeout: float) -> bytes | None:
        """The reply line; b"" when the child exited first, None when the wall clock ran out."""
        deadline = time.monotonic() + timeout
        out = self.stdout
        received = b""
        while not received.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return None
            chunk = os.read(out.fileno(), 1 << 16)
            if not chunk:
                return b""
            received += chunk
        return received

    def _exit_status(self) -> tuple[int, Usage]:
        """Its exit status and what it used: os.wait4 gives this child's own figures, Popen.wait none."""
        pidfd = os.pidfd_open(self.pid)
        try:
            exited = select.poll()
            exited.register(pidfd, select.POLLIN)
            if not exited.poll(STOP_GRACE_SECONDS * 1000):  # it closed its answer but lives on: no more chances
                self.process.kill()
        finally:
            os.close(pidfd)
        _, status, rusage = os.wait4(self.pid, 0)
        self.process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it
        return self.process.returncode, Usage.of(rusage, self.cpu_before)

    def _stderr_since(self, offset: int) -> str:
        end = self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(offset, end - STDERR_TAIL))
        lines = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def usable(self, limits: Limits) -> bool:
        return (
            self.process.poll() is None
            and self.memory_bytes == limits.memory_bytes
            and self.commands < limits.child_reuse
        )

    def stop(self) -> None:
        """Close its input (a warm child exits on end of input), and kill it if it does not."""
        if self.process.poll() is None:
            try:
                self.stdin.close()
                self.process.wait(timeout=STOP_GRACE_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.selector.close()
        self.stdout.close()
        if not self.stdin.closed:
            self.stdin.close()
        self.stderr.close()

    def forget(self) -> None:
        """In a forked copy of the parent: drop the inherited pipes without touching the child,
        which belongs to the parent (a kept copy of its stdin would keep it alive).

        Each copy is closed through its own object, so that the object knows it is closed: closing only
        the number would let the object close it once more when it is freed, by then perhaps a file
        this process opened since. An idle child's stdin holds nothing unwritten, and closing the
        selector's copy leaves the parent's registrations alone."""
        for stream in (self.selector, self.stdin, self.stdout, self.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


class Pool:
    """Idle warm children of this process; each thread takes one for a command and gives it back."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[Child] = []
        self.busy: set[Child] = set()  # children mid-command (changed without the lock: see stop_children)
        self.stopping = False

    def take(self, limits: Limits) -> Child:
        with self.lock:
            worn = [child for child in self.idle if not child.usable(limits)]
            self.idle = [child for child in self.idle if child not in worn]
            child = self.idle.pop() if self.idle else None
        for old in worn:
            old.stop()
        return child or Child(limits)

    def give_back(self, child: Child, limits: Limits) -> None:
        if not child.usable(limits):
            child.stop()
            return
        with self.lock:
            self.idle.append(child)

    def stop_all(self) -> None:
        with self.lock:
            children, self.idle = self.idle, []
        for child in children:
            child.stop()

    def forget_all(self) -> None:
        for child in self.idle:
            child.forget()
        self.idle = []
        self.busy = set()
        self.lock = threading.Lock()


_pool = Pool()
atexit.register(_pool.stop_all)
os.register_at_fork(after_in_child=_pool.forget_all)


def warm_up(limits: Limits, count: int = 1) -> None:
    """Start `count` children now and wait until they are ready (a worker at start-up, a benchmark
    before timing), so that the first PDFs do not wait for an interpreter to start. A child that
    does not get ready is stopped: the first command starts another and says what went wrong."""
    for child in [Child(limits) for _ in range(count)]:
        if child.wait_ready(limits.wall_seconds) == READY:
            _pool.give_back(child, limits)
        else:
            child.stop()


def stop_idle_children() -> None:
    """Stop this process's warm children (they start again on the next command)."""
    _pool.stop_all()


def stop_children() -> None:
    """The worker is stopping: kill the children mid-command (their callers raise WorkerStopping) and start no
    more. Called from a signal handler, so it takes no lock (the handler may interrupt a holder of it): killing a
    child that just finished its command only loses a warm process."""
    _pool.stopping = True
    for child in list(_pool.busy):
        try:
            os.kill(child.pid, signal.SIGKILL)  # not Popen.kill: it may reap, and Child._exit_status reaps
        except ProcessLookupError:
            pass


def idle_pids() -> list[int]:
    """The process ids of this process's idle warm children, for tests and diagnostics."""
    with _pool.lock:
        return [child.pid for child in _pool.idle]


def rlimits(limits: Limits) -> list[tuple[int, int, int]]:
    # The CPU limit is set by the child before each command (see the module docstring).
    # No core files: SIGXCPU would otherwise dump one.
    wanted = [(resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes), (resource.RLIMIT_CORE, 0, 0)]
    return [(kind, *_within_hard_limit(kind, soft, hard)) for kind, soft, hard in wanted]


def _within_hard_limit(kind: int, soft: int, hard: int) -> tuple[int, int]:
    ceiling = resource.getrlimit(kind)[1]
    if ceiling == resource.RLIM_INFINITY:
        return soft, hard
    return min(soft, ceiling), min(hard, ceiling)


def apply_rlimits(values: list[tuple[int, int, int]]) -> None:
    """Runs between fork and exec, so it only makes system calls on precomputed values."""
    for kind, soft, hard in values:
        resource.setrlimit(kind, (soft, hard))


def child_env() -> dict[str, str]:
    """Only what the interpreter needs: the child parses hostile input and has no use for
    the worker's credentials."""
    path = [str(PROJECT_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {
        "PYTHONPATH": os.pathsep.join(path),
        "PATH": os.environ.get("PATH", os.defpath),
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MALLOC_TOP_PAD_": str(MALLOC_TOP_PAD),
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env
