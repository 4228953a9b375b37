"""Permission-checked downloads of stored assets and manifests."""

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from extraction import stores

from .models import Asset, Manifest


@staff_member_required
def download_asset(request, asset_id: int):
    if not request.user.has_perm("audit.view_asset"):
        raise PermissionDenied
    asset = get_object_or_404(Asset, pk=asset_id)
    return stores.attachment(stores.outputs(), asset.name, asset.name.rsplit("/", 1)[1], asset.content_type)


@staff_member_required
def download_manifest(request, manifest_id: int):
    if not request.user.has_perm("audit.view_manifest"):
        raise PermissionDenied
    manifest = get_object_or_404(Manifest, pk=manifest_id)
    return stores.attachment(stores.outputs(), manifest.storage_name, f"manifest-{manifest.sequence}.json",
                             "application/json")
