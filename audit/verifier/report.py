"""What a package check was given (Options) and what it found (Report): the problems, each naming the file, the
portal's own findings, and what was checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .canonical import parse_time
from .keys import ED25519, Trust

if TYPE_CHECKING:
    from cryptography import x509

    from .cosignature import VerifierKey

LEFT_OUT = {
    "not_included": "asset(s) not included (package exported without assets)",
    "outside_case": "asset(s) of the manifest outside this case's pages, not included",
    "retained_away": "file(s) deleted under retention, as retention events in index.json record",
}
COUNTS = ("manifests", "assets", "signatures", "log_proofs", "earlier_checkpoints", "timestamps", "boundaries")


@dataclass
class Options:
    pinned: object = None  # the portal's published key list (JSON), obtained separately
    secrets: dict[str, str] = field(default_factory=dict)  # HMAC key id -> secret, for signatures from before Ed25519
    earlier: tuple[str, object] | None = None  # (note seen before, consistency proof document or None)
    tsa: x509.Certificate | None = None
    origin: str | None = None  # the log origin the auditor expects
    witnesses: list[VerifierKey] = field(default_factory=list)  # the witnesses' keys, obtained from each witness
    quorum: int = 0  # how many of them must have cosigned the package's checkpoint (with witnesses given)
    require_post_quantum: bool = False  # every record and the checkpoint must carry a verifying ML-DSA-44 signature


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    # (run, finding) the portal's newest run recorded in scope
    findings: list[tuple[Any, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys((*COUNTS, *LEFT_OUT), 0))
    unsigned: dict[str, int] = field(default_factory=dict)  # HMAC key id -> signatures unchecked for want of its key
    signers: set[str] = field(default_factory=set)
    mldsa_signers: dict[str, int] = field(default_factory=dict)  # ML-DSA-44 key id -> signatures that verified
    retention: list[dict[str, Any]] = field(default_factory=list)  # signed bodies of retention events that verified
    pinned: bool = False
    trust: Trust = field(default_factory=Trust)
    require_post_quantum: bool = False
    timestamp_unchecked: bool = False
    timestamped_at: datetime | None = None
    index: dict[str, Any] | None = None
    manifest_bytes: dict[str, bytes] = field(default_factory=dict)  # member -> bytes, read once for hashes and proofs
    record_leaves: dict[Any, datetime | None] = field(default_factory=dict)  # leaf -> a case map's, activity's time
    witnessed: str = ""  # what the witnesses' cosignatures of the checkpoint showed, or that they went unchecked

    def fail(self, where: str, what: str) -> None:
        self.problems.append(f"{where}: {what}")

    def check_signature(
        self, where: str, body: bytes, signature: object, key_id: object, at: object = None, signed: object = None
    ) -> bool:
        """`at`: the time the statement gives itself, which must fall inside its key's validity period. `signed`:
        the entry that carries the signature, whose `mldsa_signature` and `mldsa_key_id` beside it must verify
        too (and be there, with --require-post-quantum)."""
        if not self._check_mldsa(where, body, signed if isinstance(signed, dict) else {}, parse_time(at)):
            return False
        key_id = key_id if isinstance(key_id, str) else ""
        if not key_id.startswith(ED25519) and key_id not in self.trust.secrets:
            self.unsigned[key_id] = self.unsigned.get(key_id, 0) + 1
            return False
        signed_at = parse_time(at)
        if key_id.startswith(ED25519) and signed_at is None:
            self.fail(where, f"gives no time it was signed at ({at!r}), so key {key_id}'s validity cannot be checked")
            return False
        problem = self.trust.problem(body, signature if isinstance(signature, str) else "", key_id, signed_at)
        if problem:
            self.fail(where, problem[0].lower() + problem[1:].rstrip("."))
            return False
        self.counts["signatures"] += 1
        if key_id.startswith(ED25519):
            self.signers.add(key_id)
        return True

    def _check_mldsa(self, where: str, body: bytes, signed: dict[str, Any], at: datetime | None) -> bool:
        key_id = signed.get("mldsa_key_id")
        problem = self.trust.mldsa_problem(body, signed.get("mldsa_signature"), key_id, at, self.require_post_quantum)
        if problem:
            self.fail(where, problem[0].lower() + problem[1:].rstrip("."))
            return False
        if key_id:
            self.mldsa_signers[str(key_id)] = self.mldsa_signers.get(str(key_id), 0) + 1
        return True
