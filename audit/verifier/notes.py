"""C2SP signed notes (c2sp.org/signed-note) carrying C2SP tlog-checkpoints (c2sp.org/tlog-checkpoint), Ed25519.

A checkpoint is the note text "<origin>\\n<tree size>\\n<base64 root hash>\\n" (then optional extension lines);
a signature line is "\\u2014 <key name> <base64(key hash || signature)>", the key hash being the first 4 bytes of
SHA-256(key name || 0x0A || 0x01 || public key). Reading follows the spec and Go's golang.org/x/mod/sumdb/note:
UTF-8 without control characters but the newline, the signatures after the *last* blank line, a key name
without spaces or "+", the size in decimal without leading zeros, and the key name is the checkpoint's origin.

The log also signs its notes with ML-DSA-44, a second line under the same name. signed-note assigns no type byte to
an ML-DSA signature of the note text (0x06 is tlog-cosignature's ML-DSA-44 *cosignature*, which signs a binary
subtree message with a timestamp, not the text), so the key id uses 0xff, "reserved for signature types without an
identifier byte", followed by a longer identifier as the spec recommends: SHA-256(name || 0x0A || 0xff ||
"pagetrail.ml-dsa-44-note/v1" || public key)[:4]. Verifiers that know only the Ed25519 key ignore the line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .keys import mldsa_ok

DASH = "\u2014 "
ED25519_TYPE = b"\x01"
MLDSA44_TYPE = b"\xffpagetrail.ml-dsa-44-note/v1"  # 0xff and a longer identifier: signed-note's rule for new types
MLDSA44_SIGNATURE = 2420
MAX_SIGNATURES = 100  # Go's note.Open refuses more
MAX_NOTE = 1 << 20


class NoteError(ValueError):
    """The text is not a note (or checkpoint) signed by a key we were given."""


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes  # 32 bytes
    note: str  # the whole signed note


def key_id(name: str, kind: bytes, public: bytes) -> bytes:
    """The 4-byte key id of signed-note: SHA-256(key name || 0x0A || signature type || public key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + kind + public).digest()[:4]


def key_hash(name: str, public: bytes) -> bytes:
    return key_id(name, ED25519_TYPE, public)


def verifier_key(name: str, public: bytes) -> str:
    """The note verifier key (the form Go's golang.org/x/mod/sumdb/note reads): name+hash+base64(type||key)."""
    return f"{name}+{key_hash(name, public).hex()}+{base64.b64encode(ED25519_TYPE + public).decode()}"


def parse_verifier_key(vkey: str) -> tuple[str, bytes, bytes]:
    """(name, key hash, public key) of an Ed25519 verifier key; NoteError when it is malformed or inconsistent."""
    name, _, rest = vkey.partition("+")
    hash_hex, _, encoded = rest.partition("+")
    try:
        raw, hashed = base64.b64decode(encoded, validate=True), bytes.fromhex(hash_hex)
    except (binascii.Error, ValueError):
        raise NoteError("the verifier key is not name+hash+base64 key") from None
    if not valid_name(name) or len(hash_hex) != 8 or len(raw) != 33 or raw[:1] != ED25519_TYPE:
        raise NoteError("the verifier key is not an Ed25519 key of a valid name")
    if key_hash(name, raw[1:]) != hashed:
        raise NoteError("the verifier key's hash does not match its name and key")
    return name, hashed, raw[1:]


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    if not valid_name(origin):
        raise ValueError("A log origin is one non-empty line without spaces or '+'.")
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def sign(text: str, name: str, key: Ed25519PrivateKey, mldsa_key: Any = None) -> str:
    """The note `text` with one signature line by `key` under `name`, then one by the ML-DSA-44 `mldsa_key`."""
    public = key.public_key().public_bytes_raw()
    signature = key.sign(text.encode())
    lines = [f"{DASH}{name} {base64.b64encode(key_hash(name, public) + signature).decode()}"]
    if mldsa_key is not None:
        hashed = key_id(name, MLDSA44_TYPE, bytes(mldsa_key.public_key().public_bytes_raw()))
        lines.append(f"{DASH}{name} {base64.b64encode(hashed + mldsa_key.sign(text.encode())).decode()}")
    return f"{text}\n" + "".join(f"{line}\n" for line in lines)


def verify_note(note: str, name: str, public: bytes) -> str:
    """The note's text once a signature line by `name` with `public` verifies; NoteError otherwise."""
    text, lines = split(note)
    if not any(_signed_by(text, line, name, public) for line in lines):
        raise NoteError(f"no signature by {name} on the note verifies")
    return text


