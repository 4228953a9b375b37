"""Standard Webhooks signatures (standardwebhooks.com): `v1,` + base64 HMAC-SHA256 of "{id}.{timestamp}.{body}"."""

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def new_secret() -> str:
    """A random 32-byte key in the spec's form: `whsec_` + base64 (what receivers' libraries accept as is)."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def headers(secrets: list[str], webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of one delivery; the timestamp is the try's, so a replay is signed anew. One signature
    per secret, space-separated (while a replaced secret still signs beside the new one)."""
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign(secret, webhook_id, timestamp, body) for secret in secrets),
    }
