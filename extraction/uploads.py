"""HTTP uploads stop being stored as soon as they pass the size limit, and leave no file behind when they fail."""

import contextlib

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest

TOO_LARGE = "upload_too_large"  # the request's attribute: (file name, bytes seen)


def too_large(request: HttpRequest) -> tuple[str, int] | None:
    """The upload this request's handler cut off at the size limit: (its file name, the bytes seen), or None."""
    return getattr(request, TOO_LARGE, None)


class SizeLimitedUploadHandler(FileUploadHandler):
    """Runs before Django's own handlers and cuts off a file that passes PAGETRAIL_MAX_UPLOAD_BYTES.

    Django then stops reading the body (the rest, at most portal.bodies.FRAMING_ALLOWANCE, is the web server's to
    discard); the view finds the file's name and the bytes seen in `too_large(request)` and records the refusal.
    """

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.seen = 0

    def receive_data_chunk(self, raw_data, start):
        self.seen += len(raw_data)
        if self.seen > settings.PAGETRAIL_MAX_UPLOAD_BYTES:
            setattr(self.request, TOO_LARGE, (self.file_name or "", self.seen))
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None  # the next handler builds the file


def discard_part_written(request) -> None:
    """Close, and so delete, the temp file Django was spooling an upload into when reading it failed (a full temp
    area): its upload handler keeps it, and it would otherwise stay until the request is garbage-collected."""
    for handler in request.upload_handlers:
        if part := getattr(handler, "file", None):
            with contextlib.suppress(OSError):  # deleted as it closes, even when flushing it fails
                part.close()
