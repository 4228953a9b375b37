import hashlib
import json
import subprocess
import sys
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings as django_settings
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import RequestFactory
from django.utils import timezone

from audit.admin.actions import export_evidence_action
from audit.export.package import build_evidence
from audit.ledger import signing
from audit.ledger.manifests import SCHEMA_VERSION, canonical_bytes
from audit.ledger.signing import hmac_sign
from audit.models import Asset, Finding, LogLeaf, Manifest, VerificationRun
from audit.retention import enforcement as retention
from audit.verifier.merkle import leaf_hash
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs
from tests.audit.test_tlog import rehash_subtrees
from tests.conftest import approved_policy, delete_stored, read_stored, temp_files, write_stored

pytestmark = pytest.mark.django_db

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def chain(tmp_path):
    """Three completed jobs, three bundles: three manifests in log order (chain[0], chain[1], chain[2]). Their
    sequences are their leaf indexes, not 1, 2, 3: other records are leaves of the ledger too."""
    for factory in (pdfs.mixed, pdfs.reused_on_three_pages, pdfs.jpeg_rgb):
        with open(factory(tmp_path), "rb") as fh:
            run_job(submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    return Manifest.objects.order_by("sequence")


def file_prefix(manifest) -> str:
    """Where a package puts this manifest, up to its hash."""
    return f"manifests/{manifest.sequence:06d}-"


@pytest.fixture
def out(tmp_path):
    path = tmp_path / "auditor"  # outside the project: the verifier cannot reach Pagetrail from here
    path.mkdir()
    return path


@pytest.fixture
def key(settings):
    # "--key=..." because a random key may begin with "-", which argparse would take for an option.
    return ["--key-id", settings.PAGETRAIL_MANIFEST_KEY_ID, f"--key={settings.PAGETRAIL_MANIFEST_KEY}"]


def retention_policy(**windows):
    return approved_policy(
        is_default=True, contract_owner="Claims Ltd", decision_note="Contract 12, clause 7", **windows
    )


SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "evidence-index.schema.json").read_text())


def export(out, name="evidence.zip", include_assets=True, **scope):
    """A package of `scope` (default: a date range from ten years back), its index.json checked against the
    schema docs/evidence-index.schema.json publishes."""
    build_evidence(
        out / name,
        include_assets=include_assets,
        exported_by="auditor@example",
        at=AT,
        **scope or {"date_from": AT - timedelta(days=3650)},
    )
    jsonschema.validate(index_of(out / name), SCHEMA, cls=jsonschema.Draft202012Validator)
    return out / name


