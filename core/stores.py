"""The private stores: inputs, outputs (django-storages backends) and the temp area (local disk)."""

import hashlib
import io
import os
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.core.files.utils import validate_file_name
from storages.utils import clean_name

if TYPE_CHECKING:
    from storages.backends.s3 import S3Storage

try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:  # the embedded profile needs no S3 client
    BotoCoreError = ClientError = OSError  # type: ignore[misc,assignment]  # no S3 client: nothing raises its errors

CHUNK = 1024 * 1024
# What a store raises when it cannot be read or written: a full or read-only disk, a missing bucket,
# refused credentials, an unreachable S3 endpoint.
STORAGE_ERRORS = (OSError, BotoCoreError, ClientError)
# S3's answers to a conditional PutObject whose name is taken: 412, or 409 to a write racing another on it.
NAME_TAKEN = {"PreconditionFailed", "ConditionalRequestConflict"}
MAX_PUT = 5 * 1024**3  # S3's limit for one PutObject; a larger file goes through the storage's multipart upload


class OutputConflict(Exception):
    """A deterministic name already holds different bytes: we never overwrite."""


class StorageUnavailable(Exception):
    """A store (`inputs`, `outputs` or `temp`) could not be read or written; trying later may work."""

    def __init__(self, store: str, error: Exception):
        detail = getattr(error, "strerror", None) or str(error) or type(error).__name__
        super().__init__(f"The {store} store could not be read or written ({type(error).__name__}: {detail}).")
        self.store, self.message = store, str(self)
        self.recorded = False  # set once an Attempt's row says it (the runner), so the job's hold adds no second


