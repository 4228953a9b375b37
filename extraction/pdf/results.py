"""The values the package returns: what inspecting a PDF found, and what extracting its images wrote."""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Inspection:
    pages: int
    pdf_version: str
    mime: str
    # How the file was read, recorded in the manifest: opened with the empty user password,
    # its cross-reference table rebuilt by qpdf or its page tree or encryption entry read past damage as
    # viewers read them (reopen.py, pagetree.py), bytes before `%PDF-` skipped.
    encrypted: bool = False
    repaired: bool = False
    leading_bytes: int = 0
    # What an intake policy decides on, as plain data (findings.py): per kind, what it is, the objects it was in
    # ("n g", the first twenty), how many, and a detail where no object says where; and every attached file
    # (name, sha256, size, whether it is a PDF, its object).
    findings: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class WrittenImage:
    """One distinct image file the PDF child wrote to its out dir; placements are (page from 1, index on page
    from 0). A provider reports it as a `providers.ReportedImage`; once stored it is an `audit.models.Asset`."""

    filename: str
    sha256: str
    size: int
    content_type: str
    width: int
    height: int
    placements: list[tuple[int, int]] = field(default_factory=list)
    # The PDF colour space of the samples ("DeviceRGB", "ICCBased", "Separation", "DeviceN", "Lab",
    # "Indexed", "ImageMask" ...) and the bits per component of the written file.
    colorspace: str = ""
    bits: int = 0
    # How the file was made: "passthrough" (the stream's bytes as they are), "wrapped" (the stream's
    # compressed data in a PNG/TIFF container), "adjusted" (JPEG markers changed, scan data kept) or
    # "decoded" (samples decoded and written losslessly). For "adjusted" and "decoded", `stream_sha256` is the
    # sha256 of the stream's raw (still encoded) data in the PDF, so the output can be traced back to it
    # (the other two files hold those bytes as they are).
    method: str = ""
    stream_sha256: str = ""


@dataclass(frozen=True)
class Extraction:
    pages: int
    assets: list[WrittenImage]
    warnings: list[str]
    encrypted: bool = False
    repaired: bool = False
    leading_bytes: int = 0
    # The versions of the libraries that wrote the files (versions.libraries(), in the child).
    libraries: dict[str, str] = field(default_factory=dict)
    extractor_version: str = ""  # versions.EXTRACTOR_VERSION of the code that wrote the files
