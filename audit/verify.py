"""Re-verification: every stored asset re-hashed, every manifest's bytes, signature and chain checked."""

import hashlib
from dataclasses import dataclass

from extraction import stores

from . import manifests
from .models import GENESIS, Asset, Manifest


@dataclass(frozen=True)
class Finding:
    kind: str  # hash_mismatch, missing_output, manifest_changed, bad_signature, chain_break, ...
    manifest_sequence: int | None
    name: str
    detail: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "manifest": self.manifest_sequence, "name": self.name, "detail": self.detail}


def verify_all() -> tuple[list[Finding], dict]:
    """Check every manifest in chain order and every asset it lists; returns findings and counts."""
    findings: list[Finding] = []
    previous = GENESIS
    counts = {"manifests": 0, "assets": 0, "bytes": 0}
    for manifest in Manifest.objects.order_by("sequence").iterator(chunk_size=500):
        findings += check_manifest(manifest, previous)
        previous = manifest.sha256
        counts["manifests"] += 1
    assets = Asset.objects.select_related("manifest").only("name", "sha256", "size", "manifest__sequence")
    for asset in assets.order_by("manifest__sequence", "page", "index_on_page").iterator(chunk_size=2000):
        findings += check_asset(asset)
        counts["assets"] += 1
        counts["bytes"] += asset.size
    return findings, counts


def check_manifest(manifest: Manifest, expected_previous: str) -> list[Finding]:
    seq, name, out = manifest.sequence, manifest.storage_name, []
    body = manifest.body.encode("ascii")
    if hashlib.sha256(body).hexdigest() != manifest.sha256:
        out.append(Finding("manifest_changed", seq, name, "The manifest row's bytes no longer match its sha256."))
    if not manifests.signature_ok(body, manifest.signature, manifest.key_id):
        out.append(Finding("bad_signature", seq, name, f"The HMAC does not verify with key {manifest.key_id!r}."))
    if manifest.previous_sha256 != expected_previous:
        out.append(Finding("chain_break", seq, name, "The previous-manifest hash does not match the chain."))
    try:
        with stores.outputs().open(name, "rb") as fh:
            stored = fh.read()
    except FileNotFoundError:
        return out + [Finding("missing_output", seq, name, "The stored manifest file is missing.")]
    if stored != body:
        out.append(Finding("manifest_changed", seq, name, "The stored manifest file differs from the recorded bytes."))
    return out


def check_asset(asset: Asset) -> list[Finding]:
    seq = asset.manifest.sequence
    try:
        with stores.outputs().open(asset.name, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        return [Finding("missing_output", seq, asset.name, "The asset file is missing from the output store.")]
    if digest != asset.sha256:
        return [Finding("hash_mismatch", seq, asset.name, f"Stored bytes hash to {digest}, manifest says {asset.sha256}.")]
    return []
