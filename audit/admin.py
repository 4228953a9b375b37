"""Manifests and assets: viewable, never editable."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from extraction.admin import ReadOnlyAdmin, ReadOnlyInline

from .models import Asset, Manifest


class AssetInline(ReadOnlyInline):
    model = Asset
    fields = ("name", "sha256", "size", "content_type", "width", "height", "placed_at", "attempt_number",
              "download")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("placements")

    @admin.display(description="file")
    def download(self, asset):
        return format_html('<a href="{}">download</a>', reverse("download-asset", args=[asset.pk]))

    @admin.display(description="placements (page.index)")
    def placed_at(self, asset):
        return ", ".join(f"{p.page}.{p.index_on_page}" for p in asset.placements.all())


@admin.register(Manifest)
class ManifestAdmin(ReadOnlyAdmin):
    list_display = ("sequence", "correlation_id", "job_link", "extractor_version", "asset_count", "created_at")
    list_filter = ("extractor", "extractor_version", "created_at")
    list_select_related = ("job",)
    search_fields = ("=correlation_id", "=sha256")
    readonly_fields = ("sequence", "job", "schema_version", "correlation_id", "extractor", "extractor_version",
                       "input_sha256", "page_count", "sha256", "previous_sha256", "signature", "key_id",
                       "storage_name", "created_at", "body", "download")
    inlines = [AssetInline]
    date_hierarchy = "created_at"

    def get_queryset(self, request):
        from django.db.models import Count

        return super().get_queryset(request).annotate(n_assets=Count("assets"))

    @admin.display(description="assets", ordering="n_assets")
    def asset_count(self, manifest):
        return manifest.n_assets

    @admin.display(description="stored manifest file")
    def download(self, manifest):
        return format_html('<a href="{}">download</a>', reverse("download-manifest", args=[manifest.pk]))

    @admin.display(description="job")
    def job_link(self, manifest):
        url = reverse("admin:extraction_job_change", args=[manifest.job_id])
        return format_html('<a href="{}">job {}</a>', url, manifest.job_id)
