"""Manifests, assets, verification runs, findings and checkpoints: viewable, never editable."""

import json
from functools import partial

from django.contrib import admin
from django.db import transaction
from django.db.models import Count, Exists, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils.html import format_html

from audit.admin.actions import export_evidence_action, export_evidence_with_assets_action
from audit.admin.exports import ExportableList
from audit.ledger import activity_records
from audit.models import Asset, Checkpoint, Finding, Manifest, RetentionEvent, ReviewFlag, SigningKey
from audit.verification import verify  # noqa: F401  (it registers its pages)
from audit.views import REVIEW_PAGE_PERMISSIONS
from core import broker, display
from core.admin_base import ReadOnlyAdmin, ReadOnlyInline
from core.admin_filters import DateRangeFilter
from extraction.models import Bundle
from extraction.search import NamedSearch, case_label_filter
from extraction.visibility import through_jobs

from .finding_answers import AnswerFilter, FindingAnswersAdmin
from .verified import OpenFindingsFilter, VerifiedColumn


class RetentionEventInline(ReadOnlyInline):
    """Every deletion (or block) next to the manifest it concerns: manifests outlive their outputs."""

    model = RetentionEvent
    fields = ("at", "what", "outcome", "policy", "files", "bytes_freed")
    readonly_fields = fields


class AssetInline(ReadOnlyInline):
    model = Asset
    fields = (
        "stored_as",
        "short_sha256",
        "size_shown",
        "content_type",
        "width",
        "height",
        "placed_at",
        "attempt_number",
        "download",
    )
    readonly_fields = fields

    def get_queryset(self, request):
        # Each row is headed by the asset's name, which is its bundle's file name: one join, not three queries a row.
        return super().get_queryset(request).select_related("manifest__job__bundle").prefetch_related("placements")

    @admin.display(description="image")
    def stored_as(self, asset):
        return display.named(f"page {asset.page} (index {asset.index_on_page})", asset.name)

    @admin.display(description="sha256")
    def short_sha256(self, asset):
        return display.short_id(asset.sha256)

    @admin.display(description="file")
    def download(self, asset):
        return format_html('<a href="{}">download</a>', reverse("download-asset", args=[asset.pk]))

    @admin.display(description="size")
    def size_shown(self, asset):
        return display.size(asset.size)

    @admin.display(description="drawn on")
    def placed_at(self, asset):
        return "; ".join(f"page {p.page} (index {p.index_on_page})" for p in asset.placements.all())


@admin.register(Asset)
class AssetAdmin(NamedSearch, ExportableList, ReadOnlyAdmin):
    """Every stored image, newest first, by its bundle's file name; found by its bundle's names or its exact sha256."""

    export_fields = (
        "id",
        "manifest__sequence",
        "manifest__job__bundle__original_filename",
        "manifest__job__bundle__case_label",
        "page",
        "index_on_page",
        "name",
        "sha256",
        "size",
        "width",
        "height",
        "content_type",
        "attempt_number",
    )

    list_display = (
        "image",
        "manifest",
        "page",
        "index_on_page",
        "content_type",
        "width",
        "height",
        "size_shown",
        "created_at",
    )
    list_select_related = ("manifest__job__bundle",)
    list_filter = (case_label_filter("manifest__job__bundle"), ("created_at", DateRangeFilter))
    bundle_paths, exact_fields = ("manifest__job__bundle",), ("sha256",)
    search_fields = ("manifest__job__bundle__original_filename", "manifest__job__bundle__case_label", "=sha256")
    ordering = ("-id",)  # the primary key's index: the model's ordering would sort a million rows
    show_full_result_count = False
    readonly_fields = [f.name for f in Asset._meta.fields] + ["download"]

    def get_queryset(self, request):
        return through_jobs(request.user, super().get_queryset(request), "manifest__job")

    @admin.display(description="file")
    def download(self, asset):
        return format_html('<a href="{}">download</a>', reverse("download-asset", args=[asset.pk]))

    @admin.display(description="size", ordering="size")
    def size_shown(self, asset):
        return display.size(asset.size)

    @admin.display(description="image", ordering="name")
    def image(self, asset):
        return display.named(str(asset), asset.name)


OPEN_FLAGS = (ReviewFlag.Status.OPEN, ReviewFlag.Status.REEXTRACTION_REQUESTED)


