"""Checking an RFC 3161 timestamp token (a bare TimeStampToken, CMS SignedData: RFC 5652) against a TSA's certificate.

A token counts when its message imprint is the SHA-256 of the bytes it vouches for, its signed attributes cover
its TSTInfo, its signature verifies with the TSA certificate given (or a certificate in the token that it directly
issued), that signing certificate is for time stamping only (extended key usage timeStamping, RFC 3161 section
2.3) and the token names it in an ESS signing-certificate attribute (v1: SHA-1, or v2: RFC 5816), so a token
cannot be passed off as another certificate's. Only the DER this needs is read.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterator

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID

from .der import children, one

Elements = list[tuple[int, bytes, bytes]]  # (tag, content, whole element) of DER, as der.children gives them

SHA256_OID = bytes.fromhex("0609608648016503040201")
SIGNED_DATA_OID = bytes.fromhex("06092a864886f70d010702")
MESSAGE_DIGEST_OID = bytes.fromhex("06092a864886f70d010904")
SIGNING_CERTIFICATE_OID = bytes.fromhex("060b2a864886f70d010910020c")  # 1.2.840.113549.1.9.16.2.12
SIGNING_CERTIFICATE_V2_OID = bytes.fromhex("060b2a864886f70d010910022f")  # 1.2.840.113549.1.9.16.2.47
DIGESTS: dict[bytes, type[hashes.SHA256 | hashes.SHA384 | hashes.SHA512]] = {
    bytes.fromhex("608648016503040201"): hashes.SHA256,
    bytes.fromhex("608648016503040202"): hashes.SHA384,
    bytes.fromhex("608648016503040203"): hashes.SHA512,
}
ESS_HASHES: dict[bytes, str] = {bytes.fromhex("2b0e03021a"): "sha1", **{oid: d.name for oid, d in DIGESTS.items()}}


class TimestampError(ValueError):
    """The token is malformed, for other bytes, or not signed by the TSA certificate given."""


def check(token: bytes, data: bytes, tsa_certificate: x509.Certificate) -> datetime.datetime:
    """The token's genTime, once it is shown to be the TSA's signature over the SHA-256 of `data`."""
    try:
        return _check(token, data, tsa_certificate)
    except TimestampError:
        raise
    except (IndexError, ValueError, TypeError, StopIteration) as exc:
        raise TimestampError(f"the token is malformed ({exc})") from exc


def _check(token: bytes, data: bytes, tsa_certificate: x509.Certificate) -> datetime.datetime:
    info = children(one(token, 0x30))
    if info[0][2] != SIGNED_DATA_OID:
        raise TimestampError("the token is not CMS signed data")
    signed = children(one(children(info[1][1])[0][2], 0x30))
    encap = children(signed[2][1])
    tst_der = one(children(encap[1][1])[0][2], 0x04)
    signer = children(children(signed[-1][1])[0][1])
    tst = children(one(tst_der, 0x30))
    imprint = children(tst[2][1])
    if children(imprint[0][1])[0][2] != SHA256_OID or imprint[1][1] != hashlib.sha256(data).digest():
        raise TimestampError("the token is a timestamp of other bytes (its message imprint differs)")
    _check_signer(signer, tst_der, signed, tsa_certificate)
    return _generalized_time(tst[4][1])


def _check_signer(signer: Elements, tst_der: bytes, signed: Elements, tsa_certificate: x509.Certificate) -> None:
    digest = DIGESTS.get(children(signer[2][1])[0][1])
    attrs = next((part for part in signer if part[0] == 0xA0), None)
    if digest is None or attrs is None:
        raise TimestampError("the token's signer uses an unsupported digest or signs no attributes")
    values = _attributes(attrs[1])
    digests = [one(value, 0x04) for value in values.get(MESSAGE_DIGEST_OID, [])]
    if digests != [hashlib.new(digest.name, tst_der).digest()]:
        raise TimestampError("the token's signed attributes do not cover its timestamp")
    signature = next(part[1] for part in signer[4:] if part[0] == 0x04)
    signed_attrs = b"\x31" + attrs[2][1:]  # signed as a SET (RFC 5652 section 5.4), stored [0] IMPLICIT
    for certificate in _candidates(signed, tsa_certificate):
        if _verifies(certificate.public_key(), signature, signed_attrs, digest()):
            _check_certificate(certificate, values)
            return
    raise TimestampError("the token's signature does not verify with the TSA certificate given")


def _attributes(content: bytes) -> dict[bytes, list[bytes]]:
    """{attribute type OID (whole DER element): [each value, whole DER element]} of signed attributes."""
    found: dict[bytes, list[bytes]] = {}
    for _, attribute, _ in children(content):
        kind, values = children(attribute)[:2]
        found.setdefault(kind[2], []).extend(whole for _, _, whole in children(values[1]))
    return found


def _check_certificate(certificate: x509.Certificate, values: dict[bytes, list[bytes]]) -> None:
    try:
        usage = list(certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        usage = []
    if usage != [ExtendedKeyUsageOID.TIME_STAMPING]:
        raise TimestampError("the signing certificate is not for time stamping only (extended key usage)")
    der = certificate.public_bytes(Encoding.DER)
    for oid, v2 in ((SIGNING_CERTIFICATE_V2_OID, True), (SIGNING_CERTIFICATE_OID, False)):
        for value in values.get(oid, []):
            if _names_certificate(value, der, v2):
                return
    raise TimestampError("the token does not name its signing certificate (ESS signing-certificate attribute)")


def _names_certificate(value: bytes, der: bytes, v2: bool) -> bool:
    """SigningCertificate(V2) ::= SEQUENCE { certs SEQUENCE OF ESSCertID(v2), ... }: the first names the signer."""
    first = children(children(one(value, 0x30))[0][1])[0][1]
    parts = children(first)
    algorithm = "sha1"
    if v2 and parts[0][0] == 0x30:  # hashAlgorithm, DEFAULT sha256 when absent
        algorithm = ESS_HASHES.get(children(parts[0][1])[0][1], "")
        parts = parts[1:]
    elif v2:
        algorithm = "sha256"
    return bool(algorithm) and parts[0][0] == 0x04 and parts[0][1] == hashlib.new(algorithm, der).digest()


def _candidates(signed: Elements, tsa_certificate: x509.Certificate) -> Iterator[x509.Certificate]:
    """The TSA certificate itself, and a certificate in the token that it directly issued."""
    yield tsa_certificate
    carried = next((part for part in signed[3:] if part[0] == 0xA0), None)
    for _, _, der in children(carried[1]) if carried else []:
        try:
            certificate = x509.load_der_x509_certificate(der)
            certificate.verify_directly_issued_by(tsa_certificate)
        except (ValueError, TypeError, InvalidSignature):
            continue
        yield certificate


def _verifies(key: PublicKeyTypes, signature: bytes, body: bytes, digest: hashes.HashAlgorithm) -> bool:
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


def _generalized_time(text: bytes) -> datetime.datetime:
    value = text.decode("ascii").rstrip("Z")
    whole, _, fraction = value.partition(".")
    at = datetime.datetime.strptime(whole, "%Y%m%d%H%M%S").replace(tzinfo=datetime.UTC)
    return at.replace(microsecond=int((fraction or "0")[:6].ljust(6, "0")))
