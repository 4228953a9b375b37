"""Runs the child process under CPU, memory and wall-clock limits (parent side).

A subprocess rather than multiprocessing: django-q2 workers are daemonic processes, which
may not fork multiprocessing children, and a fresh interpreter shares nothing with them.
"""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from .errors import SandboxError
from .limits import Limits
from .protocol import EXIT_OUT_OF_MEMORY, MODULE, limits_to_json

# The directory holding the `extraction` package: `-m` must import from here, wherever
# the caller's working directory is.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
STDERR_TAIL = 4000


class ChildStopped(Exception):
    """The child was stopped by a limit or crashed: the same input will do it again."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def run_child(args: list[str], limits: Limits) -> dict:
    """Run one child command and return its JSON reply."""
    command = [sys.executable, "-m", MODULE, *args, limits_to_json(limits)]
    with tempfile.TemporaryFile() as stderr:
        try:
            done = subprocess.run(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                cwd=PROJECT_ROOT, env=child_env(), timeout=limits.wall_seconds,
                preexec_fn=partial(apply_rlimits, rlimits(limits)),
            )
        except subprocess.TimeoutExpired:
            # subprocess.run has already killed and reaped the child.
            message = f"Reading the PDF took longer than its {limits.wall_seconds} s limit."
            raise ChildStopped("timeout", message) from None
        except (OSError, subprocess.SubprocessError) as exc:
            message = f"The PDF process could not start ({exc})."
            raise SandboxError("child_failed", message, permanent=False) from None
        return reply_of(done, last_line(stderr), limits)


def reply_of(done: subprocess.CompletedProcess, stderr: str, limits: Limits) -> dict:
    status = done.returncode
    if status == EXIT_OUT_OF_MEMORY:
        message = f"Reading the PDF needed more than its {limits.memory_bytes // 2**20} MiB of memory."
        raise ChildStopped("resource_limit", message)
    if status in (-signal.SIGXCPU, -signal.SIGKILL):
        # A SIGKILL we did not send comes from the hard CPU limit or the kernel's OOM killer.
        message = f"Reading the PDF used more than its {limits.cpu_seconds} s of CPU time, or too much memory."
        raise ChildStopped("resource_limit", message)
    if status < 0:
        raise ChildStopped("crashed", f"The PDF reader crashed ({signal.Signals(-status).name}) on this file.")
    if status == 0:
        try:
            return json.loads(done.stdout)
        except ValueError:
            pass
    raise SandboxError("child_failed", f"The PDF process failed (exit status {status}): {stderr}", permanent=False)


def rlimits(limits: Limits) -> list[tuple[int, int, int]]:
    # The hard CPU limit is a second later, so the kernel's SIGXCPU (which names the
    # cause) comes before its SIGKILL. No core files: SIGXCPU would otherwise dump one.
    wanted = [
        (resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1),
        (resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
        (resource.RLIMIT_CORE, 0, 0),
    ]
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
    env = {"PYTHONPATH": os.pathsep.join(path), "PATH": os.environ.get("PATH", os.defpath),
           "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def last_line(stderr) -> str:
    stderr.seek(0, os.SEEK_END)
    stderr.seek(max(0, stderr.tell() - STDERR_TAIL))
    lines = stderr.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no output"
