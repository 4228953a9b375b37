"""Poppler as the oracle: does it open the file, which images does it draw, and their decoded samples.

MuPDF (`mutool extract`) is the second opinion on samples: poppler passes ICCBased images through
its colour management, which moves some samples by a level, where MuPDF writes them as they are;
and poppler misreads some Flate inline images. `mutool extract` takes objects only, so an inline
image is first made an object by `qpdf --externalize-inline-images`, which keeps the drawing order.

`pdfimages -list` prints one row per image drawn, page by page in drawing order (an image's soft
mask or explicit mask is the row after it); `pdfimages -png` writes one file per row, named by the
row's global number. Every call has a timeout: one bad file must not hang the run.
"""

import re
import resource
import subprocess
from dataclasses import dataclass
from pathlib import Path

POPPLER_SECONDS = 60
# pdfimages -list decodes what it lists; a decompression bomb would otherwise take the machine's memory.
POPPLER_MEMORY = 2 * 1024**3


@dataclass(frozen=True)
class Row:
    """One `pdfimages -list` row: an image poppler draws."""

    page: int
    num: int
    type: str  # image, mask, smask, stencil
    width: int
    height: int
    color: str  # gray, rgb, cmyk, index, lab, icc, sep, devn ...
    bpc: int
    enc: str  # image (raw/flate), jpeg, jpx, jbig2, ccitt
    object: int | None = None  # None for inline images


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(args, capture_output=True, timeout=POPPLER_SECONDS, preexec_fn=_limit_memory, cwd=cwd)
    except (subprocess.TimeoutExpired, FileNotFoundError):  # a tool that hangs, or is not installed
        return None


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (POPPLER_MEMORY, POPPLER_MEMORY))


def opens(path: Path) -> tuple[bool, str]:
    """Whether pdfinfo opens the file (with the empty user password, as viewers do), and why not."""
    done = _run(["pdfinfo", str(path)])
    if done is None:
        return False, "pdfinfo timed out"
    if done.returncode == 0:
        return True, ""
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return False, (lines[-1] if lines else f"exit status {done.returncode}")[:200]


def needs_password(path: Path, reason: str) -> bool:
    """Whether the file needs a password viewers do not have: poppler says so, or MuPDF cannot authenticate the
    empty one. Poppler alone is not enough: this poppler reads a revision 4 file whose strings are not encrypted
    (`/StrF /Identity`) as not encrypted at all, and one whose cross-reference table it rebuilds without the
    trailer's /Encrypt, so it "opens" both as ciphertext (pdf.js `bug1782186`, password "Hello";
    `issue15893_reduced`, "test")."""
    if "password" in reason.lower():
        return True
    done = _run(["mutool", "info", str(path)])
    return done is not None and b"cannot authenticate password" in done.stderr


def image_rows(path: Path) -> list[Row] | None:
    """The images poppler draws, or None when pdfimages fails on the file."""
    done = _run(["pdfimages", "-list", str(path)])
    if done is None or done.returncode != 0:
        return None
    rows = []
    for line in done.stdout.decode("utf-8", "replace").splitlines()[2:]:
        cells = line.split()
        if len(cells) >= 9 and cells[0].isdigit():
            rows.append(
                Row(
                    int(cells[0]),
                    int(cells[1]),
                    cells[2],
                    int(cells[3]),
                    int(cells[4]),
                    cells[5],
                    int(cells[7]) if cells[7].isdigit() else 0,
                    cells[8],
                    int(cells[10]) if len(cells) > 10 and cells[10].isdigit() else None,
                )
            )
    return rows


def decode_all(path: Path, into: Path, tiff: bool = False) -> dict[int, Path]:
    """Poppler's decode of every row, by the row's number: PNG, or TIFF (which keeps CMYK as CMYK)."""
    into.mkdir(parents=True, exist_ok=True)
    _run(["pdfimages", "-tiff" if tiff else "-png", str(path), str(into / "p")])
    files = {}
    for file in into.iterdir():
        if match := re.fullmatch(r"p-(\d+)\.(png|tif|pbm|pgm|ppm)", file.name):
            files[int(match.group(1))] = file
    return files


def mupdf_decode(path: Path, number: int, into: Path) -> Path | None:
    """MuPDF's decode of one image object, only when MuPDF decoded it to PNG: a JPEG or JPX that
    `mutool extract` copies out as it is would agree with a passed-through output whatever it draws."""
    into.mkdir(parents=True, exist_ok=True)
    done = _run(["mutool", "extract", "-N", str(path.resolve()), str(number)], cwd=into)
    pngs = sorted(into.glob(f"image-{number:04d}.png")) if done and done.returncode == 0 else []
    return pngs[0] if pngs else None


def externalized(path: Path, into: Path) -> tuple[Path, dict[int, int]] | None:
    """The file with its inline images made objects, and the object of each row by row number."""
    into.mkdir(parents=True, exist_ok=True)
    copy = into / "externalized.pdf"
    done = _run(["qpdf", "--externalize-inline-images", "--ii-min-bytes=0", str(path), str(copy)])
    rows = image_rows(copy) if done is not None and done.returncode in (0, 3) else None
    return (copy, {row.num: row.object for row in rows if row.object is not None}) if rows else None


def qpdf_samples(path: Path, number: int) -> bytes | None:
    """The samples of an image object as qpdf decodes its stream (not image codecs), None when it cannot."""
    done = _run(["qpdf", f"--show-object={number}", "--filtered-stream-data", "--decode-level=specialized", str(path)])
    return done.stdout if done is not None and done.returncode in (0, 3) else None


def jpeg_data(path: Path, number: int) -> bytes | None:
    """A DCT image object's JPEG data, the filters before DCTDecode (ASCIIHex, Flate) undone; None else.
    (qpdf's `--filtered-stream-data` decodes the JPEG too, at every decode level.)"""
    import pikepdf

    try:
        with pikepdf.open(path) as pdf:
            image = pdf.get_object(number, 0)
            named = image.get("/Filter")
            filters = list(named) if isinstance(named, pikepdf.Array) else [named]
            if not filters or filters[-1] != "/DCTDecode":
                return None
            before = pikepdf.Stream(pdf, image.read_raw_bytes())
            if filters[:-1]:
                before.Filter = pikepdf.Array(filters[:-1])
            return before.read_bytes()
    except Exception:  # a reference lookup only
        return None
