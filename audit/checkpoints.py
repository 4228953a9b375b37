"""Signed checkpoints of the manifest chain's head, kept in the output store beside the manifests."""

import json
from datetime import datetime

from django.core.files.base import ContentFile
from django.utils import timezone

from extraction import stores

from . import manifests, signing
from .models import Checkpoint, Finding, Manifest, ManifestChain

PREFIX = "checkpoints"


def write_checkpoint(at=None) -> Checkpoint | None:
    """Record (length, head hash, time) of the chain, signed; None when the head has not moved."""
    chain = ManifestChain.objects.filter(pk=1).first()
    if chain is None or chain.length == 0 or Checkpoint.objects.filter(chain_length=chain.length).exists():
        return None
    at = at or timezone.now()
    statement = {
        "chain_length": chain.length,
        "head_sha256": chain.head_sha256,
        "created_at": manifests.timestamp(at),
        "key_id": signing.current_key_id(),
    }
    body = manifests.canonical_bytes(statement)
    signature = signing.sign(body, at)
    name = f"{PREFIX}/checkpoint-{chain.length:09d}.json"
    if not stores.outputs().exists(name):
        stores.outputs().save(
            name, ContentFile(json.dumps({"checkpoint": statement, "signature": signature}, sort_keys=True).encode())
        )
    return Checkpoint.objects.create(
        chain_length=chain.length,
        head_sha256=chain.head_sha256,
        body=body.decode("ascii"),
        signature=signature,
        key_id=statement["key_id"],
        storage_name=name,
    )


def stored_names() -> list[str]:
    return list(stores.walk(stores.outputs(), PREFIX))


def check_all(trusted: signing.Trust | None = None) -> list[Finding]:
    """Each checkpoint file in the store must be authentic and agree with today's chain."""
    heads, trusted = dict(Manifest.objects.values_list("sequence", "sha256")), trusted or signing.trust()
    return [finding for name in stored_names() for finding in _check(name, heads, trusted)]


def _check(name: str, heads: dict, trusted: signing.Trust) -> list[Finding]:
    def problem(detail):
        return [Finding(kind=Finding.Kind.CHECKPOINT_MISMATCH, name=name, detail=detail)]

    try:
        with stores.outputs().open(name, "rb") as fh:
            document = json.loads(fh.read())
        statement, signature = document["checkpoint"], document["signature"]
        at = datetime.fromisoformat(statement["created_at"])
    except (ValueError, KeyError, TypeError):
        return problem("The checkpoint file cannot be read.")
    why = signing.signature_problem(
        manifests.canonical_bytes(statement), signature, statement.get("key_id", ""), trusted, at
    )
    if why:
        return problem(f"The checkpoint's signature does not count: {why}")
    if heads.get(statement["chain_length"]) != statement["head_sha256"]:
        return problem(
            f"The chain no longer matches this checkpoint: manifest {statement['chain_length']} "
            f"should hash to {statement['head_sha256'][:16]}… (the database was rewritten)."
        )
    return []
