"""One PDF through Pagetrail's intake and extraction, beside poppler: a record of what each did.

The record is plain JSON. `disagreements` lists (class, detail) pairs, the classes short and stable
(`crash:intake`, `refused:unreadable`, `placements:fewer`, `pixels:samples:jpeg:cmyk:8` ...) so a run's
failures can be grouped and two runs compared.

An output that differs from both references by design has the result `by-design:<why>`, counted apart
from equal ones, and only once the reason is checked: `16-bit` when its high bytes are the reference's
8-bit samples; a colour space the references convert (Separation, DeviceN, Lab, ICCBased, Indexed over
DeviceCMYK, Lab, Separation or DeviceN) when it holds exactly the stream's samples as qpdf decodes them
(looked up in the palette, for Indexed). Anything else stays a mismatch.
"""

import hashlib
import os
import shutil
import tempfile
import traceback
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pikepdf
from PIL import Image, TiffImagePlugin

from extraction.intake import rules
from extraction.pdf import Limits, Refusal, SandboxError, extract_images, inspect_pdf

from . import fidelity_oracle as oracle
from .fidelity_pixels import compare, is_cmyk, opens_in_pillow

# Refusals a limit or a fixed rule asks for; `encrypted` only when poppler or MuPDF, too, needs a password (the
# intake policy's refusals are policy by definition). `active_content`: encryption of attachments alone.
POLICY = {
    "active_content",
    "encrypted",
    "too_large",
    "too_many_pages",
    "image_too_large",
    "stream_too_large",
    "timeout",
    "resource_limit",
    "polyglot",
    "no_pdf_header",
}
# Codes that mean our own code failed, not the input: the child crashed or died in Python.
CRASH_CODES = {"crashed", "child_failed", "validator_crashed", "extractor_crashed"}
_ROW_STREAMS: dict[Path, dict] = {}
MASK_KEYS = {"smask": "/SMask", "mask": "/Mask"}
STENCILS = {"stencil", "mask"}
BY_DESIGN = "by-design:"  # an output that keeps what the PDF holds where the references convert it
SHORT_DATA = "short data padded with zeros"
JPEG_SIZE = "the JPEG's own size"
# Spaces whose samples Pagetrail writes as stored, one PNG sample per PDF sample, by components.
STORED_SPACES = {"/DeviceGray": 1, "/CalGray": 1, "/DeviceRGB": 3, "/CalRGB": 3}
KEPT_FAMILIES = {"Separation", "DeviceN", "Lab", "ICCBased"}  # rows of /ImageMask images: a polarity, not colours


def check(path: Path, name: str, scratch: Path) -> dict:
    """Everything the harness knows about one file; never raises for the file's sake."""
    opens, why = oracle.opens(path)
    record: dict[str, Any] = {
        "file": name,
        "bytes": path.stat().st_size,
        "poppler_opens": opens,
        "poppler_error": why,
        "disagreements": [],
    }
    record["intake"] = _intake(path, opens, why, record["disagreements"])
    if record["intake"]["outcome"] != "accepted":
        return record
    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        _extraction(path, work, record)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return record


def _intake(path: Path, opens: bool, why: str, disagreements: list) -> dict:
    """The intake's outcome; what the intake policy found, as the portal judges it under PAGETRAIL_INTAKE_POLICY
    (the defaults when unset): `found`, [kind, action] pairs, on accepted and policy-refused files alike."""
    try:
        findings = inspect_pdf(path, Limits()).findings
    except Refusal as exc:
        return _refused(exc, path, opens, why, disagreements)
    except Exception as exc:  # SandboxError or anything else: our code failed on this input
        detail = _last_line(exc)
        disagreements.append(("crash:intake", detail))
        return {"outcome": "crash", "code": getattr(exc, "code", type(exc).__name__), "message": detail}
    policy = rules.parsed(os.environ.get("PAGETRAIL_INTAKE_POLICY", ""))
    found = [[f["kind"], policy[f["kind"]]] for f in findings]
    try:
        rules.judged(findings, policy)
    except Refusal as exc:
        return {"outcome": "refused", "code": exc.code, "message": exc.message, "policy": True, "found": found}
    return {"outcome": "accepted", "found": found}


