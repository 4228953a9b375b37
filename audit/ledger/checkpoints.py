"""Signed checkpoints of the transparency log (C2SP tlog-checkpoint notes), kept in the output store.

Written on the checkpoint schedule and on demand (an evidence export whose manifests no checkpoint covers
yet, the `log_checkpoint` command). Each is signed with the evidence key, and with its ML-DSA-44 twin on a second
line; a witness outside the operator's control keeps the ones it saw and checks that every later one extends them
(docs/transparency-log.md).
"""

import logging
import math

import requests
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.ledger import signing, store_witness, timestamps, tlog, witnessing
from audit.models import LogCheckpoint
from audit.retention import worm
from audit.verifier import notes
from core import stores

ON_DEMAND_SECONDS = 60  # a client asking for a proof may have a checkpoint signed, at most one this often
PREFIX = "tlog"
NOTE, TOKEN = ".note", ".tsr"
log = logging.getLogger(__name__)


def storage_name(size: int) -> str:
    return f"{PREFIX}/checkpoint-{size:012d}{NOTE}"


def write_log_checkpoint(at=None) -> LogCheckpoint | None:
    """Sign the log's head now; None when it has no leaf or a checkpoint of that size exists."""
    at = at or timezone.now()
    size = tlog.leaf_count()
    if not size or LogCheckpoint.objects.filter(tree_size=size).exists():
        return None
    return _signed(size, tlog.root(size), at)


class CheckpointDiverged(store_witness.LedgerRollback):
    """The output store holds a checkpoint of this size with another root: the store outlived the database."""

    def __init__(self, size: int):
        super().__init__(size)
        self.message = (
            f"The output store already holds a checkpoint of {size} leaves with another root hash: the database was "
            "restored or lost transactions. Nothing is signed again; appends and intake are stopped."
        )


def _signed(size: int, root: bytes, at) -> LogCheckpoint | None:
    name, text = storage_name(size), notes.checkpoint_text(settings.PAGETRAIL_LOG_ORIGIN, size, root)
    if (held := _held(name)) is not None:
        # Written before (and locked): a restored database signing the same size again. The same head signed
        # then stands as it is stored; another head at that size is a history the store has seen and this
        # database has not.
        if not _same_head(held, text):
            diverged = CheckpointDiverged(size)
            store_witness.stop_appends(diverged)
            raise diverged
        note, token = held.decode(), _held(name + TOKEN) or b""
    else:
        signing.cover(at)  # the key is published before anything it signs
        note = notes.sign(text, settings.PAGETRAIL_LOG_ORIGIN, signing.private_key(), signing.mldsa_private_key())
        token = _timestamp(note.encode())
        _store_once(name, note.encode(), at)
        if token:
            _store_once(name + TOKEN, token, at)
    try:
        with transaction.atomic():
            checkpoint = LogCheckpoint.objects.create(
                tree_size=size, root_hash=root.hex(), note=note, storage_name=name, timestamp_token=token, created_at=at
            )
    except IntegrityError:  # another worker signed this size first: its note stands
        return None
    witnessing.after_checkpoint(checkpoint)  # on commit, in a task: the append never waits for a witness
    return checkpoint


def _same_head(note: bytes, text: str) -> bool:
    try:
        return notes.split(note.decode())[0] == text
    except (UnicodeDecodeError, notes.NoteError):  # not even a note: nothing this database signed
        return False


def _held(name: str) -> bytes | None:
    if not stores.outputs().exists(name):
        return None
    with stores.outputs().open(name, "rb") as fh:
        return fh.read()


def _store_once(name: str, data: bytes, at) -> None:
    if not stores.outputs().exists(name):
        stores.outputs().save(name, ContentFile(data))
        worm.lock_for_default_days(name, at)


def _timestamp(note: bytes) -> bytes:
    """An RFC 3161 token for the note from the configured TSA, or b"" (none configured, or it failed:
    the checkpoint still counts, signed, and the run's log says the timestamp is missing)."""
    if not settings.PAGETRAIL_TSA_URL:
        return b""
    try:
        return timestamps.ask(settings.PAGETRAIL_TSA_URL, note)
    except (timestamps.TimestampError, OSError, requests.RequestException) as exc:
        log.warning("The TSA at %s gave no timestamp for a log checkpoint: %s", settings.PAGETRAIL_TSA_URL, exc)
        return b""


def sign_on_demand(at=None) -> int:
    """Sign the log's head for a client that asks for a proof now, unless a checkpoint (on demand or on schedule)
    was signed in the last ON_DEMAND_SECONDS: 0 when the newest checkpoint holds the head now, else the seconds
    until one may be signed. Clients cannot make the operator sign (and timestamp) a note per request."""
    at = at or timezone.now()
    with transaction.atomic():
        tlog.lock()  # two requests at once: the second sees the first one's checkpoint and signs none
        newest = LogCheckpoint.objects.order_by("-created_at").first()
        if newest is not None and newest.tree_size == tlog.leaf_count():
            return 0
        wait = ON_DEMAND_SECONDS - (at - newest.created_at).total_seconds() if newest is not None else 0
        if wait > 0:
            return math.ceil(wait)
        write_log_checkpoint(at)
    return 0


def latest() -> LogCheckpoint | None:
    return LogCheckpoint.objects.order_by("-tree_size").first()


def covering(size: int, at=None) -> LogCheckpoint:
    """The newest checkpoint holding at least `size` leaves, signing one now if none does."""
    found = latest()
    if found is None or found.tree_size < size:
        write_log_checkpoint(at)
        found = latest()
    if found is None or found.tree_size < size:
        raise tlog.LogGap(f"no checkpoint can cover {size} leaves")
    return found


def stored_names() -> list[str]:
    """The notes and the timestamp tokens beside them."""
    return list(stores.walk(stores.outputs(), PREFIX))


def trusted_publics() -> list[bytes]:
    """The Ed25519 public keys the configuration vouches for (never one found only in the database)."""
    return signing.configured_publics(signing.ED25519)


def open_note(note: str):
    """The checkpoint of one of the log's own notes: an Ed25519 or ML-DSA-44 line by a configured key verifies,
    and an ML-DSA-44 line of a configured key that does not verify rejects it (notes.NoteError)."""
    return notes.open_checkpoint(
        note, trusted_publics(), settings.PAGETRAIL_LOG_ORIGIN, signing.configured_publics(signing.MLDSA44)
    )
