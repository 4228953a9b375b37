"""Retention: versioned policies, which version a bundle falls under, and every deletion (or block)."""

from django.db import models
from django.utils import timezone

from extraction.models import Bundle

from .evidence import Manifest, WriteOnceModel


class RetentionPolicy(WriteOnceModel):
    """One version of a named policy. A change is a new version; old versions stay, as bundles refer to them.

    A window of None keeps that kind of file forever. A version is a draft until a second person approves
    it (four eyes). A legal hold is the exception: it takes effect the moment it is placed, since it can only
    stop deletions and a hold must never be weaker while it waits; a second person then confirms it
    (`confirm_hold`), so the record says who placed it, why, and who else stood behind it.
    """

    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        APPROVED = "approved", "approved by a second person"
        HOLD_PLACED = "hold_placed", "legal hold placed, in effect, awaiting a second person's confirmation"
        HOLD_CONFIRMED = "hold_confirmed", "legal hold placed and confirmed by a second person"
        RECORDED = "recorded", "approval typed in, before four-eyes approval existed"

    EFFECTIVE = (Status.APPROVED, Status.HOLD_PLACED, Status.HOLD_CONFIRMED, Status.RECORDED)

    name = models.CharField(max_length=100, help_text="e.g. the contract it implements")
    version = models.PositiveIntegerField()
    is_default = models.BooleanField(default=False, help_text="Applies to bundles submitted without a policy")
    input_days = models.PositiveIntegerField(null=True, blank=True)
    output_days = models.PositiveIntegerField(null=True, blank=True)
    manifest_days = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: manifests are kept forever")
    legal_hold = models.BooleanField(default=False, help_text="Blocks every deletion under this policy")
    contract_owner = models.CharField(max_length=150)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    approved_by = models.CharField(max_length=150, blank=True, help_text="From the approver's session")
    approved_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField()
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "-version"]
        verbose_name_plural = "retention policies"
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="one_number_per_policy_version")]
        permissions = [
            ("run_retention", "Can run retention"),
            ("approve_retentionpolicy", "Can approve a retention policy version drafted by someone else"),
        ]

    def __str__(self):
        hold = ", LEGAL HOLD" if self.legal_hold else ""
        draft = " (draft)" if self.status == self.Status.DRAFT else ""
        return f"{self.name} v{self.version}{hold}{draft}"

    def approve(self, by: str, at) -> bool:
        """Draft to approved, by someone other than its creator, unless a newer version took effect first.

        A guarded UPDATE: of two approvals racing, or an approval racing a legal hold, one wins.
        """
        newer = RetentionPolicy.objects.filter(name=self.name, version__gt=self.version, status__in=self.EFFECTIVE)
        won = (
            RetentionPolicy.objects.filter(pk=self.pk, status=self.Status.DRAFT)
            .exclude(created_by=by)
            .exclude(models.Exists(newer))
            .update(status=self.Status.APPROVED, approved_by=by[:150], approved_at=at)
        )
        if won:
            self.status, self.approved_by, self.approved_at = self.Status.APPROVED, by[:150], at
        return bool(won)

    def confirm_hold(self, by: str, at) -> bool:
        """A placed hold confirmed by someone other than who placed it, while no newer version took effect.

        A guarded UPDATE: of two confirmations racing, or a confirmation racing an approved lift, one wins. The
        hold was in effect all along; confirming changes who stands behind it, not what it protects.
        """
        newer = RetentionPolicy.objects.filter(name=self.name, version__gt=self.version, status__in=self.EFFECTIVE)
        won = (
            RetentionPolicy.objects.filter(pk=self.pk, status=self.Status.HOLD_PLACED)
            .exclude(created_by=by)
            .exclude(models.Exists(newer))
            .update(status=self.Status.HOLD_CONFIRMED, approved_by=by[:150], approved_at=at)
        )
        if won:
            self.status, self.approved_by, self.approved_at = self.Status.HOLD_CONFIRMED, by[:150], at
        return bool(won)

    @property
    def took_effect_at(self):
        """When this version began to count: a hold when it was placed (confirming it later changes nothing it
        protects), any other version when it was approved. None for a draft."""
        if self.status in (self.Status.HOLD_PLACED, self.Status.HOLD_CONFIRMED):
            return self.created_at
        return self.approved_at

    def people(self) -> str:
        """Who did what to this version, in words: a hold is placed and confirmed, a change drafted and approved."""
        if self.status == self.Status.HOLD_PLACED:
            return f"hold placed by {self.created_by}; awaiting confirmation by a second person"
        if self.status == self.Status.HOLD_CONFIRMED:
            return f"hold placed by {self.created_by}, confirmed by {self.approved_by}"
        if self.status == self.Status.RECORDED:
            return f"drafted by {self.created_by}; approval typed in as {self.approved_by or 'nobody'}"
        if self.status == self.Status.APPROVED:
            return f"drafted by {self.created_by}, approved by {self.approved_by}"
        return f"drafted by {self.created_by}; not approved yet"


