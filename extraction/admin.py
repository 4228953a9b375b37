"""Declarative admin for bundles, jobs (attempts inline) and rejections; uploads go through intake."""

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from core import display
from core.admin_base import ReadOnlyAdmin, ReadOnlyInline
from core.admin_filters import DateRangeFilter
from core.logs import carry

from .admin_accounts import BundleAccessInline  # and registers service accounts and their tokens
from .intake import admin as intake_admin  # noqa: F401  (registers submissions and the page an upload lands on)
from .intake import staging
from .intake.policy import DEFAULTS
from .intake.validation import TooLarge
from .kill_switch import set_submissions
from .models import Attempt, Bundle, ClusterHeartbeat, IntakePolicy, Job, Rejection, SubmissionSwitch, WorkerVersions
from .reconciler import replay_unknown
from .search import NamedSearch, case_label_filter
from .uploads import too_large
from .visibility import bundles as visible_bundles
from .visibility import jobs as visible_jobs
from .visibility import rejections as visible_rejections
from .webhooks import admin as webhooks_admin  # noqa: F401  (registers webhook events)


class UploadForm(forms.Form):
    # An empty file reaches intake, which refuses it as `empty` with a Rejection, in the product's words.
    file = forms.FileField(
        allow_empty_file=True, help_text="A PDF bundle. It is checked from its bytes before any job exists."
    )
    case_label = forms.CharField(required=False, max_length=200)


class JobInline(ReadOnlyInline):
    model = Job
    fields = ("status", "provider", "extractor_version", "enqueued_at", "manifest_durable_at", "error_code")
    readonly_fields = fields
    show_change_link = True


