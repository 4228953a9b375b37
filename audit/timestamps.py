"""RFC 3161 trusted timestamps of log checkpoints: asking a Time-Stamping Authority, and checking a token.

A token proves the TSA saw these exact bytes (its message imprint is their SHA-256) at its genTime, under a
signature that verifies with the TSA's certificate: an insider who later re-signs a rewritten log cannot
get tokens dated in the past. Only the few DER structures of RFC 3161 and CMS (RFC 5652) that this needs
are read, with the standard library and `cryptography`; the offline verifier carries a copy of the checking
half. Without PAGETRAIL_TSA_URL no token is asked for (docs/transparency-log.md says what that gives up).
"""

import hashlib
import secrets
from datetime import UTC, datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

SHA256_OID = bytes.fromhex("0609608648016503040201")
SIGNED_DATA_OID = bytes.fromhex("06092a864886f70d010702")
MESSAGE_DIGEST_OID = bytes.fromhex("06092a864886f70d010904")
DIGESTS = {
    bytes.fromhex("608648016503040201"): hashes.SHA256,
    bytes.fromhex("608648016503040202"): hashes.SHA384,
    bytes.fromhex("608648016503040203"): hashes.SHA512,
}


class TimestampError(ValueError):
    """The token is malformed, for other bytes, or not signed by the TSA certificate given."""


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
    parts = _children(_one(response, 0x30))
    status = _children(_one(parts[0][2], 0x30)) if parts else []
    if not status or status[0][0] != 0x02 or int.from_bytes(status[0][1], "big") not in (0, 1) or len(parts) < 2:
        raise TimestampError("the TSA did not grant a timestamp")
    return parts[1][2]


def check(token: bytes, data: bytes, tsa_certificate: x509.Certificate) -> datetime:
    """The token's genTime, once it is shown to be the TSA's signature over the SHA-256 of `data`."""
    try:
        return _check(token, data, tsa_certificate)
    except (IndexError, ValueError, TypeError) as exc:
        if isinstance(exc, TimestampError):
            raise
        raise TimestampError(f"the token is malformed ({exc})") from exc


def _check(token: bytes, data: bytes, tsa_certificate: x509.Certificate) -> datetime:
    info = _children(_one(token, 0x30))
    if info[0][2] != SIGNED_DATA_OID:
        raise TimestampError("the token is not CMS signed data")
    signed = _children(_one(_children(info[1][1])[0][2], 0x30))
    encap = _children(signed[2][1])
    tst_der = _one(_children(encap[1][1])[0][2], 0x04)
    signer = _children(signed[-1][1])[0][1]
    tst = _children(_one(tst_der, 0x30))
    imprint = _children(tst[2][1])
    if _children(imprint[0][1])[0][2] != SHA256_OID or imprint[1][1] != hashlib.sha256(data).digest():
        raise TimestampError("the token is a timestamp of other bytes (its message imprint differs)")
    _check_signer(_children(signer), tst_der, signed, tsa_certificate)
    return _generalized_time(tst[4][1])


def _check_signer(signer: list, tst_der: bytes, signed: list, tsa_certificate: x509.Certificate) -> None:
    digest = DIGESTS.get(_children(signer[2][1])[0][1])
    attrs = next((part for part in signer if part[0] == 0xA0), None)
    if digest is None or attrs is None:
        raise TimestampError("the token's signer uses an unsupported digest or signs no attributes")
    wanted = hashlib.new(digest.name, tst_der).digest()
    found = [
        _children(_children(a[1])[1][1])[0][1]
        for a in _children(attrs[1])
        if _children(a[1])[0][2] == MESSAGE_DIGEST_OID
    ]
    if found != [wanted]:
        raise TimestampError("the token's signed attributes do not cover its timestamp")
    signature = next(part[1] for part in signer[4:] if part[0] == 0x04)
    signed_attrs = b"\x31" + attrs[2][1:]  # signed as a SET (RFC 5652 section 5.4), stored [0] IMPLICIT
    for key in _candidate_keys(signed, tsa_certificate):
        if _verifies(key, signature, signed_attrs, digest()):
            return
    raise TimestampError("the token's signature does not verify with the TSA certificate given")


def _candidate_keys(signed: list, tsa_certificate: x509.Certificate):
    """The TSA certificate itself, and a certificate in the token that it directly issued."""
    yield tsa_certificate.public_key()
    carried = next((part for part in signed[3:] if part[0] == 0xA0), None)
    for _, _, der in _children(carried[1]) if carried else []:
        try:
            cert = x509.load_der_x509_certificate(der)
            cert.verify_directly_issued_by(tsa_certificate)
        except (ValueError, TypeError, InvalidSignature):
            continue
        yield cert.public_key()


def _verifies(key, signature: bytes, body: bytes, digest) -> bool:
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, body, padding.PKCS1v15(), digest)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, body, ec.ECDSA(digest))
        else:
            return False
    except InvalidSignature:
        return False
    return True


def _generalized_time(text: bytes) -> datetime:
    value = text.decode("ascii").rstrip("Z")
    whole, _, fraction = value.partition(".")
    at = datetime.strptime(whole, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    return at.replace(microsecond=int((fraction or "0")[:6].ljust(6, "0")))


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end) of the DER element at `pos`."""
    tag, first = data[pos], data[pos + 1]
    if first < 0x80:
        return tag, pos + 2, pos + 2 + first
    n = first & 0x7F
    if not 0 < n <= 4:
        raise ValueError("a DER length of unsupported form")
    length = int.from_bytes(data[pos + 2 : pos + 2 + n], "big")
    return tag, pos + 2 + n, pos + 2 + n + length


def _children(content: bytes) -> list[tuple[int, bytes, bytes]]:
    """(tag, content, whole element) of each element in `content`."""
    found, pos = [], 0
    while pos < len(content):
        tag, start, end = _tlv(content, pos)
        if end > len(content):
            raise ValueError("a DER element runs past its container")
        found.append((tag, content[start:end], content[pos:end]))
        pos = end
    return found


def _one(data: bytes, tag: int) -> bytes:
    """The content of `data`, which must be exactly one element with `tag`."""
    elements = _children(data)
    if len(elements) != 1 or elements[0][0] != tag:
        raise ValueError(f"expected one DER element of tag {tag:#x}")
    return elements[0][1]


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
