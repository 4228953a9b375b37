"""Evidence that outlives Ed25519: every record, the index and the log's checkpoint also signed with ML-DSA-44, the
keys published beside the Ed25519 ones, and the offline verifier requiring both with --require-post-quantum."""

import base64
import os

import pytest

from audit.ledger import checkpoints, signing
from audit.models import ActivityEvent, LogCheckpoint, Manifest, SigningKey
from audit.verification.verify import verify_all
from audit.verifier import notes
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs
from tests.audit.test_evidence import (  # noqa: F401 (fixtures)
    chain,
    edit_index,
    export,
    failed,
    index_of,
    out,
    rewrite,
    verify,
)

pytestmark = pytest.mark.django_db
PQ = "--require-post-quantum"


@pytest.fixture
def before_mldsa(settings):
    """A deployment before this change: no ML-DSA-44 key, so everything it signs carries Ed25519 alone."""
    settings.PAGETRAIL_MLDSA_SIGNING_KEY = ""
    ActivityEvent.objects.update(mldsa_signature="", mldsa_key_id="")  # this test database's start, signed before


def passed(done) -> None:
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "PASS", done.stdout


def test_a_package_from_the_portal_verifies_with_and_without_post_quantum_required(chain, out):  # noqa: F811
    package = export(out)
    passed(verify(package))
    done = verify(package, PQ)
    passed(done)
    manifest = chain.first()
    assert manifest.mldsa_key_id.startswith("ml-dsa-44-") and len(base64.b64decode(manifest.mldsa_signature)) == 2420
    assert f"also signed with ML-DSA-44 by {manifest.mldsa_key_id}" in done.stdout


def test_records_signed_with_ed25519_alone_fail_with_the_flag_and_pass_without(before_mldsa, chain, out):  # noqa: F811
    package = export(out)
    assert not any("mldsa_key_id" in m for m in index_of(package)["manifests"])
    passed(verify(package))
    done = verify(package, PQ)
    failed(done, f"{chain.first().sequence:06d}", "carries no ML-DSA-44 signature")
    failed(done, "log checkpoint", "carries no ML-DSA-44 signature by a trusted key")
    failed(done, "index.sig.json", "carries no ML-DSA-44 signature")


def flipped(signature: str) -> str:
    raw = bytearray(base64.b64decode(signature))
    raw[100] ^= 1
    return base64.b64encode(bytes(raw)).decode()


def test_a_tampered_ml_dsa_signature_fails_even_without_the_flag(chain, out):  # noqa: F811
    def tamper(index):
        index["manifests"][0]["mldsa_signature"] = flipped(index["manifests"][0]["mldsa_signature"])

    package = rewrite(export(out), edit_index(tamper))
    failed(verify(package, "--trust-package-keys"), "the ML-DSA-44 signature does not verify")


def test_a_tampered_ml_dsa_line_on_the_checkpoint_fails(chain, out):  # noqa: F811
    def tamper(index):
        text, lines = notes.split(index["log"]["checkpoint"])
        name, _, encoded = lines[1][len(notes.DASH) :].partition(" ")
        lines[1] = f"{notes.DASH}{name} {flipped(encoded)}"
        index["log"]["checkpoint"] = f"{text}\n" + "".join(f"{line}\n" for line in lines)

    package = rewrite(export(out), edit_index(tamper))
    failed(verify(package, "--trust-package-keys"), "log checkpoint", "ML-DSA-44 signature", "does not verify")


def test_the_checkpoint_note_carries_an_ed25519_line_then_an_ml_dsa_line(chain, settings):  # noqa: F811
    note = checkpoints.covering(chain.last().sequence + 1).note
    _, lines = notes.split(note)
    origin, public = settings.PAGETRAIL_LOG_ORIGIN, signing.configured_publics(signing.MLDSA44)[0]
    assert [line.split(" ")[1] for line in lines] == [origin, origin]
    assert base64.b64decode(lines[1].split(" ")[2])[:4] == notes.key_id(
        origin, b"\xffpagetrail.ml-dsa-44-note/v1", public
    )
    # an auditor holding only the Ed25519 key (Go's note, a witness) ignores the second line, as signed-note says
    size = notes.open_checkpoint(note, signing.configured_publics()).size
    assert size == LogCheckpoint.objects.get(note=note).tree_size
    assert notes.open_checkpoint(note, [], origin, [public], require_mldsa=True).size == size
    tampered = note.replace(lines[1], f"{notes.DASH}{origin} {flipped(lines[1].split(' ')[2])}")
    with pytest.raises(notes.NoteError, match="ML-DSA-44 signature"):
        notes.open_checkpoint(tampered, signing.configured_publics(), origin, [public])


def test_a_verification_run_finds_a_tampered_ml_dsa_signature_in_the_database(chain):  # noqa: F811
    assert verify_all()[0] == []
    manifest = chain.first()
    Manifest.objects.filter(pk=manifest.pk).update(mldsa_signature=flipped(manifest.mldsa_signature))
    assert [(f.kind, f.manifest_id) for f in verify_all()[0]] == [("bad_signature", manifest.pk)]


def test_key_rotation_keeps_old_records_verifying(chain, out, settings, tmp_path):  # noqa: F811
    old_id, old_public = (
        signing.current_mldsa_key_id(),
        base64.b64encode(signing.configured_publics(signing.MLDSA44)[0]),
    )
    settings.PAGETRAIL_MLDSA_SIGNING_KEY = base64.b64encode(os.urandom(32)).decode()  # the same command as Ed25519's
    settings.PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS = [old_public.decode()]
    with open(pdfs.jpeg_gray(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="y.pdf", submitted_by="t").job_id)
    newest = Manifest.objects.order_by("sequence").last()
    assert newest.mldsa_key_id not in ("", old_id) and chain.first().mldsa_key_id == old_id
    old, new = SigningKey.objects.get(key_id=old_id), SigningKey.objects.get(key_id=newest.mldsa_key_id)
    assert old.valid_until == new.valid_from and new.valid_until is None and new.algorithm == "ml-dsa-44"
    assert verify_all()[0] == []
    listed = {k["key_id"]: k for k in signing.published_document()["keys"]}
    assert listed[old_id]["valid_until"] and listed[newest.mldsa_key_id]["valid_until"] is None
    passed(verify(export(out), PQ))  # old records under the retired key, new ones under the new key


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PAGETRAIL_MLDSA_SIGNING_KEY", base64.b64encode(bytes(31)).decode()),
        ("PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS", ["AAAA"]),
    ],
)
def test_a_malformed_ml_dsa_key_refuses_to_start(settings, name, value):
    setattr(settings, name, value)
    (error,) = signing.mldsa_keys_configured()
    assert error.id == "audit.E012" and "ML-DSA-44" in error.msg
