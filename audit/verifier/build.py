"""The verifier as one file to ship: a zipapp of this package's own modules, built byte for byte the same from
the same source (sorted members, fixed times, stored uncompressed so no zlib version can change a byte)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

NAME = "verify_evidence.pyz"
PACKAGE = "pagetrail_verifier"
SHEBANG = b"#!/usr/bin/env python3\n"
MAIN = b"import sys\n\nfrom pagetrail_verifier.cli import main\n\nsys.exit(main())\n"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SOURCE = Path(__file__).parent


def sources() -> dict[str, bytes]:
    """{member name: bytes} of the zipapp: every module of this package, and the entry point."""
    found = {f"{PACKAGE}/{path.name}": path.read_bytes() for path in sorted(SOURCE.glob("*.py"))}
    return {"__main__.py": MAIN, **found}


def build() -> bytes:
    out = io.BytesIO()
    out.write(SHEBANG)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, data in sources().items():
            info = zipfile.ZipInfo(name, ZIP_EPOCH)
            info.create_system, info.external_attr = 3, 0o644 << 16
            zf.writestr(info, data)
    return out.getvalue()
