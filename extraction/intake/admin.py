"""Submissions in the admin: the page an upload lands on (it follows the intake worker's decision by itself),
and the list of every submission for operators."""

from django.contrib import admin
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from core import display
from core.admin_base import ReadOnlyAdmin
from core.admin_filters import DateRangeFilter

from ..models import SubmissionSwitch
from ..search import NamedSearch
from .submission import Submission


def outcome_of(submission: Submission) -> dict:
    """What the status page shows, also as the JSON that static/portal/live.js polls until it is final."""
    if submission.state == Submission.State.ACCEPTED:
        return _outcome(submission, _accepted_text(submission), _job_link(submission.job_id))
    if submission.state == Submission.State.REFUSED:
        again = " You may send it again later." if submission.retryable else ""
        return _outcome(submission, f"Refused ({submission.error_code}): {submission.error_message}{again}")
    return _outcome(submission, "Waiting for the intake worker to check the file. This page updates by itself.")


def _outcome(submission: Submission, text: str, link: str = "") -> dict:
    shown = "duplicate" if submission.state == Submission.State.ACCEPTED and not submission.created else None
    return {
        "final": submission.state != Submission.State.PENDING,
        "text": {"state": shown or submission.state, "text": text},
        "html": {"link": link},
    }


def _accepted_text(submission: Submission) -> str:
    if submission.created:
        return f"Accepted: job {submission.job_id}.{_switch_note()}"
    # The same bytes again: no new job, and the uploader must not think a second extraction started.
    return (
        f"A duplicate: these bytes had been accepted before, as job {submission.job_id} (no new job).{_switch_note()}"
    )


def _job_link(job_id: int | None) -> str:  # an accepted submission always names its job
    return format_html('<a href="{}">Open job {}</a>', reverse("admin:extraction_job_change", args=[job_id]), job_id)


def _switch_note() -> str:
    """An accepted upload waits while submissions to providers are stopped: say so, not just "Accepted"."""
    switch = SubmissionSwitch.current()
    if switch.is_open:
        return ""
    why = f" ({switch.reason})" if switch.reason else ""
    return f" Submissions to providers are stopped{why}: the job waits in the queue until they are started again."


SHOWN_OTHERWISE = ("retryable", "size")


@admin.register(Submission)
class SubmissionAdmin(NamedSearch, ReadOnlyAdmin):
    list_display = (
        "id",
        "state",
        "original_filename",
        "size_shown",
        "submitted_by",
        "error_code",
        "tries",
        "created_at",
        "decided_at",
    )
    list_filter = ("state", "error_code", ("created_at", DateRangeFilter))
    search_fields = ("original_filename", "case_label", "submitted_by", "^sha256")
    own_names = {"digest": "sha256"}  # pending or refused: no bundle yet, the submission names the file itself
    # "retryable" reads as a word of ours: said in a sentence instead, and only of a refusal; the size for a person.
    exclude = SHOWN_OTHERWISE
    readonly_fields = [*(f.name for f in Submission._meta.fields if f.name not in SHOWN_OTHERWISE), "size_shown"]
    readonly_fields += ["send_again"]

    @admin.display(description="size", ordering="size")
    def size_shown(self, submission: Submission) -> str:
        return display.size(submission.size)

    @admin.display(description="May it be sent again?")
    def send_again(self, submission: Submission) -> str:
        if submission.state != Submission.State.REFUSED:
            return "–"
        if submission.retryable:
            return "Yes: it was refused for a fault of this machine, not of the file."
        return "No: the file itself was refused; the same bytes will be refused again."

    def get_urls(self):
        return [
            path(
                "<int:submission_id>/status/",
                self.admin_site.admin_view(self.status_view),
                name="extraction_submission_status",
            ),
            path(
                "<int:submission_id>/status.json",
                self.admin_site.admin_view(self.status_json),
                name="extraction_submission_status_json",
            ),
            *super().get_urls(),
        ]

    def own_submission(self, request, submission_id: int) -> Submission:
        """An uploader sees their own submissions; another's is not there for them (404, as in the API)."""
        if not request.user.has_perm("extraction.submit_bundle"):
            raise Http404
        submission = get_object_or_404(Submission, pk=submission_id)
        if submission.submitted_by != request.user.get_username() and not request.user.is_superuser:
            raise Http404
        return submission

    def status_view(self, request, submission_id: int):
        submission = self.own_submission(request, submission_id)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "submission": submission,
            "outcome": outcome_of(submission),
            "title": f"Upload of {submission.original_filename or 'a file'}",
        }
        return TemplateResponse(request, "admin/extraction/submission/status.html", context)

    def status_json(self, request, submission_id: int):
        return JsonResponse(outcome_of(self.own_submission(request, submission_id)))
