import base64
import json
import os

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.ledger import manifests, signing
from audit.ledger.signing import public_bytes
from audit.models import Asset, Manifest, SigningKey
from audit.verification.verify import verify_all
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs
from tests.audit.chained import make_chained
from tests.conftest import complete, delete_stored, read_stored, write_stored

pytestmark = pytest.mark.django_db


@pytest.fixture
def completed(tmp_path):
    """Two completed jobs (a chain of two manifests)."""
    for factory in (pdfs.mixed, pdfs.reused_on_three_pages):
        complete(factory(tmp_path), filename="x.pdf")
    return Manifest.objects.order_by("sequence")


def kinds():
    return sorted(f.kind for f in verify_all()[0])


def test_it_finds_nothing_wrong_with_untouched_evidence(completed):
    findings, counts = verify_all()
    assert findings == []
    assert counts["manifests"] == 2 and counts["assets"] == Asset.objects.count() == 7


def test_it_finds_one_flipped_byte_in_any_asset(completed):
    for asset in Asset.objects.all():
        original = read_stored("outputs", asset.name)
        for offset in (0, len(original) // 2, len(original) - 1):
            flipped = bytearray(original)
            flipped[offset] ^= 0x01
            write_stored("outputs", asset.name, bytes(flipped))
            assert kinds() == ["hash_mismatch"], (asset.name, offset)
        write_stored("outputs", asset.name, original)


def test_it_finds_a_deleted_asset(completed):
    delete_stored("outputs", Asset.objects.first().name)
    assert kinds() == ["missing_output"]


def test_it_finds_an_edited_manifest_row(completed):
    manifest = completed.first()
    body = json.loads(manifest.body)
    body["page_count"] = 99
    Manifest.objects.filter(pk=manifest.pk).update(body=json.dumps(body))
    assert "manifest_changed" in kinds()


def test_it_finds_edited_manifest_bytes_in_the_output_store(completed):
    name = completed.first().storage_name
    stored = read_stored("outputs", name)
    schema = f'"schema_version":{manifests.SCHEMA_VERSION}'.encode()
    assert schema in stored
    write_stored("outputs", name, stored.replace(schema, b'"schema_version":1'))
    assert kinds() == ["manifest_changed"]


def test_it_finds_a_signature_made_with_another_key(completed):
    manifest = completed.first()
    forged = Ed25519PrivateKey.generate().sign(manifest.body.encode()).hex()
    Manifest.objects.filter(pk=manifest.pk).update(signature=forged)
    assert kinds() == ["bad_signature"]


def test_it_finds_a_key_id_whose_published_key_was_swapped(completed):
    # The manifests still verify with the configured key; what is wrong is the published list.
    insider = base64.b64encode(public_bytes(Ed25519PrivateKey.generate().public_key())).decode()
    SigningKey.objects.filter(algorithm="ed25519").update(public_key=insider)
    assert kinds() == ["untrusted_signing_key"]


def test_it_trusts_no_signing_key_row_that_the_configuration_does_not_hold(completed):
    insider = Ed25519PrivateKey.generate()
    public = public_bytes(insider.public_key())
    SigningKey.objects.create(key_id=signing.key_id_of(public), public_key=base64.b64encode(public).decode())
    manifest = completed.first()
    Manifest.objects.filter(pk=manifest.pk).update(
        signature=insider.sign(manifest.body.encode()).hex(), key_id=signing.key_id_of(public)
    )
    assert kinds() == ["bad_signature", "untrusted_signing_key"]


def test_it_finds_a_signature_dated_outside_its_keys_validity_period(completed):
    first, second = completed
    SigningKey.objects.filter(key_id=first.key_id).update(valid_until=first.created_at)  # retired before the second
    found = verify_all()[0]
    assert [(f.kind, f.manifest) for f in found] == [
        ("bad_signature", second)
    ] and "outside the validity period of key" in found[0].detail


def test_it_finds_a_manifest_moved_away_from_its_leaf(completed):
    first, second = completed
    assert (first.sequence, second.sequence) == (first.log_leaf.index, second.log_leaf.index)
    Manifest.objects.filter(pk=first.pk).update(sequence=second.log_leaf.index + 100)
    found = verify_all()[0]
    assert [(f.kind, f.manifest) for f in found] == [("position_mismatch", first)]
    assert f"but it is leaf {first.log_leaf.index} of the ledger" in found[0].detail


def test_it_finds_a_manifest_dropped_from_a_chain_of_schemas_before_4(completed):
    first, _ = make_chained(completed)
    assert kinds() == []  # the upgraded deployment's chain verifies
    Manifest.objects.filter(pk=first.pk).update(sequence=100)
    assert "chain_break" in kinds()


def test_the_command_exits_non_zero_and_lists_each_problem(completed, capsys):
    delete_stored("outputs", Asset.objects.first().name)
    with pytest.raises(CommandError):
        call_command("verify_manifests", "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and [f["kind"] for f in report["findings"]] == ["missing_output"]


def test_the_command_exits_zero_when_all_is_well(completed, capsys):
    call_command("verify_manifests", "--json")
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_it_still_verifies_hmac_manifests_signed_before_ed25519_and_a_key_rotation(completed, settings):
    settings.PAGETRAIL_MANIFEST_KEY = "the HMAC key of the time"  # a shared deployment configures none by default
    for manifest in completed:
        signature = signing.hmac_sign(manifest.body.encode(), settings.PAGETRAIL_MANIFEST_KEY)
        Manifest.objects.filter(pk=manifest.pk).update(signature=signature, key_id="local-1")
    assert kinds() == []
    old_key = settings.PAGETRAIL_MANIFEST_KEY
    settings.PAGETRAIL_MANIFEST_KEY_ID, settings.PAGETRAIL_MANIFEST_KEY = "local-2", "the new key"
    assert kinds() == ["bad_signature", "bad_signature"]  # the old key is gone: nothing verifies
    settings.PAGETRAIL_MANIFEST_OLD_KEYS = {"local-1": old_key}
    assert kinds() == []


def test_it_verifies_what_a_retired_ed25519_key_signed_after_rotation(completed, settings, tmp_path):
    before = completed.first().key_id
    old_public = signing.current_public_key()
    settings.PAGETRAIL_SIGNING_KEY = base64.b64encode(os.urandom(32)).decode()  # a new key
    with open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="y.pdf", submitted_by="t").job_id)
    assert Manifest.objects.order_by("sequence").last().key_id not in ("", before)
    assert SigningKey.objects.get(key_id=before).valid_until is not None
    # Until the retired public key is configured, its row is only a claim in the database: so is each manifest
    # and each activity event (the ledger's records of this deployment's start among them) signed with it.
    found = kinds()
    assert found.count("bad_signature") == 2 and found.count("untrusted_signing_key") == 1
    assert set(found) == {"bad_signature", "untrusted_signing_key", "activity_invalid"}
    settings.PAGETRAIL_SIGNING_RETIRED_KEYS = [old_public]
    assert kinds() == []


