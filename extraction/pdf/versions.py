"""The versions of every library that can change the bytes of an output, as this process has them.

Recorded in each manifest (the PDF child reports the libraries it wrote the files with) and by each
worker at start (extraction/worker_versions.py). PDFium's version is read from pypdfium2's files, not
by importing it: only the PDF child may load PDFium (see render.py).
"""

import functools
import importlib.metadata
import importlib.util
import json
from pathlib import Path

import pikepdf
import PIL
from PIL import features
from zlib_ng import zlib_ng

# Pillow's own codecs: zlib writes the PNGs and TIFFs, libtiff the CCITT TIFFs, libjpeg and OpenJPEG decode.
PILLOW_CODECS = {
    "zlib": "zlib",
    "libtiff": "libtiff",
    "libjpeg": "jpg",
    "libjpeg-turbo": "libjpeg_turbo",
    "openjpeg": "jpg_2000",
}


@functools.cache
def libraries() -> dict[str, str]:
    return {
        "pikepdf": pikepdf.__version__,
        "qpdf": pikepdf.__libqpdf_version__,
        "pillow": PIL.__version__,
        **{f"pillow.{name}": features.version(feature) or "absent" for name, feature in PILLOW_CODECS.items()},
        "pypdfium2": importlib.metadata.version("pypdfium2"),
        "pdfium": pdfium_build(),
        "zlib-ng": importlib.metadata.version("zlib-ng"),
        "zlib-ng.library": str(zlib_ng.ZLIBNG_RUNTIME_VERSION),
    }


def pdfium_build() -> str:
    """Like pypdfium2.version.PDFIUM_INFO.version ("159.0.8149.0@sourcebuild-toolchained")."""
    spec = importlib.util.find_spec("pypdfium2_raw")  # finds the package without running it
    if spec is None or spec.origin is None:
        raise ImportError("pypdfium2_raw is not installed")
    info = json.loads((Path(spec.origin).parent / "version.json").read_text())
    version = ".".join(str(info[part]) for part in ("major", "minor", "build", "patch"))
    return f"{version}@{info['origin']}" if info.get("origin") else version
