"""The transparency log: one leaf per manifest, and signed checkpoints (tree heads) of it. Write-once rows."""

from django.db import models
from django.utils import timezone

from .evidence import Manifest, WriteOnceModel


class LogLeaf(WriteOnceModel):
    """A manifest's place in the log: leaf `index` (from 0, no gaps) holds SHA-256(0x00 || its canonical bytes).

    Appended in the transaction that appends the manifest to the chain, under the chain's row lock; the
    unique index refuses a second leaf at a place even from a writer that skipped the lock.
    """

    index = models.PositiveBigIntegerField(unique=True)
    manifest = models.OneToOneField(Manifest, on_delete=models.PROTECT, related_name="log_leaf")
    leaf_hash = models.CharField(max_length=64, help_text="Hex of the RFC 9162 leaf hash")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["index"]

    def __str__(self):
        return f"log leaf {self.index}"


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
