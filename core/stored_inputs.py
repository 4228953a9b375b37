"""Reading a bundle's stored input: checked against its hash, and a missing input told apart from a store outage."""

import errno
import hashlib
from contextlib import closing, contextmanager
from pathlib import Path

from django.core.files.storage import Storage
from storages.utils import clean_name

from .stores import CHUNK, STORAGE_ERRORS, StorageUnavailable, inputs, is_s3, local_path


class InputChanged(Exception):
    """The stored input no longer hashes to the bundle's correlation id: nothing is made from it."""


class InputMissing(Exception):
    """The inputs store answers, and the bundle's input is not in it (deleted behind our back): no retry brings it
    back, so its job fails at once instead of waiting out its deadline as it does through an outage."""

    code = "input_missing"


def verified_input(bundle, copy_to: Path) -> Path:
    """The bundle's stored input as a local file whose bytes hash to its correlation id: read in
    place from a file-system store, copied to `copy_to` from S3. Manifests and previews name
    these bytes as the input, so they are checked every time; raises InputChanged, InputMissing
    or StorageUnavailable."""
    try:
        path, digest = _read_input(bundle, copy_to)
    except STORAGE_ERRORS as exc:
        raise input_fault(bundle, exc) from exc
    if digest.hexdigest() != bundle.correlation_id:
        raise InputChanged(f"The stored input of bundle {bundle.correlation_id[:16]} no longer matches its hash.")
    return path


@contextmanager
def opened_input(bundle):
    """The bundle's stored input open for reading, for a provider that hashes what it receives itself; raises
    InputMissing or StorageUnavailable as verified_input does."""
    try:
        document = inputs().open(bundle.input_name, "rb")
    except STORAGE_ERRORS as exc:
        raise input_fault(bundle, exc) from exc
    with document:
        yield document


def input_fault(bundle, exc: Exception) -> InputMissing | StorageUnavailable:
    """What a failed read of an input means: missing only when the store itself answers (its directory, its
    bucket) and the name is not in it. S3 answers a HEAD of a missing bucket with the same bare 404 as one of a
    missing key (django-storages turns both into FileNotFoundError), and an unmounted directory loses every
    name at once: both are outages, retried."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    if not isinstance(exc, FileNotFoundError) and code not in {"404", "NoSuchKey"}:
        return StorageUnavailable("inputs", exc)
    try:
        _check_store_answers(inputs())
    except STORAGE_ERRORS as outage:
        return StorageUnavailable("inputs", outage)
    return InputMissing(
        f"The input of bundle {bundle.correlation_id[:16]} is not in the inputs store: it was deleted there, "
        "outside Pagetrail. Restore the file to the store and re-extract, or submit it again."
    )


def _check_store_answers(storage: Storage) -> None:
    if (root := local_path(storage, "")) is not None:
        if not root.is_dir():
            raise FileNotFoundError(errno.ENOENT, "The store's directory is missing", str(root))
    elif is_s3(storage):
        storage.connection.meta.client.head_bucket(Bucket=storage.bucket_name)


def _read_input(bundle, copy_to: Path):
    path = local_path(inputs(), bundle.input_name)
    if path is not None:
        with open(path, "rb") as fh:
            return path, hashlib.file_digest(fh, "sha256")
    digest = hashlib.sha256()
    with _input_stream(inputs(), bundle.input_name) as src, open(copy_to, "wb") as dst:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            dst.write(chunk)
    return copy_to, digest


def _input_stream(storage: Storage, name: str):
    """The stored bytes as a stream: on S3 one GetObject (a missing key its NoSuchKey), not django-storages' S3File,
    which builds a boto3 resource object and sends a HEAD before the transfer's own requests."""
    if not is_s3(storage):
        return storage.open(name, "rb")
    from s3transfer.constants import ALLOWED_DOWNLOAD_ARGS

    key = storage._normalize_name(clean_name(name))
    parameters = {k: v for k, v in storage.get_object_parameters(name).items() if k in ALLOWED_DOWNLOAD_ARGS}
    answer = storage.connection.meta.client.get_object(Bucket=storage.bucket_name, Key=key, **parameters)
    return closing(answer["Body"])
