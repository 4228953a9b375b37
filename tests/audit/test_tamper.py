"""The tamper suite: what an insider with database and store access, or whoever holds an exported package,
could change, each expected to be found by the right finding kind (verification) or offline message
(verify_evidence.py). The README's tampering table lists them; signatures are tested in test_public_keys.py."""

import hashlib
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from audit import cases, checkpoints, retention
from audit.models import ActivityEvent, Case, Manifest, PagePreview, RetentionEvent
from extraction.models import Bundle
from tests.audit.test_cases import manifest  # noqa: F401 (a fixture)
from tests.audit.test_evidence import chain, edit_index, export, failed, index_of, out, rewrite, verify  # noqa: F401
from tests.audit.test_verify import completed, kinds  # noqa: F401 (a fixture)
from tests.conftest import approved_policy, delete_stored, read_stored, write_stored

pytestmark = pytest.mark.django_db
CHANGED = "changed after export"


# --- a deployment: verification finds each ------------------------------------------------------------

def test_it_finds_one_changed_byte_of_a_stored_input(completed):  # noqa: F811
    bundle = Bundle.objects.first()
    original = bytearray(read_stored("inputs", bundle.input_name))
    original[len(original) // 2] ^= 0x01
    write_stored("inputs", bundle.input_name, bytes(original))
    assert kinds() == ["input_changed"]


def test_it_finds_an_input_deleted_without_a_retention_event(completed):  # noqa: F811
    delete_stored("inputs", Bundle.objects.first().input_name)
    assert kinds() == ["missing_input"]


def test_it_finds_an_input_marked_deleted_without_a_retention_event(completed):  # noqa: F811
    bundle = Bundle.objects.first()
    Bundle.objects.filter(pk=bundle.pk).update(input_deleted_at=bundle.created_at)
    delete_stored("inputs", bundle.input_name)
    assert kinds() == ["missing_input"]


def events(count: int) -> list[ActivityEvent]:
    manifest = Manifest.objects.first()
    return [ActivityEvent.record(f"reviewer{n}", "flag_raised", manifest, after={"n": n}) for n in range(count)]


def test_it_finds_a_rewritten_activity_actor(completed):  # noqa: F811
    middle = events(3)[1]
    ActivityEvent.objects.filter(pk=middle.pk).update(actor="someone else")
    assert kinds() == ["activity_chain_break"]


def test_it_finds_a_deleted_activity_event(completed):  # noqa: F811
    middle = events(3)[1]
    with connection.cursor() as cursor:  # past the model's write-once guard, as an insider would be
        cursor.execute(f"DELETE FROM {ActivityEvent._meta.db_table} WHERE id = %s", [middle.pk])
    assert kinds() == ["activity_chain_break"]


def test_it_finds_the_newest_checkpoint_file_deleted(completed):  # noqa: F811
    delete_stored("outputs", checkpoints.write_checkpoint().storage_name)
    assert kinds() == ["checkpoint_missing"]


def test_it_finds_the_newest_manifest_deleted_with_its_rows_and_files(completed):  # noqa: F811
    newest = Manifest.objects.order_by("-sequence").select_related("job__bundle").first()
    job, bundle = newest.job, newest.job.bundle
    for asset in newest.assets.all():
        delete_stored("outputs", asset.name)
    delete_stored("outputs", newest.storage_name)
    delete_stored("inputs", bundle.input_name)
    with connection.cursor() as cursor:
        for table, column, value in (("audit_placement", "manifest_id", newest.pk),
                                     ("audit_asset", "manifest_id", newest.pk), ("audit_manifest", "id", newest.pk),
                                     ("extraction_attempt", "job_id", job.pk), ("extraction_job", "id", job.pk),
                                     ("extraction_bundle", "id", bundle.pk)):
            cursor.execute(f"DELETE FROM {table} WHERE {column} = %s", [value])
    assert kinds() == ["chain_truncated"]


def test_it_finds_a_stray_file_among_a_manifests_previews(completed):  # noqa: F811
    prefix = Manifest.objects.first().storage_name.rsplit("/", 1)[0]
    write_stored("outputs", f"{prefix}/previews/payload.html", b"<script>alert(1)</script>")
    assert kinds() == ["unexpected_output"]


def test_it_finds_a_preview_named_file_for_a_page_the_bundle_lacks(completed):  # noqa: F811
    prefix = Manifest.objects.first().storage_name.rsplit("/", 1)[0]
    write_stored("outputs", f"{prefix}/previews/p00999-w200.png", b"\x89PNG")
    assert kinds() == ["unexpected_output"]


def test_it_finds_a_stray_file_in_the_input_store(completed):  # noqa: F811
    write_stored("inputs", "ab/planted.pdf", b"%PDF-1.7 not a bundle's")
    assert kinds() == ["unexpected_input"]


def test_it_finds_an_altered_checkpoint_file(completed):  # noqa: F811
    name = checkpoints.write_checkpoint().storage_name
    document = json.loads(read_stored("outputs", name))
    document["checkpoint"]["created_at"] = "2020-01-01T00:00:00.000000Z"
    write_stored("outputs", name, json.dumps(document).encode())
    assert kinds() == ["checkpoint_mismatch"]


def test_it_finds_a_changed_page_preview(completed):  # noqa: F811
    manifest = Manifest.objects.first()
    preview = PagePreview.objects.create(manifest=manifest, page=1, max_width=200, content_type="image/png",
                                         storage_name=manifest.storage_name.rsplit("/", 1)[0] + "/previews/p00001-w200.png",
                                         sha256=hashlib.sha256(b"\x89PNG preview").hexdigest(), size=13, width=1,
                                         height=1)
    write_stored("outputs", preview.storage_name, b"\x89PNG preview")
    assert "hash_mismatch" not in kinds()
    write_stored("outputs", preview.storage_name, b"\x89PNG changed")
    assert "hash_mismatch" in kinds()


def made_up_deletion(bundle, **fields) -> RetentionEvent:
    """A retention event row inserted by hand, as an insider with database access would."""
    policy = approved_policy(is_default=True, contract_owner="Claims Ltd", decision_note="x")
    return RetentionEvent.objects.create(bundle=bundle, policy=policy, what="input", outcome="deleted", files=1,
                                         bytes_freed=bundle.size, at=bundle.created_at, **fields)


def test_it_finds_an_input_deleted_and_explained_by_a_made_up_retention_event(completed):  # noqa: F811
    bundle = Bundle.objects.first()
    delete_stored("inputs", bundle.input_name)
    made_up_deletion(bundle)
    assert kinds() == ["missing_input", "retention_event_invalid"]


def test_it_finds_an_edited_retention_event(completed):  # noqa: F811
    approved_policy(is_default=True, input_days=1, contract_owner="Claims Ltd", decision_note="x")
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    assert kinds() == []
    event = RetentionEvent.objects.get(what="input", bundle=Bundle.objects.first())
    RetentionEvent.objects.filter(pk=event.pk).update(bytes_freed=1)
    assert kinds() == ["missing_input", "retention_event_invalid"]  # and it no longer excuses the deleted input


def test_it_finds_assets_hidden_behind_a_signed_event_of_another_manifest(completed):  # noqa: F811
    first, second = Manifest.objects.order_by("sequence")[:2]
    approved_policy(is_default=True, output_days=1, contract_owner="Claims Ltd", decision_note="x")
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    event = RetentionEvent.objects.filter(what="outputs", manifest=first).get()
    RetentionEvent.objects.filter(pk=event.pk).update(manifest=second)  # now "explains" the second's assets
    assert "retention_event_invalid" in kinds()


# --- exported packages: the offline verifier fails each ------------------------------------------------


def test_it_fails_an_asset_removed_and_explained_by_a_made_up_retention_event(chain, out):  # noqa: F811
    package = export(out)
    gone = next(a for a in index_of(package)["assets"] if a["file"])

    def strip(members):
        del members[gone["file"]]
        index = json.loads(members["index.json"])
        entry = next(a for a in index["assets"] if a["name"] == gone["name"])
        entry.update(file=None, omitted="deleted_by_retention")
        index["retention_events"].append({"manifest": gone["manifest_sequence"], "what": "outputs",
                                          "outcome": "deleted", "at": "2026-11-30T00:00:00Z"})
        members["index.json"] = json.dumps(index).encode()
    failed(verify(rewrite(package, strip)), "index.json", CHANGED)


def test_it_fails_a_package_whose_assets_were_all_removed_and_declared_not_requested(chain, out):  # noqa: F811
    package = export(out)

    def strip(members):
        for name in [n for n in members if n.startswith("assets/")]:
            del members[name]
        index = json.loads(members["index.json"])
        index["includes_assets"] = False
        for entry in index["assets"]:
            entry.update(file=None, omitted="not_exported")
        members["index.json"] = json.dumps(index).encode()
    failed(verify(rewrite(package, strip)), "index.json", CHANGED)


def test_it_fails_a_date_range_package_with_its_newest_manifest_dropped(chain, out):  # noqa: F811
    package = export(out)

    def drop_newest(members):
        index = json.loads(members["index.json"])
        newest = index["manifests"].pop()
        del members[newest["file"]]
        for asset in [a for a in index["assets"] if a["manifest_sequence"] == newest["sequence"]]:
            index["assets"].remove(asset)
            members.pop(asset["file"], None)
        index["chain_segment"] = [s for s in index["chain_segment"] if s["sequence"] < newest["sequence"]]
        members["index.json"] = json.dumps(index).encode()
    failed(verify(rewrite(package, drop_newest)), "index.json", CHANGED)


def test_it_fails_a_package_whose_index_signature_was_removed(chain, out):  # noqa: F811
    def unsign(members):
        del members["index.sig.json"]
    failed(verify(rewrite(export(out), unsign)), "index.json", "is not signed")


def test_it_fails_a_date_range_index_that_leaves_out_a_manifest_of_its_range(chain, out):  # noqa: F811
    def leave_out(index):
        index["manifests"].pop(1)
    failed(verify(rewrite(export(out), edit_index(leave_out))), "index.json", "manifest 2 was created within the range")


def test_it_fails_a_case_package_missing_an_asset_its_signed_case_map_names(manifest, tmp_path):  # noqa: F811
    cases.split(manifest, [("claim A", 1, 60)], "rita")
    package = tmp_path / "case.zip"
    call_command("export_evidence", "--out", package, "--case", Case.objects.get().pk, "--with-assets")
    taken = next(a for a in index_of(package)["assets"] if a["file"])

    def relabel(members):
        del members[taken["file"]]
        index = json.loads(members["index.json"])
        next(a for a in index["assets"] if a["name"] == taken["name"]).update(file=None, omitted="outside_case")
        members["index.json"] = json.dumps(index).encode()
    problems = failed(verify(rewrite(package, relabel)), "cases/case-map-", taken["name"], "does not hold")
    assert any(CHANGED in line for line in problems)