def _refused(exc: Refusal, path: Path, opens: bool, why: str, disagreements: list) -> dict:
    """A refusal by the PDF package itself (not the intake policy's)."""
    if exc.code in CRASH_CODES:
        disagreements.append(("crash:intake", exc.message))
        return {"outcome": "crash", "code": exc.code, "message": exc.message}
    policy = exc.code in POLICY and (exc.code != "encrypted" or oracle.needs_password(path, why))
    if opens and not policy:
        disagreements.append((f"refused:{exc.code}", exc.message))
    return {"outcome": "refused", "code": exc.code, "message": exc.message, "policy": policy}


def _extraction(path: Path, work: Path, record: dict) -> None:
    (work / "ours").mkdir()
    try:
        extraction = extract_images(path, work / "ours", Limits())
    except SandboxError as exc:
        kind = "crash" if exc.code in CRASH_CODES or not exc.permanent else "failed"
        record["extraction"] = {"outcome": kind, "code": exc.code, "message": exc.message}
        record["disagreements"].append((f"{kind}:extraction" if kind == "crash" else f"failed:{exc.code}", exc.message))
        return
    except Exception as exc:
        record["extraction"] = {"outcome": "crash", "code": type(exc).__name__, "message": _last_line(exc)}
        record["disagreements"].append(("crash:extraction", _last_line(exc)))
        return
    record["extraction"] = {
        "outcome": "ok",
        "warnings": len(extraction.warnings),
        "assets": len(extraction.assets),
        "warning_examples": extraction.warnings[:3],
    }
    extraction = replace(extraction, assets=[traced(asset, work / "ours") for asset in extraction.assets])
    rows = oracle.image_rows(path)
    if rows is None:
        record["placements"] = {"agree": None}
        return
    agreeing = _placements(path, extraction, rows, record)
    record["outputs"] = _outputs(path, extraction, rows, agreeing, work, record["disagreements"])


def traced(asset, ours: Path):
    """A wrapped output records no stream_sha256 (it holds the stream's bytes): take them from the file,
    so that it is matched to poppler's row by its stream like every other output."""
    if asset.method != "wrapped":
        return asset
    data = (ours / asset.filename).read_bytes()
    if asset.filename.endswith(".png"):
        stream = b"".join(chunk for kind, chunk in png_chunks(data) if kind == b"IDAT")
    else:
        with Image.open(ours / asset.filename) as tiff:
            assert isinstance(tiff, TiffImagePlugin.TiffImageFile)  # our CCITT outputs are TIFFs
            (offset,), (size,) = tiff.tag_v2[273], tiff.tag_v2[279]
        stream = data[offset : offset + size]
    return replace(asset, stream_sha256=hashlib.sha256(stream).hexdigest())


def png_chunks(data: bytes):
    at = 8
    while at + 8 <= len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        yield data[at + 4 : at + 8], data[at + 8 : at + 8 + size]
        at += 12 + size


def _placements(path: Path, extraction, rows: list, record: dict) -> set[int]:
    """Per page, our placements against poppler's rows; returns the pages where the counts agree.

    A page where we place more is `placements:more:superset` when every image poppler lists there is
    among ours (so the extra ones are images `pdfimages -list` does not list), else `placements:more`."""
    ours = Counter(page for asset in extraction.assets for page, _ in asset.placements)
    theirs = Counter(row.page for row in rows)
    differing = {page: (ours[page], theirs[page]) for page in ours | theirs if ours[page] != theirs[page]}
    record["placements"] = {
        "agree": not differing,
        "ours": sum(ours.values()),
        "theirs": len(rows),
        "pages": sorted([page, *counts] for page, counts in differing.items())[:20],
    }
    for page, (mine, poppler) in sorted(differing.items())[:1]:
        kinds = Counter(row.type for row in rows if row.page == page)
        kind = "placements:fewer" if mine < poppler else "placements:more"
        if mine > poppler and _lists_all_of_poppler(path, extraction, rows, page):
            kind += ":superset"
        record["disagreements"].append((kind, f"page {page}: ours {mine}, poppler {poppler} {dict(kinds)}"))
    return set(theirs) - set(differing)


def _lists_all_of_poppler(path: Path, extraction, rows: list, page: int) -> bool:
    ours = {
        asset.stream_sha256 or asset.sha256
        for asset in extraction.assets
        if any(p == page for p, _ in asset.placements)
    }
    streams = row_streams(path, rows)
    return all(streams.get(row.num) in ours for row in rows if row.page == page)


