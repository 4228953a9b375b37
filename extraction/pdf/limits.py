"""The limits an untrusted PDF is held to, and the values the package returns."""

from dataclasses import dataclass, field

# The filters of the PDF standard. A name outside it is no filter at all: no reader decodes such a
# stream, so it is never decoded here either; viewers draw the page without it, and so does Pagetrail,
# with a warning for an image it cannot extract (the job is flagged for review).
STANDARD_FILTERS = (
    "FlateDecode",
    "DCTDecode",
    "CCITTFaxDecode",
    "JPXDecode",
    "JBIG2Decode",
    "RunLengthDecode",
    "LZWDecode",
    "ASCIIHexDecode",
    "ASCII85Decode",
    "Crypt",  # in encrypted files: qpdf decrypts (usually /Identity), nothing else is decoded
)
ALLOWED_FILTERS = STANDARD_FILTERS  # the standard filters a deployment lets its decoders run on


@dataclass(frozen=True)
class Limits:
    """What one PDF may cost; applied by the validator and by the child process."""

    max_bytes: int = 100 * 1024**2
    max_pages: int = 2000
    max_pixels: int = 100_000_000
    max_stream_bytes: int = 512 * 1024**2
    allowed_filters: tuple[str, ...] = ALLOWED_FILTERS
    eof_slack: int = 1024
    # Bytes tolerated before `%PDF-` (mail gateways, old scanners): viewers and qpdf look for it in the first KiB.
    head_slack: int = 1023
    cpu_seconds: int = 60
    memory_bytes: int = 2 * 1024**3
    wall_seconds: int = 120
    # How many PDFs one warm child process reads before a fresh one replaces it.
    child_reuse: int = 1000


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


@dataclass(frozen=True)
class ExtractedAsset:
    """One distinct output image; placements are (page from 1, index on page from 0)."""

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
    assets: list[ExtractedAsset]
    warnings: list[str]
    encrypted: bool = False
    repaired: bool = False
    leading_bytes: int = 0
    # The versions of the libraries that wrote the files (versions.libraries(), in the child).
    libraries: dict[str, str] = field(default_factory=dict)
