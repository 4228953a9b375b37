"""A witness of the transparency log, run by a party outside the operator's control (`manage.py witness`).

It keeps the last checkpoint it accepted in a state file. Each run fetches the portal's latest checkpoint,
checks its signature with the public keys it was given (never keys the portal hands it), and accepts it only
if it extends the one kept: same size and same root, or larger with a consistency proof that verifies. A
smaller size is a rollback, anything else a fork: both refuse, and the state file keeps the old checkpoint.
Comparing checkpoints with other witnesses (their state files, or an evidence package's checkpoint) catches
a portal that shows each of them a different history.
"""

import base64
import json
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import requests

from audit.verifier import merkle, notes

TIMEOUT = (5, 30)  # connect, read (seconds)


class WitnessAlarm(Exception):
    """The log is not append-only as seen from here. `kind`: fork or rollback."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind.upper()}: {message}")
        self.kind = kind


@dataclass
class Witness:
    portal: str  # the portal's base URL, e.g. https://pagetrail.example
    publics: list[bytes]
    origin: str | None = None
    session: requests.Session | None = None

    def get(self, path: str, **params) -> requests.Response:
        self.session = self.session or requests.Session()
        response = self.session.get(f"{self.portal.rstrip('/')}/api/v1{path}", params=params, timeout=TIMEOUT)
        response.raise_for_status()
        return response

    def latest(self) -> notes.Checkpoint:
        return notes.open_checkpoint(self.get("/log/checkpoint").text, self.publics, self.origin)

    def consistency(self, first: int, second: int) -> list[bytes]:
        answer = self.get("/log/consistency", first=first, second=second).json()
        return [base64.b64decode(h, validate=True) for h in answer["proof"]]

    def check_extends(self, old: notes.Checkpoint, new: notes.Checkpoint, whose: str = "kept") -> None:
        """`new` must be `old` or grow from it; WitnessAlarm otherwise."""
        if new.origin != old.origin:
            raise WitnessAlarm(
                "fork", f"the portal now signs log {new.origin!r}, the {whose} checkpoint {old.origin!r}"
            )
        if new.size < old.size:
            raise WitnessAlarm(
                "rollback", f"the portal's log has {new.size} records; the {whose} checkpoint {old.size}"
            )
        if new.size == old.size:
            if new.root != old.root:
                raise WitnessAlarm("fork", f"two different logs of {new.size} records are signed (the {whose} one)")
            return
        if not merkle.verify_consistency(old.size, new.size, old.root, new.root, self.consistency(old.size, new.size)):
            raise WitnessAlarm(
                "fork",
                f"the log of {new.size} records does not extend the {whose} one of {old.size}: history rewritten",
            )

    def check_agree(self, served: notes.Checkpoint, other: notes.Checkpoint, whose: str) -> None:
        """The head served now must extend another witness's (or package's), read before it was fetched.

        A larger other head is one the portal signed and no longer serves: its log shrank, or it showed that
        witness another history; the portal gives no proof beyond its own head that could tell the two apart.
        """
        if other.size > served.size:
            raise WitnessAlarm(
                "rollback",
                f"the portal's log has {served.size} records, but {whose} holds a checkpoint of {other.size} it "
                "signed: records were removed since, or that witness was shown another log",
            )
        self.check_extends(other, served, whose)


def observe(witness: Witness, state: Path, compare: Sequence[str] = (), at: datetime | None = None) -> dict:
    """One run: fetch, check against the kept checkpoint and the others, keep the new one. Returns the state."""
    kept = read_note(state, witness) if state.exists() else None
    # Other heads are read before the portal's is fetched: one larger than it was then served and is gone.
    others = [(read_note(Path(other), witness), str(other)) for other in compare]
    new = witness.latest()
    if kept is not None:
        witness.check_extends(kept, new)
    for other, whose in others:
        witness.check_agree(new, other, whose)
    document = {
        "origin": new.origin,
        "tree_size": new.size,
        "root_hash": base64.b64encode(new.root).decode(),
        "note": new.note,
        "seen_at": (at or datetime.now(UTC)).isoformat(),
        "first_seen": kept is None,
    }
    partial = state.with_name(state.name + ".partial")  # never a half-written state file
    partial.write_text(json.dumps(document, indent=1, sort_keys=True))
    os.replace(partial, state)
    return document


def read_note(path: Path, witness: Witness) -> notes.Checkpoint:
    """A checkpoint from a witness state file, an evidence package, or a bare note, its signature checked."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            note = json.loads(zf.read("index.json"))["log"]["checkpoint"]
    else:
        text = path.read_text(encoding="utf-8")
        note = json.loads(text)["note"] if text.lstrip().startswith("{") else text
    return notes.open_checkpoint(note, witness.publics, witness.origin)


def public_keys(document: dict) -> list[bytes]:
    """The Ed25519 keys of a published key list (/signing-keys.json), each checked against its key id. Its ML-DSA-44
    keys are left out: the checkpoint's Ed25519 line is the one every witness checks."""
    from audit.ledger.signing import MLDSA44, key_id_of

    found = []
    for entry in document.get("keys", []):
        if str(entry.get("key_id", "")).startswith(MLDSA44):
            continue
        public = base64.b64decode(entry.get("public_key", ""), validate=True)
        if len(public) != 32 or key_id_of(public) != entry.get("key_id"):
            raise ValueError(f"key {entry.get('key_id')!r} is not the public key its id names")
        found.append(public)
    return found
