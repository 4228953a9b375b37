"""The transparency log in the HTTP API (mounted in portal/api.py): read-only, for auditors and witnesses.

The latest checkpoint and consistency proofs name only tree sizes and hashes, so they need no token: a
witness outside the operator's control must be able to ask. An inclusion proof names a manifest, so it
is answered to the accounts that may read that manifest.
"""

import re
from typing import Annotated

from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema
from pydantic import BeforeValidator, Field

from audit.api import visible_to
from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import proofs, tlog, witnessing
from audit.ledger.proofs import b64
from audit.models import LogCheckpoint
from core.api import RowId, error_body, unknown_parameters_refusal

router = Router(tags=["transparency log"])
ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
RETRY = {"type": "integer", "minimum": 1}
PROOF_HASHES = {"type": "array", "items": {"type": "string", "format": "byte"}}
DECIMAL = re.compile(r"[1-9][0-9]{0,18}")


def decimal_only(value):
    """A tree size in a query is decimal digits alone: " 1", "+1", "01" or "1.0" is refused, never read as 1
    (a witness that sent one of them has a bug worth hearing about)."""
    if isinstance(value, str) and not DECIMAL.fullmatch(value):
        raise ValueError("a tree size is written in decimal digits only: no sign, space, point or leading zero")
    return value


Size = Annotated[int, BeforeValidator(decimal_only), Field(ge=1, le=2**63 - 1)]


def refused(status: int, code: str, message: str, parameter: str = "") -> JsonResponse:
    return JsonResponse(error_body(code, message, parameter=parameter), status=status)


CHECKPOINT = {
    200: {
        "description": "The newest signed checkpoint: a C2SP tlog-checkpoint signed note (origin, tree size, "
        "base64 root hash, then the Ed25519 signature line), then the cosignature lines (C2SP tlog-cosignature) of "
        "the witnesses that have cosigned it so far.",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    },
    400: {"description": "A query parameter: this endpoint takes none.", **ERROR},
    404: {"description": "No checkpoint has been signed yet.", **ERROR},
    429: {"description": "Too many requests from this address.", **ERROR},
}


@router.get(
    "/log/checkpoint", auth=None, summary="The log's latest signed checkpoint", openapi_extra={"responses": CHECKPOINT}
)
def latest_checkpoint(request):
    if unknown := unknown_parameters_refusal(request, set()):
        return JsonResponse(unknown, status=400)
    checkpoint = log_checkpoints.latest()
    if checkpoint is None:
        return refused(404, "not_found", "No log checkpoint has been signed yet.")
    return HttpResponse(witnessing.cosigned_note(checkpoint).encode(), content_type="text/plain; charset=utf-8")


class Sizes(Schema):
    first: Size
    second: Size


CONSISTENCY = {
    200: {
        "description": "RFC 9162 consistency proof: the tree of `first` leaves is a prefix of the tree of `second`.",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"first": {"type": "integer"}, "second": {"type": "integer"}, "proof": PROOF_HASHES},
                    "required": ["first", "second", "proof"],
                }
            }
        },
    },
    400: {
        "description": "Sizes not decimal digits alone, not 1 <= first <= second <= the latest checkpoint's size, "
        "or a query parameter other than first and second.",
        **ERROR,
    },
    429: {"description": "Too many requests from this address.", **ERROR},
}


@router.get(
    "/log/consistency",
    auth=None,
    summary="A consistency proof between two tree sizes",
    openapi_extra={"responses": CONSISTENCY},
)
def consistency(request, sizes: Query[Sizes]):
    if unknown := unknown_parameters_refusal(request, {"first", "second"}):
        return JsonResponse(unknown, status=400)
    newest = log_checkpoints.latest()
    if newest is None or not sizes.first <= sizes.second <= newest.tree_size:
        limit = newest.tree_size if newest else 0
        message = f"Ask for 1 <= first <= second <= {limit} (the latest checkpoint's size)."
        return refused(400, "bad_request", message, "second" if sizes.second > limit else "first")
    proof = tlog.tree(sizes.second, firsts=[sizes.first]).consistency_proof(sizes.first)
    return {"first": sizes.first, "second": sizes.second, "proof": b64(proof)}


class TreeSize(Schema):
    tree_size: Size | None = None


INCLUSION = {
    200: {
        "description": "RFC 9162 inclusion proof of the manifest's leaf (SHA-256 of 0x00 and its canonical bytes) "
        "in the tree of the signed checkpoint given beside it.",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "manifest": {"type": "integer"},
                        "leaf_index": {"type": "integer"},
                        "tree_size": {"type": "integer"},
                        "leaf_hash": {"type": "string", "format": "byte"},
                        "proof": PROOF_HASHES,
                        "checkpoint": {"type": "string"},
                    },
                    "required": ["manifest", "leaf_index", "tree_size", "leaf_hash", "proof", "checkpoint"],
                }
            }
        },
    },
    400: {"description": "The id or tree size is not a number.", **ERROR},
    401: {"description": "No valid service-account token.", **ERROR},
    404: {"description": "No such manifest, not one of this account's, or no checkpoint of that size.", **ERROR},
    409: {
        "description": "`not_checkpointed`: no signed checkpoint holds the manifest yet. Without `tree_size`, "
        "asking signs one (at most one a minute): Retry-After says when to ask again. With a `tree_size` "
        "whose checkpoint does not hold the manifest, ask without one.",
        "headers": {"Retry-After": {"description": "Seconds to wait (asked without `tree_size`).", "schema": RETRY}},
        **ERROR,
    },
    429: {"description": "Too many requests for this service account.", **ERROR},
    507: {"description": "`storage_unavailable`: the checkpoint signed on demand could not be stored.", **ERROR},
}


@router.get(
    "/manifests/{manifest_id}/inclusion-proof",
    summary="A manifest's inclusion proof",
    openapi_extra={"responses": INCLUSION},
)
def inclusion_proof(request, manifest_id: RowId, size: Query[TreeSize]):
    """Without `tree_size`, in the newest checkpoint, which is signed now when none holds the manifest yet."""
    manifest = get_object_or_404(visible_to(request.auth).select_related("log_leaf"), pk=manifest_id)
    leaf = getattr(manifest, "log_leaf", None)
    if size.tree_size:
        checkpoint = LogCheckpoint.objects.filter(tree_size=size.tree_size).first()
        if checkpoint is None:
            return refused(404, "not_found", f"No log checkpoint of size {size.tree_size} exists.", "tree_size")
    elif leaf is not None and (wait := _checkpoint_holding(leaf.index)):
        answer = refused(409, "not_checkpointed", f"No signed checkpoint holds this manifest yet; ask in {wait} s.")
        answer["Retry-After"] = str(wait)
        return answer
    else:
        checkpoint = log_checkpoints.latest()
    proof = proofs.inclusion(leaf, checkpoint) if leaf is not None and checkpoint is not None else None
    if proof is None:
        message = "That checkpoint does not hold this manifest; ask without tree_size."
        answer = refused(409, "not_checkpointed", message, "tree_size" if size.tree_size else "")
        answer["Retry-After"] = str(log_checkpoints.ON_DEMAND_SECONDS)  # a newer checkpoint may hold it by then
        return answer
    return {"manifest": manifest.pk, **proof}


def _checkpoint_holding(index: int) -> int:
    """0 once a checkpoint holds the leaf at `index` (signing one on demand), else the seconds to wait."""
    newest = log_checkpoints.latest()
    if newest is not None and newest.tree_size > index:
        return 0
    return log_checkpoints.sign_on_demand()