class RetentionAssignment(models.Model):
    """The policy version in force for a bundle, fixed when the bundle first fell under one."""

    bundle = models.OneToOneField(Bundle, on_delete=models.PROTECT, related_name="retention")
    policy = models.ForeignKey(RetentionPolicy, on_delete=models.PROTECT, related_name="assignments")
    assigned_at = models.DateTimeField(default=timezone.now)


class RetentionEvent(WriteOnceModel):
    """A deletion done, or blocked by legal hold, under a policy version.

    `body` is the signed statement (canonical JSON, audit/retention/events.py): it names every file
    the decision covers, so a made-up or edited row cannot excuse a missing file.
    """

    class What(models.TextChoices):
        INPUT = "input"
        OUTPUTS = "outputs"
        MANIFEST_FILE = "manifest_file"

    class Outcome(models.TextChoices):
        DELETED = "deleted"
        BLOCKED = "blocked_by_legal_hold"
        POSTPONED = "postponed_by_object_lock"

    bundle = models.ForeignKey(Bundle, on_delete=models.PROTECT, related_name="retention_events")
    manifest = models.ForeignKey(
        Manifest, null=True, blank=True, on_delete=models.PROTECT, related_name="retention_events"
    )
    policy = models.ForeignKey(RetentionPolicy, on_delete=models.PROTECT)
    what = models.CharField(max_length=20, choices=What.choices)
    outcome = models.CharField(max_length=30, choices=Outcome.choices)
    files = models.PositiveIntegerField(default=0)
    bytes_freed = models.PositiveBigIntegerField(default=0)
    at = models.DateTimeField()
    body = models.TextField(blank=True, help_text="Canonical JSON that was signed: what, when, policy, every file")
    signature = models.CharField(max_length=128, blank=True)
    key_id = models.CharField(max_length=50, blank=True)
    mldsa_signature = models.TextField(blank=True, help_text="base64 ML-DSA-44 signature of the same bytes")
    mldsa_key_id = models.CharField(max_length=50, blank=True, help_text="Empty: signed before ML-DSA-44")

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["bundle", "what", "outcome"])]

    def __str__(self):
        return f"{self.what} {self.outcome} ({self.policy})"


class LegalHoldSync(models.Model):
    """A legal hold placed or lifted that S3 Object Lock must carry to the objects already written.

    Pending until every locked object under the policy carries the S3 legal hold of the version in force
    (audit/retention/legal_holds.py). A failed try alerts and stays pending; the retention schedule tries again.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"

    policy = models.ForeignKey(RetentionPolicy, on_delete=models.PROTECT, related_name="hold_syncs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    tries = models.PositiveIntegerField(default=0)
    object_count = models.PositiveIntegerField(default=0, help_text="Objects whose S3 legal hold was set")
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"S3 legal holds for {self.policy}: {self.status}"
