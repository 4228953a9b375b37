"""store_once: a name is written once; on a local disk by a hard link, on S3 by a conditional PutObject, never
by overwriting."""

import hashlib
import io
import os
import tempfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage

from core import stores
from extraction.intake.decision import store_input
from extraction.intake.validation import StagedUpload
from extraction.models import input_storage_name
from tests.conftest import PRODUCTION


@pytest.fixture
def store(tmp_path):
    return FileSystemStorage(location=tmp_path / "store")


def written(tmp_path, data: bytes):
    path = tmp_path / f"temp-{hashlib.sha256(data).hexdigest()[:8]}"
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_it_links_a_file_on_the_same_disk_instead_of_copying_it(tmp_path, store):
    path, sha256 = written(tmp_path, b"image bytes")

    assert stores.store_once(store, "a/b/p00001-000.png", path, sha256) is True

    target = tmp_path / "store" / "a/b/p00001-000.png"
    assert os.path.samefile(path, target) and oct(target.stat().st_mode & 0o777) == "0o600"
    path.unlink()  # the temp dir goes; the stored name keeps the bytes
    assert target.read_bytes() == b"image bytes"


def test_a_repeat_with_the_same_bytes_is_harmless_and_other_bytes_are_a_conflict(tmp_path, store):
    first, sha256 = written(tmp_path, b"image bytes")
    stores.store_once(store, "x.png", first, sha256)
    again, _ = written(tmp_path, b"image bytes")
    other, other_sha256 = written(tmp_path, b"other bytes")

    assert stores.store_once(store, "x.png", again, sha256) is False
    with pytest.raises(stores.OutputConflict):
        stores.store_once(store, "x.png", other, other_sha256)
    assert store.open("x.png").read() == b"image bytes"


def test_it_copies_through_the_storage_api_when_the_store_is_on_another_disk(tmp_path):
    """Temp on disk, the store on tmpfs: a link cannot cross, so the bytes are copied."""
    if not Path("/dev/shm").is_dir() or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system here")
    path, sha256 = written(tmp_path, b"image bytes")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as elsewhere:
        store = FileSystemStorage(location=elsewhere)

        assert stores.store_once(store, "x.png", path, sha256) is True

        assert not os.path.samefile(path, Path(elsewhere) / "x.png")
        assert store.open("x.png").read() == b"image bytes"


def test_bytes_under_counts_every_file_below_once_and_follows_no_link(tmp_path):
    sizes = {"a.pdf": 7, "extracted/x.png": 300, "extracted/deeper/y.tif": 4096, "extracted/.z.partial": 1}
    for name, size in sizes.items():
        (tmp_path / "job" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "job" / name).write_bytes(b"\0" * size)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "big").write_bytes(b"\0" * 10_000)
    (tmp_path / "job" / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)

    assert stores.bytes_under(tmp_path / "job") == sum(sizes.values())
    assert stores.bytes_under(tmp_path / "gone") == 0


def test_a_job_output_expected_new_is_still_a_harmless_repeat_or_a_conflict(tmp_path, store):
    first, sha256 = written(tmp_path, b"image bytes")
    assert stores.store_once(store, "x.png", first, sha256, expect_new=True) is True
    again, _ = written(tmp_path, b"image bytes")
    other, other_sha256 = written(tmp_path, b"other bytes")

    assert stores.store_once(store, "x.png", again, sha256, expect_new=True) is False
    with pytest.raises(stores.OutputConflict):
        stores.store_once(store, "x.png", other, other_sha256, expect_new=True)
    assert store.open("x.png").read() == b"image bytes" and sorted(os.listdir(tmp_path / "store")) == ["x.png"]


def test_a_manifests_bytes_are_stored_once_under_their_name(store):
    body = b'{"manifest": 1}'
    sha256 = hashlib.sha256(body).hexdigest()

    assert stores.save_bytes_once(store, f"m/{sha256}.json", body, sha256) is True
    assert stores.save_bytes_once(store, f"m/{sha256}.json", body, sha256) is False
    assert store.open(f"m/{sha256}.json").read() == body and store.listdir("m") == ([], [f"{sha256}.json"])


s3_only = pytest.mark.skipif(not PRODUCTION, reason="the production profile's S3 store (the suite's S3 server)")
WRITES = {"PutObject", "CreateMultipartUpload", "CopyObject", "DeleteObject", "DeleteObjects"}


@pytest.fixture
def s3_store():
    """This test's output store: the production profile's bucket, under a prefix of this test's own."""
    return stores.outputs()


