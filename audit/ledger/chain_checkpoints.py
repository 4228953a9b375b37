"""Signed checkpoints of the hash chain that manifests of schemas 1-3 formed, kept in the output store: none is
written since schema 4 froze the chain (the ledger's checkpoints are checkpoints.py's), and each stays checked."""

import json
from datetime import datetime

from audit.ledger import manifests, signing
from audit.models import Finding, Manifest
from core import stores

PREFIX = "checkpoints"


def stored_names() -> list[str]:
    return list(stores.walk(stores.outputs(), PREFIX))


def check_all(trusted: signing.Trust | None = None) -> list[Finding]:
    """Each checkpoint file in the store must be authentic and agree with today's chain."""
    chained = Manifest.objects.filter(schema_version__lte=manifests.CHAINED)
    heads, trusted = dict(chained.values_list("sequence", "sha256")), trusted or signing.trust()
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
