"""Signatures of manifests, case maps, checkpoints, retention events and evidence indexes.

New signatures are Ed25519: anyone holding the published public key can check them, and only the
portal's private key can make them. A key id names its public key (`ed25519-` and the first 16 hex
digits of the key's sha256), so a key id cannot be pointed at another key. Verification trusts only
keys the configuration names: the signing key's public half (`PAGETRAIL_SIGNING_KEY`) and retired
public keys (`PAGETRAIL_SIGNING_RETIRED_KEYS`); a SigningKey row is a publication with a validity
period, never a reason to trust a key, so an insider who inserts one gains nothing. Signatures made
with HMAC-SHA256 before the move keep verifying with their secret key (`PAGETRAIL_MANIFEST_KEY`, and
`PAGETRAIL_MANIFEST_OLD_KEYS` for retired ones). Each new signature has an ML-DSA-44 twin over the same bytes
(`PAGETRAIL_MLDSA_SIGNING_KEY`, retired ones `PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS`), kept beside it outside the
signed body (`mldsa_signature`, `mldsa_key_id`), its key published and rotated the same way: evidence that stays
checkable once Ed25519 no longer holds.
"""

import base64
import hashlib
import json
import uuid
from datetime import datetime
from functools import lru_cache

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings
from django.core import checks
from django.utils import timezone

from audit.verifier.keys import ED25519, MLDSA44, Trust, ed25519_ok, hmac_sign, key_id_of

__all__ = [
    "ED25519",
    "MLDSA44",
    "Trust",
    "ed25519_ok",
    "hmac_sign",
    "key_id_of",
    "sign",
    "signature_problem",
    "signed",
    "trust",
]


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


def current_public_key() -> str:
    """The signing key's public half, base64 of its 32 raw bytes (as published)."""
    return base64.b64encode(public_bytes(private_key().public_key())).decode("ascii")


def current_key_id() -> str:
    return key_id_of(public_bytes(private_key().public_key()))


@lru_cache(maxsize=4)
def _mldsa_private_key(encoded: str):
    from cryptography.hazmat.primitives.asymmetric import mldsa

    seed = base64.b64decode(encoded, validate=True)
    if len(seed) != 32:
        raise ValueError("PAGETRAIL_MLDSA_SIGNING_KEY must be the base64 of a 32-byte ML-DSA-44 seed.")
    return mldsa.MLDSA44PrivateKey.from_seed_bytes(seed)


def mldsa_private_key():
    """The ML-DSA-44 signing key, or None where none is configured (records then carry Ed25519 alone)."""
    return _mldsa_private_key(settings.PAGETRAIL_MLDSA_SIGNING_KEY) if settings.PAGETRAIL_MLDSA_SIGNING_KEY else None


def _mldsa_public() -> bytes | None:
    key = mldsa_private_key()
    return bytes(key.public_key().public_bytes_raw()) if key is not None else None


def current_mldsa_key_id() -> str:
    """The ML-DSA-44 signing key's id, or "" where none is configured."""
    return key_id_of(public) if (public := _mldsa_public()) is not None else ""


def mldsa_fields(body: bytes, at: datetime | None = None) -> dict[str, str]:
    """The ML-DSA-44 signature of `body` (base64) and its key id, as stored beside the Ed25519 signature; empty
    where no ML-DSA-44 key is configured. Call after sign() (which publishes both keys)."""
    key = mldsa_private_key()
    if key is None:
        return {"mldsa_signature": "", "mldsa_key_id": ""}
    signature = base64.b64encode(key.sign(body)).decode("ascii")
    return {"mldsa_signature": signature, "mldsa_key_id": current_mldsa_key_id()}


def stable_mldsa_fields(body: bytes, at: datetime | None = None) -> dict[str, str]:
    """mldsa_fields, the same for the same bytes however often they are signed (an evidence index)."""
    from audit.models import IndexSignature

    fields = mldsa_fields(body, at)
    if not fields["mldsa_key_id"]:
        return fields
    kept, _ = IndexSignature.objects.get_or_create(
        sha256=hashlib.sha256(body).hexdigest(),
        key_id=fields["mldsa_key_id"],
        defaults={"signature": fields["mldsa_signature"]},
    )
    return {"mldsa_signature": kept.signature, "mldsa_key_id": kept.key_id}


def sign(body: bytes, at: datetime | None = None) -> str:
    """The Ed25519 signature of `body`, hex; record current_key_id() beside it.

    `at`: the time the signed statement gives itself; the published validity period is widened to it.
    """
    cover(at)  # the public key is published before anything signed with it exists
    return signed(body)


def signed(body: bytes) -> str:
    """The Ed25519 signature of `body`, hex, for a caller that has covered the statement's time with cover() in the
    transaction it holds the ledger's lock in (a rotation takes that lock too, so the key cannot change between)."""
    return private_key().sign(body).hex()


# Key id -> (the ledger row's keys_stamp, a time): this process found the key in use from that time or before, under
# that stamp. Every change to the keys moves the stamp under the ledger's lock (SigningKey.publish).
_covered: dict[str, tuple[uuid.UUID, datetime]] = {}


def cover(at: datetime | None = None, keys_stamp: uuid.UUID | None = None) -> None:
    """Widen the signing key's published period to `at` before publishing it with a statement of that time.

    `keys_stamp`: the ledger row's, read under the ledger's lock that the caller holds in its transaction. A key this
    process found in use under the same stamp, from a time no later than `at`, is still (no change can have happened
    since), so its row is not read again: a manifest then costs no query here."""
    from audit.models import SigningKey

    at = at or timezone.now()
    keys = [(current_key_id(), current_public_key(), "ed25519")]
    if (public := _mldsa_public()) is not None:
        keys.append((key_id_of(public), base64.b64encode(public).decode("ascii"), "ml-dsa-44"))
    for key_id, encoded, algorithm in keys:
        if keys_stamp is not None and (seen := _covered.get(key_id)) and seen[0] == keys_stamp and seen[1] <= at:
            continue
        if SigningKey.publish(key_id, encoded, at, algorithm) and keys_stamp is not None:
            _covered[key_id] = (keys_stamp, at)


