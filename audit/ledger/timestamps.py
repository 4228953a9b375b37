"""RFC 3161 trusted timestamps of log checkpoints: asking a Time-Stamping Authority (checking a token is the
verifier's: `audit.verifier.timestamps`).

A token proves the TSA saw these exact bytes (its message imprint is their SHA-256) at its genTime, under a
signature that verifies with the TSA's certificate: an insider who later re-signs a rewritten log cannot
get tokens dated in the past. Without PAGETRAIL_TSA_URL no token is asked for (docs/transparency-log.md says
what that gives up).
"""

import hashlib
import secrets

from audit.verifier.der import children, one
from audit.verifier.timestamps import SHA256_OID, TimestampError, check

__all__ = ["TimestampError", "ask", "check", "request_for", "token_from_response"]


def _der(tag: int, content: bytes) -> bytes:
    n = len(content)
    length = (
        bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes((n.bit_length() + 7) // 8)
    )
    return bytes([tag]) + length + content


def request_for(data: bytes, nonce: int | None = None) -> bytes:
    """A TimeStampReq for the SHA-256 of `data`, asking for the TSA's certificate in the token."""
    nonce = secrets.randbits(63) if nonce is None else nonce
    imprint = _der(0x30, _der(0x30, SHA256_OID + b"\x05\x00") + _der(0x04, hashlib.sha256(data).digest()))
    nonce_der = _der(0x02, nonce.to_bytes((nonce.bit_length() + 8) // 8))
    return _der(0x30, _der(0x02, b"\x01") + imprint + nonce_der + _der(0x01, b"\xff"))


def token_from_response(response: bytes) -> bytes:
    """The TimeStampToken of a granted TimeStampResp (status 0 or 1); TimestampError otherwise."""
    parts = children(one(response, 0x30))
    status = children(one(parts[0][2], 0x30)) if parts else []
    if not status or status[0][0] != 0x02 or int.from_bytes(status[0][1], "big") not in (0, 1) or len(parts) < 2:
        raise TimestampError("the TSA did not grant a timestamp")
    return parts[1][2]


def ask(url: str, data: bytes, session=None) -> bytes:
    """A token for `data` from the TSA at `url` (RFC 3161 over HTTP); TimestampError or a requests error."""
    import requests

    response = (session or requests).post(
        url,
        data=request_for(data),
        headers={"Content-Type": "application/timestamp-query"},
        timeout=(5, 30),
    )
    response.raise_for_status()
    return token_from_response(response.content)