def sha256_of(storage: Storage, name: str) -> str:
    with storage.open(name, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def store_once(storage: Storage, name: str, path: Path, sha256: str, expect_new: bool = False) -> bool:
    """Put the file at `name` unless that name exists; returns True if this call stored it.

    An existing name with the same bytes is a harmless repeat (a redelivered task); with other
    bytes it is a conflict. Two racing writers: the backend renames the loser's copy, which we drop.
    `expect_new` (a job's own outputs, taken only by a redelivered task; an input, most of which intake has
    not seen): no exists() first; a link, or on S3 a conditional PutObject, fails on a taken name (one request
    for a new name), so a repeat finds out when it writes, as a race does: on S3 it costs its upload, refused,
    and the read that compares the bytes. Without it a repeat costs one question, no write, and a new name on S3
    one question and one conditional PutObject.
    """
    if not expect_new and storage.exists(name):
        _check_same(storage, name, sha256)
        return False
    if (linked := _link(storage, name, path)) is not None:
        if not linked:
            _check_same(storage, name, sha256)
        return linked
    # Free a moment ago, or expected new: on S3 one conditional PutObject, not django-storages' HEAD again and a PUT.
    if (put := _put_if_absent(storage, name, lambda: open(path, "rb"), path.stat().st_size, sha256)) is not None:
        if not put:
            _check_same(storage, name, sha256)
        return put
    with open(path, "rb") as fh:
        saved = save_new(storage, name, File(fh, name=name), sha256)
    if saved != name:
        storage.delete(saved)
        _check_same(storage, name, sha256)
        return False
    return True


def save_bytes_once(storage: Storage, name: str, body: bytes, sha256: str) -> bool:
    """Put `body` at `name` unless that name exists; returns True if this call stored it. For names that
    hold their content's hash (a manifest's), where a taken name holds these very bytes. On S3 one
    conditional PutObject; elsewhere a question first, then the write."""
    if (put := _put_if_absent(storage, name, lambda: io.BytesIO(body), len(body), sha256)) is not None:
        return put
    if storage.exists(name):
        return False
    save_new(storage, name, ContentFile(body), sha256)
    return True


def save_new(storage: Storage, name: str, content, sha256: str) -> str:
    """storage.save, but a write that fails (a disk filling up) leaves no partial file behind."""
    try:
        return storage.save(name, content)
    except STORAGE_ERRORS:
        drop_partial(storage, name, sha256)
        raise


def drop_partial(storage: Storage, name: str, sha256: str) -> None:
    """Delete `name` unless it holds the complete bytes (then it is someone's finished copy)."""
    try:
        if storage.exists(name) and sha256_of(storage, name) != sha256:
            storage.delete(name)
    except STORAGE_ERRORS:
        pass  # a store that cannot be read cannot be cleaned now: the sweep of terminal jobs comes back


def discard(storage: Storage, names, keep=frozenset()) -> None:
    """Delete what a failed try wrote, except the names in `keep` (named by a completed manifest)."""
    for name in set(names) - set(keep):
        try:
            storage.delete(name)
        except STORAGE_ERRORS:
            pass  # as above


def _link(storage: Storage, name: str, path: Path) -> bool | None:
    """On a file-system store on the same disk as temp, a hard link instead of a copy: a new name
    for the same bytes, created only if the name is free (link never overwrites). True when linked,
    False when the name was taken meanwhile, None when this store needs a copy (S3, another disk)."""
    target = local_path(storage, name)
    if target is None:
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.link(path, target)
    except FileExistsError:
        return False
    except OSError:  # another file system, or links not allowed: copy through the Storage API
        return None
    os.chmod(target, 0o600)
    return True


def _put_if_absent(storage: Storage, name: str, opener, size: int, sha256: str) -> bool | None:
    """On S3, one conditional PutObject (If-None-Match: *) with the parameters the storage's save would
    apply: created only if the name is free, as a link is, without the HEAD django-storages sends before
    each write. True when written, False when the name was taken, None when this store needs the storage's
    save (not S3, gzipped uploads, a file too large for one request). `opener` gives the bytes as a file."""
    if not is_s3(storage) or storage.gzip or size > MAX_PUT:
        return None
    validate_file_name(name, allow_relative_path=True)
    key = storage._normalize_name(clean_name(name))
    parameters = storage._get_write_parameters(key)  # what _save passes: object_parameters, ContentType, ACL
    with opener() as fh:
        try:
            storage.connection.meta.client.put_object(
                Bucket=storage.bucket_name, Key=key, Body=fh, IfNoneMatch="*", **parameters
            )
        except STORAGE_ERRORS as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") in NAME_TAKEN:
                return False
            drop_partial(storage, name, sha256)  # as save_new does
            raise
    return True


def is_s3(storage: Storage) -> TypeGuard["S3Storage"]:
    # An S3 store has imported its module (and boto3, a fifth of a second) already; a process without one need not.
    module = sys.modules.get("storages.backends.s3")
    return module is not None and isinstance(storage, module.S3Storage)


def local_path(storage: Storage, name: str) -> Path | None:
    """The stored file's path when the store is a local file system; None for S3."""
    try:
        return Path(storage.path(name))
    except NotImplementedError:
        return None


def _check_same(storage: Storage, name: str, sha256: str) -> None:
    found = sha256_of(storage, name)
    if found != sha256:
        raise OutputConflict(f"{name} already holds other bytes (sha256 {found[:12]}, expected {sha256[:12]}).")


def inputs() -> Storage:
    return storages["inputs"]


def outputs() -> Storage:
    return storages["outputs"]


def temp_root() -> Path:
    return Path(settings.TEMP_ROOT)


def uploads_dir() -> Path:
    path = temp_root() / "uploads"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def request_files_dir() -> Path:
    """Where Django spools the file part of an upload while a request reads it (FILE_UPLOAD_TEMP_DIR)."""
    path = Path(settings.FILE_UPLOAD_TEMP_DIR)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def jobs_dir() -> Path:
    return temp_root() / "jobs"


def job_work_dir(job_id: int) -> Path:
    """A job's private temp dir; everything in it is deleted at every terminal state."""
    path = jobs_dir() / str(job_id)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def bytes_under(path: Path | str) -> int:
    """Bytes of the files under `path`, 0 when it is gone (scandir reads entry types without a stat call)."""
    total = 0
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    total += bytes_under(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    except FileNotFoundError:
        pass
    return total


def remove_job_work_dir(job_id: int | str) -> None:
    shutil.rmtree(jobs_dir() / str(job_id), ignore_errors=True)


def attachment(storage: Storage, name: str, filename: str, content_type: str):
    """A stored file as a streamed download: never inline, never sniffed, never a public URL."""
    from django.http import FileResponse

    response = FileResponse(storage.open(name, "rb"), as_attachment=True, filename=filename, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response


def walk(storage: Storage, prefix: str = ""):
    """Every name under `prefix`, recursively, through the Storage API (file system or S3 alike)."""
    if is_s3(storage):
        yield from _s3_names(storage, prefix)
        return
    try:
        dirs, files = storage.listdir(prefix)
    except FileNotFoundError:
        return
    join = (lambda n: f"{prefix}/{n}") if prefix else (lambda n: n)  # noqa: E731
    yield from (join(f) for f in files)
    for d in dirs:
        yield from walk(storage, join(d))


def _s3_names(storage: "S3Storage", prefix: str):
    """One flat listing, a request a thousand names. A folder at a time (listdir) cost a request a job's folder,
    which S3 bills and moto answers by scanning its whole bucket: the output store's walk at 10,020 jobs took
    minutes."""
    from storages.utils import safe_join

    path = safe_join(storage.location, clean_name(prefix))
    path = path if not path or path.endswith("/") else f"{path}/"
    named = f"{prefix.rstrip('/')}/" if prefix.rstrip("/") else ""
    pages = storage.connection.meta.client.get_paginator("list_objects_v2").paginate(
        Bucket=storage.bucket_name, Prefix=path
    )
    for page in pages:
        for entry in page.get("Contents", ()):
            key = entry["Key"]
            if not key.endswith("/"):  # a folder's placeholder object is no file
                yield named + key[len(path) :]


COLLISION_SUFFIX = re.compile(r"_[A-Za-z0-9]{7}(?=\.[A-Za-z0-9]+$)")


def without_collision_suffix(name: str) -> str:
    """The name a backend was asked for before it appended `_abc1234` to avoid overwriting."""
    return COLLISION_SUFFIX.sub("", name, count=1)
