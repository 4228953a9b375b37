"""The activity record: who did what to which object, before and after; each event signed and a ledger leaf."""

import hashlib
import json

from django.db import models
from django.utils import timezone

from .evidence import GENESIS, WriteOnceModel


class ActivityEvent(WriteOnceModel):
    actor = models.CharField(max_length=150)
    action = models.CharField(max_length=60, db_index=True)
    object_type = models.CharField(max_length=60)
    object_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(default=timezone.now)
    previous_sha256 = models.CharField(max_length=64, unique=True)
    sha256 = models.CharField(max_length=64, unique=True)
    body = models.TextField(blank=True, help_text="Canonical JSON that was signed: the event as the ledger holds it")
    signature = models.CharField(max_length=200, blank=True)
    key_id = models.CharField(max_length=50, blank=True)
    mldsa_signature = models.TextField(blank=True, help_text="base64 ML-DSA-44 signature of the same bytes")
    mldsa_key_id = models.CharField(max_length=50, blank=True, help_text="Empty: signed before ML-DSA-44")

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor}: {self.action} {self.object_type} {self.object_id}"

    def content(self) -> bytes:
        """What the hash covers (everything but the hash itself)."""
        fields = {
            "actor": self.actor,
            "action": self.action,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "before": self.before,
            "after": self.after,
            "at": self.at.isoformat(),
            "previous_sha256": self.previous_sha256,
        }
        return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()

    @classmethod
    def broken_links(cls) -> list[int]:
        """Ids of events whose hash or link no longer holds (an edit, a deletion, a reorder)."""
        broken, previous = [], GENESIS
        for event in cls.objects.order_by("pk").iterator():
            if event.previous_sha256 != previous or hashlib.sha256(event.content()).hexdigest() != event.sha256:
                broken.append(event.pk)
            previous = event.sha256
        return broken