def _outputs(path: Path, extraction, rows: list, agreeing: set[int], work: Path, disagreements: list) -> list:
    """Each output beside the oracle's decode of the row at its first placement on an agreeing page."""
    by_page: dict[int, list] = {}
    for row in rows:
        by_page.setdefault(row.page, []).append(row)
    oracles = Oracles(path, work)
    outputs = []
    for asset in extraction.assets:
        mine = work / "ours" / asset.filename
        result = {"file": asset.filename, "colorspace": asset.colorspace, "method": asset.method, "bits": asset.bits}
        outputs.append(result)
        if problem := opens_in_pillow(mine):
            result["result"] = "unreadable"
            disagreements.append((f"pillow:{mine.suffix.lstrip('.')}", f"{asset.filename}: {problem}"))
            continue
        place = next(((p, i) for p, i in asset.placements if p in agreeing and i < len(by_page[p])), None)
        row = by_page[place[0]][place[1]] if place else by_stream(path, rows).get(asset.stream_sha256 or asset.sha256)
        if not place and row is not None and (row.type in STENCILS) != (asset.colorspace == "ImageMask"):
            row = None  # one stream under two dictionaries, a stencil and an image: not this output's row
        if row is None:
            result["result"] = "unmatched"
            continue
        place = place or (row.page, None)
        result.update(page=place[0], index=place[1], poppler=f"{row.type}:{row.enc}:{row.color}:{row.bpc}")
        result["result"] = oracles.judge(mine, row)
        if result["result"] not in ("equal", "no_oracle"):
            disagreements.append(
                (
                    f"pixels:{result['result']}:{row.enc}:{row.color}:{row.bpc}",
                    f"page {row.page} pdfimages row {row.num} ({row.type}): {asset.filename}"
                    f" [{asset.colorspace} {asset.method} {asset.bits}]",
                )
            )
    return outputs


def row_streams(path: Path, rows: list) -> dict[int, str]:
    """The sha256 of the raw stream behind each of poppler's rows, by row number. A soft mask's or
    mask's row names its parent image's object, so the stream is the parent's /SMask or /Mask."""
    if path not in _ROW_STREAMS:
        _ROW_STREAMS.clear()  # one file at a time
        _ROW_STREAMS[path] = found = {}
        try:
            with pikepdf.open(path) as pdf:
                for row in (row for row in rows if row.object is not None):
                    image = pdf.get_object(row.object, 0)
                    stream = image.get(MASK_KEYS[row.type]) if row.type in MASK_KEYS else image
                    if isinstance(stream, pikepdf.Stream):
                        found[row.num] = hashlib.sha256(stream.read_raw_bytes()).hexdigest()
        except Exception:  # a reference lookup only: what cannot be read stays unmatched
            pass
    return _ROW_STREAMS[path]


def by_stream(path: Path, rows: list) -> dict:
    """Poppler's rows by their stream's sha256: where the counts on a page differ (images poppler
    does not list), an output is still matched to its row through `stream_sha256`."""
    streams = row_streams(path, rows)
    return {streams[row.num]: row for row in reversed(rows) if row.num in streams}


