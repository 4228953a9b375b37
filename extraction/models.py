"""Bundles, jobs, attempts and rejections, with their guarded state transitions.

Every transition is a compare-and-set UPDATE that returns whether it won: tasks are delivered
at least once, so a duplicated or late task must find the row already moved and do nothing.
"""

import hashlib
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import ExpressionWrapper, F, Q
from django.db.models.functions import Coalesce, Now
from django.urls import reverse
from django.utils import timezone

from core.guarded import Wakeable, update_if


def idempotency_key(correlation_id: str, extractor: str, version: str, generation: int = 0) -> str:
    """One provider job per input bytes and extractor version (and re-extraction round): never random,
    never per attempt."""
    again = f"\n{generation}" if generation else ""
    return hashlib.sha256(f"{correlation_id}\n{extractor}\n{version}{again}".encode()).hexdigest()


def input_storage_name(sha256: str) -> str:
    return f"{sha256[:2]}/{sha256}.pdf"


class Bundle(models.Model):
    """An accepted input PDF; the sha256 of its bytes is its correlation id.

    Its file name, submitter and case label are those of the submission that first brought the bytes, kept
    here on purpose rather than read through a link: a bundle outlives its submissions (they go with their
    service account, and the same bytes come again as more submissions, each with its own name and label),
    and the lists' searches and a Submitter's visibility filter on these columns through one index each.
    """

    correlation_id = models.CharField(max_length=64, unique=True, help_text="sha256 of the input bytes")
    size = models.BigIntegerField()
    page_count = models.PositiveIntegerField()
    mime = models.CharField(max_length=100)
    original_filename = models.CharField(max_length=255, blank=True, help_text="As given; display only")
    submitted_by = models.CharField(max_length=150)
    case_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    input_deleted_at = models.DateTimeField(null=True, blank=True)
    # What intake found in the bytes and the policy version that accepted them (empty for bundles taken in before
    # there was a policy): each finding with its action, each attached file. Its manifests state them.
    intake_policy = models.ForeignKey(
        "extraction.IntakePolicy", null=True, blank=True, on_delete=models.PROTECT, related_name="bundles"
    )
    intake_found = models.JSONField(default=list, blank=True, help_text="What the intake policy saw, and did")
    attachments = models.JSONField(default=list, blank=True, help_text="Files attached inside the input")
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="attached_bundles",
        help_text="The bundle this PDF was attached inside (PAGETRAIL_SUBMIT_ATTACHED_PDFS)",
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["created_at"]),  # the admin's default order, over 100k bundles
            models.Index(fields=["submitted_by"]),  # a Submitter's lists: their team's bundles (visibility.py)
        ]
        # Not add_bundle: a bundle is never typed in, it is uploaded through intake.
        permissions = [
            ("submit_bundle", "Can upload bundles through intake"),
            ("download_input", "Can download original input PDFs"),
            # Without it a person sees only their team's bundles and jobs (extraction.visibility).
            ("view_all_bundles", "Can see every bundle and job, not only their team's"),
        ]

    def __str__(self):
        return f"{self.original_filename or 'bundle'} ({self.correlation_id[:12]})"

    @property
    def input_name(self) -> str:
        """Its name in the private input store: derived from its correlation id, as every name of its bytes is."""
        return input_storage_name(self.correlation_id)

    @property
    def file_name(self) -> str:
        """What a person calls the bundle: the name it was uploaded under (the hash only when it had none)."""
        return self.original_filename or f"unnamed bundle {self.correlation_id[:12]}"

    def mark_input_deleted(self, at=None) -> bool:
        """The input's bytes were deleted under its retention policy (the first deletion's time stands)."""
        return update_if(self, Q(input_deleted_at__isnull=True), input_deleted_at=at or timezone.now())


def _later(now, delta: timedelta):
    """`now + delta`, where `now` is a datetime or the database's clock."""
    if isinstance(now, Now):
        return ExpressionWrapper(now + delta, output_field=models.DateTimeField())
    return now + delta


