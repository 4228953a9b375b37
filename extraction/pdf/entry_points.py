"""The entry points: inspect_pdf at intake, extract_images and render_pages in the worker."""

import os
from pathlib import Path
from typing import Any

from .errors import Refusal, SandboxError
from .exits import ChildStopped
from .findings import trailing_data
from .limits import Limits
from .page_evidence import PageEvidence
from .protocol import PARTIAL, extraction_from_dict
from .render import RenderedPage, Rendering
from .results import Extraction, Inspection
from .sandbox import run_child
from .sniff import precheck


def inspect_pdf(path: str | Path, limits: Limits = Limits()) -> Inspection:
    """Validate a PDF from its bytes alone; raise Refusal(code, message) if it is refused. What an intake policy
    decides on (active content, attachments, trailing data, an owner password, repaired damage) is not refused
    but listed in the inspection's `findings` (findings.py).

    The head and tail are checked here; parsing happens in a limited child process, and
    a child stopped by a limit refuses the input (codes `timeout`, `resource_limit`).
    May raise SandboxError when the child fails for reasons of this machine.
    """
    appended = precheck(path, limits)
    try:
        reply = run_child(["inspect", os.path.abspath(path)], limits)
    except ChildStopped as exc:
        raise Refusal(exc.code, exc.message) from None
    if not reply["ok"] and not reply["permanent"]:
        raise SandboxError(reply["code"], reply["message"], permanent=False)  # this machine's trouble
    if not reply["ok"]:
        raise Refusal(reply["code"], reply["message"])
    result = reply["result"]
    if appended:  # found by the parent's reading of the tail: a finding like the child's
        result["findings"] = [*result["findings"], trailing_data(appended)]
    return Inspection(**result)


def extract_images(path: str | Path, out_dir: str | Path, limits: Limits = Limits()) -> Extraction:
    """Write every distinct image of the PDF into out_dir as `<sha256>.<ext>`.

    Images that fail to decode become warnings. Raises SandboxError when the document
    cannot be opened or the child is stopped by a limit (both permanent), or when this
    machine fails (not permanent).
    """
    return extraction_from_dict(_produce(["extract", os.path.abspath(path), os.path.abspath(out_dir)], out_dir, limits))


def write_attachment(path: str | Path, obj: str, out_dir: str | Path, limits: Limits = Limits()) -> Path:
    """Write the attached file at object `obj` ("n g", from the inspection's `attachments`) into out_dir as
    `<sha256>.pdf`, in the limited child; raises SandboxError like extract_images."""
    result = _produce(["attachment", os.path.abspath(path), obj, os.path.abspath(out_dir)], out_dir, limits)
    return Path(out_dir) / str(result["filename"])


def render_pages(
    path: str | Path,
    out_dir: str | Path,
    limits: Limits = Limits(),
    widths: tuple[int, ...] = (200,),
    first: int = 1,
    last: int | None = None,
) -> Rendering:
    """Render pages first..last (default: all) to `p00001-w200.png` (or `.jpg`) files, one per page and width.

    Each page is fitted into `width` x 4 * `width` pixels, as PNG or JPEG (the smaller), bytes depending on the
    page alone. Raises SandboxError like extract_images: permanent when the document cannot be
    rendered or the child is stopped by a limit.
    """
    args = [
        "render",
        os.path.abspath(path),
        os.path.abspath(out_dir),
        ",".join(map(str, widths)),
        str(first),
        str(last or 2**31),
    ]
    result = _produce(args, out_dir, limits)
    return Rendering(pages=result["pages"], images=[RenderedPage(**image) for image in result["images"]])


def read_page_evidence(path: str | Path, limits: Limits = Limits()) -> list[PageEvidence]:
    """Each page's printed number, label, ink, scan hash and difference hash (page_evidence.py), read in the child;
    raises SandboxError like extract_images (permanent when the document cannot be read or a limit stopped it)."""
    try:
        reply = run_child(["evidence", os.path.abspath(path)], limits)
    except ChildStopped as exc:
        raise SandboxError(exc.code, exc.message, permanent=True) from None
    if not reply["ok"]:
        raise SandboxError(reply["code"], reply["message"], permanent=reply["permanent"])
    return [PageEvidence(**page) for page in reply["result"]]


def _produce(args: list[str], out_dir: str | Path, limits: Limits) -> dict[str, Any]:
    """Run a child command that writes files into out_dir; a stopped child leaves no partial file."""
    reply = None
    try:
        reply = run_child(args, limits)
    except ChildStopped as exc:
        raise SandboxError(exc.code, exc.message, permanent=True) from None
    finally:
        if reply is None or not reply["ok"]:  # a child that answered success renamed every file it wrote
            remove_partial_files(Path(out_dir))
    if not reply["ok"]:
        raise SandboxError(reply["code"], reply["message"], permanent=reply["permanent"])
    result: dict[str, Any] = reply["result"]
    return result


def remove_partial_files(out_dir: Path) -> None:
    """A killed child can leave a file it was writing; only complete files keep final names."""
    for partial in out_dir.glob(f".*{PARTIAL}"):
        partial.unlink(missing_ok=True)
