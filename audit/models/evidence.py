"""Manifests and the assets they vouch for, checkpoints and findings: rows written once and never changed."""

import uuid

from django.db import models
from django.utils import timezone

from extraction.models import Job

from .verification import VerificationRun

GENESIS = "0" * 64


class WriteOnceModel(models.Model):
    """Refuses `save()` on an existing row and `delete()`: evidence is append-only.

    A raw UPDATE can still reach the table; verification recomputes hashes to catch that.
    """

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise PermissionError(f"{type(self).__name__} rows are immutable once written.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError(f"{type(self).__name__} rows are never deleted.")


class ManifestChain(models.Model):
    """A single row: locked to append to the ledger (tlog.lock), and the head of the hash chain that manifests of
    schemas 1-3 formed, frozen since schema 4 made a manifest's sequence its leaf index (integrity.check_chain_head
    checks the old manifests against it)."""

    head_sha256 = models.CharField(max_length=64, default=GENESIS)
    length = models.PositiveBigIntegerField(default=0)
    # Moved by every change to the signing keys' rows (SigningKey.publish, under this row's lock): a signer that read
    # it under the lock knows whether anything changed since it last found its key covered (signing.cover). Random,
    # not a counter: a database restored, rolled back or recreated never repeats a value a process remembers.
    keys_stamp = models.UUIDField(default=uuid.uuid4)


class Manifest(WriteOnceModel):
    """One per completed job: canonical JSON, its hash and its signature. `sequence` is its leaf index in the ledger
    (schemas 1-3: its place in the hash chain, which `previous_sha256` links; empty since schema 4)."""

    job = models.OneToOneField(Job, on_delete=models.PROTECT, related_name="manifest")
    sequence = models.PositiveBigIntegerField(unique=True)
    schema_version = models.PositiveSmallIntegerField()
    correlation_id = models.CharField(max_length=64, db_index=True)
    extractor = models.CharField(max_length=100)
    extractor_version = models.CharField(max_length=100)
    page_count = models.PositiveIntegerField()
    body = models.TextField(help_text="Canonical JSON (ASCII), exactly the bytes that were hashed")
    sha256 = models.CharField(max_length=64, unique=True)
    previous_sha256 = models.CharField(max_length=64, unique=True, null=True, blank=True)
    signature = models.CharField(max_length=128)  # hex: 128 digits for Ed25519, 64 for HMAC-SHA256
    key_id = models.CharField(max_length=50)
    mldsa_signature = models.TextField(blank=True, help_text="base64 ML-DSA-44 signature of the same bytes")
    mldsa_key_id = models.CharField(max_length=50, blank=True, help_text="Empty: signed before ML-DSA-44")
    storage_name = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-sequence"]
        permissions = [("export_evidence", "Can export evidence packages")]

    def __str__(self):
        return f"manifest {self.sequence} of {self.job.bundle.file_name}"

    @staticmethod
    def files_named_by(manifests: "models.QuerySet[Manifest]") -> set[str]:
        """The output files these manifests name, each its own file and its assets': what their jobs should have."""
        assets = Asset.objects.filter(manifest__in=manifests).values_list("name", flat=True)
        return set(assets) | set(manifests.values_list("storage_name", flat=True))


class Asset(WriteOnceModel):
    """One stored image (identical images are one asset); its placements say where it was drawn."""

    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="assets")
    name = models.CharField(max_length=300, unique=True, help_text="Deterministic, also the storage name")
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    page = models.PositiveIntegerField(help_text="First page it is drawn on")
    index_on_page = models.PositiveIntegerField()
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    content_type = models.CharField(max_length=50)
    attempt_number = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["manifest_id", "page", "index_on_page"]
        constraints = [models.UniqueConstraint(fields=["manifest", "sha256"], name="asset_once_per_manifest")]
        indexes = [models.Index(fields=["sha256"])]  # "where else does this image appear?"

    def __str__(self):
        return self.shown_in(self.manifest.job.bundle)

    def shown_in(self, bundle) -> str:
        """The image by the names people know (file, page, place on it); `name`, made of hashes, is its storage
        name, shown beside this one hover away."""
        return f"{bundle.file_name}, page {self.page} (index {self.index_on_page})"