class Oracles:
    """Poppler's decodes of one file, made on first need; MuPDF's for a row poppler disagrees on."""

    def __init__(self, path: Path, work: Path):
        self.path, self.work = path, work
        self.decoded: dict[bool, dict] = {}
        self.externalized: tuple[Path | None, dict] | None = None

    def judge(self, mine: Path, row) -> str:
        """'equal', or the class of the difference from poppler when MuPDF does not agree either."""
        cmyk = is_cmyk(mine)
        if cmyk not in self.decoded:
            self.decoded[cmyk] = oracle.decode_all(self.path, self.work / f"poppler-{cmyk}", tiff=cmyk)
        reference = self.decoded[cmyk].get(row.num)
        stencil, jpeg = row.type in STENCILS, row.enc == "jpeg"
        # pdfimages ignores a stencil's /Decode: its painted samples are black (as ours) under [1 0] only.
        difference = (
            "no_oracle"
            if reference is None
            else compare(mine, reference, jpeg, invert_theirs=stencil and not self._paints_ones(row))
        )
        if difference and not cmyk and (second := self._mupdf(row)) is not None:
            agreement = compare(mine, second, jpeg, invert_theirs=stencil)  # MuPDF writes painted samples white
            if not agreement or agreement.startswith(BY_DESIGN):
                return agreement or "equal"
        if difference in ("samples", "mode") and (kept := self._kept(mine, row)):
            return f"{BY_DESIGN}{kept}"
        if difference == "samples" and self._padded(mine, row):
            return f"{BY_DESIGN}{SHORT_DATA}"
        if difference == "size" and jpeg and self._jpeg_as_coded(mine, row):
            return f"{BY_DESIGN}{JPEG_SIZE}"
        return difference or "equal"

    def _jpeg_as_coded(self, mine: Path, row) -> bool:
        """Whether ours is the JPEG data's own decode, at the size its frame header codes where the
        dictionary's /Width and /Height say another: poppler writes the dictionary's size (samples past
        the JPEG's padded), MuPDF copies the JPEG out, so neither is compared."""
        source, number = self._object(row)
        coded = oracle.jpeg_data(source, number) if source is not None and number is not None else None
        if not coded or not coded.startswith(b"\xff\xd8"):
            return False
        (jpeg := self.work / f"coded-{number}.jpg").write_bytes(coded)
        try:
            return compare(mine, jpeg, jpeg=True) == ""
        except Exception:  # Pillow cannot read it: no reason found
            return False

    def _padded(self, mine: Path, row) -> bool:
        """Whether the stream holds fewer bytes than the image declares and ours is exactly them, then zero
        samples (samples.py; poppler pads with ones, MuPDF drops the last partial row). Images written
        as stored only: no /Decode, no palette."""
        source, number = self._object(row)
        if source is None or number is None or row.type != "image":
            return False
        try:
            with pikepdf.open(source) as pdf:
                image = pdf.get_object(number, 0)
                declared = 0 if "/Decode" in image else image_bytes(image)
        except Exception:  # a reference lookup only: no reason found
            return False
        stored = oracle.qpdf_samples(source, number)
        if not stored or not declared or len(stored) >= declared:
            return False
        with Image.open(mine) as picture:
            try:
                expected = Image.frombytes(picture.mode, picture.size, stored.ljust(declared, b"\0"))
            except ValueError:  # not the layout of the declared samples
                return False
            unpacked = "L" if picture.mode == "1" else picture.mode  # a row's padding bits are no samples
            return picture.convert(unpacked).tobytes() == expected.convert(unpacked).tobytes()

    def _kept(self, mine: Path, row) -> str:
        """Why ours differs by design ("Separation", "Indexed over Lab" ...), when it holds exactly the
        PDF's samples, as qpdf decodes the stream, in a colour space the references convert; else ''."""
        source, number = self._object(row)
        if source is None or number is None or row.type != "image":
            return ""
        try:
            with pikepdf.open(source) as pdf:
                reason, lookup = kept_space(pdf.get_object(number, 0))
        except Exception:  # a reference lookup only: no reason found
            return ""
        expected = oracle.qpdf_samples(source, number) if reason else None
        if not expected:
            return ""
        if lookup is not None and len(lookup) == 256:  # an inversion, or a palette of one component
            expected = expected.translate(lookup)
        elif lookup is not None:  # Indexed: each index becomes its palette entry
            n = len(lookup) // 256
            expected = b"".join(lookup[i * n : (i + 1) * n] for i in expected)
        with Image.open(mine) as picture:
            ours = picture.tobytes()
        return reason if expected[: len(ours)] == ours and len(expected) >= len(ours) else ""

    def _object(self, row) -> tuple[Path | None, int | None]:
        """A file and object number where the row's image is an object (an inline image once qpdf made it one)."""
        if row.object is not None:
            return self.path, row.object
        if self.externalized is None:
            self.externalized = oracle.externalized(self.path, self.work / "externalized") or (None, {})
        return self.externalized[0], self.externalized[1].get(row.num)

    def _paints_ones(self, row) -> bool:
        """Whether a stencil paints its 1 samples (/Decode [1 0]); the default [0 1] when it cannot be read."""
        source, number = self._object(row)
        if source is None or number is None:
            return False
        try:
            with pikepdf.open(source) as pdf:
                image = pdf.get_object(number, 0)
                stream = image.get(MASK_KEYS[row.type]) if row.type in MASK_KEYS else image
                if stream is None:
                    return False
                decode = stream.get("/Decode", stream.get("/D"))
                return isinstance(decode, pikepdf.Array) and len(decode) > 0 and float(decode[0]) == 1
        except Exception:  # a reference lookup only: the default stands
            return False

    def _mupdf(self, row) -> Path | None:
        source, number = self._object(row)
        if source is None or number is None:
            return None
        return oracle.mupdf_decode(source, number, self.work / f"mupdf-{source.stem}-{number}")


