"""Canonical manifest bytes, their signature, and the deterministic names of what they list."""

import hashlib
import hmac
import json
import re
from datetime import datetime

from django.conf import settings

# 2: assets say how they were made (colour space, bits, method, stream sha256); input says how it was read.
SCHEMA_VERSION = 2

EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/tiff": "tif", "image/jp2": "jp2"}


def canonical_bytes(document: dict) -> bytes:
    """Stable key order, no whitespace, ASCII only: the same document always gives the same bytes."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def sign(body: bytes, key: str | None = None) -> str:
    key = settings.PAGETRAIL_MANIFEST_KEY if key is None else key
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def verification_key(key_id: str) -> str | None:
    """The key that signed under `key_id`: the current one or a retired one (keys rotate)."""
    if key_id == settings.PAGETRAIL_MANIFEST_KEY_ID:
        return settings.PAGETRAIL_MANIFEST_KEY
    return settings.PAGETRAIL_MANIFEST_OLD_KEYS.get(key_id)


def signature_ok(body: bytes, signature: str, key_id: str) -> bool:
    key = verification_key(key_id)
    return key is not None and hmac.compare_digest(sign(body, key), signature)


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