class JobQuerySet(models.QuerySet["Job"]):
    def visible_to(self, account):
        """What a service account may read: the rounds made for it, the job it was given, and the rounds
        staff started on its bundles after it submitted them. Never a round made for another account, nor
        one from before its own submission: either would tell it that somebody sent the same bytes first."""
        later_staff_round = Q(
            account__isnull=True, bundle__accesses__account=account, enqueued_at__gte=F("bundle__accesses__created_at")
        )
        # As a subquery: the joins stay out of the caller's query (its counts of attempts stay counts).
        mine = self.model.objects.filter(Q(account=account) | Q(given_to__account=account) | later_staff_round)
        return self.filter(pk__in=mine.values("pk"))

    def active(self):
        return self.filter(status__in=Job.ACTIVE)

    def with_claim_expired(self, at=None):
        """Claims that ran out and have not been woken since (one wake-up call per expiry)."""
        return self.active().filter(claimed_until__lt=at or Now(), last_woken_at__lt=models.F("claimed_until"))

    def unknown_and_quiet(self, quiet_for: timedelta, at=None):
        return self.filter(status=Job.Status.UNKNOWN, last_woken_at__lt=_later(at or Now(), -quiet_for))

    def never_picked_up(self, quiet_for: timedelta, at=None):
        """Queued, never claimed, and not woken for `quiet_for`: its queue task was probably lost."""
        woken_before = _later(at or Now(), -quiet_for)
        return self.filter(status=Job.Status.QUEUED, claimed_until__isnull=True, last_woken_at__lt=woken_before)


