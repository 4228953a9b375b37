"""Whether a checkpoint is cosigned by a quorum of the witnesses an auditor names: the one rule `verify_evidence.pyz
--witness ... --quorum K` and `python -m audit.verifier.witness check` both apply.

A witness counts once, by its name, whatever number of its keys cosigned; a cosignature line by a key given that
does not verify over the checkpoint makes the note malformed (signed-note), so a cosignature copied from another
checkpoint fails rather than being skipped. The witnesses' keys are the auditor's, obtained from each witness,
never ones the note or the package names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import cosignature, notes


@dataclass(frozen=True)
class Quorum:
    """What a check found: {witness name: the time its cosignature states}, of how many named, against what."""

    found: dict[str, int]
    named: int
    quorum: int

    @property
    def met(self) -> bool:
        return len(self.found) >= self.quorum

    def sentence(self) -> str:
        said = ", ".join(f"{name} at {utc(at)}" for name, at in sorted(self.found.items())) or "none"
        return f"cosigned by {len(self.found)} of {self.named} witnesses (quorum {self.quorum}): {said}"


def witness_keys(vkeys: list[str]) -> list[cosignature.VerifierKey]:
    """The witnesses' verifier keys (name+id+base64, types 0x04 and 0x06); KeyFormatError for a malformed one or a
    log's signed-note key (0x01), which signs checkpoints and cosigns nothing."""
    keys = [cosignature.parse_vkey(vkey) for vkey in vkeys]
    for key in keys:
        if key.kind == cosignature.ED25519_NOTE:
            raise cosignature.KeyFormatError(
                f"the key of {key.name} is a log's signed-note key (type 0x01), not a witness's cosignature key"
            )
    return keys


def check_quorum(quorum: int, keys: list[cosignature.VerifierKey]) -> None:
    """ValueError unless 1 <= quorum <= the number of distinct witnesses named: a quorum no one can meet is a typo."""
    named = len({key.name for key in keys})
    if not 1 <= quorum <= named:
        raise ValueError(f"a quorum is 1 to the number of witnesses given ({named}), not {quorum}")


def cosigned(text: str, lines: list[str], keys: list[cosignature.VerifierKey], quorum: int) -> Quorum:
    """Which of the witnesses of `keys` cosigned the checkpoint note `text` among its signature `lines`; NoteError
    when a line by one of their keys does not verify."""
    return Quorum(cosignature.cosigners(text, lines, keys), len({key.name for key in keys}), quorum)


def claimed(lines: list[str], log: str) -> list[str]:
    """ "name (key id) at time" of each signature line that is not the log's (named `log`): the cosignatures a note
    carries, unchecked, for a report made without the witnesses' keys."""
    found = []
    for line in lines:
        name, key_id = cosignature.line_key(line)
        if name != log:
            try:
                found.append(f"{name} (key {key_id.hex()}) at {utc(cosignature.timestamp_of(line))}")
            except (cosignature.KeyFormatError, OverflowError, ValueError, OSError):
                found.append(f"{name} (key {key_id.hex()}), no time")
    return found


def open_cosigned(note: str, checkpoint_text: str) -> list[str]:
    """The signature lines of `note`, which must be the checkpoint `checkpoint_text` (any signatures); NoteError."""
    text, lines = notes.split(note)
    if text != checkpoint_text:
        raise notes.NoteError("the cosigned note is not the package's checkpoint (its text differs)")
    return lines


def utc(timestamp: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(timestamp))