class Placement(WriteOnceModel):
    """One drawing of an asset: page and index on that page, in drawing order."""

    asset = models.ForeignKey(Asset, on_delete=models.PROTECT, related_name="placements")
    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="placements")
    page = models.PositiveIntegerField()
    index_on_page = models.PositiveIntegerField()

    class Meta:
        ordering = ["manifest_id", "page", "index_on_page"]
        constraints = [
            models.UniqueConstraint(fields=["manifest", "page", "index_on_page"], name="one_placement_per_slot")
        ]


class Checkpoint(WriteOnceModel):
    """A signed statement of the chain head at a moment, also written to the output store.

    A database rewritten later (manifests replaced, the chain re-hashed) no longer matches an
    earlier checkpoint file.
    """

    chain_length = models.PositiveBigIntegerField(unique=True)
    head_sha256 = models.CharField(max_length=64)
    body = models.TextField(help_text="Canonical JSON that was signed")
    signature = models.CharField(max_length=128)  # hex: 128 digits for Ed25519, 64 for HMAC-SHA256
    key_id = models.CharField(max_length=50)
    storage_name = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-chain_length"]

    def __str__(self):
        return f"checkpoint at {self.chain_length} manifests"


class Finding(WriteOnceModel):
    """One problem a verification run found, linked to what it concerns."""

    class Kind(models.TextChoices):
        HASH_MISMATCH = "hash_mismatch"
        MISSING_OUTPUT = "missing_output"
        UNEXPECTED_OUTPUT = "unexpected_output"
        DUPLICATE_NAME = "duplicate_name"
        MANIFEST_CHANGED = "manifest_changed"
        BAD_SIGNATURE = "bad_signature"
        CHAIN_BREAK = "chain_break"
        CHECKPOINT_MISMATCH = "checkpoint_mismatch"
        PAST_DEADLINE = "past_deadline"
        INPUT_PAST_RETENTION = "input_past_retention"
        INPUT_CHANGED = "input_changed"
        MISSING_INPUT = "missing_input"
        ACTIVITY_CHAIN_BREAK = "activity_chain_break"
        CHAIN_TRUNCATED = "chain_truncated"
        CHECKPOINT_MISSING = "checkpoint_missing"
        RETENTION_EVENT_INVALID = "retention_event_invalid"
        UNTRUSTED_SIGNING_KEY = "untrusted_signing_key"
        UNEXPECTED_INPUT = "unexpected_input"
        LOG_MISMATCH = "log_mismatch"
        LOG_CHECKPOINT_INVALID = "log_checkpoint_invalid"
        TIMESTAMP_MISSING = "timestamp_missing"
        LEDGER_ROLLBACK = "ledger_rollback"
        ACTIVITY_INVALID = "activity_invalid"
        POSITION_MISMATCH = "position_mismatch"

    run = models.ForeignKey(VerificationRun, on_delete=models.PROTECT, related_name="findings")
    kind = models.CharField(max_length=30, choices=Kind.choices, db_index=True)
    manifest = models.ForeignKey(Manifest, null=True, blank=True, on_delete=models.PROTECT)
    asset = models.ForeignKey(Asset, null=True, blank=True, on_delete=models.PROTECT)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.PROTECT)
    name = models.CharField(max_length=300, blank=True, help_text="The stored file concerned")
    detail = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "pk"]

    def __str__(self):
        return f"{self.get_kind_display()}: {self.concerns}"

    @property
    def concerns(self) -> str:
        """What it is about, by name: the image, else the manifest, the job, the stored file's last part."""
        return str(self.asset or self.manifest or self.job or self.name.rsplit("/", 1)[-1] or self.detail[:60])

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "manifest": self.manifest.sequence if self.manifest is not None else None,
            "job": self.job_id,
            "name": self.name,
            "detail": self.detail,
        }