def split(note: str) -> tuple[str, list[str]]:
    """(text ending in a newline, signature lines) of a well-formed note; NoteError otherwise."""
    if len(note) > MAX_NOTE or any(ord(c) < 0x20 and c != "\n" for c in note) or "\ufffd" in note:
        raise NoteError("is not a signed note (too long, a control character, or not UTF-8)")
    at = note.rfind("\n\n")
    if at < 0 or not note.endswith("\n") or at + 2 == len(note):
        raise NoteError("is not a signed note (no blank line before the signatures, or no final newline)")
    lines = note[at + 2 : -1].split("\n")
    if len(lines) > MAX_SIGNATURES or not all(_well_formed(line) for line in lines):
        raise NoteError("is not a signed note (a malformed signature line)")
    return note[: at + 1], lines


def open_checkpoint(
    note: str,
    publics: list[bytes],
    origin: str | None = None,
    mldsa_publics: list[bytes] | None = None,
    require_mldsa: bool = False,
) -> Checkpoint:
    """The checkpoint in `note` once a signature by one of `publics` (Ed25519) or `mldsa_publics` (ML-DSA-44),
    under the checkpoint's own origin as key name, verifies; NoteError otherwise. An ML-DSA-44 line of a trusted key
    that does not verify rejects the note (signed-note's rule for a known key); `require_mldsa`: one must verify.
    `origin`: the log the caller expects."""
    parsed, text, lines = read_checkpoint(note)
    if origin is not None and parsed.origin != origin:
        raise NoteError(f"the checkpoint is of log {parsed.origin!r}, not {origin!r}")
    mldsa = [(line, public) for line in lines for public in mldsa_publics or [] if _names(line, parsed.origin, public)]
    named = [line for line in lines for public in publics if _names(line, parsed.origin, public, ED25519_TYPE)]
    if (named or not mldsa) and not any(_signed_by(text, ln, parsed.origin, pk) for ln in lines for pk in publics):
        raise NoteError("no signature on the checkpoint verifies with a trusted key under its origin's name")
    if not all(_mldsa_signed_by(text, line, public) for line, public in mldsa):
        raise NoteError("an ML-DSA-44 signature on the checkpoint by a trusted key does not verify")
    if require_mldsa and not mldsa:
        raise NoteError(
            "the checkpoint carries no ML-DSA-44 signature by a trusted key (signed with Ed25519 alone), "
            "and post-quantum signatures are required"
        )
    return parsed


def _names(line: str, name: str, public: bytes, kind: bytes = MLDSA44_TYPE) -> bool:
    """The line is by `name` with the key `public` of type `kind` (its key id), whether or not it verifies."""
    line_name, _, encoded = line[len(DASH) :].partition(" ")
    return line_name == name and base64.b64decode(encoded)[:4] == key_id(name, kind, public)


def _mldsa_signed_by(text: str, line: str, public: bytes) -> bool:
    raw = base64.b64decode(line[len(DASH) :].partition(" ")[2])
    return len(raw) == 4 + MLDSA44_SIGNATURE and mldsa_ok(public, text.encode(), raw[4:])


def read_checkpoint(note: str) -> tuple[Checkpoint, str, list[str]]:
    """(the checkpoint, its note text, its signature lines) of a well-formed checkpoint note, no signature checked
    yet; NoteError otherwise."""
    text, lines = split(note)
    return parse_checkpoint(text, note), text, lines


def valid_name(name: str) -> bool:
    """A key name or origin: non-empty, without spaces or '+'."""
    return bool(name) and not any(c.isspace() or c == "+" for c in name)


def _well_formed(line: str) -> bool:
    if not line.startswith(DASH):
        return False
    name, _, encoded = line[len(DASH) :].partition(" ")
    try:
        return valid_name(name) and len(base64.b64decode(encoded, validate=True)) >= 5
    except binascii.Error:
        return False


def _signed_by(text: str, line: str, name: str, public: bytes) -> bool:
    line_name, _, encoded = line[len(DASH) :].partition(" ")
    raw = base64.b64decode(encoded)  # well-formed: split() checked it
    if line_name != name or len(raw) != 68 or raw[:4] != key_hash(name, public):
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(raw[4:], text.encode())
    except (InvalidSignature, ValueError):
        return False
    return True


def parse_checkpoint(text: str, note: str = "") -> Checkpoint:
    """The checkpoint a note text states (origin, tree size, root hash); NoteError when it states none."""
    lines = text[:-1].split("\n")
    size = lines[1] if len(lines) > 1 else ""
    if len(lines) < 3 or not valid_name(lines[0]) or not (size.isdigit() and size.isascii()):
        raise NoteError("the signed text is not a checkpoint (origin, tree size, root hash)")
    if len(size) > 1 and size.startswith("0"):
        raise NoteError("the checkpoint's tree size has a leading zero")
    try:
        root = base64.b64decode(lines[2], validate=True)
    except binascii.Error:
        root = b""
    if len(root) != 32:
        raise NoteError("the checkpoint's root hash is not base64 of 32 bytes")
    return Checkpoint(lines[0], int(size), root, note)
