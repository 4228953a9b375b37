"""The transparency log (the ledger): one leaf per evidence record, and signed checkpoints (tree heads) of it.
Write-once rows."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from .activity import ActivityEvent
from .cases import CaseMap
from .evidence import Manifest, WriteOnceModel
from .retention import RetentionEvent

RECORD_FIELDS = ("manifest", "retention_event", "case_map", "activity", "recovered")


class RecoveredRecord(WriteOnceModel):
    """A ledger record the database lost and the output store kept, re-imported by an operator
    (audit/ledger/recovery.py): its signed bytes, checked against its store marker's leaf hash, its signature
    (when the marker carries one) and the stored checkpoints that cover it. Its own rows (a manifest's job and
    assets, say) stay lost: the record is evidence that they existed, not a restore of them."""

    kind = models.CharField(max_length=20, help_text="The lost record's kind: manifest, retention_event, ...")
    body = models.TextField(help_text="The signed bytes the leaf hashes (a manifest's file, or a record's body)")
    signature = models.CharField(max_length=200, blank=True)
    key_id = models.CharField(max_length=50, blank=True)
    stored_name = models.CharField(max_length=300, blank=True, help_text="A manifest's file in the output store")
    checked = models.TextField(help_text="What the recovery checked before re-importing it")
    recovered_by = models.CharField(max_length=150)
    recovered_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"recovered {self.kind}"


def _holds_only(kind: str) -> Q:
    """A leaf of `kind` refers to its record of that kind and to no other."""
    return Q(kind=kind, **{f"{field}__isnull": field != kind for field in RECORD_FIELDS})


class LogLeaf(WriteOnceModel):
    """An evidence record's place in the log: leaf `index` (from 0, no gaps) holds SHA-256(0x00 || the record's
    signed canonical bytes). The record is a manifest, a retention event, a case map or an activity event (exactly
    one of them).

    Appended in the transaction that writes the record, under the log's one lock (audit/ledger/tlog.py); the unique
    index refuses a second leaf at a place even from a writer that skipped the lock.
    """

    class Kind(models.TextChoices):
        MANIFEST = "manifest"
        RETENTION_EVENT = "retention_event"
        CASE_MAP = "case_map"
        ACTIVITY = "activity"
        RECOVERED = "recovered"

    index = models.PositiveBigIntegerField(unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.MANIFEST)
    manifest = models.OneToOneField(Manifest, null=True, blank=True, on_delete=models.PROTECT, related_name="log_leaf")
    retention_event = models.OneToOneField(
        RetentionEvent, null=True, blank=True, on_delete=models.PROTECT, related_name="log_leaf"
    )
    case_map = models.OneToOneField(CaseMap, null=True, blank=True, on_delete=models.PROTECT, related_name="log_leaf")
    activity = models.OneToOneField(
        ActivityEvent, null=True, blank=True, on_delete=models.PROTECT, related_name="log_leaf"
    )
    recovered = models.OneToOneField(
        RecoveredRecord, null=True, blank=True, on_delete=models.PROTECT, related_name="log_leaf"
    )
    leaf_hash = models.CharField(max_length=64, help_text="Hex of the RFC 9162 leaf hash")
    RECORDS = RECORD_FIELDS
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["index"]
        constraints = [
            models.CheckConstraint(
                condition=_holds_only("manifest")
                | _holds_only("retention_event")
                | _holds_only("case_map")
                | _holds_only("activity")
                | _holds_only("recovered"),
                name="log_leaf_holds_one_record_of_its_kind",
            )
        ]

    @property
    def record(self):
        return getattr(self, self.kind)

    def record_bytes(self) -> bytes:
        """The signed canonical bytes the leaf hashes."""
        return self.record.body.encode("utf-8")

    def __str__(self):
        return f"log leaf {self.index}"


class LogSubtree(WriteOnceModel):
    """The hash of a complete subtree of the log: 2**level leaves from index * 2**level. Written with the leaf that
    completes it, in its transaction and under the log's lock (audit/ledger/tlog.py), so a proof or a checkpoint's root
    at any size reads O(log n) of these instead of every leaf. Level 0 repeats LogLeaf.leaf_hash so that one query of
    one table answers a proof, and an append reads and writes the same number of rows at every index.

    Derived from the leaves and never changed (a complete subtree stays complete); verification rebuilds them all
    from the leaves and reports any that differ (audit/verification/ledger_checks.py).
    """

    level = models.PositiveSmallIntegerField()
    index = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=64, help_text="Hex of the subtree's RFC 9162 root")

    class Meta:
        ordering = ["level", "index"]
        constraints = [models.UniqueConstraint(fields=["level", "index"], name="log_subtree_once_per_place")]

    def __str__(self):
        return f"log subtree {self.index} of level {self.level}"


class LogCheckpoint(WriteOnceModel):
    """A signed tree head in the C2SP tlog-checkpoint format (a signed note), also written to the output store."""

    tree_size = models.PositiveBigIntegerField(unique=True)
    root_hash = models.CharField(max_length=64, help_text="Hex of the tree's root")
    note = models.TextField(help_text="The signed note exactly as served and stored")
    storage_name = models.CharField(max_length=300)
    timestamp_token = models.BinaryField(blank=True, default=b"", help_text="RFC 3161 token over the note, if any")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-tree_size"]

    def __str__(self):
        return f"log checkpoint at {self.tree_size} leaves"


class LogCosignature(WriteOnceModel):
    """A witness's cosignature of a log checkpoint (C2SP tlog-cosignature), checked against the witness's configured
    key when it answered (audit/ledger/witnessing.py) and served after the checkpoint's own signature line."""

    checkpoint = models.ForeignKey(LogCheckpoint, on_delete=models.PROTECT, related_name="cosignatures")
    witness = models.CharField(max_length=200, help_text="The witness's name in PAGETRAIL_WITNESSES")
    key_id = models.CharField(max_length=8, help_text="Hex of the witness key's 4-byte id")
    line = models.TextField(help_text="The signature line as the witness answered it")
    signed_at = models.DateTimeField(help_text="The time the cosignature states")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["witness", "key_id"]
        constraints = [
            models.UniqueConstraint(fields=["checkpoint", "witness", "key_id"], name="log_cosignature_once_per_key")
        ]

    def __str__(self):
        return f"cosignature by {self.witness} of the checkpoint at {self.checkpoint.tree_size} leaves"