class Job(Wakeable, models.Model):
    """One extraction of one bundle by one extractor version."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        SUBMITTED = "submitted"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"
        UNKNOWN = "unknown"

    ACTIVE = (Status.QUEUED, Status.SUBMITTED, Status.RUNNING, Status.UNKNOWN)
    TERMINAL = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)

    bundle = models.ForeignKey(Bundle, on_delete=models.PROTECT, related_name="jobs")
    idempotency_key = models.CharField(max_length=64, unique=True)
    provider = models.CharField(max_length=50)
    extractor = models.CharField(max_length=100)
    extractor_version = models.CharField(max_length=100)
    provider_job_id = models.CharField(max_length=200, blank=True)
    generation = models.PositiveSmallIntegerField(default=0, help_text="0 for the first extraction, then 1, 2...")
    account = models.ForeignKey(
        "extraction.ServiceAccount",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="jobs",
        help_text="The service account this round was made for "
        "(none for an upload by staff or a reviewer's re-extraction)",
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error_code = models.CharField(max_length=50, blank=True)
    error_message = models.TextField(blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField()
    enqueued_at = models.DateTimeField(default=timezone.now)
    last_woken_at = models.DateTimeField(default=timezone.now)
    picked_up_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    provider_finished_at = models.DateTimeField(null=True, blank=True)
    manifest_durable_at = models.DateTimeField(null=True, blank=True)
    temp_peak_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes in the job's temp dir when it finished"
    )
    outputs_swept_at = models.DateTimeField(
        null=True, blank=True, help_text="When outputs no manifest names were last removed"
    )

    objects = JobQuerySet.as_manager()
    # Not a column: the number of the last attempt this instance opened (Attempt.begin), so the next one
    # and the completion need no query to learn it; 0 after the job's first claim; None when not known.
    last_attempt_number: int | None = None

    class Meta:
        ordering = ["-enqueued_at"]
        indexes = [
            models.Index(fields=["status", "claimed_until"]),
            models.Index(fields=["enqueued_at"]),
            models.Index(fields=["provider_job_id"]),
        ]  # the admin's search by it
        permissions = [("replay_job", "Can replay unknown jobs")]

    def __str__(self):
        return f"job {self.pk} ({self.status})"

    def admin_link(self) -> str:
        """Where people open this job (an alert's link)."""
        return reverse("admin:extraction_job_change", args=[self.pk])

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def queue_wait(self) -> timedelta | None:
        return self.picked_up_at - self.enqueued_at if self.picked_up_at else None

    @property
    def extraction_time(self) -> timedelta | None:
        if self.submitted_at and self.provider_finished_at:
            return self.provider_finished_at - self.submitted_at
        return None

    def claim(self, worker: str, lease_seconds: int | None = None, at=None) -> uuid.UUID | None:
        """Take the job for `worker` unless another worker holds a live claim; returns the token.

        Leases are measured on the database's clock (unless a test passes `at`), so workers on
        hosts whose clocks drift still agree on when a claim ran out.
        """
        now = at or Now()
        lease = timedelta(seconds=lease_seconds or settings.PAGETRAIL_CLAIM_LEASE_SECONDS)
        token = uuid.uuid4()
        free = models.Q(claimed_until__isnull=True) | models.Q(claimed_until__lt=now)
        never_claimed = "picked_up_at" in self.__dict__ and self.picked_up_at is None  # as this row was read
        changes = {
            "claim_token": token,
            "claimed_by": worker[:200],
            "claimed_until": _later(now, lease),
            "picked_up_at": Coalesce("picked_up_at", now if at is None else models.Value(at)),
        }
        if not update_if(self, free & Q(status__in=self.ACTIVE), **changes):
            return None
        if never_claimed:
            # Only a claim's holder opens attempts: the first is next, without reading the highest. A worker that
            # claimed and let go since this row was read took number 1 first; Attempt.begin then reads the highest.
            self.last_attempt_number = 0
        return token

    def release(self, token, hold_for: timedelta | None = timedelta(0)) -> bool:
        """End the claim. `hold_for` keeps others off until a retry is due; once it has passed, the
        reconciler re-drives the job even if its wake-up call is lost. None: free, nothing due."""
        until = None if hold_for is None else _later(Now(), hold_for)
        return update_if(self, Q(claim_token=token), claim_token=None, claimed_until=until)

    def hold_left(self) -> float | None:
        """Seconds until a released job's hold ends, on the database's clock (the clock claims use);
        None when no hold is pending (free, due, or claimed by a worker)."""
        left = (
            Job.objects.filter(pk=self.pk, claim_token__isnull=True, claimed_until__gt=Now())
            .values_list(ExpressionWrapper(F("claimed_until") - Now(), output_field=models.DurationField()), flat=True)
            .first()
        )
        return None if left is None else max(left.total_seconds(), 0.0)

    def past_deadline(self) -> bool:
        return Job.objects.filter(pk=self.pk, deadline__lt=Now()).exists()

    def rekey(self, token, version: str, key: str, provider_job_id: str) -> bool:
        """Run by another extractor version than the one it was keyed to (a rolling upgrade): it becomes that
        version's job (runner._keyed_to_what_ran). Raises IntegrityError when that version's job of the same bytes
        and round exists already."""
        with transaction.atomic():  # a refused key leaves the connection usable (PostgreSQL)
            return update_if(
                self,
                Q(claim_token=token),
                extractor_version=version,
                idempotency_key=key,
                provider_job_id=provider_job_id,
            )

    def mark_submitted(self, provider_job_id: str, at=None) -> bool:
        # From unknown too: a submit that timed out is retried with the same key.
        return update_if(
            self,
            Q(status__in=[self.Status.QUEUED, self.Status.UNKNOWN]),
            status=self.Status.SUBMITTED,
            provider_job_id=provider_job_id,
            submitted_at=at or timezone.now(),
        )

    def mark_running(self) -> bool:
        return update_if(self, Q(status__in=[self.Status.SUBMITTED]), status=self.Status.RUNNING)

    def mark_provider_finished(self, temp_peak_bytes: int | None = None, at=None) -> None:
        """Record when the provider's work ended (kept separate from manifest durability; the first try
        to see it sets it) and, once every output is in the temp dir, its size, in the same write."""
        finished_at = models.Value(at or timezone.now(), output_field=models.DateTimeField())
        changes: dict[str, Coalesce | int] = {"provider_finished_at": Coalesce("provider_finished_at", finished_at)}
        if temp_peak_bytes is not None:
            changes["temp_peak_bytes"] = temp_peak_bytes
        Job.objects.filter(pk=self.pk).update(**changes)
        self.__dict__.pop("provider_finished_at", None)  # the first try's, read again if it is used
        if temp_peak_bytes is not None:
            self.temp_peak_bytes = temp_peak_bytes

    def attempts_so_far(self) -> int:
        """The attempt a completion names: the last one this instance opened, else the job's count."""
        return self.last_attempt_number or self.attempts.count()

    def mark_completed(self, at=None) -> bool:
        active = [self.Status.SUBMITTED, self.Status.RUNNING, self.Status.UNKNOWN]
        return update_if(
            self,
            Q(status__in=active),
            status=self.Status.COMPLETED,
            manifest_durable_at=at or timezone.now(),
            claim_token=None,
            claimed_until=None,
            error_code="",
            error_message="",
        )

    def mark_failed(self, code: str, message: str) -> bool:
        return update_if(
            self,
            Q(status__in=self.ACTIVE),
            status=self.Status.FAILED,
            error_code=code[:50],
            error_message=message,
            claim_token=None,
            claimed_until=None,
        )

    def mark_held(self, code: str, message: str) -> bool:
        """A fault on our side (a store) stops the job for now: its code shows while it waits to retry."""
        return update_if(self, Q(status__in=self.ACTIVE), error_code=code[:50], error_message=message)

    def mark_unknown(self, code: str, message: str) -> bool:
        """The provider's outcome is not known (deadline passed): never `failed` by guess."""
        active = [self.Status.QUEUED, self.Status.SUBMITTED, self.Status.RUNNING]
        return update_if(
            self, Q(status__in=active), status=self.Status.UNKNOWN, error_code=code[:50], error_message=message
        )

    def mark_outputs_swept(self, at=None) -> bool:
        """Stored outputs no manifest names were removed; each terminal job is swept once."""
        return update_if(self, Q(outputs_swept_at__isnull=True), outputs_swept_at=at or timezone.now())

    def mark_cancelled(self) -> bool:
        return update_if(
            self, Q(status__in=self.ACTIVE), status=self.Status.CANCELLED, claim_token=None, claimed_until=None
        )


class SubmissionSwitch(models.Model):
    """The kill switch (one row): closed, no new provider submissions; queued jobs wait, running ones finish."""

    is_open = models.BooleanField(default=True)
    reason = models.TextField(blank=True)
    changed_by = models.CharField(max_length=150, blank=True)
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = verbose_name_plural = "submission switch"

    def __str__(self):
        return "Submissions open" if self.is_open else "Submissions stopped"

    @classmethod
    def current(cls) -> "SubmissionSwitch":
        return cls.objects.get_or_create(pk=1)[0]

    @classmethod
    def submissions_open(cls) -> bool:
        return not cls.objects.filter(pk=1, is_open=False).exists()

    @classmethod
    def set(cls, is_open: bool, by: str, reason: str = "", at=None) -> bool:
        """Returns whether the state changed (two admins clicking at once change it once)."""
        cls.current()
        return (
            cls.objects.filter(pk=1)
            .exclude(is_open=is_open)
            .update(is_open=is_open, reason=reason, changed_by=by[:150], changed_at=at or timezone.now())
            == 1
        )


class Attempt(models.Model):
    """One try against the provider (submit, poll, extract or download), or a store that failed; retries
    are new rows."""

    class Kind(models.TextChoices):
        SUBMIT = "submit"
        POLL = "poll"
        EXTRACT = "extract"
        DOWNLOAD = "download"
        STORE = "store"  # writing the outputs or reading the input, when a store failed

    class Outcome(models.TextChoices):
        STARTED = "started"
        OK = "ok"
        RETRY = "retry"
        FAILED = "failed"
        UNKNOWN = "unknown"
        ABANDONED = "abandoned"  # its worker died mid-try; closed by the reconciler

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=20, choices=Kind.choices)
    target = models.CharField(max_length=300, blank=True, help_text="What a download fetched")
    worker = models.CharField(max_length=200, blank=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    retry_after_s = models.FloatField(null=True, blank=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices, default=Outcome.STARTED)
    error_code = models.CharField(max_length=50, blank=True)
    error_message = models.TextField(blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job_id", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="attempt_number_per_job")]
        # /metrics counts retries at every scrape: the retried tries only, not every attempt ever made.
        indexes = [models.Index(fields=["error_code"], condition=Q(outcome="retry"), name="attempt_retries")]

    def __str__(self):
        return f"attempt {self.number} ({self.kind}, {self.outcome})"

    @classmethod
    def begin(
        cls, job: Job, kind: str, worker: str = "", target: str = "", outcome: str = Outcome.STARTED
    ) -> "Attempt":
        """Open the next numbered attempt; two workers racing for a number both get a row.

        An `outcome` other than started records a call that is already over, in one row."""
        now = timezone.now()
        finished_at = None if outcome == cls.Outcome.STARTED else now
        # Numbers are dense (each is the highest + 1), so the number after the last this instance opened is
        # either free and the next, or taken by another worker: then the highest is read again.
        number = job.last_attempt_number + 1 if job.last_attempt_number is not None else None
        for _ in range(5):
            number = number or (job.attempts.aggregate(n=models.Max("number"))["n"] or 0) + 1
            try:
                with transaction.atomic():
                    attempt = cls.objects.create(
                        job=job,
                        number=number,
                        kind=kind,
                        worker=worker[:200],
                        target=target[:300],
                        outcome=outcome,
                        finished_at=finished_at,
                        started_at=now,
                    )
            except IntegrityError:
                number = None
                continue
            job.last_attempt_number = number
            return attempt
        raise RuntimeError(f"could not number an attempt for job {job.pk}")

    @classmethod
    def retries_in_a_row(cls, job: Job) -> int:
        """Tries of `job` that asked to be retried since its last answered one: backoff grows while a
        provider keeps failing and starts again after a success (ten throttled downloads, each retried
        once, are ten first retries, not one tenth)."""
        last_ok = job.attempts.filter(outcome=cls.Outcome.OK).aggregate(n=models.Max("number"))["n"] or 0
        return job.attempts.filter(outcome=cls.Outcome.RETRY, number__gt=last_ok).count()

    def record_outcome(
        self,
        outcome: str,
        *,
        http_status=None,
        retry_after_s=None,
        error_code: str = "",
        error_message: str = "",
        at=None,
    ) -> None:
        self.outcome, self.http_status, self.retry_after_s = outcome, http_status, retry_after_s
        self.error_code, self.error_message = error_code[:50], error_message
        self.finished_at = at or timezone.now()
        self.save(
            update_fields=["outcome", "http_status", "retry_after_s", "error_code", "error_message", "finished_at"]
        )

    @classmethod
    def close_abandoned(cls, at=None) -> int:
        """Close tries left `started` by a worker that no longer holds their job: its claim ran out, or
        another worker has it. A live worker's try is never touched (its claim is current and its own)."""
        now = at or timezone.now()
        still_held = Q(job__claimed_until__gte=now, job__claimed_by=F("worker"))
        lost = cls.objects.filter(outcome=cls.Outcome.STARTED).exclude(still_held)
        return cls.objects.filter(pk__in=list(lost.values_list("pk", flat=True)), outcome=cls.Outcome.STARTED).update(
            outcome=cls.Outcome.ABANDONED,
            finished_at=now,
            error_code="worker_lost",
            error_message="The worker stopped (killed or crashed) before this try finished.",
        )

    @property
    def latency(self) -> timedelta | None:
        return self.finished_at - self.started_at if self.finished_at else None


class Rejection(models.Model):
    """An upload refused at validation. No bytes are kept, only what identifies the attempt."""

    code = models.CharField(max_length=50, db_index=True)
    message = models.TextField()
    size = models.BigIntegerField(help_text="Bytes received before the decision")
    sha256 = models.CharField(max_length=64, blank=True, help_text="Of the bytes received, when complete")
    original_filename = models.CharField(max_length=255, blank=True)
    submitted_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.code}: {self.original_filename or self.sha256[:12]}"


# The models of the upstream API, registered with this app.
from .accounts import BundleAccess, IdempotencyRecord, ServiceAccount, ServiceAccountToken  # noqa: E402,F401
from .cluster_heartbeat import ClusterHeartbeat  # noqa: E402,F401  (its own module: the master's heartbeat)
from .intake.policy_versions import IntakePolicy  # noqa: E402,F401
from .intake.submission import Submission  # noqa: E402,F401
from .webhooks.events import WebhookAttempt, WebhookEvent  # noqa: E402,F401
from .worker_versions import WorkerVersions  # noqa: E402,F401  (its own module: the start-up check)
