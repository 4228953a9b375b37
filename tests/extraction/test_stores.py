"""store_once: a name is written once; on a local disk by a hard link, never by overwriting."""

import hashlib
import os
import tempfile
from pathlib import Path

import pytest
from django.core.files.storage import FileSystemStorage

from extraction import stores


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
