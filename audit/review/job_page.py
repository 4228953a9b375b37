"""The job page's story: the state and why, what was tried (repeats collapsed), where its evidence is.

Built here rather than in extraction because it links the job to its manifest, review flags and cases
(audit may import extraction; extraction never imports audit's models). One function builds the state
the page renders at first and the JSON it polls afterwards, so both always say the same.
"""

from dataclasses import dataclass
from datetime import datetime

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from audit.models import Case, Manifest, ReviewFlag
from audit.verification import state as verification_state
from audit.views import REVIEW_PAGE_PERMISSIONS
from core import display
from extraction.models import Attempt, Job, SubmissionSwitch


@dataclass
class Repeat:
    """Consecutive attempts of one kind that ended the same way, shown as one line."""

    kind: str
    outcome: str
    count: int
    first: datetime
    last: datetime | None
    http_status: int | None
    retry_after_s: float | None
    error_code: str
    error_message: str
    numbers: str

    @property
    def span(self) -> str:
        if self.count == 1 or self.last is None:
            return display.timestamp(self.first)
        return f"{display.timestamp(self.first)} to {display.timestamp(self.last)}"


def timeline(attempts) -> list[Repeat]:
    """Attempts in order, a run of the same kind, outcome, HTTP status and error collapsed into one line."""
    groups: list[tuple[tuple, list[Attempt]]] = []
    for attempt in attempts:
        key = (attempt.kind, attempt.outcome, attempt.http_status, attempt.error_code)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(attempt)
        else:
            groups.append((key, [attempt]))
    return [
        Repeat(
            kind=tries[0].kind,
            outcome=tries[0].outcome,
            count=len(tries),
            first=tries[0].started_at,
            last=tries[-1].finished_at,
            http_status=tries[0].http_status,
            retry_after_s=tries[-1].retry_after_s,
            error_code=tries[0].error_code,
            error_message=tries[-1].error_message,
            numbers=display.page_ranges(t.number for t in tries),
        )
        for _, tries in groups
    ]


def reason(job: Job, last: Attempt | None, at=None) -> str:
    """One sentence saying why the job is where it is and what happens next."""
    now = at or timezone.now()
    if job.status == Job.Status.COMPLETED:
        return f"Completed at {display.timestamp(job.manifest_durable_at)}: its manifest is written and signed."
    if job.status == Job.Status.FAILED:
        return f"Failed ({job.error_code}): {job.error_message} Nothing is retried."
    if job.status == Job.Status.CANCELLED:
        return "Cancelled: nothing more is done."
    if job.status == Job.Status.UNKNOWN:
        since = last.finished_at if last and last.finished_at else job.deadline
        return (
            f"Unknown since {display.timestamp(since)} ({job.error_code}): {job.error_message} The reconciler "
            f"asks the provider again under the same provider job id; it is never resubmitted under a new key."
        )
    return _active_reason(job, last, now)


def _active_reason(job: Job, last: Attempt | None, now) -> str:
    switch = SubmissionSwitch.current()
    late = f" It is past its deadline ({display.timestamp(job.deadline)})." if job.deadline < now else ""
    if job.status == Job.Status.QUEUED and not switch.is_open:
        who = f" by {switch.changed_by}" if switch.changed_by else ""
        why = f": {switch.reason}" if switch.reason else ""
        return (
            f"Waiting for the kill switch: submissions were stopped{who} at {display.timestamp(switch.changed_at)}"
            f"{why}. The job is submitted when they reopen.{late}"
        )
    if job.claim_token and job.claimed_until and job.claimed_until > now:
        doing = f" ({last.kind}, attempt {last.number})" if last and last.outcome == Attempt.Outcome.STARTED else ""
        return f"A worker is on it{doing}.{late}"
    if job.claimed_until and job.claimed_until > now:
        after = (
            f" after {last.kind} {last.outcome}" + (f" ({last.error_code})" if last.error_code else "") if last else ""
        )
        return f"Retrying at {display.timestamp(job.claimed_until)}{after}.{late}"
    if job.status == Job.Status.QUEUED:
        return f"Waiting in the queue for a worker since {display.timestamp(job.enqueued_at)}.{late}"
    return f"At the provider (job {job.provider_job_id or '?'}); a worker checks it again shortly.{late}"


