"""Signatures of manifests, case maps and checkpoints.

New signatures are Ed25519: anyone holding the published public key can check them, and only the
portal's private key can make them. A key id names its public key (`ed25519-` and the first 16 hex
digits of the key's sha256), so a key id cannot be pointed at another key. Signatures made with
HMAC-SHA256 before the move keep verifying with their secret key (`PAGETRAIL_MANIFEST_KEY`, and
`PAGETRAIL_MANIFEST_OLD_KEYS` for retired ones).
"""

import base64
import hashlib
import hmac
from functools import lru_cache

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings

ED25519 = "ed25519-"


@lru_cache(maxsize=4)
def _private_key(encoded: str) -> Ed25519PrivateKey:
    seed = base64.b64decode(encoded, validate=True)
    if len(seed) != 32:
        raise ValueError("PAGETRAIL_SIGNING_KEY must be the base64 of a 32-byte Ed25519 seed.")
    return Ed25519PrivateKey.from_private_bytes(seed)


def private_key() -> Ed25519PrivateKey:
    return _private_key(settings.PAGETRAIL_SIGNING_KEY)


def public_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id_of(public: bytes) -> str:
    return ED25519 + hashlib.sha256(public).hexdigest()[:16]


def current_public_key() -> str:
    """The signing key's public half, base64 of its 32 raw bytes (as published)."""
    return base64.b64encode(public_bytes(private_key().public_key())).decode("ascii")


def current_key_id() -> str:
    return key_id_of(public_bytes(private_key().public_key()))


def sign(body: bytes) -> str:
    """The Ed25519 signature of `body`, hex; record current_key_id() beside it."""
    from .models import SigningKey  # the public key is published before anything signed with it exists

    SigningKey.publish(current_key_id(), current_public_key())
    return private_key().sign(body).hex()


def signature_ok(body: bytes, signature: str, key_id: str, published: dict[str, bytes] | None = None) -> bool:
    """`published`: the keys of published_keys(), when many signatures are checked (one query, not one each)."""
    if key_id.startswith(ED25519):
        public = (published if published is not None else published_keys()).get(key_id)
        return public is not None and ed25519_ok(public, body, signature)
    secret = hmac_key(key_id)
    return secret is not None and hmac.compare_digest(hmac_sign(body, secret), signature)


def published_keys() -> dict[str, bytes]:
    """Every published public key by its id, each only if it is the key the id names."""
    from .models import SigningKey

    keys = {key_id: base64.b64decode(public) for key_id, public in SigningKey.objects.values_list(
        "key_id", "public_key")}
    return {key_id: public for key_id, public in keys.items() if key_id_of(public) == key_id}


def ed25519_ok(public: bytes, body: bytes, signature: str) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(signature), body)
    except (InvalidSignature, ValueError):
        return False
    return True


def hmac_sign(body: bytes, key: str) -> str:
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def hmac_key(key_id: str) -> str | None:
    """The secret of an HMAC key id: the configured one or a retired one."""
    if key_id == settings.PAGETRAIL_MANIFEST_KEY_ID:
        return settings.PAGETRAIL_MANIFEST_KEY or None
    return settings.PAGETRAIL_MANIFEST_OLD_KEYS.get(key_id)