@pytest.fixture
def sent(s3_store):
    """The S3 requests the store sends from here on, by operation, in order (botocore's own events)."""
    operations = []
    events = s3_store.connection.meta.client.meta.events
    events.register("before-send.s3", lambda event_name, **kwargs: operations.append(event_name.rsplit(".", 1)[-1]))
    return operations


def stored_object(store, name: str) -> dict:
    """What S3 says of a stored object: the parameters a save applied, and what changes when it is written."""
    client, key = store.connection.meta.client, store._normalize_name(name)
    head = client.head_object(Bucket=store.bucket_name, Key=key, ChecksumMode="ENABLED")
    acl = client.get_object_acl(Bucket=store.bucket_name, Key=key)["Grants"]
    fields = ("ContentType", "ContentEncoding", "ServerSideEncryption", "ChecksumSHA256", "StorageClass", "Metadata")
    return {"ETag": head["ETag"], "LastModified": head["LastModified"], "Grants": acl} | {
        field: head.get(field) for field in fields
    }


@s3_only
def test_it_writes_a_new_job_output_on_s3_with_one_request(tmp_path, s3_store, sent):
    path, sha256 = written(tmp_path, b"image bytes")

    assert stores.store_once(s3_store, "a/b/p00001-000.png", path, sha256, expect_new=True) is True

    assert sent == ["PutObject"]
    assert s3_store.open("a/b/p00001-000.png").read() == b"image bytes"


@pytest.fixture
def input_requests():
    """The S3 requests the input store sends from here on, by operation, in order."""
    operations: list[str] = []
    events = stores.inputs().connection.meta.client.meta.events
    events.register("before-send.s3", lambda event_name, **kwargs: operations.append(event_name.rsplit(".", 1)[-1]))
    return operations


def staged(tmp_path, data: bytes) -> StagedUpload:
    path, sha256 = written(tmp_path, data)
    return StagedUpload(path, len(data), sha256)


@s3_only
def test_intake_writes_a_new_input_on_s3_with_one_request(tmp_path, input_requests):
    upload = staged(tmp_path, b"%PDF- a new input")

    assert store_input(upload) is True

    assert input_requests == ["PutObject"]  # conditional: no HEAD first
    assert stores.inputs().open(input_storage_name(upload.sha256)).read() == b"%PDF- a new input"


@s3_only
def test_intake_accepts_an_input_repeated_with_the_same_bytes_and_writes_nothing_new(tmp_path, input_requests):
    upload = staged(tmp_path, b"%PDF- an input sent twice")
    store_input(upload)
    name = input_storage_name(upload.sha256)
    before, input_requests[:] = stored_object(stores.inputs(), name), []

    assert store_input(staged(tmp_path, b"%PDF- an input sent twice")) is False

    assert [op for op in input_requests if op in WRITES] == ["PutObject"]  # refused (412), then the bytes compared
    assert stored_object(stores.inputs(), name) == before


@s3_only
def test_intake_finds_an_input_name_holding_other_bytes_a_conflict_and_keeps_them(tmp_path):
    upload = staged(tmp_path, b"%PDF- the input")
    name = input_storage_name(upload.sha256)
    other, other_sha256 = written(tmp_path, b"%PDF- other bytes under its name")
    stores.store_once(stores.inputs(), name, other, other_sha256)

    with pytest.raises(stores.OutputConflict):
        store_input(upload)

    assert stores.inputs().open(name).read() == b"%PDF- other bytes under its name"


@s3_only
def test_an_s3_output_repeated_with_the_same_bytes_writes_nothing_new(tmp_path, s3_store, sent):
    first, sha256 = written(tmp_path, b"image bytes")
    stores.store_once(s3_store, "x.png", first, sha256, expect_new=True)
    before, sent[:] = stored_object(s3_store, "x.png"), []
    again, _ = written(tmp_path, b"image bytes")

    assert stores.store_once(s3_store, "x.png", again, sha256, expect_new=True) is False

    assert [op for op in sent if op in WRITES] == ["PutObject"]  # the one refused: no copy written and dropped
    assert stored_object(s3_store, "x.png") == before and list(stores.walk(s3_store)) == ["x.png"]


