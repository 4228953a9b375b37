"""Manifests and assets in the HTTP API for upstream services (mounted in portal/api.py)."""

from django.http import HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import get_object_or_404
from ninja import Router

from audit.ledger.manifest_schema import MANIFEST, SHA256
from audit.models import Asset, Manifest
from core import stores
from core.api import IF_NONE_MATCH, NOT_MODIFIED, VALIDATORS, RowId, not_modified, validated
from extraction.models import Job

router = Router(tags=["manifests"])
HEX = {"type": "string", "pattern": "^[0-9a-f]+$"}
SIGNED = {
    "X-Manifest-SHA256": {"description": "The sha256 of the body's bytes.", "required": True, "schema": SHA256},
    "X-Manifest-Signature": {
        "description": "Ed25519 signature of the body's exact bytes, hex (128 digits), by the key X-Manifest-Key-Id "
        "names; its public key is published at /signing-keys.json. 64 digits: an HMAC-SHA256 of a manifest signed "
        "before the move to Ed25519 (its secret is the operator's: an auditor checks it with the offline verifier).",
        "required": True,
        "schema": {**HEX, "minLength": 64, "maxLength": 128},
    },
    "X-Manifest-Key-Id": {"description": "The signing key's id.", "required": True, "schema": {"type": "string"}},
    "X-Manifest-ML-DSA-Signature": {
        "description": "ML-DSA-44 signature of the same bytes, base64 (2420 bytes), by the key "
        "X-Manifest-ML-DSA-Key-Id names, published beside the Ed25519 key at /signing-keys.json. Absent on a "
        "manifest signed before ML-DSA-44.",
        "required": False,
        "schema": {"type": "string"},
    },
    "X-Manifest-ML-DSA-Key-Id": {
        "description": "The ML-DSA-44 key's id (ml-dsa-44-...); absent with the signature.",
        "required": False,
        "schema": {"type": "string"},
    },
}
ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
PRECONDITION = {"description": "`precondition_failed`: an If-Match the bytes' ETag does not match.", **ERROR}
RESPONSES = {
    200: {
        "description": "The canonical manifest bytes (sorted keys, no whitespace, ASCII): verify the Ed25519 "
        "X-Manifest-Signature over them exactly as received, before parsing.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Manifest"}}},
        "headers": {**SIGNED, **VALIDATORS},
    },
    304: NOT_MODIFIED,
    404: {"description": "No such manifest (yet), or not one of this account's.", **ERROR},
    412: PRECONDITION,
}
ASSET_RESPONSES = {
    200: {
        "description": "The stored image's bytes, as extracted, as an attachment.",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        "headers": {
            "X-Asset-SHA256": {
                "description": "Their sha256, as the job's `assets` and its manifest name it.",
                "required": True,
                "schema": SHA256,
            },
            "Content-Disposition": {"description": "attachment, with the file's name.", "schema": {"type": "string"}},
            "X-Content-Type-Options": {"description": "nosniff.", "schema": {"type": "string"}},
            **VALIDATORS,
        },
    },
    304: NOT_MODIFIED,
    404: {"description": "No such asset, or not one of a job this account may read.", **ERROR},
    410: {"description": "`removed`: retention has deleted the stored image; its record stays.", **ERROR},
    412: PRECONDITION,
}
# The body's schema, for the document's components (portal/api.py).
SCHEMAS = {"Manifest": MANIFEST}


def manifest_response(request, manifest: Manifest) -> HttpResponseBase:
    if unchanged := not_modified(request, manifest.sha256, manifest.created_at):
        return unchanged
    response = HttpResponse(manifest.body.encode("ascii"), content_type="application/json")
    response["X-Manifest-SHA256"], response["X-Manifest-Signature"] = manifest.sha256, manifest.signature
    response["X-Manifest-Key-Id"] = manifest.key_id
    if manifest.mldsa_key_id:
        response["X-Manifest-ML-DSA-Signature"] = manifest.mldsa_signature
        response["X-Manifest-ML-DSA-Key-Id"] = manifest.mldsa_key_id
    return validated(response, manifest.sha256, manifest.created_at)


@router.get(
    "/manifests/{manifest_id}",
    summary="A manifest's canonical bytes",
    openapi_extra={"parameters": [IF_NONE_MATCH], "responses": RESPONSES},
)
def get_manifest(request, manifest_id: RowId):
    """The manifest's exact signed bytes: X-Manifest-Signature is an Ed25519 signature over them by the key
    X-Manifest-Key-Id names, published at /signing-keys.json."""
    return manifest_response(request, get_object_or_404(visible_to(request.auth), pk=manifest_id))


@router.get(
    "/jobs/{job_id}/manifest",
    summary="The manifest of a completed job",
    openapi_extra={"parameters": [IF_NONE_MATCH], "responses": RESPONSES},
)
def get_job_manifest(request, job_id: RowId):
    """As `get_manifest`, found by its job: 404 until the job is completed."""
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
