"""The two ways a PDF job ends without a result."""

import re


class Refusal(Exception):
    """The input is refused; `code` is stable snake_case, `message` a sentence for a person."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SandboxError(Exception):
    """The child process failed.

    `permanent` is True when the same input would fail the same way again (it cannot be
    opened, or it exhausted its CPU, memory or wall-clock budget), so a retry is pointless;
    False when the failure lies with this machine (the child could not start, crashed in
    our own code, was killed from outside below its limits, or the disk was full).
    """

    def __init__(self, code: str, message: str, permanent: bool):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.permanent = permanent


class WorkerStopping(SandboxError):
    """The worker is stopping (SIGTERM): its child was stopped mid-command, or none was started. Nothing is
    known about the input; the caller hands its work back for another worker, untried."""

    code = "worker_stopping"

    def __init__(self) -> None:
        super().__init__(self.code, "The worker is stopping; the file was not read to the end.", permanent=False)


def reason(exc: BaseException) -> str:
    """A short cause for a message; qpdf prefixes its own with the file path, which is dropped, and an object's
    memory address (Pillow's "cannot identify image file <_io.BytesIO object at 0x7f...>") too: a job's warnings
    must read the same each time the same file is extracted."""
    text = str(exc).rsplit(": ", 1)[-1].strip().rstrip(".") or type(exc).__name__
    return MEMORY_ADDRESS.sub("", text)[:200]


MEMORY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def raise_if_out_of_memory(exc: BaseException) -> None:
    """qpdf reports a failed allocation as a PdfError carrying std::bad_alloc."""
    if isinstance(exc, MemoryError) or "bad_alloc" in str(exc):
        raise MemoryError(str(exc)) from exc