@s3_only
def test_an_s3_output_repeated_with_other_bytes_is_a_conflict_and_the_stored_one_stays(tmp_path, s3_store, sent):
    first, sha256 = written(tmp_path, b"image bytes")
    stores.store_once(s3_store, "x.png", first, sha256, expect_new=True)
    before, sent[:] = stored_object(s3_store, "x.png"), []
    other, other_sha256 = written(tmp_path, b"other bytes")

    with pytest.raises(stores.OutputConflict):
        stores.store_once(s3_store, "x.png", other, other_sha256, expect_new=True)

    assert [op for op in sent if op in WRITES] == ["PutObject"]
    assert stored_object(s3_store, "x.png") == before and list(stores.walk(s3_store)) == ["x.png"]
    assert s3_store.open("x.png").read() == b"image bytes"


@s3_only
@pytest.mark.parametrize("extension", ["png", "tif", "jp2"])
def test_an_s3_output_gets_the_parameters_a_save_through_the_storage_applies(tmp_path, s3_store, extension):
    path, sha256 = written(tmp_path, b"image bytes")
    with open(path, "rb") as fh:
        assert s3_store.save(f"saved.{extension}", File(fh)) == f"saved.{extension}"

    stores.store_once(s3_store, f"put.{extension}", path, sha256, expect_new=True)

    saved, put = stored_object(s3_store, f"saved.{extension}"), stored_object(s3_store, f"put.{extension}")
    assert {k: v for k, v in put.items() if k != "LastModified"} == {
        k: v for k, v in saved.items() if k != "LastModified"
    }
    assert put["ServerSideEncryption"] == settings.STORAGES["outputs"]["OPTIONS"]["object_parameters"].get(
        "ServerSideEncryption"
    )


@s3_only
def test_a_manifest_on_s3_is_one_conditional_request_written_once_with_the_storages_parameters(s3_store, sent):
    body = b'{"manifest": 1}'
    sha256 = hashlib.sha256(body).hexdigest()
    s3_store.save("saved.json", File(io.BytesIO(body)))
    sent[:] = []

    assert stores.save_bytes_once(s3_store, "put.json", body, sha256) is True
    assert sent == ["PutObject"]
    stored = stored_object(s3_store, "put.json")
    assert stores.save_bytes_once(s3_store, "put.json", body, sha256) is False

    assert [op for op in sent if op in WRITES] == ["PutObject", "PutObject"]  # the second refused (412)
    assert stored_object(s3_store, "put.json") == stored and s3_store.open("put.json").read() == body
    saved = stored_object(s3_store, "saved.json")
    assert {k: v for k, v in stored.items() if k not in ("LastModified",)} == {
        k: v for k, v in saved.items() if k not in ("LastModified",)
    }


@s3_only
def test_a_stored_input_is_read_from_s3_with_one_request(tmp_path, s3_store, sent):
    from types import SimpleNamespace

    from core import stored_inputs

    path, sha256 = written(tmp_path, b"%PDF- the input")
    stores.store_once(stores.inputs(), f"w36a/{sha256}.pdf", path, sha256)
    events = stores.inputs().connection.meta.client.meta.events
    reads: list[str] = []
    events.register("before-send.s3", lambda event_name, **kwargs: reads.append(event_name.rsplit(".", 1)[-1]))
    bundle = SimpleNamespace(input_name=f"w36a/{sha256}.pdf", correlation_id=sha256)

    copy = stored_inputs.verified_input(bundle, tmp_path / "copy.pdf")

    assert copy.read_bytes() == b"%PDF- the input"
    assert reads == ["GetObject"]  # not a HEAD, then the transfer's own HEAD and GET


@pytest.mark.django_db
def test_a_walk_names_every_file_under_its_prefix_and_no_folder(tmp_path):
    store = stores.outputs()
    names = ["a.png", "x/1/a.png", "x/1/b.png", "x/2/c/d.png", "x2/e.png", "y/f.png"]
    for name in names:
        store.save(name, ContentFile(name.encode()))

    assert sorted(stores.walk(store)) == names
    assert sorted(stores.walk(store, "x")) == ["x/1/a.png", "x/1/b.png", "x/2/c/d.png"]
    assert sorted(stores.walk(store, "x/2")) == ["x/2/c/d.png"] and list(stores.walk(store, "z")) == []


@s3_only
def test_an_s3_walk_is_one_listing_not_one_a_folder(s3_store, sent):
    """A walk listed each folder apart: one request a job's folder (10,020 at the issue's scale), each of which moto
    answers by scanning its whole bucket."""
    for name in ("x/1/a.png", "x/2/b.png", "x/3/c/d.png", "y/e.png"):
        s3_store.save(name, ContentFile(b"."))
    sent[:] = []

    assert len(list(stores.walk(s3_store))) == 4
    assert sent == ["ListObjectsV2"]
