"""Canonical manifest bytes and the deterministic names of what they list (signatures: signing.py)."""

import re
from datetime import datetime

from audit.verifier.canonical import canonical_bytes

__all__ = ["SCHEMA_VERSION", "asset_name", "canonical_bytes", "manifest_name", "output_prefix", "timestamp"]

# 2: assets say how they were made (colour space, bits, method, stream sha256); input says how it was read.
# 3: extractor.version is the extractor's own version alone (it named pikepdf's too: "3.0+pikepdf.10.18.0");
#    extractor.libraries has the version of every library that wrote the assets (pikepdf, qpdf, Pillow and
#    its codecs, pypdfium2, PDFium, zlib-ng).
# 4: sequence is the manifest's leaf index in the ledger, and there is no previous_sha256: the ledger alone says
#    where a record stands. Schemas 1-3 counted manifests in a hash chain (sequence 1, 2, ... and the previous
#    manifest's hash); those chains keep verifying (verification/verify.py, integrity.check_chain_head), frozen at
#    the upgrade.
# 5: the correlation id is stated once, as input.sha256 (what it is); schema 4 also had a top-level
#    correlation_id with the same value.
# 6: input.policy names the intake policy version that accepted the input and what it found ("found": per kind,
#    what it is, the objects it was in, how many, the action taken); input.attachments lists every file attached
#    inside the input (name, sha256, size, whether it is a PDF, its object).
SCHEMA_VERSION = 6
CHAINED = 3  # the newest schema that counted manifests in the hash chain

EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/tiff": "tif", "image/jp2": "jp2"}


def timestamp(at: datetime | None) -> str | None:
    return at.isoformat(timespec="microseconds").replace("+00:00", "Z") if at else None


def output_prefix(job) -> str:
    """Where a job's outputs live: correlation id, extractor version and, for a re-extraction, its round.

    Versions are ours (not user input), but keep the name portable across file systems and S3.
    """
    version = re.sub(r"[^A-Za-z0-9._-]", "_", job.extractor_version)
    again = f"/r{job.generation}" if job.generation else ""
    return f"{job.bundle.correlation_id}/{version}{again}"


def asset_name(job, page: int, index: int, content_type: str) -> str:
    ext = EXTENSIONS.get(content_type, "bin")
    return f"{output_prefix(job)}/p{page:05d}-{index:03d}.{ext}"


def manifest_name(job, sha256: str) -> str:
    """Content-addressed, so a manifest written by a try that then lost its commit never blocks the next."""
    return f"{output_prefix(job)}/manifest-{sha256}.json"
