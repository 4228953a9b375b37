"""What a witness keeps of each log: the latest checkpoint it cosigned, one file per origin, never moved backwards.

A state file is `<sha256 of the origin, hex>.json` under the state directory. Checking a request against it and
writing the new head happen under an exclusive `fcntl.flock` on the origin's lock file, so two requests (threads,
or two witness processes on one directory) are judged one after the other: the second sees the first one's head.
A head is written to a temporary file, fsynced, renamed over the old one and the directory fsynced, so a crash
leaves the old head or the new one, never half of either (tlog-witness: "MUST persist ... before responding").
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Head:
    """The latest checkpoint a witness cosigned for one log: its size and root, and the note it serves."""

    origin: str
    size: int
    root: bytes
    note: str  # the checkpoint with the log's verified signatures and this witness's cosignatures


def origin_hash(origin: str) -> str:
    """The lowercase hex SHA-256 of the origin: the state file's name and tlog-witness's monitoring path."""
    return hashlib.sha256(origin.encode()).hexdigest()


class States:
    """The state directory of a witness."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def head(self, origin: str) -> Head | None:
        """The kept head of `origin` (None before the first cosignature), read without the lock: a rename is atomic,
        so this is the old head or the new one."""
        return self._read(self._path(origin))

    @contextlib.contextmanager
    def locked(self, origin: str) -> Iterator[Head | None]:
        """The kept head of `origin`, with the origin's lock held until the block ends: `keep` inside it."""
        with open(self._path(origin).with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield self.head(origin)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def keep(self, head: Head) -> None:
        """Write `head` as the origin's state, atomically and durably (call it inside `locked`)."""
        path = self._path(head.origin)
        document = {"origin": head.origin, "size": head.size, "root": head.root.hex(), "note": head.note}
        partial = path.with_suffix(f".{os.getpid()}.partial")
        with open(partial, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself survives a power cut
        finally:
            os.close(directory)

    def _path(self, origin: str) -> Path:
        return self.directory / f"{origin_hash(origin)}.json"

    @staticmethod
    def _read(path: Path) -> Head | None:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return Head(document["origin"], int(document["size"]), bytes.fromhex(document["root"]), document["note"])
