"""Signatures with key ids and validity periods: Ed25519 and ML-DSA-44 (published public keys), HMAC-SHA256 of old.

A key id names its public key (`ed25519-` or `ml-dsa-44-`, then the first 16 hex digits of the key's sha256), so an
id cannot be pointed at another key. Only keys the caller trusts count, each inside its published validity period.
An ML-DSA-44 signature travels beside the Ed25519 one (`mldsa_signature`, base64, and `mldsa_key_id`) over the
same bytes: evidence that stays checkable once Ed25519 no longer holds (docs/evidence.md).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .canonical import parse_time

ED25519 = "ed25519-"
MLDSA44 = "ml-dsa-44-"
PUBLIC_SIZES = {ED25519: 32, MLDSA44: 1312}
ALGORITHMS = {ED25519: "ed25519", MLDSA44: "ml-dsa-44"}
NO_MLDSA = (
    "It carries no ML-DSA-44 signature (signed with Ed25519 alone, before post-quantum signatures), "
    "and post-quantum signatures are required."
)


def key_id_of(public: bytes) -> str:
    """The key id of a raw public key: its type told by its size (32 bytes Ed25519, 1312 ML-DSA-44)."""
    prefix = MLDSA44 if len(public) == PUBLIC_SIZES[MLDSA44] else ED25519
    return prefix + hashlib.sha256(public).hexdigest()[:16]


def mldsa_ok(public: bytes, body: bytes, signature: bytes) -> bool:
    """`signature`: the 2420-byte ML-DSA-44 signature of `body` (empty context) by the raw 1312-byte `public` key.
    ML-DSA is imported only when used, so records signed with Ed25519 alone verify with an older `cryptography`."""
    from cryptography.hazmat.primitives.asymmetric import mldsa

    try:
        mldsa.MLDSA44PublicKey.from_public_bytes(public).verify(signature, body)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text or "", validate=True)
    except ValueError:
        return b""


def ed25519_ok(public: bytes, body: bytes, signature: str) -> bool:
    """`signature`: hex of the 64-byte Ed25519 signature of `body` by the raw 32-byte `public` key."""
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(signature or ""), body)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def hmac_sign(body: bytes, key: str) -> str:
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def hmac_ok(body: bytes, signature: str, key: str) -> bool:
    return hmac.compare_digest(hmac_sign(body, key), signature or "")


def _when(at: datetime.datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if at else "now"


@dataclass(frozen=True)
class Trust:
    """The public keys a verifier trusts, by key id, with their published validity periods, and the HMAC
    secrets it was given for signatures from before Ed25519."""

    public: dict[str, bytes] = field(default_factory=dict)  # key id -> raw bytes (32 Ed25519, 1312 ML-DSA-44)
    periods: dict[str, tuple[datetime.datetime | None, datetime.datetime | None]] = field(
        default_factory=dict
    )  # key id -> (valid from, valid until or None)
    secrets: dict[str, str] = field(default_factory=dict)  # HMAC key id -> secret

    def publics(self, prefix: str = ED25519) -> list[bytes]:
        """The trusted public keys of one type (ED25519 or MLDSA44)."""
        return [public for key_id, public in self.public.items() if key_id.startswith(prefix)]

    def mldsa_problem(
        self, body: bytes, signature: object, key_id: object, at: datetime.datetime | None, required: bool = False
    ) -> str | None:
        """None when the record's ML-DSA-44 signature (beside its Ed25519 one) verifies, or it carries none and
        none is `required`; else why not. A record signed before ML-DSA-44 carries none and verifies without it."""
        if not key_id:
            return NO_MLDSA if required else None
        if not isinstance(key_id, str) or not key_id.startswith(MLDSA44):
            return f"Its second signature names key {key_id!r}, which is not an ML-DSA-44 key."
        return self.problem(body, signature if isinstance(signature, str) else "", key_id, at)

    def outside_period(self, key_id: str, at: datetime.datetime | None) -> str | None:
        start, end = self.periods.get(key_id, (None, None))
        if at is None or start is None or (start <= at and (end is None or at <= end)):
            return None
        return (
            f"Signed at {_when(at)}, outside the validity period of key {key_id} ({_when(start)} until {_when(end)})."
        )

    def problem(self, body: bytes, signature: str, key_id: str, at: datetime.datetime | None = None) -> str | None:
        """None when the signature verifies with a trusted key inside its validity period, else why not."""
        key_id = key_id or ""
        if key_id.startswith(MLDSA44):
            public = self.public.get(key_id)
            if public is None:
                return f"Signed with key {key_id}, which no trusted public key list holds."
            if not mldsa_ok(public, body, _b64(signature)):
                return f"The ML-DSA-44 signature does not verify with public key {key_id}."
            return self.outside_period(key_id, at)
        if key_id.startswith(ED25519):
            public = self.public.get(key_id)
            if public is None:
                return f"Signed with key {key_id}, which no trusted public key list holds."
            if not ed25519_ok(public, body, signature):
                return f"The Ed25519 signature does not verify with public key {key_id}."
            return self.outside_period(key_id, at)
        secret = self.secrets.get(key_id)
        if secret is None:
            return f"No HMAC key was given for key id {key_id!r}."
        if not hmac_ok(body, signature, secret):
            return f"The HMAC signature does not verify with the key for key id {key_id!r}."
        return None


def read_key_list(
    document: object,
) -> tuple[dict[str, bytes], dict[str, tuple[datetime.datetime | None, datetime.datetime | None]], list[str]]:
    """({key id: public}, {key id: period}, problems) of a published key list (/signing-keys.json's form):
    a key filed under another key's id, or without a valid start, is refused. Ed25519 and ML-DSA-44 keys alike."""
    public, periods, problems = {}, {}, []
    entries = document.get("keys") if isinstance(document, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        entry = entry if isinstance(entry, dict) else {}
        try:
            raw = base64.b64decode(str(entry.get("public_key", "")), validate=True)
        except ValueError:
            raw = b""
        key_id = entry.get("key_id")
        if len(raw) not in PUBLIC_SIZES.values() or key_id_of(raw) != key_id:
            problems.append(f"key {key_id!r} is not the public key its id names")
            continue
        public[key_id] = raw
        end = entry.get("valid_until")
        periods[key_id] = (parse_time(entry.get("valid_from")), parse_time(end) if end else None)
    return public, periods, problems
