"""Splitting a bundle into cases: a signed case map that refers to a manifest by hash, never changing it."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.guarded import update_if

from .evidence import Manifest, WriteOnceModel


class CaseMap(WriteOnceModel):
    """One split of a manifest's pages into named cases; a new split is a new map, the old one stays."""

    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="case_maps")
    manifest_sha256 = models.CharField(max_length=64)
    body = models.TextField(help_text="Canonical JSON: the cases, their pages and the assets placed on them")
    sha256 = models.CharField(max_length=64, unique=True)
    signature = models.CharField(max_length=128)  # hex: 128 digits for Ed25519, 64 for HMAC-SHA256
    key_id = models.CharField(max_length=50)
    mldsa_signature = models.TextField(blank=True, help_text="base64 ML-DSA-44 signature of the same bytes")
    mldsa_key_id = models.CharField(max_length=50, blank=True, help_text="Empty: signed before ML-DSA-44")
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        # No query here: the cases changelist shows this for every row.
        return f"case map {self.sha256[:12]}"


class Case(models.Model):
    """A named page range of a bundle, with its own review status."""

    class Status(models.TextChoices):
        OPEN = "open"
        REVIEWED = "reviewed"
        NEEDS_ATTENTION = "needs_attention"

    case_map = models.ForeignKey(CaseMap, on_delete=models.PROTECT, related_name="cases")
    name = models.CharField(max_length=200)
    first_page = models.PositiveIntegerField()
    last_page = models.PositiveIntegerField()
    review_status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    reviewed_by = models.CharField(max_length=150, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["case_map_id", "first_page"]
        constraints = [models.UniqueConstraint(fields=["case_map", "name"], name="case_names_unique_per_map")]

    def __str__(self):
        return f"{self.name} (pages {self.first_page}-{self.last_page})"

    def mark_reviewed(self, status: str, by: str, at=None) -> bool:
        return update_if(
            self, ~Q(review_status=status), review_status=status, reviewed_by=by[:150], reviewed_at=at or timezone.now()
        )
