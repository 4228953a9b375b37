"""Manifests and assets in the HTTP API for upstream services (mounted in portal/api.py)."""

from django.http import HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import get_object_or_404
from ninja import Router

from audit.models import Asset, Manifest
from core import stores
from core.api import IF_NONE_MATCH, NOT_MODIFIED, VALIDATORS, RowId, not_modified, validated
from extraction.models import Job

router = Router(tags=["manifests"])
BYTES = {
    "description": "The canonical manifest bytes. Headers: X-Manifest-SHA256 (their sha256), "
    "X-Manifest-Signature (hex Ed25519; 64 digits: HMAC-SHA256, early manifests), X-Manifest-Key-Id; "
    "ETag (the sha256) and Last-Modified.",
    "content": {"application/json": {"schema": {"type": "object"}}},
    "headers": VALIDATORS,
}
ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
RESPONSES = {
    200: BYTES,
    304: NOT_MODIFIED,
    400: {"description": "The id is not a number.", **ERROR},
    401: {"description": "No valid service-account token.", **ERROR},
    404: {"description": "No such manifest (yet), or not one of this account's.", **ERROR},
    429: {"description": "Too many requests for this service account.", **ERROR},
}
ASSET_RESPONSES = {
    200: {
        "description": "The stored image's bytes, as extracted. Header: X-Asset-SHA256 (their sha256, as the job's "
        "`assets` and its manifest name it).",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        "headers": VALIDATORS,
    },
    304: NOT_MODIFIED,
    400: RESPONSES[400],
    401: RESPONSES[401],
    404: {"description": "No such asset, or not one of a job this account may read.", **ERROR},
    410: {"description": "`removed`: retention has deleted the stored image; its record stays.", **ERROR},
    429: RESPONSES[429],
}


def manifest_response(request, manifest: Manifest) -> HttpResponseBase:
    if unchanged := not_modified(request, manifest.sha256, manifest.created_at):
        return unchanged
    response = HttpResponse(manifest.body.encode("ascii"), content_type="application/json")
    response["X-Manifest-SHA256"], response["X-Manifest-Signature"] = manifest.sha256, manifest.signature
    response["X-Manifest-Key-Id"] = manifest.key_id
    return validated(response, manifest.sha256, manifest.created_at)


@router.get(
    "/manifests/{manifest_id}",
    summary="A manifest's canonical bytes",
    openapi_extra={"parameters": [IF_NONE_MATCH], "responses": RESPONSES},
)
def get_manifest(request, manifest_id: RowId):
    return manifest_response(request, get_object_or_404(visible_to(request.auth), pk=manifest_id))


@router.get(
    "/jobs/{job_id}/manifest",
    summary="The manifest of a completed job",
    openapi_extra={"parameters": [IF_NONE_MATCH], "responses": RESPONSES},
)
def get_job_manifest(request, job_id: RowId):
    return manifest_response(request, get_object_or_404(visible_to(request.auth), job_id=job_id))


@router.get(
    "/assets/{asset_id}",
    summary="An extracted image's bytes",
    openapi_extra={"parameters": [IF_NONE_MATCH], "responses": ASSET_RESPONSES},
)
def get_asset(request, asset_id: RowId):
    """To the accounts that may read the asset's job (the ids are in the job's `assets`), else 404."""
    asset = get_object_or_404(Asset.objects.filter(manifest__in=visible_to(request.auth)), pk=asset_id)
    if not stores.outputs().exists(asset.name):
        message = "Retention has deleted this image's stored bytes; its record and sha256 stay in the manifest."
        return JsonResponse({"error": {"code": "removed", "message": message}}, status=410)
    if unchanged := not_modified(request, asset.sha256, asset.created_at):
        return unchanged
    response = stores.attachment(stores.outputs(), asset.name, asset.name.rsplit("/", 1)[-1], asset.content_type)
    response["X-Asset-SHA256"] = asset.sha256
    return validated(response, asset.sha256, asset.created_at)


def visible_to(account):
    """Manifests of the jobs this account may read; another account's answer 404, like a missing one."""
    return Manifest.objects.filter(job__in=Job.objects.visible_to(account))


def job_evidence(job_ids: list[int]) -> dict[int, dict]:
    """Each job's manifest id and assets, as its API answer names them (registered in extraction.job_evidence)."""
    manifests = Manifest.objects.filter(job_id__in=job_ids).only("pk", "job_id").prefetch_related("assets")
    return {
        manifest.job_id: {"manifest_id": manifest.pk, "assets": [asset_document(a) for a in manifest.assets.all()]}
        for manifest in manifests
    }


def asset_document(asset: Asset) -> dict:
    return {
        "id": asset.pk,
        "name": asset.name,
        "sha256": asset.sha256,
        "size": asset.size,
        "content_type": asset.content_type,
        "url": f"/api/v1/assets/{asset.pk}",
    }
