"""Why a child gave no answer (parent side): its exit status, judged against what it used of its limits.

A signal stops a child for the input's sake only when the child reached a limit: the kernel sends SIGXCPU at
the soft CPU limit (and nothing else sends it in practice: it is the limit, whatever the child's sampled usage
shows; on a loaded machine that once read 0.8 of a 1 s budget) and SIGKILL at the hard one. A SIGKILL below the
limits, or any other kill, came from outside (an operator's `kill -9`, the host's OOM killer, a service manager
stopping the worker) and says nothing about the input, so it is this machine's fault and tried again, never a
refusal of the file.
"""

import os
import resource
import signal
from dataclasses import dataclass
from typing import Any

from .errors import SandboxError
from .limits import Limits
from .protocol import EXIT_OUT_OF_MEMORY

# RLIMIT_AS counts address space, and some of it is never resident (a ready child maps 136 MiB and holds
# 34 MiB; one refused for memory at 512 MiB held 423): a peak this close to the limit counts as reaching it.
MEMORY_AT_LIMIT = 0.8
CPU_SLACK_SECONDS, CPU_SLACK_SHARE = 1.0, 0.05
# Signals no crash raises: a limit or someone else sent them.
KILLS = (signal.SIGXCPU, signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ChildStopped(Exception):
    """The child was stopped by a limit or crashed: the same input will do it again."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Usage:
    """A dead child's own CPU seconds (`cpu_total`, of which `cpu_before` were used before its last command)
    and peak resident bytes, from os.wait4."""

    cpu_total: float
    cpu_before: float
    peak_bytes: int

    @classmethod
    def of(cls, rusage: resource.struct_rusage, cpu_before: float) -> "Usage":
        return cls(rusage.ru_utime + rusage.ru_stime, cpu_before, rusage.ru_maxrss * 1024)

    @property
    def cpu_seconds(self) -> float:
        """Used by the last command, which had `Limits.cpu_seconds` of its own (child.cpu_budget)."""
        return self.cpu_total - self.cpu_before

    def reached(self, limits: Limits) -> bool:
        cpu_limit = self.cpu_before + limits.cpu_seconds
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]  # the child inherits ours
        if hard != resource.RLIM_INFINITY:
            cpu_limit = min(cpu_limit, hard)
        # The kernel enforces RLIMIT_CPU on the scheduler's exact clock, which rusage only samples: a child stopped
        # at 60 s has shown 59.7. A slack of a twentieth of the budget (at most a second) absorbs that, and still
        # tells a kill early in the command from one at its end.
        slack = min(CPU_SLACK_SECONDS, limits.cpu_seconds * CPU_SLACK_SHARE)
        return self.cpu_total >= cpu_limit - slack or self.peak_bytes >= limits.memory_bytes * MEMORY_AT_LIMIT


def cpu_time(pid: int) -> float:
    """CPU seconds a child has used so far (whole clock ticks, so never more than it used); 0 if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime and stime


def reply_of(status: int, usage: Usage, stderr: str, limits: Limits, started: bool = True) -> dict[str, Any]:
    """Why a child gave no answer. Exceptions in our code are answered (child.crashed); an exit
    without an answer is native code quitting on this input, unless the child never got ready; a kill
    is the input's doing only at a limit."""
    if status == EXIT_OUT_OF_MEMORY:
        message = f"Reading the PDF needed more than its {limits.memory_bytes // 2**20} MiB of memory."
        raise ChildStopped("resource_limit", message)
    if status == -signal.SIGXCPU or (status == -signal.SIGKILL and usage.reached(limits)):
        message = f"Reading the PDF used more than its {limits.cpu_seconds} s of CPU time, or too much memory."
        raise ChildStopped("resource_limit", message)
    if -status in KILLS:
        raise SandboxError("child_killed", killed_message(-status, usage, limits), permanent=False)
    if status < 0:
        raise ChildStopped("crashed", f"The PDF reader crashed ({signal.Signals(-status).name}) on this file.")
    if not started:
        raise SandboxError(
            "child_unavailable", f"The PDF process could not start (exit status {status}): {stderr}", permanent=False
        )
    # Not yet permanent: one retry tells a fault of this machine from the input's (runner.py).
    raise SandboxError(
        "child_failed",
        f"The PDF process stopped while reading the file (exit status {status}): {stderr}",
        permanent=False,
    )


def killed_message(signum: int, usage: Usage, limits: Limits) -> str:
    return (
        f"The PDF process was killed from outside ({signal.Signals(signum).name}) after {usage.cpu_seconds:.1f} "
        f"of its {limits.cpu_seconds} CPU seconds, at {usage.peak_bytes // 2**20} of its "
        f"{limits.memory_bytes // 2**20} MiB of memory."
    )
