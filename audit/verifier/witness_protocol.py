"""C2SP tlog-witness `add-checkpoint` (c2sp.org/tlog-witness): the request, the checks in the spec's order, the answer.

A request is "old N\\n", up to 63 base64 consistency proof lines, a blank line, then the checkpoint note. The witness
cosigns only a checkpoint signed by a key it trusts for the origin that extends the latest one it cosigned; every
refusal is a `Refusal` with the spec's HTTP status, a stable code and a sentence (a 409's body is the witness's
size alone, as the spec says). The log's side (`request_body`, `size_of_conflict`) is here too, so both ends read
one format.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import cosignature, merkle, notes
from .witness_state import Head, States

MAX_BODY = 1 << 20  # a note of 16 ML-DSA signatures is about 55 KB
MAX_PROOF = 63
MAX_SIZE = 2**64 - 1  # the u64 of an ML-DSA cosignature's `end`
OLD = re.compile(r"old (0|[1-9][0-9]{0,19})")
SIZE_TYPE = "text/x.tlog.size"


class Refusal(Exception):
    """The witness does not cosign: `status` (HTTP), `code` (stable) and a sentence a person understands."""

    def __init__(self, status: int, code: str, message: str, body: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.body = f"{code}: {message}\n" if body is None else body
        self.content_type = SIZE_TYPE if status == 409 else "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Submission:
    old: int
    proof: list[bytes]
    checkpoint: notes.Checkpoint
    text: str  # the note text, signatures excluded
    lines: list[str]  # its signature lines


def request_body(old: int, proof: list[bytes], note: str) -> bytes:
    """An add-checkpoint request: the size the witness holds, the proof from it, the checkpoint note."""
    lines = [f"old {old}"] + [base64.b64encode(h).decode() for h in proof]
    return ("\n".join(lines) + "\n\n" + note).encode()


def size_of_conflict(body: bytes) -> int:
    """The witness's size in a 409 answer ("N\\n"); ValueError when it is not one."""
    text = body.decode("ascii", "replace")
    if not re.fullmatch(r"(0|[1-9][0-9]{0,19})\n", text):
        raise ValueError("a 409 from a witness carries its tree size in decimal and a newline")
    return int(text)


def parse_request(body: bytes) -> Submission:
    """The request's parts; Refusal 400 `malformed_request` when it is not one."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed("the request is not UTF-8") from None
    head, blank, note = text.partition("\n\n")
    lines = head.split("\n")
    if not blank or not OLD.fullmatch(lines[0]):
        raise _malformed("the request does not start with an 'old <size>' line and end its proof with a blank line")
    if len(lines) - 1 > MAX_PROOF:
        raise _malformed(f"a consistency proof has at most {MAX_PROOF} lines")
    proof = [_hash(line) for line in lines[1:]]
    try:
        checkpoint, note_text, signatures = notes.read_checkpoint(note)
    except notes.NoteError as exc:
        raise _malformed(f"the checkpoint {exc}") from None
    if checkpoint.size > MAX_SIZE or int(lines[0][4:]) > MAX_SIZE:
        raise _malformed("a tree size is at most 2**64-1")
    return Submission(int(lines[0][4:]), proof, checkpoint, note_text, signatures)


@dataclass
class Witness:
    """A witness: the logs it follows (origin -> the keys it trusts for it), its keys, its state directory."""

    logs: dict[str, list[cosignature.VerifierKey]]
    cosigners: list[cosignature.Cosigner]
    states: States
    clock: Callable[[], float] = field(default=time.time)

    def add_checkpoint(self, body: bytes) -> str:
        """The cosignature lines (each ending in a newline) for the checkpoint of this request; Refusal otherwise."""
        request = parse_request(body)
        checkpoint = request.checkpoint
        log_lines = self._log_signatures(request)
        if request.old > checkpoint.size:
            raise _malformed(f"the old size {request.old} is larger than the checkpoint's size {checkpoint.size}")
        with self.states.locked(checkpoint.origin) as head:
            _check_extends(request, head)
            lines = self._cosign(request.text)
            note = request.text + "\n" + "".join(line + "\n" for line in log_lines + lines)
            self.states.keep(Head(checkpoint.origin, checkpoint.size, checkpoint.root, note))
        return "".join(line + "\n" for line in lines)

    def _cosign(self, text: str) -> list[str]:
        timestamp = int(self.clock())
        try:
            return [cosigner.cosign(text, timestamp) for cosigner in self.cosigners]
        except ValueError as exc:  # an origin too long for an ML-DSA message, a clock before 1970
            raise Refusal(400, "cannot_cosign", f"This witness cannot cosign the checkpoint: {exc}.") from None

    def _log_signatures(self, request: Submission) -> list[str]:
        """The log's signature lines that verify with a key trusted for the origin: 404 for an unknown origin, 403
        when none does or one of them fails."""
        keys = self.logs.get(request.checkpoint.origin)
        if keys is None:
            raise Refusal(404, "unknown_log", f"This witness does not follow the log {request.checkpoint.origin!r}.")
        try:
            verified = cosignature.verified_by(request.text, request.lines, keys)
        except notes.NoteError as exc:
            raise Refusal(403, "bad_log_signature", f"The checkpoint is refused: {exc}.") from None
        if not verified:
            raise Refusal(403, "unsigned_checkpoint", "No signature by a key this witness trusts for the log is on it.")
        return [line for line in request.lines if any(key.matches(line) for key in verified)]


def _check_extends(request: Submission, head: Head | None) -> None:
    """409 unless the old size is the one kept; 422 unless the checkpoint extends the kept head (or is it)."""
    kept = head.size if head is not None else 0
    new = request.checkpoint
    if request.old != kept:
        raise Refusal(409, "stale_old_size", f"This witness holds size {kept}.", body=f"{kept}\n")
    if new.size == 0 and new.root != merkle.EMPTY_ROOT:
        raise Refusal(422, "bad_empty_root", "A checkpoint of size 0 must have the empty tree's root hash.")
    if request.old == 0:
        if request.proof:
            raise Refusal(422, "bad_proof", "From size 0 the consistency proof must be empty.")
        return
    assert head is not None  # old == kept > 0
    if new.size == head.size and new.root != head.root:
        raise Refusal(
            422,
            "conflicting_root",
            f"This witness cosigned another root hash at size {head.size}: the log's history was rewritten.",
        )
    if not merkle.verify_consistency(head.size, new.size, head.root, new.root, request.proof):
        raise Refusal(
            422,
            "bad_proof",
            f"The consistency proof does not show the tree of {new.size} extends the one of {head.size} this "
            "witness cosigned.",
        )


def _hash(line: str) -> bytes:
    try:
        found = base64.b64decode(line, validate=True)
    except (binascii.Error, ValueError):
        found = b""
    if len(found) != merkle.HASH_SIZE:
        raise _malformed("a consistency proof line is not the base64 of a 32-byte hash")
    return found


def _malformed(why: str) -> Refusal:
    return Refusal(400, "malformed_request", f"The add-checkpoint request is malformed: {why}.")
