"""C2SP tlog-cosignature (c2sp.org/tlog-cosignature): witness keys, the messages they sign, their signature lines.

A cosignature is a signed-note signature line by a witness over a checkpoint: base64(key id || u64 big-endian
timestamp || signature). Ed25519 `cosignature/v1` (signature type 0x04) signs "cosignature/v1\\ntime T\\n" then
the whole note text; ML-DSA-44 (type 0x06) signs the binary `subtree/v1` message (the witness's name, T, the
origin, 0, the tree size, the root), extension lines left out as the spec says. A key id is SHA-256(name ||
0x0A || type || public key)[:4]. Log keys (Ed25519 signed-note keys, type 0x01) are read here too, so one
verifier-key reader serves the witness checking a log and the log checking its witnesses.

Keys are written as Go's note tools and transparency-dev/formats write them: "name+hex(id)+base64(type || key)"
for a verifier key, "PRIVATE+KEY+name+hex(id)+base64(type || 32-byte seed)" for a witness's private key.
ML-DSA is imported only when used, so the rest of the verifier runs with an older `cryptography`.
"""

from __future__ import annotations

import base64
import binascii
import os
import struct
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from . import notes

ED25519_NOTE, ED25519_COSIGNATURE, MLDSA44 = 0x01, 0x04, 0x06
ALGORITHMS = {"ed25519": ED25519_COSIGNATURE, "ml-dsa-44": MLDSA44}
PUBLIC_SIZE = {ED25519_NOTE: 32, ED25519_COSIGNATURE: 32, MLDSA44: 1312}
SIGNATURE_SIZE = {ED25519_NOTE: 64, ED25519_COSIGNATURE: 8 + 64, MLDSA44: 8 + 2420}  # after the key id
SEED_SIZE = 32
SUBTREE_LABEL = b"subtree/v1\n\x00"
MAX_TIMESTAMP = 2**63 - 1
PRIVATE = "PRIVATE+KEY+"


class KeyFormatError(ValueError):
    """A verifier key or private key that is malformed, of an unknown type, or whose id does not match."""


def ed25519_message(timestamp: int, text: str) -> bytes:
    """What an Ed25519 cosignature/v1 signs: the header and time lines, then the note text."""
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


def mldsa_message(name: str, timestamp: int, origin: str, start: int, end: int, root: bytes) -> bytes:
    """The `cosigned_message` of an ML-DSA-44 cosignature (TLS presentation: 1-byte lengths, big-endian u64s)."""
    cosigner, log = name.encode(), origin.encode()
    if not (0 < len(cosigner) < 256 and 0 < len(log) < 256 and len(root) == 32):
        raise ValueError("a cosigner name and a log origin are 1 to 255 bytes, a root hash 32")
    if start and timestamp:
        raise ValueError("a subtree not starting at 0 is cosigned with timestamp 0")
    return b"".join(
        [SUBTREE_LABEL, bytes([len(cosigner)]), cosigner, struct.pack(">Q", timestamp)]
        + [bytes([len(log)]), log, struct.pack(">QQ", start, end), root]
    )