def test_a_host_still_on_a_key_another_host_retired_widens_its_period_before_signing(completed, settings, tmp_path):
    """A rolling restart: this process found its key in use and stopped reading the key rows for its manifests; once
    another host publishes a new key (retiring this one), its next manifest still lies inside the old key's period."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    old_key, old_id = settings.PAGETRAIL_SIGNING_KEY, signing.current_key_id()
    with CaptureQueriesContext(connection) as captured:
        complete(pdfs.jpeg_rgb(tmp_path), filename="y.pdf")
    assert not [q for q in captured if "audit_signingkey" in q["sql"]]  # covered before: the keys are not read again
    settings.PAGETRAIL_SIGNING_KEY = base64.b64encode(os.urandom(32)).decode()
    signing.cover()  # the other host's first signature publishes its key and retires this one
    settings.PAGETRAIL_SIGNING_KEY = old_key
    assert SigningKey.objects.get(key_id=old_id).valid_until is not None
    complete(pdfs.cmyk(tmp_path), filename="z.pdf")
    newest = Manifest.objects.order_by("sequence").last()
    assert newest.key_id == old_id and SigningKey.objects.get(key_id=old_id).valid_until >= newest.created_at
    assert (
        signing.signature_problem(newest.body.encode(), newest.signature, newest.key_id, at=newest.created_at) is None
    )


def test_its_queries_do_not_grow_with_the_number_of_manifests(completed, tmp_path):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries():
        with CaptureQueriesContext(connection) as captured:
            verify_all()
        return len(captured)

    before = queries()
    for factory in (pdfs.jpeg_rgb, pdfs.cmyk):
        with open(factory(tmp_path), "rb") as fh:
            run_job(submit_bundle(fh, filename="y.pdf", submitted_by="t").job_id)
    assert queries() == before  # the published keys are read once, not once a manifest
