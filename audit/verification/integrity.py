"""Verification beyond manifests and assets: the stored inputs, the activity record, the chain's head,
page previews and the published signing keys.

An insider with database and store access could otherwise change an input's bytes, leave a file in the
input store, rewrite or delete an activity event, delete the newest checkpoint file, delete the newest
manifest with its rows, change a preview, or publish a signing key of their own: each of these is a
finding of its own kind.
"""

import base64
from collections.abc import Callable

from audit.ledger import activity_records, manifests, signing
from audit.models import ActivityEvent, Checkpoint, Finding, Manifest, ManifestChain, PagePreview, SigningKey
from audit.review.previews import WIDTHS
from core import stores
from extraction.models import Bundle, input_storage_name
from extraction.pdf.render import preview_page

Kind = Finding.Kind
Pulse = Callable[[], None]  # called once an item by a long check: a sign of life for its run's lease (verify.Pulse)


def _quiet() -> None:
    pass


def check_inputs(bundles, excused: set[str], pulse: Pulse = _quiet) -> list[Finding]:
    """Re-hash every stored input against its correlation id; a deleted one needs the signed retention
    event that names it (`excused`: the input names such events name)."""
    found = []
    for bundle in bundles.only("pk", "correlation_id", "input_deleted_at").iterator(chunk_size=500):
        pulse()
        if bundle.input_name in excused:
            continue
        if bundle.input_deleted_at:
            found.append(
                _input_finding(
                    Kind.MISSING_INPUT,
                    bundle,
                    "The input is marked deleted, but no signed retention event records its deletion.",
                )
            )
            continue
        found += check_input(bundle)
    return found


def check_input_store(pulse: Pulse = _quiet) -> list[Finding]:
    """Files in the input store that no bundle names."""
    names = []
    for name in stores.walk(stores.inputs()):
        pulse()
        names.append(name)
    # Read after the listing: an intake stores its input just before committing its bundle.
    expected = {input_storage_name(sha) for sha in Bundle.objects.values_list("correlation_id", flat=True)}
    return [
        Finding(kind=Kind.UNEXPECTED_INPUT, name=name, detail="A file in the input store that no bundle names.")
        for name in names
        if name not in expected
    ]


def rehashed(
    stored: str, sha256: str, what: str, named_by: str, inputs: bool = False, missing: str = "", **about
) -> list[Finding]:
    """The one rule for a stored file: re-hashed, it must be the sha256 its record names. [] when it is; else
    a finding that it is missing or changed (in the input store: missing_input, input_changed; in the output
    store: missing_output, hash_mismatch). `what` names the file in a sentence, `named_by` the record."""
    store = stores.inputs() if inputs else stores.outputs()
    try:
        digest = stores.sha256_of(store, stored)
    except FileNotFoundError:
        kind, where = (Kind.MISSING_INPUT, "input") if inputs else (Kind.MISSING_OUTPUT, "output")
        return [Finding(kind=kind, name=stored, detail=f"{what} is missing from the {where} store{missing}.", **about)]
    if digest != sha256:
        kind = Kind.INPUT_CHANGED if inputs else Kind.HASH_MISMATCH
        return [Finding(kind=kind, name=stored, detail=f"{what} hashes to {digest}, {named_by} {sha256}.", **about)]
    return []


def check_previews(excused: set[str], pulse: Pulse = _quiet) -> list[Finding]:
    """Re-hash every recorded page preview that retention has not deleted."""
    rows = PagePreview.objects.only("pk", "manifest_id", "storage_name", "sha256")
    found = []
    for preview in rows.iterator(chunk_size=2000):
        pulse()
        if preview.storage_name not in excused:
            found += rehashed(
                preview.storage_name,
                preview.sha256,
                "The page preview",
                "its row says",
                manifest_id=preview.manifest_id,
            )
    return found