@dataclass(frozen=True)
class VerifierKey:
    """A public key under a name: a log's (type 0x01, or a cosignature type) or a witness's (0x04, 0x06)."""

    name: str
    kind: int
    public: bytes

    @property
    def key_id(self) -> bytes:
        return notes.key_id(self.name, bytes([self.kind]), self.public)

    @property
    def vkey(self) -> str:
        encoded = base64.b64encode(bytes([self.kind]) + self.public).decode()
        return f"{self.name}+{self.key_id.hex()}+{encoded}"

    def matches(self, line: str) -> bool:
        """The signature line names this key (its name and key id), whether or not it verifies."""
        name, raw = _line_parts(line)
        return name == self.name and raw[:4] == self.key_id

    def verifies(self, text: str, line: str) -> bool:
        """The signature line is this key's and verifies over the note `text`."""
        if not self.matches(line):
            return False
        raw = _line_parts(line)[1][4:]
        if len(raw) != SIGNATURE_SIZE[self.kind]:
            return False
        if self.kind == ED25519_NOTE:
            return _ed25519_ok(self.public, raw, text.encode())
        timestamp = struct.unpack(">Q", raw[:8])[0]
        if timestamp > MAX_TIMESTAMP:
            return False
        if self.kind == ED25519_COSIGNATURE:
            return _ed25519_ok(self.public, raw[8:], ed25519_message(timestamp, text))
        return _mldsa_ok(self.public, raw[8:], self._subtree_message(timestamp, text))

    def _subtree_message(self, timestamp: int, text: str) -> bytes:
        try:
            checkpoint = notes.parse_checkpoint(text)
            return mldsa_message(self.name, timestamp, checkpoint.origin, 0, checkpoint.size, checkpoint.root)
        except (notes.NoteError, ValueError):
            return b""  # not a checkpoint (or a size past u64): nothing an ML-DSA cosignature can cover


def parse_vkey(vkey: str) -> VerifierKey:
    """The key of a verifier key "name+hex(id)+base64(type || key)" of type 0x01, 0x04 or 0x06; KeyFormatError else."""
    name, _, rest = vkey.strip().partition("+")
    id_hex, _, encoded = rest.partition("+")
    raw = _b64(encoded)
    if not notes.valid_name(name) or len(id_hex) != 8 or len(raw) < 1:
        raise KeyFormatError(f"{vkey[:60]!r} is not a verifier key (name+hex key id+base64 key)")
    key = VerifierKey(name, raw[0], raw[1:])
    if key.kind not in PUBLIC_SIZE or len(key.public) != PUBLIC_SIZE[key.kind]:
        raise KeyFormatError(f"the verifier key of {name} is not an Ed25519 (0x01, 0x04) or ML-DSA-44 (0x06) key")
    if key.key_id.hex() != id_hex.lower():
        raise KeyFormatError(
            f"the verifier key of {name} names key id {id_hex}, but its name and key give {key.key_id.hex()}"
        )
    return key


@dataclass(frozen=True)
class Cosigner:
    """A witness's private key under its name: Ed25519 cosignature/v1 (0x04) or ML-DSA-44 (0x06)."""

    name: str
    kind: int
    seed: bytes

    def verifier(self) -> VerifierKey:
        return VerifierKey(self.name, self.kind, self._public())

    def cosign(self, text: str, timestamp: int) -> str:
        """The signature line (no newline) cosigning the checkpoint note `text` at `timestamp` (POSIX seconds)."""
        if not 0 < timestamp <= MAX_TIMESTAMP:
            raise ValueError("a witness's cosignature states a time: 1 to 2**63-1 seconds")
        if self.kind == ED25519_COSIGNATURE:
            signature = Ed25519PrivateKey.from_private_bytes(self.seed).sign(ed25519_message(timestamp, text))
        else:
            message = self.verifier()._subtree_message(timestamp, text)
            if not message:
                raise ValueError("only a checkpoint can be cosigned with ML-DSA-44")
            signature = _mldsa_private(self.seed).sign(message)
        raw = self.verifier().key_id + struct.pack(">Q", timestamp) + signature
        return f"{notes.DASH}{self.name} {base64.b64encode(raw).decode()}"

    @property
    def private_key(self) -> str:
        """The key file line: PRIVATE+KEY+name+hex(id)+base64(type || seed)."""
        encoded = base64.b64encode(bytes([self.kind]) + self.seed).decode()
        return f"{PRIVATE}{self.name}+{self.verifier().key_id.hex()}+{encoded}"

    def _public(self) -> bytes:
        if self.kind == ED25519_COSIGNATURE:
            return Ed25519PrivateKey.from_private_bytes(self.seed).public_key().public_bytes_raw()
        return bytes(_mldsa_private(self.seed).public_key().public_bytes_raw())


