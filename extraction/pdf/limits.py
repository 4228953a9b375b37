"""The limits an untrusted PDF is held to."""

from dataclasses import dataclass

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
    # Bytes tolerated before `%PDF-` (mail gateways, old scanners): viewers and qpdf look for it in the first KiB.
    head_slack: int = 1023
    cpu_seconds: int = 60
    memory_bytes: int = 2 * 1024**3
    wall_seconds: int = 120
    # How many PDFs one warm child process reads before a fresh one replaces it.
    child_reuse: int = 1000