class NeedsReviewFilter(admin.SimpleListFilter):
    """The reviewer's question: which manifests still have a flag being worked on."""

    title, parameter_name = "review", "review"

    def lookups(self, request, model_admin):
        return [("needs", "needs review (open flags)"), ("clear", "no open flag")]

    def queryset(self, request, queryset):
        flagged = ReviewFlag.objects.filter(manifest=OuterRef("pk"), status__in=OPEN_FLAGS)
        if self.value() == "needs":
            return queryset.filter(Exists(flagged))
        if self.value() == "clear":
            return queryset.exclude(Exists(flagged))
        return queryset


@admin.register(Manifest)
class ManifestAdmin(NamedSearch, VerifiedColumn, ExportableList, ReadOnlyAdmin):
    export_fields = (
        "id",
        "sequence",
        "job",
        "job__bundle__original_filename",
        "job__bundle__case_label",
        "correlation_id",
        "extractor",
        "extractor_version",
        "page_count",
        "sha256",
        "key_id",
        "created_at",
    )
    list_display = (
        "sequence",
        "file_name",
        "case_label",
        "short_correlation_id",
        "job_link",
        "page_count",
        "asset_count",
        "open_flags",
        "verified",
        "extractor_version",
        "review_link",
        "created_at",
    )
    list_filter = (
        NeedsReviewFilter,
        OpenFindingsFilter,
        case_label_filter("job__bundle"),
        "job__provider",
        "extractor",
        "extractor_version",
        ("created_at", DateRangeFilter),
    )
    list_select_related = ("job__bundle",)
    bundle_paths, exact_fields = ("job__bundle",), ("sha256",)
    search_fields = ("job__bundle__original_filename", "job__bundle__case_label", "^correlation_id", "=sha256")
    readonly_fields = (
        "verification",
        "sequence",
        "job",
        "schema_version",
        "correlation_id",
        "extractor",
        "extractor_version",
        "page_count",
        "sha256",
        "previous_sha256",
        "signature",
        "key_id",
        "storage_name",
        "created_at",
        "body_indented",
        "download",
        "review_link",
    )
    # The body is shown indented (body_indented): Django's view-only copy of the field was a second, one-line
    # body that pushed the page far wider than the window.
    exclude = ("body",)
    inlines = [AssetInline, RetentionEventInline]
    actions = ["verify_selected", export_evidence_action, export_evidence_with_assets_action]

    def has_export_evidence_permission(self, request):
        return request.user.has_perm("audit.export_evidence")

    def get_list_display(self, request):
        return [f for f in super().get_list_display(request) if f != "review_link" or self._may_review(request)]

    def get_readonly_fields(self, request, obj=None):
        return [f for f in super().get_readonly_fields(request, obj) if f != "review_link" or self._may_review(request)]

    @staticmethod
    def _may_review(request) -> bool:
        """A link is offered only to those whose page would render whole (thumbnails need view_asset)."""
        return request.user.has_perms(REVIEW_PAGE_PERMISSIONS)

    @admin.action(
        description="Start a verification run for the selected manifests' bundles", permissions=["run_verification"]
    )
    def verify_selected(self, request, queryset):
        by = request.user.get_username()
        for bundle_id in sorted(set(queryset.values_list("job__bundle", flat=True))):
            run = verify.start_run(by, bundle=Bundle.objects.get(pk=bundle_id))
            activity_records.record(by, "verification_started", run, after={"scope": run.scope})
            transaction.on_commit(partial(broker.enqueue, "audit.tasks.run_verification", run.pk))
        self.message_user(request, "Verification started; see Audit → Verification runs.")

    def has_run_verification_permission(self, request):
        return request.user.has_perm("audit.run_verification")

    def get_queryset(self, request):
        # A correlated count, not Count("assets"): the admin runs this queryset for its filters
        # too, and a join with GROUP BY reads every asset (bench.admin_scale measures it).
        per_manifest = (
            Asset.objects.filter(manifest=OuterRef("pk"))
            .order_by()
            .values("manifest")
            .annotate(n=Count("pk"))
            .values("n")
        )
        open_flags = (
            ReviewFlag.objects.filter(manifest=OuterRef("pk"), status__in=OPEN_FLAGS)
            .order_by()
            .values("manifest")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return through_jobs(request.user, super().get_queryset(request)).annotate(
            n_assets=Coalesce(Subquery(per_manifest, output_field=IntegerField()), 0),
            n_open_flags=Coalesce(Subquery(open_flags, output_field=IntegerField()), 0),
        )

    @admin.display(description="open flags", ordering="n_open_flags")
    def open_flags(self, manifest):
        return manifest.n_open_flags

    @admin.display(description="file name", ordering="job__bundle__original_filename")
    def file_name(self, manifest):
        return manifest.job.bundle.original_filename or "–"

    @admin.display(description="case label", ordering="job__bundle__case_label")
    def case_label(self, manifest):
        return manifest.job.bundle.case_label or "–"

    @admin.display(description="correlation id", ordering="correlation_id")
    def short_correlation_id(self, manifest):
        return display.short_id(manifest.correlation_id)

    @admin.display(description="assets", ordering="n_assets")
    def asset_count(self, manifest):
        return manifest.n_assets

    @admin.display(description="review")
    def review_link(self, manifest):
        return format_html('<a href="{}">review pages</a>', reverse("review-manifest", args=[manifest.pk]))

    @admin.display(description="body (indented to read; the stored bytes are canonical: download them)")
    def body_indented(self, manifest):
        try:
            shown = json.dumps(json.loads(manifest.body), indent=2, ensure_ascii=False)
        except ValueError:  # a tampered body is shown as it is: verification reports it
            shown = manifest.body
        return format_html('<pre id="manifest-body" style="max-height: 40em; overflow: auto">{}</pre>', shown)

    @admin.display(description="stored manifest file")
    def download(self, manifest):
        return format_html('<a href="{}">download</a>', reverse("download-manifest", args=[manifest.pk]))

    @admin.display(description="job")
    def job_link(self, manifest):
        url = reverse("admin:extraction_job_change", args=[manifest.job_id])
        return format_html('<a href="{}">job {}</a>', url, manifest.job_id)


@admin.register(Finding)
class FindingAdmin(NamedSearch, ExportableList, FindingAnswersAdmin):
    export_fields = (
        "id",
        "run",
        "kind",
        "manifest__sequence",
        "manifest__correlation_id",
        "job",
        "asset__name",
        "name",
        "detail",
        "created_at",
        "response__status",
        "response__acknowledged_by",
        "response__acknowledged_note",
        "response__resolved_by",
        "response__resolved_note",
    )
    list_display = ("id", "run", "kind", "asset_link", "manifest_link", "job", "detail", "answer")
    list_filter = (
        "kind",
        AnswerFilter,
        case_label_filter("manifest__job__bundle", "job__bundle"),
        "run",
        ("created_at", DateRangeFilter),
    )
    # The asset's own path too: each row's checkbox is labelled with the finding's name (Django's action column).
    list_select_related = ("run", "manifest__job__bundle", "asset__manifest__job__bundle", "job__bundle", "response")
    bundle_paths, also_containing = ("manifest__job__bundle", "job__bundle"), ("name",)
    search_fields = ("manifest__job__bundle__original_filename", "job__bundle__case_label", "name")

    @admin.display(description="manifest")
    def manifest_link(self, finding):
        if not finding.manifest_id:
            return "-"
        url = reverse("admin:audit_manifest_change", args=[finding.manifest_id])
        return format_html('<a href="{}">manifest {}</a>', url, finding.manifest.sequence)

    @admin.display(description="file")
    def asset_link(self, finding):
        """The file by its name (the bundle's, and the image's page), its stored name on hover."""
        bundle = finding.manifest.job.bundle if finding.manifest_id else finding.job.bundle if finding.job_id else None
        if not finding.asset_id or bundle is None:
            shown = bundle.file_name if bundle else finding.name.rsplit("/", 1)[-1]
            return display.named(shown, finding.name) if shown else "-"
        # A plain link: a click downloads the image (the stored name is copied from the finding's own page).
        url = reverse("download-asset", args=[finding.asset_id])
        return format_html('<a href="{}" title="{}">{}</a>', url, finding.name, finding.asset.shown_in(bundle))


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = ("chain_length", "short_head", "key_id", "created_at")
    readonly_fields = ("chain_length", "head_sha256", "body", "signature", "key_id", "storage_name", "created_at")

    @admin.display(description="head sha256", ordering="head_sha256")
    def short_head(self, checkpoint):
        return display.short_id(checkpoint.head_sha256)


@admin.register(SigningKey)
class SigningKeyAdmin(ReadOnlyAdmin):
    """The public keys evidence is signed with; the same list is served as JSON at /signing-keys.json."""

    list_display = ("key_id", "algorithm", "public_key", "valid_from", "valid_until")
    readonly_fields = list_display
