"""The limited child process, kept warm by the parent (sandbox.py):

    python -m extraction.pdf.child serve

Runs under the memory limit the parent set. Once it has imported everything it writes one line,
protocol.READY (the parent waits for it before it sends a command). Then it reads one command a
line on stdin, {"args": [command, ...], "limits": LIMITS_JSON}, where the command is one of

    inspect PATH
    attachment PATH OBJ OUT_DIR             (OBJ like "12 0": an attached file, as inspect listed it)
    extract PATH OUT_DIR
    render PATH OUT_DIR WIDTHS FIRST LAST   (WIDTHS like 200,1000)
    evidence PATH                           (each page's printed number, ink, scan: page_evidence.py)

and answers each with one JSON line on stdout: {"ok": true, "result": {...}} or
{"ok": false, "code", "message", "permanent"}; it exits at the end of its input. Every command
first gets its own CPU budget: the soft RLIMIT_CPU is raised to the time used so far plus cpu_seconds.
"""

import gc
import json
import math
import os
import resource
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any, TextIO

from .attachments import attachment
from .errors import Refusal, raise_if_out_of_memory, reason
from .extract import extract
from .page_evidence import PageEvidence, read_evidence
from .protocol import EXIT_OUT_OF_MEMORY, READY, limits_from_json, to_json
from .render import render
from .validate import inspect

if TYPE_CHECKING:
    from .render import Rendering
    from .results import Extraction, Inspection

ORPHAN_CHECK_SECONDS = 0.5
EXIT_ORPHANED = 87
# An exception no check foresaw, by command: the same input fails the same way again, so it is permanent.
CRASHED = {
    "inspect": (
        "validator_crashed",
        "Pagetrail's PDF validator failed on this file ({}), so the file could not be checked and was not accepted.",
    ),
    "extract": (
        "extractor_crashed",
        "Pagetrail's image extractor failed on this file ({}); trying again would fail the same way.",
    ),
    "attachment": (
        "validator_crashed",
        "Pagetrail's PDF validator failed to read an attached file ({}), so it was not submitted.",
    ),
    "evidence": (
        "hints_crashed",
        "Pagetrail's page reader failed on this file ({}); trying again would fail the same way.",
    ),
    "render": (
        "renderer_crashed",
        "Pagetrail's page renderer failed on this file ({}); trying again would fail the same way.",
    ),
}


def main(argv: list[str]) -> int:
    if argv != ["serve"]:
        raise SystemExit(f"usage: python -m extraction.pdf.child serve; got {argv!r}")
    serve(claim_stdout())
    return 0


def serve(answer: TextIO) -> None:
    threading.Thread(target=exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    # What the imports made lives as long as the child: the collector need not walk it after every command.
    gc.freeze()
    answer.write(READY.decode())
    answer.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        cpu_budget(limits_from_json(request["limits"]).cpu_seconds)
        answer.write(to_json(answer_or_exit([*request["args"], request["limits"]])) + "\n")
        answer.flush()


def exit_when_orphaned(parent: int) -> None:
    """A worker killed in the middle of a command cannot stop its child: the child notices
    it was handed to another parent and stops itself, rather than working on for nobody."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_SECONDS)
    os._exit(EXIT_ORPHANED)


def answer_or_exit(argv: list[str]) -> dict[str, Any]:
    try:
        return answer_for(argv)
    except MemoryError:
        # Nothing more is attempted: even building the JSON could fail now.
        os._exit(EXIT_OUT_OF_MEMORY)


def cpu_budget(cpu_seconds: int) -> None:
    """Allow cpu_seconds more CPU time from now on: past it the kernel sends SIGXCPU, which kills."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + cpu_seconds)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def answer_for(argv: list[str]) -> dict[str, Any]:
    try:
        return {"ok": True, "result": run(argv)}
    except Refusal as exc:
        return {"ok": False, "code": exc.code, "message": exc.message, "permanent": True}
    except OSError as exc:
        # Reading the input or writing outputs failed: this machine's trouble, not the input's.
        message = f"The PDF process could not read or write a file ({exc.strerror or exc})."
        return {"ok": False, "code": "io_error", "message": message, "permanent": False}
    except Exception as exc:
        raise_if_out_of_memory(exc)
        return crashed(argv[0], exc)


def crashed(command: str, exc: Exception) -> dict[str, Any]:
    traceback.print_exc()  # into the child's stderr, for whoever debugs it
    code, message = CRASHED.get(command, ("child_command_failed", "The PDF process could not run a command ({})."))
    cause = f"{type(exc).__name__}: {reason(exc)}"
    return {"ok": False, "code": code, "message": message.format(cause), "permanent": True}


def run(argv: list[str]) -> "Inspection | Extraction | Rendering | list[PageEvidence] | dict[str, Any]":
    command, *args = argv
    if command == "inspect" and len(args) == 2:
        return inspect(args[0], limits_from_json(args[1]))
    if command == "attachment" and len(args) == 4:
        return attachment(args[0], args[1], args[2], limits_from_json(args[3]))
    if command == "extract" and len(args) == 3:
        return extract(args[0], args[1], limits_from_json(args[2]))
    if command == "render" and len(args) == 6:
        path, out_dir, widths, first, last, limits = args
        return render(
            path, out_dir, [int(w) for w in widths.split(",")], int(first), int(last), limits_from_json(limits)
        )
    if command == "evidence" and len(args) == 2:
        return read_evidence(args[0], limits_from_json(args[1]))
    raise ValueError(f"unknown child command {argv!r}")


def claim_stdout() -> TextIO:
    """Keep fd 1 for the answer; anything else writing there (qpdf, Pillow, print) goes to stderr."""
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answer


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
