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

# Bumped whenever the bytes written for the same input can change (3.0: CMYK and inverted JPEGs, 16-bit,
# Separation/DeviceN/Lab, JBIG2, annotation/pattern/soft-mask/Type3 images; 3.1: JPEG 2000 decoded where a
# standard decoder reads it otherwise, with its codestream's dimensions; decoded JPEGs keep the PDF's ICC
# profile; 3.2: a JPEG 2000 inside other filters decoded from its codestream, not by Pillow), so that
# idempotency keys change with it. (Files that were refused and now open, their page
# tree or encryption entry read past damage, changed no bytes written for any input accepted before.)
# That includes an upgrade of pikepdf, qpdf, Pillow, pypdfium2 or zlib-ng that changes any output of the
# test corpus: tests/extraction/test_golden_outputs.py fails until this is bumped. The libraries' own
# versions are recorded in each manifest, not here, so that a release that changes no bytes keeps the keys.
EXTRACTOR_VERSION = "3.2"
# It lives beside the libraries' versions, in the PDF child's package, because the child reports it with the
# files it wrote (the manifest states what ran, not what the job was keyed to; extraction/runner.py re-keys).

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