def verify(package, *args, pin=True):
    """The offline verifier's run, pinned (unless told not to) to the portal's published key list."""
    if pin and "--public-keys" not in args and "--trust-package-keys" not in args:
        (package.parent / "signing-keys.json").write_text(json.dumps(signing.published_document()))
        args = (*args, "--public-keys", str(package.parent / "signing-keys.json"))
    script = package.parent / "verify_evidence.pyz"
    with zipfile.ZipFile(package) as zf:
        script.write_bytes(zf.read("verify_evidence.pyz"))
    done = subprocess.run(
        [sys.executable, "-I", str(script), str(package), *args],
        cwd=package.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert not done.stderr, done.stderr
    return done


def rewrite(package, change):
    """The package with its members (name -> bytes) passed through `change`, written as a new zip."""
    with zipfile.ZipFile(package) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    change(members)
    tampered = package.with_name("tampered.zip")
    with zipfile.ZipFile(tampered, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return tampered


def edit_index(change):
    def edit(members):
        index = json.loads(members["index.json"])
        change(index)
        members["index.json"] = json.dumps(index).encode()

    return edit


def index_of(package):
    with zipfile.ZipFile(package) as zf:
        return json.loads(zf.read("index.json"))


def failed(done, *words):
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and "FAIL" in done.stdout and "PASS" not in lines, done.stdout
    problems = [line for line in lines if line.startswith("  ")]
    assert any(all(w in line for w in words) for line in problems), done.stdout
    return problems


def asset_file(package):
    return next(a["file"] for a in index_of(package)["assets"] if a["file"])


# --- untouched packages pass --------------------------------------------------------------------------


def activity_carried(package) -> int:
    """How many activity events a date range package carries: every one the ledger holds, when the range
    reaches back past this test database's creation."""
    carried = len(index_of(package).get("activity", []))
    assert carried == LogLeaf.objects.filter(kind="activity").count() > 0
    return carried


def test_it_checks_every_signature_with_the_public_keys_alone_and_names_the_signer(chain, out):
    package = export(out)
    done = verify(package)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "PASS", done.stdout
    signatures = 3 + activity_carried(package) + 1  # 3 manifests, the activity events and the index
    assert f" {signatures} signature(s)" in done.stdout and "not checked" not in done.stdout
    assert f"signed by: {chain.first().key_id}\n" in done.stdout and chain.first().key_id.startswith("ed25519-")


def legacy_hmac(manifest, key=None):
    """The newest manifest as it was written before Ed25519: HMAC-SHA256 under the configured HMAC key id."""
    key_id = django_settings.PAGETRAIL_MANIFEST_KEY_ID
    body = manifest.body.replace(f'"key_id":"{manifest.key_id}"', f'"key_id":"{key_id}"').encode()
    signature = hmac_sign(body, key or django_settings.PAGETRAIL_MANIFEST_KEY)
    sha256 = hashlib.sha256(body).hexdigest()
    Manifest.objects.filter(pk=manifest.pk).update(
        body=body.decode(), sha256=sha256, signature=signature, key_id=key_id, mldsa_signature="", mldsa_key_id=""
    )
    LogLeaf.objects.filter(manifest=manifest).update(leaf_hash=leaf_hash(body).hex())  # as the log's backfill did
    rehash_subtrees()  # and 0023 after it
    write_stored("outputs", manifest.storage_name, body)


def test_it_says_hmac_signatures_were_not_checked_without_their_key(chain, out):
    legacy_hmac(chain[2])
    done = verify(export(out))
    assert done.returncode == 0 and "1 HMAC signature(s) not checked: no key given" in done.stdout, done.stdout


def test_it_passes_an_untouched_package_with_the_key_and_counts_what_it_checked(chain, out, key):
    package = export(out)
    done = verify(package, *key)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "PASS", done.stdout
    activity = activity_carried(package)
    assert (
        f"checked: 3 manifest(s), {Asset.objects.count()} asset(s) re-hashed, {3 + activity + 1} signature(s), "
        f"{3 + activity} log inclusion proof(s)"
    ) in done.stdout
    assert "not checked" not in done.stdout


def test_it_takes_hmac_keys_from_a_key_file(chain, out, settings):
    legacy_hmac(chain[2])
    keys = out / "keys.txt"
    keys.write_text(f"# id=key\n{settings.PAGETRAIL_MANIFEST_KEY_ID}={settings.PAGETRAIL_MANIFEST_KEY}\n")
    package = export(out)
    done = verify(package, "--key-file", str(keys))
    signatures = 3 + activity_carried(package) + 1  # the HMAC-signed manifest among them
    assert done.returncode == 0 and f" {signatures} signature(s)" in done.stdout, done.stdout
    assert "not checked" not in done.stdout


def test_it_reports_assets_left_out_of_a_package_without_assets_as_not_included(chain, out, key):
    done = verify(export(out, include_assets=False), *key)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "PASS", done.stdout
    assert f"{Asset.objects.count()} asset(s) not included" in done.stdout


# --- every tampered package fails, naming the problem ---------------------------------------------------


def test_it_fails_on_one_flipped_byte_of_an_asset(chain, out):
    package = export(out)
    name = asset_file(package)

    def flip(members):
        data = bytearray(members[name])
        data[len(data) // 2] ^= 0x01
        members[name] = bytes(data)

    failed(verify(rewrite(package, flip)), name, "bytes hash to")


def test_it_fails_on_an_asset_deleted_from_the_package(chain, out):
    package = export(out)
    name = asset_file(package)
    failed(verify(rewrite(package, lambda members: members.pop(name))), name, "missing from the package")


def test_it_fails_on_a_stray_file_added_to_the_package(chain, out):
    package = export(out)
    stray = "assets/extra/p00001-000.png"
    failed(verify(rewrite(package, lambda members: members.update({stray: b"\x89PNG"}))), stray, "unexpected file")


def edited_schema(body: bytes) -> bytes:
    """The manifest's bytes claiming an older schema: an edit of one signed byte."""
    edited = body.replace(f'"schema_version":{SCHEMA_VERSION}'.encode(), b'"schema_version":1')
    assert edited != body
    return edited


def test_it_fails_on_edited_manifest_bytes(chain, out):
    package = export(out)
    name = index_of(package)["manifests"][1]["file"]

    def edit(members):
        members[name] = edited_schema(members[name])

    failed(verify(rewrite(package, edit)), name, "hashes to")


def test_it_fails_on_an_edited_manifest_hash_in_the_index(chain, out):
    package = export(out)
    name = index_of(package)["manifests"][0]["file"]

    def edit(index):
        index["manifests"][0]["sha256"] = "f" * 64

    failed(verify(rewrite(package, edit_index(edit))), name, "index.json says " + "f" * 64)


def test_it_fails_on_two_manifests_swapped_in_the_log(chain, out):
    package = export(out)

    def swap(index):
        proofs = index["log"]["inclusion"]
        proofs[0]["leaf_index"], proofs[1]["leaf_index"] = proofs[1]["leaf_index"], proofs[0]["leaf_index"]

    failed(verify(rewrite(package, edit_index(swap))), file_prefix(chain[0]), "inclusion proof does not lead")


def test_it_fails_on_a_signature_forged_with_another_key(chain, out):
    forged = chain[1]
    signature = Ed25519PrivateKey.generate().sign(forged.body.encode()).hex()
    Manifest.objects.filter(pk=forged.pk).update(signature=signature)
    package = export(out)
    name = index_of(package)["manifests"][1]["file"]
    failed(verify(package), name, f"Ed25519 signature does not verify with public key {forged.key_id}")


def test_it_fails_on_an_hmac_signature_forged_with_another_key(chain, out, key):
    legacy_hmac(chain[2], key="not the key")
    package = export(out)
    failed(verify(package, *key), index_of(package)["manifests"][2]["file"], "HMAC signature does not verify")


def test_it_fails_on_an_asset_missing_from_the_store_without_a_retention_event(chain, out):
    asset = Asset.objects.first()
    delete_stored("outputs", asset.name)
    failed(verify(export(out)), f"assets/{asset.name}", "missing from store")


def test_it_fails_when_the_retention_event_behind_a_left_out_asset_is_removed(chain, out):
    retention_policy(output_days=1)
    retention.apply_retention(at=timezone.now() + timedelta(days=2))

    def forget(index):
        index["retention_events"] = []

    package = rewrite(export(out), edit_index(forget))
    failed(verify(package), "assets/", "no signed retention event in the package names")


def test_it_fails_on_a_manifest_row_edited_in_the_database(chain, out):
    edited = chain[0]
    body = json.loads(edited.body)
    body["page_count"] = 99
    Manifest.objects.filter(pk=edited.pk).update(body=canonical_bytes(body).decode())
    failed(verify(export(out)), f"{file_prefix(edited)}{edited.sha256}.json", "hashes to")


def test_it_fails_when_the_stored_manifest_file_differs_from_the_database(chain, out):
    changed = chain[2]
    write_stored("outputs", changed.storage_name, edited_schema(read_stored("outputs", changed.storage_name)))
    failed(verify(export(out)), file_prefix(changed), "output store differed from the database copy")


def test_it_fails_when_an_asset_was_changed_in_the_output_store(chain, out):
    asset = Asset.objects.first()
    write_stored("outputs", asset.name, read_stored("outputs", asset.name) + b"\0")
    failed(verify(export(out)), f"assets/{asset.name}", "bytes hash to")


# --- what the package holds ----------------------------------------------------------------------------


def test_a_date_range_carries_the_records_just_outside_it_as_boundaries(chain, out):
    first, second, third = chain
    package = export(out, date_from=second.created_at, date_to=third.created_at)
    index = index_of(package)
    assert [m["sequence"] for m in index["manifests"]] == [second.sequence]
    boundaries = index["log"]["boundaries"]
    assert [(b["kind"], b["leaf_index"], b["file"][:17]) for b in boundaries] == [
        ("manifest", first.log_leaf.index, file_prefix(first)),
        ("manifest", third.log_leaf.index, file_prefix(third)),
    ]
    assert first.created_at < third.created_at
    done = verify(package)
    assert done.returncode == 0 and "2 range boundary record(s)" in done.stdout, done.stdout


def test_a_selection_carries_no_boundaries(chain, out):
    first, _, third = chain
    index = index_of(export(out, manifests=chain.filter(pk__in=[first.pk, third.pk])))
    assert [m["sequence"] for m in index["manifests"]] == [first.sequence, third.sequence]
    assert index["log"]["boundaries"] == []


def test_a_bundle_scope_holds_that_bundles_manifest_and_its_assets_only(chain, out):
    manifest = chain[1]
    index = index_of(export(out, bundle=manifest.correlation_id))
    assert [m["sha256"] for m in index["manifests"]] == [manifest.sha256]
    assert sorted(a["name"] for a in index["assets"]) == sorted(manifest.assets.values_list("name", flat=True))
    assert index["retention_events"] == []


def test_it_exports_the_latest_verification_results_about_the_scope_only(chain, out):
    run = VerificationRun.objects.create(status="failed", started_by="t", findings_count=2, finished_at=AT)
    first, second, _ = chain
    for manifest in (first, second):
        Finding.objects.create(run=run, kind="hash_mismatch", manifest=manifest, detail=f"about {manifest.sequence}")
    runs = index_of(export(out, manifest=first.sequence))["verification_runs"]
    assert [(r["id"], r["status"]) for r in runs] == [(run.pk, "failed")]
    assert [f["detail"] for f in runs[0]["findings_in_scope"]] == [f"about {first.sequence}"]


def test_it_exports_the_retention_events_and_leaves_out_deleted_outputs_without_failing(chain, out, key):
    retention_policy(input_days=1, output_days=1)
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    manifest = chain[1]
    package = export(out, manifest=manifest.sequence)
    events = index_of(package)["retention_events"]
    assert [(e["manifest"], e["what"], e["outcome"]) for e in events] == [
        (None, "input", "deleted"),
        (manifest.sequence, "outputs", "deleted"),
    ]
    assert events[0]["policy"]["decision_note"] == "Contract 12, clause 7"
    done = verify(package, *key)
    assert done.returncode == 0, done.stdout
    assert f"note: {manifest.assets.count()} file(s) deleted under retention" in done.stdout


def test_the_same_evidence_gives_byte_identical_packages(chain, out):
    first, second = export(out, "one.zip"), export(out, "two.zip")
    assert first.read_bytes() == second.read_bytes()


# --- the command ---------------------------------------------------------------------------------------


def test_the_command_writes_a_package_that_passes_and_prints_its_summary(chain, out, capsys):
    manifest = chain[0]
    call_command(
        "export_evidence", "--out", str(out / "bundle.zip"), "--bundle", manifest.correlation_id, "--with-assets"
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["manifests"] == 1 and summary["assets_included"] == manifest.assets.count()
    assert verify(out / "bundle.zip").returncode == 0


@pytest.mark.parametrize(
    "scope, message",
    [
        (["--bundle", "0" * 64], "No bundle with correlation id"),
        (["--manifest", "42"], "No manifest with sequence 42"),
        (["--from", "2001-01-01", "--to", "2001-01-31"], "No manifest in scope"),
        ([], "Choose a scope"),
        (["--from", "last tuesday"], "is not a date"),
    ],
)
def test_the_command_refuses_an_unknown_or_empty_scope_and_writes_nothing(chain, out, scope, message):
    with pytest.raises(CommandError, match=message):
        call_command("export_evidence", "--out", str(out / "e.zip"), *scope)
    assert list(out.iterdir()) == []


def test_the_command_includes_the_whole_last_day_of_a_date_range(chain, out, capsys):
    day = chain.last().created_at.date().isoformat()
    call_command("export_evidence", "--out", str(out / "e.zip"), "--from", day, "--to", day)
    assert json.loads(capsys.readouterr().out)["manifests"] == 3


# --- the admin action ----------------------------------------------------------------------------------


def test_the_admin_action_returns_the_selected_manifests_as_a_zip_attachment(chain, out):
    request = RequestFactory().post("/admin/audit/manifest/")
    request.user = User.objects.create_superuser("compliance", password="pw")
    modeladmin = admin.site._registry[Manifest]
    _, second, third = chain
    selected = modeladmin.get_queryset(request).filter(pk__in=[second.pk, third.pk])
    response = export_evidence_action(modeladmin, request, selected)
    (out / "signing-keys.json").write_text(json.dumps(signing.published_document()))  # closing ends the connection
    assert response["Content-Type"] == "application/zip"
    name = f"pagetrail-evidence-{second.sequence:06d}-{third.sequence:06d}.zip"  # first and last sequence
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    package = out / "download.zip"
    package.write_bytes(b"".join(response.streaming_content))
    response.close()
    assert [m["sequence"] for m in index_of(package)["manifests"]] == [second.sequence, third.sequence]
    assert verify(package, "--public-keys", str(out / "signing-keys.json")).returncode == 0 and temp_files() == []
