"""C2SP signed notes (c2sp.org/signed-note) carrying C2SP tlog-checkpoints (c2sp.org/tlog-checkpoint), Ed25519.

A checkpoint is the note text "<origin>\\n<tree size>\\n<base64 root hash>\\n"; a signature line is
"\\u2014 <key name> <base64(key hash || signature)>", the key hash being the first 4 bytes of
SHA-256(key name || 0x0A || 0x01 || public key). Standard library and `cryptography` only, like the
offline verifier, which carries a copy of the reading half.
"""

import base64
import binascii
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

DASH = "\u2014 "
ED25519_TYPE = b"\x01"


class NoteError(ValueError):
    """The text is not a checkpoint signed by a key we were given."""


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes  # 32 bytes
    note: str  # the whole signed note


def key_hash(name: str, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + ED25519_TYPE + public).digest()[:4]


def verifier_key(name: str, public: bytes) -> str:
    """The note verifier key (the form Go's golang.org/x/mod/sumdb/note reads): name+hash+base64(type||key)."""
    return f"{name}+{key_hash(name, public).hex()}+{base64.b64encode(ED25519_TYPE + public).decode()}"


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    if not origin or "\n" in origin or origin.strip() != origin:
        raise ValueError("A log origin is one non-empty line without surrounding spaces.")
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def sign(text: str, name: str, key: Ed25519PrivateKey) -> str:
    """The note `text` with one signature line by `key` under `name`."""
    public = key.public_key().public_bytes_raw()
    signature = key.sign(text.encode())
    return f"{text}\n{DASH}{name} {base64.b64encode(key_hash(name, public) + signature).decode()}\n"


def open_checkpoint(note: str, publics: list[bytes], origin: str | None = None) -> Checkpoint:
    """The checkpoint in `note` once one signature by one of `publics` verifies; NoteError otherwise."""
    text, sep, signatures = note.partition("\n\n")
    if not sep or not text or not signatures.endswith("\n"):
        raise NoteError("not a signed note (no blank line before the signatures, or no final newline)")
    text += "\n"
    if not any(_signed_by(text, line, public) for line in signatures[:-1].split("\n") for public in publics):
        raise NoteError("no signature on the checkpoint verifies with a trusted key")
    return _parse(text, note, origin)


def _signed_by(text: str, line: str, public: bytes) -> bool:
    if not line.startswith(DASH):
        return False
    name, _, encoded = line[len(DASH) :].rpartition(" ")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        return False
    if len(raw) != 68 or raw[:4] != key_hash(name, public):
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(raw[4:], text.encode())
    except (InvalidSignature, ValueError):
        return False
    return True


def _parse(text: str, note: str, origin: str | None) -> Checkpoint:
    lines = text[:-1].split("\n")
    if len(lines) < 3 or not lines[1].isdigit() or (len(lines[1]) > 1 and lines[1].startswith("0")):
        raise NoteError("the signed text is not a checkpoint (origin, tree size, root hash)")
    if origin is not None and lines[0] != origin:
        raise NoteError(f"the checkpoint is of log {lines[0]!r}, not {origin!r}")
    try:
        root = base64.b64decode(lines[2], validate=True)
    except binascii.Error:
        root = b""
    if len(root) != 32:
        raise NoteError("the checkpoint's root hash is not base64 of 32 bytes")
    return Checkpoint(lines[0], int(lines[1]), root, note)
