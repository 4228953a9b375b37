"""Tampering an insider with database and store access could do, each found by its own finding kind."""

import pytest
from django.db import connection

from audit import checkpoints
from audit.models import ActivityEvent, Manifest
from extraction.models import Bundle
from tests.audit.test_verify import completed, kinds  # noqa: F401 (a fixture)
from tests.conftest import delete_stored, read_stored, write_stored

pytestmark = pytest.mark.django_db


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