def kept_space(image) -> tuple[str, bytes | None]:
    """(reason, table) for an 8-bit image whose colour space Pagetrail writes as the PDF's samples where
    poppler and MuPDF convert it (docs/images.md); ('', None) else. The table maps each stream sample to
    what ours holds: a palette of 256 entries (Indexed), an inversion (/Decode [1 0 ...]), or None."""
    space, bits = image.get("/ColorSpace"), image.get("/BitsPerComponent")
    if bits != 8 or not isinstance(space, pikepdf.Array) or not len(space):
        return "", None
    family, decode = str(space[0])[1:], image.get("/Decode")
    numbers = [float(v) for v in decode] if isinstance(decode, pikepdf.Array) else None
    if family in KEPT_FAMILIES:
        if decode is not None and numbers != [1.0, 0.0] * (len(numbers or ()) // 2 or 1):
            return "", None  # only the inversion [1 0 ...] is followed here
        return family, None if decode is None else bytes(range(255, -1, -1))  # each sample v drawn as 255 - v
    if decode is not None and numbers not in ([0.0, 255.0], [255.0, 0.0]):
        return "", None
    if family != "Indexed" or len(space) != 4:
        return "", None
    base_family, n = _base(space[1])
    if base_family not in KEPT_FAMILIES | {"DeviceCMYK"} or (base_family == "ICCBased" and n != 4) or not n:
        return "", None
    lookup = space[3].read_bytes() if isinstance(space[3], pikepdf.Stream) else bytes(space[3])
    hival = int(space[2])
    lookup = lookup[: (hival + 1) * n].ljust((hival + 1) * n, b"\0")
    lookup += lookup[-n:] * (255 - hival)  # indices past the palette draw its last entry
    if numbers == [255.0, 0.0]:  # index v draws entry 255 - v
        lookup = b"".join(lookup[i * n : (i + 1) * n] for i in range(255, -1, -1))
    return f"Indexed over {base_family}", lookup


def image_bytes(image) -> int:
    """The bytes an image's samples take as declared: rows padded to whole bytes; 0 when not known."""
    width, height, bits = image.get("/Width"), image.get("/Height"), image.get("/BitsPerComponent")
    space = image.get("/ColorSpace")
    if isinstance(space, pikepdf.Array) and len(space) == 2 and space[0] == "/ICCBased":
        n = space[1].get("/N") if isinstance(space[1], pikepdf.Stream) else 0
        n = n if n in (1, 3) else 0
    else:
        n = STORED_SPACES.get(str(space), 0) if isinstance(space, pikepdf.Name) else 0
    if not all(type(v) is int and v > 0 for v in (width, height, bits)) or not n:
        return 0
    return (width * n * bits + 7) // 8 * height


def _base(base) -> tuple[str, int]:
    """An Indexed space's base: (family, components), 0 components when not known."""
    family = str(base[0] if isinstance(base, pikepdf.Array) else base)[1:]
    detail = base[1] if isinstance(base, pikepdf.Array) and len(base) > 1 else None
    if family == "ICCBased":
        n = detail.get("/N") if isinstance(detail, pikepdf.Stream) else 0
        return family, n if type(n) is int else 0
    if family == "DeviceN":
        return family, len(detail) if isinstance(detail, pikepdf.Array) else 0
    return family, {"DeviceCMYK": 4, "Lab": 3, "Separation": 1}.get(family, 0)


def _last_line(exc: BaseException) -> str:
    lines = "".join(traceback.format_exception_only(exc)).strip().splitlines()
    return (lines[-1] if lines else type(exc).__name__)[:300]
