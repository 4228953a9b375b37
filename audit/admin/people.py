"""Admin for the people workflows: the review queue, retention events, the activity record.

Retention policies have their own module, audit.admin.retention.
"""

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from audit.admin.actions import export_case_evidence_action
from audit.admin.exports import ExportableList
from audit.models import ActivityEvent, Alert, Case, CaseMap, RetentionEvent, ReviewFlag, WebhookDelivery
from audit.review import flags as review
from audit.verification.state import OF_CASES
from core import display
from core.admin_base import ReadOnlyAdmin, ReadOnlyInline
from core.admin_filters import DateRangeFilter
from extraction.intake.rounds import InputGone
from extraction.search import NamedSearch, case_label_filter

from .verified import CaseOpenFindingsFilter, VerifiedColumn


def activity_of(obj):
    """The object's activity events, newest first, for its admin page."""
    events = ActivityEvent.objects.filter(object_type=type(obj).__name__.lower(), object_id=str(obj.pk))
    rows = (
        (display.timestamp(e.at), e.actor, e.action, display.details(e.before), display.details(e.after))
        for e in events
    )
    return (
        format_html(
            "<table>{}</table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )
        if events
        else "-"
    )


@admin.register(ReviewFlag)
class ReviewFlagAdmin(NamedSearch, ExportableList, ReadOnlyAdmin):
    """The review queue: open flags and flags waiting for a re-extraction, oldest first."""

    list_display = (
        "raised_at",
        "status",
        "kind",
        "page_list",
        "file_name",
        "case_label",
        "manifest_review",
        "raised_by",
        "note",
    )
    list_filter = ("status", "kind", case_label_filter("manifest__job__bundle"), ("raised_at", DateRangeFilter))
    list_select_related = ("manifest__job__bundle",)
    export_fields = (
        "id",
        "raised_at",
        "status",
        "kind",
        "pages",
        "manifest__job__bundle__original_filename",
        "manifest__job__bundle__case_label",
        "manifest__sequence",
        "raised_by",
        "note",
        "requested_by",
        "requested_at",
        "reextraction_job",
        "closed_by",
        "closed_at",
    )
    bundle_paths, also_containing = ("manifest__job__bundle",), ("raised_by",)
    search_fields = ("manifest__job__bundle__original_filename", "manifest__job__bundle__case_label", "raised_by")
    ordering = ["raised_at"]
    readonly_fields = (
        "manifest",
        "page_list",
        "kind",
        "note",
        "status",
        "raised_by",
        "raised_at",
        "requested_by",
        "requested_at",
        "reextraction_job",
        "closed_by",
        "closed_at",
        "comparison",
        "activity",
    )
    fields = readonly_fields  # the pages once, as ranges ("3, 7-9"), not the stored list beside them
    actions = ["resolve", "dismiss", "request_reextraction"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return (
            queryset
            if request.GET.get("status__exact") or request.GET.get("q")  # a search looks for closed flags too
            else queryset.filter(status__in=[ReviewFlag.Status.OPEN, ReviewFlag.Status.REEXTRACTION_REQUESTED])
        )

    @admin.display(description="pages")
    def page_list(self, flag):
        return display.page_ranges(flag.pages)

    @admin.display(description="file name", ordering="manifest__job__bundle__original_filename")
    def file_name(self, flag):
        return flag.manifest.job.bundle.original_filename or "–"

    @admin.display(description="case label", ordering="manifest__job__bundle__case_label")
    def case_label(self, flag):
        return flag.manifest.job.bundle.case_label or "–"

    @admin.display(description="manifest")
    def manifest_review(self, flag):
        return format_html(
            '<a href="{}#page-{}">review manifest {}</a>',
            reverse("review-manifest", args=[flag.manifest_id]),
            flag.pages[0] if flag.pages else 1,
            flag.manifest.sequence,
        )

    @admin.display(description="re-extraction compared")
    def comparison(self, flag):
        found = review.comparison(flag)
        return (
            "not available yet"
            if found is None
            else (
                f"manifest {found['manifest']}: {found['added']} added, {found['removed']} removed, "
                f"{found['unchanged']} unchanged"
            )
        )

    def activity(self, flag):
        return activity_of(flag)

    @admin.action(description="Resolve selected flags", permissions=["work"])
    def resolve(self, request, queryset):
        done = sum(review.close(flag, "resolved", request.user.get_username()) for flag in queryset)
        self.message_user(request, f"Resolved {done} flag(s).")

    @admin.action(description="Dismiss selected flags", permissions=["work"])
    def dismiss(self, request, queryset):
        done = sum(review.close(flag, "dismissed", request.user.get_username()) for flag in queryset)
        self.message_user(request, f"Dismissed {done} flag(s).")

    @admin.action(description="Request re-extraction for selected flags", permissions=["reextract"])
    def request_reextraction(self, request, queryset):
        jobs: list[int] = []
        not_open = queryset.exclude(status=ReviewFlag.Status.OPEN).count()
        for flag in queryset.filter(status=ReviewFlag.Status.OPEN):
            try:
                job_id = review.request_reextraction(flag, request.user.get_username()).reextraction_job_id
            except InputGone as exc:
                self.message_user(request, str(exc), messages.ERROR)
                continue
            if job_id is not None:  # None: a request at the same time won the flag and queued the round
                jobs.append(job_id)
        if jobs:
            numbers = ", ".join(str(n) for n in sorted(set(jobs)))
            self.message_user(request, f"Re-extraction queued for {len(jobs)} flag(s): job {numbers}.")
        elif not_open:
            self.message_user(
                request, f"No re-extraction requested: {not_open} selected flag(s) were not open.", messages.WARNING
            )

    def has_work_permission(self, request):
        return request.user.has_perm("audit.change_reviewflag")

    def has_reextract_permission(self, request):
        return request.user.has_perm("audit.request_reextraction")


@admin.register(RetentionEvent)
class RetentionEventAdmin(NamedSearch, ExportableList, ReadOnlyAdmin):
    list_display = ("at", "what", "outcome", "bundle", "manifest", "policy", "files", "freed")
    export_fields = (
        "id",
        "at",
        "what",
        "outcome",
        "bundle__original_filename",
        "bundle__case_label",
        "bundle__correlation_id",
        "manifest__sequence",
        "policy__name",
        "policy__version",
        "files",
        "bytes_freed",
    )
    list_filter = ("what", "outcome", case_label_filter("bundle"), ("at", DateRangeFilter))
    list_select_related = ("bundle", "manifest__job__bundle", "policy")
    search_fields = ("bundle__original_filename", "bundle__case_label", "^bundle__correlation_id")

    @admin.display(description="freed", ordering="bytes_freed")
    def freed(self, event):
        return display.size(event.bytes_freed)


@admin.register(ActivityEvent)
class ActivityEventAdmin(ExportableList, ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "object_type", "object_id", "details")
    export_fields = ("id", "at", "actor", "action", "object_type", "object_id", "before", "after", "sha256")
    list_filter = ("action", "object_type", ("at", DateRangeFilter))
    search_fields = ("actor", "=object_id")
    search_help_text = "Finds an actor by any part of the name, or the object of the exact id given."
    fields = (
        "at",
        "actor",
        "action",
        "object_type",
        "object_id",
        "details_before",
        "details_after",
        "previous_sha256",
        "sha256",
    )
    readonly_fields = fields

    @admin.display(description="details")
    def details(self, event):
        before, after = display.details(event.before), display.details(event.after)
        return f"{before} → {after}" if before and after else (after or before or "–")

    @admin.display(description="before")
    def details_before(self, event):
        return display.details(event.before) or "–"

    @admin.display(description="after")
    def details_after(self, event):
        return display.details(event.after) or "–"


class CaseInline(ReadOnlyInline):
    model = Case
    fields = ("name", "first_page", "last_page", "review_status", "reviewed_by", "reviewed_at")
    readonly_fields = fields


@admin.register(CaseMap)
class CaseMapAdmin(ReadOnlyAdmin):
    list_display = ("id", "manifest", "short_sha256", "created_by", "created_at")
    list_select_related = ("manifest__job__bundle",)

    @admin.display(description="sha256", ordering="sha256")
    def short_sha256(self, case_map):
        return display.short_id(case_map.sha256)

    readonly_fields = (
        "manifest",
        "manifest_sha256",
        "body",
        "sha256",
        "signature",
        "key_id",
        "created_by",
        "created_at",
    )
    inlines = [CaseInline]


@admin.register(Case)
class CaseAdmin(NamedSearch, VerifiedColumn, ReadOnlyAdmin):
    """Each case has its own review status, set by reviewers; its manifest's latest verification beside it."""

    list_display = ("name", "pages", "review_status", "reviewed_by", "file_name", "verified", "review_link")
    list_filter = ("review_status", CaseOpenFindingsFilter)
    readonly_fields = ("verification",)
    verification_paths = OF_CASES
    list_select_related = ("case_map__manifest__job__bundle",)
    bundle_paths, also_containing = ("case_map__manifest__job__bundle",), ("name",)
    search_fields = ("name", "case_map__manifest__job__bundle__original_filename")
    actions = ["mark_reviewed", "mark_needs_attention", export_case_evidence_action]

    def has_export_evidence_permission(self, request):
        return request.user.has_perm("audit.export_evidence")

    def manifest_of(self, case):
        return case.case_map.manifest

    @admin.display(description="pages", ordering="first_page")
    def pages(self, case):
        return display.page_ranges(range(case.first_page, case.last_page + 1))

    @admin.display(description="file name", ordering="case_map__manifest__job__bundle__original_filename")
    def file_name(self, case):
        return case.case_map.manifest.job.bundle.original_filename or "–"

    @admin.display(description="review")
    def review_link(self, case):
        return format_html(
            '<a href="{}#page-{}">review pages</a>',
            reverse("review-manifest", args=[case.case_map.manifest_id]),
            case.first_page,
        )

    def lookup_allowed(self, lookup, value, request=None):
        return lookup == "case_map__manifest__id__exact" or super().lookup_allowed(lookup, value, request)

    @admin.action(description="Mark selected cases reviewed", permissions=["review"])
    def mark_reviewed(self, request, queryset):
        for case in queryset:
            case.mark_reviewed(Case.Status.REVIEWED, request.user.get_username())

    @admin.action(description="Mark selected cases as needing attention", permissions=["review"])
    def mark_needs_attention(self, request, queryset):
        for case in queryset:
            case.mark_reviewed(Case.Status.NEEDS_ATTENTION, request.user.get_username())

    def has_review_permission(self, request):
        return request.user.has_perm("audit.change_case")


class WebhookDeliveryInline(ReadOnlyInline):
    model = WebhookDelivery
    fields = ("attempt", "at", "url", "status_code", "delivered", "error")
    readonly_fields = fields


@admin.register(Alert)
class AlertAdmin(ExportableList, ReadOnlyAdmin):
    """Open alerts first; acknowledging one lets the same problem alert again later."""

    export_fields = (
        "id",
        "kind",
        "status",
        "message",
        "occurrences",
        "first_seen",
        "last_seen",
        "acknowledged_by",
        "acknowledged_at",
        "link",
    )

    list_display = ("last_seen", "status", "kind", "message", "occurrences", "where", "acknowledged_by")
    list_filter = ("status", "kind", ("last_seen", DateRangeFilter))
    search_fields = ("message",)
    search_help_text = "Finds any words of an alert's message: a file name, a case, a job or run number."
    readonly_fields = (
        "kind",
        "key",
        "message",
        "where",
        "status",
        "occurrences",
        "first_seen",
        "last_seen",
        "acknowledged_by",
        "acknowledged_at",
    )
    inlines = [WebhookDeliveryInline]
    actions = ["acknowledge"]

    @admin.display(description="link")
    def where(self, alert):
        return format_html('<a href="{}">open</a>', alert.link)

    @admin.action(description="Acknowledge selected alerts", permissions=["view"])
    def acknowledge(self, request, queryset):
        done = sum(alert.acknowledge(request.user.get_username()) for alert in queryset)
        self.message_user(request, f"Acknowledged {done} alert(s).")