def generate(name: str, algorithm: str) -> Cosigner:
    """A new witness key: `algorithm` "ed25519" or "ml-dsa-44" (either from a fresh 32-byte seed)."""
    if not notes.valid_name(name) or len(name.encode()) > 255:
        raise KeyFormatError("A witness name is 1 to 255 bytes, without spaces or '+' (e.g. witness.example.com/w1).")
    return Cosigner(name, ALGORITHMS[algorithm], os.urandom(SEED_SIZE))


def parse_private_key(line: str) -> Cosigner:
    """The witness key of a key file line; KeyFormatError when malformed, of another type, or its id does not match."""
    if not line.startswith(PRIVATE):
        raise KeyFormatError("a witness key line starts with PRIVATE+KEY+")
    name, _, rest = line[len(PRIVATE) :].strip().partition("+")
    id_hex, _, encoded = rest.partition("+")
    raw = _b64(encoded)
    if not notes.valid_name(name) or len(raw) != 1 + SEED_SIZE or raw[0] not in (ED25519_COSIGNATURE, MLDSA44):
        raise KeyFormatError("a witness key is PRIVATE+KEY+name+id+base64(0x04 or 0x06 || 32-byte seed)")
    cosigner = Cosigner(name, raw[0], raw[1:])
    if cosigner.verifier().key_id.hex() != id_hex.lower():
        raise KeyFormatError(f"the witness key of {name} names key id {id_hex}, which is not its key's")
    return cosigner


def timestamp_of(line: str) -> int:
    """The time a cosignature line states (its 8 bytes after the key id); KeyFormatError when it has none."""
    raw = _line_parts(line)[1]
    if len(raw) < 12:
        raise KeyFormatError("the signature line is too short to be a cosignature")
    return int(struct.unpack(">Q", raw[4:12])[0])


def verified_by(text: str, lines: list[str], keys: list[VerifierKey]) -> list[VerifierKey]:
    """The keys among `keys` whose signature line over `text` verifies. Per signed-note, a line naming a known key
    (its name and id) that does not verify makes the whole note malformed: NoteError."""
    found = []
    for key in keys:
        mine = [line for line in lines if key.matches(line)]
        if any(not key.verifies(text, line) for line in mine):
            raise notes.NoteError(f"a signature by {key.name} (key {key.key_id.hex()}) does not verify")
        if mine:
            found.append(key)
    return found


def cosigners(text: str, lines: list[str], keys: list[VerifierKey]) -> dict[str, int]:
    """{witness name: the time its cosignature states} of the witnesses among `keys` (0x04, 0x06) whose
    cosignature of `text` verifies; a witness counts once, whatever number of its keys signed. NoteError as
    `verified_by`."""
    found: dict[str, int] = {}
    for key in verified_by(text, lines, [k for k in keys if k.kind != ED25519_NOTE]):
        times = [timestamp_of(line) for line in lines if key.matches(line)]
        found[key.name] = max([found.get(key.name, 0), *times])
    return found


def line_key(line: str) -> tuple[str, bytes]:
    """The key name and 4-byte key id a signature line names (empty when it is not one), nothing verified."""
    name, raw = _line_parts(line)
    return name, raw[:4]


def _line_parts(line: str) -> tuple[str, bytes]:
    name, _, encoded = line[len(notes.DASH) :].partition(" ") if line.startswith(notes.DASH) else ("", "", "")
    return name, _b64(encoded)


def _b64(encoded: str) -> bytes:
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _ed25519_ok(public: bytes, signature: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def _mldsa_private(seed: bytes) -> Any:
    from cryptography.hazmat.primitives.asymmetric import mldsa

    return mldsa.MLDSA44PrivateKey.from_seed_bytes(seed)


def _mldsa_ok(public: bytes, signature: bytes, message: bytes) -> bool:
    from cryptography.hazmat.primitives.asymmetric import mldsa

    if not message:
        return False
    try:
        mldsa.MLDSA44PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True
