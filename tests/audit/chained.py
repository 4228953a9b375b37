"""Manifests as schemas 1-3 wrote them, counted in a hash chain (sequence 1, 2, ... and the previous manifest's
hash) with signed chain checkpoints: what a deployment upgraded to schema 4 still holds, and must keep verifying."""

import hashlib
import importlib
import json

from django.apps import apps
from django.core.files.base import ContentFile
from django.db import connection

from audit.ledger import manifests, signing
from audit.models import GENESIS, Checkpoint, LogLeaf, Manifest, ManifestChain
from core import stores
from tests.conftest import delete_stored, write_stored


def make_chained(rows) -> list[Manifest]:
    """These manifests, in log order, rewritten as the first n of a hash chain: each re-signed at its time with
    sequence 1..n and the previous manifest's hash, its stored file and its leaf replaced, and the chain's head row
    set. Returns them re-read."""
    from .test_tlog import rehash_subtrees  # (test_tlog imports test_verify, which imports this)

    ordered = sorted(rows, key=lambda m: m.log_leaf.index)
    with connection.cursor() as cursor:  # out of the way of sequences 1..n first (they are unique)
        cursor.execute("UPDATE audit_manifest SET sequence = sequence + 1000000")
    previous = GENESIS
    for n, manifest in enumerate(ordered, 1):
        body = json.loads(manifest.body) | {"schema_version": 3, "sequence": n, "previous_sha256": previous}
        raw = manifests.canonical_bytes(body)
        sha256 = hashlib.sha256(raw).hexdigest()
        name = manifests.manifest_name(manifest.job, sha256)
        delete_stored("outputs", manifest.storage_name)
        write_stored("outputs", name, raw)
        Manifest.objects.filter(pk=manifest.pk).update(
            body=raw.decode(),
            sha256=sha256,
            signature=signing.sign(raw, manifest.created_at),
            mldsa_signature="",  # schemas 1-3 are from before ML-DSA-44
            mldsa_key_id="",
            sequence=n,
            schema_version=3,
            previous_sha256=previous,
            storage_name=name,
        )
        LogLeaf.objects.filter(manifest=manifest).update(leaf_hash=_leaf_hash(raw))
        previous = sha256
    with connection.cursor() as cursor:  # the manifests not rewritten keep their leaf index
        cursor.execute(
            "UPDATE audit_manifest SET sequence = sequence - 1000000 WHERE sequence > 1000000",
        )
    ManifestChain.objects.update_or_create(pk=1, defaults={"length": len(ordered), "head_sha256": previous})
    rehash_subtrees()
    return list(Manifest.objects.filter(pk__in=[m.pk for m in ordered]).order_by("sequence"))


def _leaf_hash(raw: bytes) -> str:
    from audit.verifier import merkle

    return merkle.leaf_hash(raw).hex()


def write_chain_checkpoint() -> Checkpoint:
    """A signed checkpoint of the chain's head, as schemas 1-3 wrote them."""
    chain = ManifestChain.objects.get(pk=1)
    statement = {
        "chain_length": chain.length,
        "head_sha256": chain.head_sha256,
        "created_at": manifests.timestamp(Manifest.objects.get(sequence=chain.length).created_at),
        "key_id": signing.current_key_id(),
    }
    body = manifests.canonical_bytes(statement)
    signature = signing.sign(body)
    name = f"checkpoints/checkpoint-{chain.length:09d}.json"
    document = json.dumps({"checkpoint": statement, "signature": signature}, sort_keys=True).encode()
    stores.outputs().save(name, ContentFile(document))
    return Checkpoint.objects.create(
        chain_length=chain.length,
        head_sha256=chain.head_sha256,
        body=body.decode("ascii"),
        signature=signature,
        key_id=statement["key_id"],
        storage_name=name,
    )


def freeze_the_chain() -> None:
    """What the upgrade to schema 4 does (migration 0024), run on this database."""
    importlib.import_module("audit.migrations.0024_one_counter").freeze_the_chain_in_the_ledger(apps, None)