def publish_after_migrate(**kwargs) -> None:
    """/signing-keys.json lists the key from the first start, before anything is signed with it: an auditor
    pins it before the first evidence exists (a new key, deployed, is published and the old one retired)."""
    cover()


@lru_cache(maxsize=64)
def _retired_public(encoded: str) -> bytes:
    public = base64.b64decode(encoded, validate=True)
    if len(public) != 32:
        raise ValueError("PAGETRAIL_SIGNING_RETIRED_KEYS holds base64 Ed25519 public keys of 32 bytes.")
    return public


@lru_cache(maxsize=64)
def _retired_mldsa_public(encoded: str) -> bytes:
    public = base64.b64decode(encoded, validate=True)
    if len(public) != 1312:
        raise ValueError("PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS holds base64 ML-DSA-44 public keys of 1312 bytes.")
    return public


def configured_keys() -> dict[str, bytes]:
    """The public keys (Ed25519 and ML-DSA-44) the configuration vouches for, by key id: the only ones
    verification trusts."""
    keys = [public_bytes(private_key().public_key())]
    keys += [_retired_public(k) for k in settings.PAGETRAIL_SIGNING_RETIRED_KEYS]
    keys += [public] if (public := _mldsa_public()) is not None else []
    keys += [_retired_mldsa_public(k) for k in settings.PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS]
    return {key_id_of(public): public for public in keys}


@checks.register()
def mldsa_keys_configured(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A malformed ML-DSA-44 key refuses to start, rather than failing the first job's completion."""
    try:
        _mldsa_public()
        [_retired_mldsa_public(k) for k in settings.PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS]
    except ValueError as exc:  # binascii.Error is one
        message = str(exc) if "ML-DSA" in str(exc) else f"An ML-DSA-44 key is not base64: {exc}."
        return [checks.Error(message, hint="Make one with the command in docs/configuration.md.", id="audit.E012")]
    return []


def configured_publics(prefix: str = ED25519) -> list[bytes]:
    """The configured public keys of one type (ED25519 or MLDSA44), as a signed note's check takes them."""
    return [public for key_id, public in configured_keys().items() if key_id.startswith(prefix)]


def trust() -> Trust:
    """The configured keys and their published periods (one query): pass it when checking many signatures."""
    from audit.models import SigningKey

    public = configured_keys()
    rows = SigningKey.objects.filter(key_id__in=public).values_list("key_id", "public_key", "valid_from", "valid_until")
    return Trust(
        public,
        {key_id: (start, end) for key_id, encoded, start, end in rows if base64.b64decode(encoded) == public[key_id]},
        hmac_secrets(),
    )


def published_rows():
    """The SigningKey rows of trusted keys: what /signing-keys.json and packages publish."""
    from audit.models import SigningKey

    public = configured_keys()
    return [
        row
        for row in SigningKey.objects.filter(key_id__in=public).order_by("valid_from")
        if base64.b64decode(row.public_key) == public[row.key_id]
    ]


def published_document() -> dict:
    return {"keys": [row.as_json() for row in published_rows()]}


def signature_problem(
    body: bytes, signature: str, key_id: str, trusted: Trust | None = None, at: datetime | None = None, row=None
) -> str | None:
    """None when the signature verifies with a trusted key inside its validity period, else why not. `row`: the
    record whose `mldsa_signature` and `mldsa_key_id` must verify too when it has them."""
    trusted = trusted or trust()
    if row is not None and (why := trusted.mldsa_problem(body, row.mldsa_signature, row.mldsa_key_id, at)):
        return why
    return trusted.problem(body, signature, key_id, at)


def signed_row_problem(what: str, row, states: dict, trusted: Trust) -> tuple[dict | None, str | None]:
    """(the signed body, None) when `row`'s `body` is signed by a trusted key at its `signed_at` and states what
    the row's own columns say (`states`), else (None, why not). `what`: "retention event", "activity event"."""
    if not row.body:
        return None, f"The {what} is not signed: nothing proves it was recorded by the portal."
    try:
        body = json.loads(row.body)
        signed_at = datetime.fromisoformat(body["signed_at"])
    except (ValueError, KeyError, TypeError):
        return None, f"The {what}'s signed body cannot be read."
    why = signature_problem(row.body.encode("utf-8"), row.signature, row.key_id, trusted, signed_at, row)
    if why:
        return None, f"The {what}'s signature does not count: {why}"
    differing = [k for k, v in states.items() if body.get(k) != v]
    if differing or body.get("key_id") != row.key_id:
        return None, f"The {what}'s row differs from what it signed ({', '.join(differing or ['key_id'])})."
    return body, None


def signature_ok(body: bytes, signature: str, key_id: str, trusted: Trust | None = None, at=None) -> bool:
    return signature_problem(body, signature, key_id, trusted, at) is None


def hmac_secrets() -> dict[str, str]:
    """The secrets of HMAC key ids: the configured one and retired ones (signatures from before Ed25519)."""
    found = dict(settings.PAGETRAIL_MANIFEST_OLD_KEYS)
    if settings.PAGETRAIL_MANIFEST_KEY:
        found[settings.PAGETRAIL_MANIFEST_KEY_ID] = settings.PAGETRAIL_MANIFEST_KEY
    return found
