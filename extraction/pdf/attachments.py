"""Writing out one attached file, in the child: intake submits an attached PDF as a bundle of its own when asked to
(PAGETRAIL_SUBMIT_ATTACHED_PDFS)."""

import hashlib
from pathlib import Path
from typing import Any

import pikepdf

from .extract import write_atomically
from .limits import Limits
from .validate import check_stream, opened


def attachment(path: str | Path, obj: str, out_dir: str | Path, limits: Limits) -> dict[str, Any]:
    """Write the attached file at object `obj` ("n g", as inspection listed it) to out_dir as `<sha256>.pdf`,
    its stream checked against the limits before it is decoded."""
    with opened(path) as source:
        stream = source.pdf.get_object(*(int(part) for part in obj.split()))
        if not isinstance(stream, pikepdf.Stream):
            raise ValueError(f"object {obj} is no attached file")
        check_stream(stream, f"object {obj}", limits)
        data = stream.read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    write_atomically(Path(out_dir) / f"{sha256}.pdf", data)
    return {"sha256": sha256, "size": len(data), "filename": f"{sha256}.pdf"}