def check_signing_keys(trusted: signing.Trust) -> list[Finding]:
    """A published key the configuration does not hold is someone's claim, not the portal's key."""
    return [
        Finding(
            kind=Kind.UNTRUSTED_SIGNING_KEY,
            name=key_id,
            detail=f"Signing key {key_id} is published in the database, but the configuration holds no such "
            "key (PAGETRAIL_SIGNING_KEY, PAGETRAIL_SIGNING_RETIRED_KEYS): nothing it signed is trusted.",
        )
        for key_id, encoded in SigningKey.objects.values_list("key_id", "public_key")
        if key_id not in trusted.public or _decoded(encoded) != trusted.public[key_id]
    ]


def _decoded(encoded: str) -> bytes | None:
    try:
        return base64.b64decode(encoded, validate=True)
    except ValueError:
        return None


def check_input(bundle: Bundle) -> list[Finding]:
    """The input hashes to its correlation id."""
    return rehashed(
        bundle.input_name,
        bundle.correlation_id,
        "The stored input",
        "its correlation id is",
        inputs=True,
        missing=", and no retention event records its deletion",
    )


def _input_finding(kind: str, bundle: Bundle, detail: str) -> Finding:
    return Finding(kind=kind, name=bundle.input_name, detail=detail)


def check_activity(trusted: signing.Trust) -> list[Finding]:
    """Every activity event still hashes to its recorded value and links to the one before it, and its signed
    body (the ledger's leaf: verification/ledger_checks.py) states its row."""
    return [
        Finding(kind=Kind.ACTIVITY_INVALID, name=f"activity event {event.pk}", detail=why)
        for event in ActivityEvent.objects.order_by("pk").iterator(chunk_size=1000)
        if (why := activity_records.problem(event, trusted))
    ] + [
        Finding(
            kind=Kind.ACTIVITY_CHAIN_BREAK,
            name=f"activity event {pk}",
            detail=f"Activity event {pk} no longer matches its hash or its link to the event before it "
            "(an event was edited, deleted or reordered).",
        )
        for pk in ActivityEvent.broken_links()
    ]


def check_chain_head() -> list[Finding]:
    """The hash chain of schemas 1-3, frozen since: its recorded head, its newest manifest and its newest checkpoint
    must agree.

    A manifest deleted with its rows after the last checkpoint leaves the head row pointing past the
    newest manifest; a deleted checkpoint file leaves its database row without a file.
    """
    chain = ManifestChain.objects.filter(pk=1).first()
    chained = Manifest.objects.filter(schema_version__lte=manifests.CHAINED)
    newest = chained.order_by("-sequence").values_list("sequence", "sha256").first() or (0, None)
    found = []
    if chain and (chain.length, chain.head_sha256) != (newest[0], newest[1] or chain.head_sha256):
        found.append(
            Finding(
                kind=Kind.CHAIN_TRUNCATED,
                name="manifest chain",
                detail=f"The chain's head records {chain.length} manifests, but the newest manifest "
                f"is number {newest[0]} (manifests were deleted or the head was rewritten).",
            )
        )
    return found + [
        finding
        for checkpoint in Checkpoint.objects.order_by("chain_length")
        for finding in _check_checkpoint_file(checkpoint, newest[0])
    ]


def _check_checkpoint_file(checkpoint: Checkpoint, newest_sequence: int) -> list[Finding]:
    def problem(kind, detail):
        return [Finding(kind=kind, name=checkpoint.storage_name, detail=detail)]

    if checkpoint.chain_length > newest_sequence:
        return problem(
            Kind.CHAIN_TRUNCATED,
            f"Checkpoint {checkpoint.chain_length} covers more manifests than the "
            f"{newest_sequence} that exist (the newest were deleted).",
        )
    # What a file that is there says is checked by checkpoints.check_all; here, that it is there.
    if not stores.outputs().exists(checkpoint.storage_name):
        return problem(Kind.CHECKPOINT_MISSING, f"The file of checkpoint {checkpoint.chain_length} is missing.")
    return []


def stray_preview(name: str, rendering: dict[str, int]) -> bool:
    """False for a file a preview worker may still be writing: a well-formed preview name, of a page the
    bundle has, under a manifest whose previews are not all recorded yet (files land before their rows)."""
    prefix, _, filename = name.rpartition("/previews/")
    named = preview_page(filename)
    if named is None or prefix not in rendering or named[1] not in WIDTHS:
        return True
    return not 1 <= named[0] <= rendering[prefix]