def links(job: Job, user) -> list[tuple[str, str]]:
    """(label, url) of everything the job leads to that this person may open."""
    found = []
    if user.has_perm("extraction.view_bundle"):
        found.append(
            (
                f"bundle {job.bundle.original_filename or job.bundle.correlation_id[:12]}",
                reverse("admin:extraction_bundle_change", args=[job.bundle_id]),
            )
        )
    if user.has_perm("extraction.download_input") and not job.bundle.input_deleted_at:
        found.append(("download the input PDF", reverse("download-input", args=[job.bundle_id])))
    manifest = Manifest.objects.filter(job=job).first()
    if manifest is None or not user.has_perm("audit.view_manifest"):
        return found
    found.append((f"manifest {manifest.sequence}", reverse("admin:audit_manifest_change", args=[manifest.pk])))
    if user.has_perms(REVIEW_PAGE_PERMISSIONS):
        found.append(("review page", reverse("review-manifest", args=[manifest.pk])))
    if user.has_perm("audit.view_asset"):
        found.append(
            (
                f"{manifest.assets.count()} asset(s)",
                reverse("admin:audit_asset_changelist") + f"?manifest__id__exact={manifest.pk}",
            )
        )
    if user.has_perm("audit.view_reviewflag"):
        open_flags = manifest.review_flags.filter(
            status__in=[ReviewFlag.Status.OPEN, ReviewFlag.Status.REEXTRACTION_REQUESTED]
        ).count()
        found.append(
            (
                f"{open_flags} open flag(s)",
                reverse("admin:audit_reviewflag_changelist") + f"?manifest__id__exact={manifest.pk}",
            )
        )
    if user.has_perm("audit.view_case"):
        cases = Case.objects.filter(case_map__manifest=manifest).count()
        found.append(
            (
                f"split into {cases} case(s)" if cases else "not split into cases",  # a case label is not a case
                reverse("admin:audit_case_changelist") + f"?case_map__manifest__id__exact={manifest.pk}",
            )
        )
    return found


def state(job: Job, user) -> dict:
    """What the job page shows about the job's progress, as live.js polls it (see static/portal/live.js)."""
    attempts = list(job.attempts.order_by("number"))
    verification = verification_state.of_manifest(Manifest.objects.filter(job=job).first(), user)
    context = {
        "job": job,
        "reason": reason(job, attempts[-1] if attempts else None) + verified(verification),
        "verification": verification,
        "timeline": timeline(attempts),
        "links": links(job, user),
        "milestones": milestones(job),
    }
    return {
        "final": job.is_terminal,
        "text": {"title": str(job), "status": job.status, "reason": context["reason"]},
        "html": {
            "timeline": render_to_string("audit/job_page/timeline.html", context),
            "links": render_to_string("audit/job_page/links.html", context),
            "verification": render_to_string("audit/includes/verification.html", context),
        },
    }


def verified(verification: verification_state.Verification | None) -> str:
    """A completed job's evidence found wrong later: the reason says so, not only that it was written and signed."""
    if verification is None or not verification.has_open_findings:
        return ""
    return (
        f" But verification run {verification.run_id} ({display.timestamp(verification.at)}) left "
        f"{verification.open_findings} finding(s) about its evidence open."
    )


def milestones(job: Job) -> list[tuple[str, str]]:
    """The times that split a job's life into queue wait, extraction and manifest writing."""
    return [
        ("enqueued", display.timestamp(job.enqueued_at)),
        ("picked up", _after(job.picked_up_at, job.enqueued_at, "queue wait")),
        ("submitted", display.timestamp(job.submitted_at)),
        ("provider finished", _after(job.provider_finished_at, job.submitted_at, "extraction")),
        ("manifest durable", _after(job.manifest_durable_at, job.provider_finished_at, "manifest write")),
        ("provider job id", job.provider_job_id or "–"),
        ("peak temp size", display.size(job.temp_peak_bytes)),
    ]


def _after(at, since, what: str) -> str:
    if not at:
        return "–"
    return f"{display.timestamp(at)} ({what} {display.duration(at - since)})" if since else display.timestamp(at)