class BundleAdmin(NamedSearch):
    """Not registered here: the project registers it with the latest verification of the bundle's evidence, which
    is audit's (audit.admin.bundles, portal/admin.py)."""

    list_display = (
        "original_filename",
        "case_label",
        "short_correlation_id",
        "page_count",
        "size_shown",
        "submitted_by",
        "created_at",
        "input_deleted_at",
    )
    list_filter = (case_label_filter(""), ("created_at", DateRangeFilter), "mime")
    bundle_paths = ("",)
    search_fields = ("original_filename", "case_label", "submitted_by", "^correlation_id")  # as NamedSearch reads them
    readonly_fields = [f.name if f.name != "size" else "size_shown" for f in Bundle._meta.fields] + ["input_download"]
    inlines = [JobInline, BundleAccessInline]

    @admin.display(description="correlation id", ordering="correlation_id")
    def short_correlation_id(self, bundle):
        return display.short_id(bundle.correlation_id)

    @admin.display(description="size", ordering="size")
    def size_shown(self, bundle):
        return display.size(bundle.size)

    @admin.display(description="input PDF")
    def input_download(self, bundle):
        if bundle.input_deleted_at:
            return f"deleted under its retention policy at {display.timestamp(bundle.input_deleted_at)}"
        return format_html('<a href="{}" id="input-download">download</a>', reverse("download-input", args=[bundle.pk]))

    def get_readonly_fields(self, request, obj=None):
        shown = super().get_readonly_fields(request, obj)
        return (
            shown if request.user.has_perm("extraction.download_input") else [f for f in shown if f != "input_download"]
        )

    def get_queryset(self, request):
        return visible_bundles(request.user, super().get_queryset(request))

    def has_add_permission(self, request):
        return request.user.has_perm("extraction.submit_bundle")

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def add_view(self, request, form_url="", extra_context=None):
        """Upload a bundle: the bytes are staged and the upload lands on its submission's page, which follows
        the intake worker's decision (the job, or the refusal)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        status = 200
        try:
            form = UploadForm(request.POST or None, request.FILES or None)
            if cut_off := too_large(request):
                refusal = staging.refuse_cut_off(*cut_off, submitted_by=request.user.get_username())
                form.is_valid()  # the file never arrived; say why instead of "this field is required"
                form.errors["file"] = form.error_class([f"Refused ({refusal.code}): {refusal.message}"])
            elif request.method == "POST" and form.is_valid():
                submission = self.receive(request, form)
                if submission is not None:
                    return redirect(reverse("admin:extraction_submission_status", args=[submission.pk]))
        except OSError:  # the temp area is full or read-only; stage() removed what it had written
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
            staging.refuse_not_staged("", declared, submitted_by=request.user.get_username())
            form = UploadForm()
            form.is_valid()
            form.errors["file"] = form.error_class([STORAGE_UNAVAILABLE])
            status = 507
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "opts": self.model._meta,
            "title": "Upload a PDF bundle",
        }
        return TemplateResponse(request, "admin/extraction/bundle/upload.html", context, status=status)

    def receive(self, request, form):
        """The pending submission, or None with the refusal on the form (too large, empty)."""
        upload, who = form.cleaned_data["file"], request.user.get_username()
        try:
            staged = staging.stage(upload, filename=upload.name, submitted_by=who)
        except TooLarge as refusal:  # recorded as it was cut off
            form.add_error("file", f"Refused ({refusal.code}): {refusal.message}")
            return None
        carry(staged.sha256)  # this request's later lines, the access line included, name the upload
        submission = staging.receive(
            staged, filename=upload.name, submitted_by=who, case_label=form.cleaned_data["case_label"]
        )
        if submission.is_decided:
            form.add_error("file", f"Refused ({submission.error_code}): {submission.error_message}")
            return None
        return submission


NOT_STORED = (
    "Pagetrail could not store the upload now (its temp area is full or unavailable); nothing was kept. "
    "Try again later, or tell an operator."
)
STORAGE_UNAVAILABLE = f"Not stored (storage_unavailable): {NOT_STORED}"


class AttemptInline(ReadOnlyInline):
    """Every try as recorded (the page's timeline above collapses repeats); folded away until asked for."""

    model = Attempt
    fields = (
        "number",
        "kind",
        "target",
        "outcome",
        "http_status",
        "retry_after_s",
        "error_code",
        "error_message",
        "worker",
        "started_at",
        "finished_at",
    )
    readonly_fields = fields
    classes = ["collapse"]


class JobAdmin(NamedSearch, ReadOnlyAdmin):
    """Jobs by file name and case label. Not registered here: the page adds a story from the evidence app, and the
    project registers that page (portal/admin.py)."""

    list_display = (
        "id",
        "status",
        "file_name",
        "case_label",
        "pages",
        "short_correlation_id",
        "provider",
        "enqueued_at",
        "queue_wait_shown",
        "extraction_time_shown",
        "error_code",
    )
    list_filter = (
        "status",
        "provider",
        case_label_filter("bundle"),
        "extractor_version",
        ("enqueued_at", DateRangeFilter),
    )
    list_select_related = ("bundle",)
    search_fields = (
        "bundle__original_filename",
        "bundle__case_label",
        "bundle__submitted_by",
        "^bundle__correlation_id",
    )
    exact_fields = ("idempotency_key", "provider_job_id")
    # What never changes; the state, its times and errors are the story above the fields (audit.admin.jobs),
    # which the page keeps current. Not the claim token, its holder or its lease: the workers' business.
    readonly_fields = (
        "bundle",
        "provider",
        "extractor",
        "extractor_version",
        "generation",
        "idempotency_key",
        "deadline",
    )
    fields = readonly_fields
    inlines = [AttemptInline]
    actions = ["replay_unknown_jobs"]

    @admin.display(description="file name", ordering="bundle__original_filename")
    def file_name(self, job):
        return job.bundle.original_filename or "–"

    @admin.display(description="case label", ordering="bundle__case_label")
    def case_label(self, job):
        return job.bundle.case_label or "–"

    @admin.display(description="pages", ordering="bundle__page_count")
    def pages(self, job):
        return job.bundle.page_count

    @admin.display(description="queue wait")
    def queue_wait_shown(self, job):
        return display.duration(job.queue_wait)

    @admin.display(description="extraction time")
    def extraction_time_shown(self, job):
        return display.duration(job.extraction_time)

    @admin.action(description="Replay selected unknown jobs (same provider job id and key)", permissions=["replay"])
    def replay_unknown_jobs(self, request, queryset):
        self.message_user(request, f"Woke {replay_unknown(queryset)} unknown job(s); other states were left alone.")

    def get_queryset(self, request):
        return visible_jobs(request.user, super().get_queryset(request))

    def has_replay_permission(self, request):
        return request.user.has_perm("extraction.replay_job")

    @admin.display(description="correlation id", ordering="bundle__correlation_id")
    def short_correlation_id(self, job):
        return display.short_id(job.bundle.correlation_id)


@admin.register(Rejection)
class RejectionAdmin(NamedSearch, ReadOnlyAdmin):
    list_display = ("created_at", "code", "original_filename", "size_shown", "submitted_by")
    list_filter = ("code", ("created_at", DateRangeFilter))
    search_fields = ("original_filename", "submitted_by", "^sha256")
    own_names = {"label": "", "digest": "sha256"}  # refused before any bundle: the row names the file itself

    def get_queryset(self, request):
        return visible_rejections(request.user, super().get_queryset(request))

    exclude = ("size",)
    readonly_fields = [*(f.name for f in Rejection._meta.fields if f.name != "size"), "size_shown"]

    @admin.display(description="size", ordering="size")
    def size_shown(self, rejection: Rejection) -> str:
        return display.size(rejection.size)


@admin.register(IntakePolicy)
class IntakePolicyAdmin(ReadOnlyAdmin):
    """Each version of the intake policy, as PAGETRAIL_INTAKE_POLICY made it (intake/policy.py); never edited here."""

    list_display = ("version", "created_at", "changes")
    readonly_fields = ("version", "rules", "created_at")

    @admin.display(description="changes from the defaults")
    def changes(self, version: IntakePolicy) -> str:
        changed = {k: v for k, v in version.rules.items() if DEFAULTS.get(k) != v}
        return ", ".join(f"{k}={v}" for k, v in sorted(changed.items())) or "none"


@admin.register(SubmissionSwitch)
class SubmissionSwitchAdmin(admin.ModelAdmin):
    """The kill switch: edit the one row; saving goes through the service, which wakes waiting jobs."""

    list_display = ("__str__", "reason", "changed_by", "changed_at")
    fields = ("is_open", "reason", "changed_by", "changed_at")
    readonly_fields = ("changed_by", "changed_at")

    def changelist_view(self, request, extra_context=None):
        SubmissionSwitch.current()
        return super().changelist_view(request, extra_context)

    def save_model(self, request, obj, form, change):
        set_submissions(obj.is_open, by=request.user.get_username(), reason=obj.reason)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(WorkerVersions)
class WorkerVersionsAdmin(ReadOnlyAdmin):
    """What each host's workers extract with. Deleting the row of a host that left the deployment lets
    a host with other versions start without waiting for the row to age out (worker_versions.RECENT)."""

    list_display = ("host", "seen_at", "extractor_version")
    readonly_fields = ("host", "versions", "seen_at")
    ordering = ("-seen_at",)

    @admin.display(description="extractor version")
    def extractor_version(self, obj):
        return obj.versions.get("extractor_version", "")

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


@admin.register(ClusterHeartbeat)
class ClusterHeartbeatAdmin(ReadOnlyAdmin):
    """Every qcluster that reported: its queue, host and last report (extraction/cluster_heartbeat.py). Deleting the
    row of a cluster that left for good stops its alert from coming back; a cluster started again adds its row."""

    list_display = ("queue", "host", "pid", "last_seen", "silent_since", "stopped_at", "started_at")
    list_filter = ("queue", "host")
    readonly_fields = list_display
    ordering = ("queue", "host")

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser
