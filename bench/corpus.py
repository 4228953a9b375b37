"""The benchmark corpus: deterministic PDFs like the ones Pagetrail is given, with their ground truth.

At scale 1 (about 300 MB, 131 files, a minute on two cores):
  forms/     120 scanned forms of 1-3 pages, one 1-2 MP JPEG a page
  clinical/  10 records of 20-60 pages, 2-4 images a page: JPEG (some progressive), Flate gray and
             RGB with and without PNG predictors, RGB with soft masks, CCITT G4 and 1-bit Flate,
             a few JPX; a logo with a soft mask on every page, a stamp on some
  legal/     one 240-page bundle: gray JPEG scans, CCITT G4 fax pages, photo exhibits, a reused
             header and byte-identical duplicate exhibits in separate XObjects
`corpus.json` holds per file: pages, placements (Do operators, and the soft masks drawn with
them), image XObjects, soft masks, the distinct files an extractor must write, filters, and the
sha256 of every JPEG stream (an extractor must pass those through unchanged).
"""

import hashlib
import json
import multiprocessing
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pikepdf
import PIL
from pikepdf import Dictionary, Name

from . import pictures as p
from .pictures import Encoded

PAGE = (612, 792)  # US Letter in points
FULL_PAGE = (0, 0) + PAGE
LOGO_CELL, STAMP_CELL = (36, 730, 160, 48), (430, 730, 120, 60)
LEGAL_PAGES = 240


class Builder:
    """A PDF under construction, counting what it places."""

    def __init__(self):
        self.pdf = pikepdf.Pdf.new()
        self.placements = 0
        self.images: dict[tuple, Encoded] = {}  # objgen -> image, placed XObjects
        self.smasks: dict[tuple, Encoded] = {}

    def xobject(self, image: Encoded) -> pikepdf.Stream:
        stream = pikepdf.Stream(self.pdf, b"")
        parms = Dictionary(image.parms) if image.parms else None
        stream.write(image.data, filter=Name(image.filter), decode_parms=parms)
        stream.Type, stream.Subtype, stream.Width, stream.Height = Name.XObject, Name.Image, image.width, image.height
        if image.colorspace:
            stream.ColorSpace, stream.BitsPerComponent = Name(image.colorspace), image.bits
        if image.smask:
            stream.SMask = self.xobject(image.smask)
            self.smasks[stream.SMask.objgen] = image.smask
        return stream

    def page(self, items: list[tuple[pikepdf.Stream, Encoded, tuple]]) -> None:
        """Draw each (xobject, image, (x, y, w, h)) in turn; an xobject may come back on many pages."""
        names: dict[tuple[int, int], str] = {}
        ops: list[str] = []
        resources = Dictionary()
        for stream, image, (x, y, w, h) in items:
            name = names.setdefault(stream.objgen, f"/Im{len(names)}")
            resources[name] = stream
            self.images[stream.objgen] = image
            self.placements += 1 + (image.smask is not None)
            ops.append(f"q {w:.2f} 0 0 {h:.2f} {x:.2f} {y:.2f} cm {name} Do Q")
        page = self.pdf.add_blank_page(page_size=PAGE)
        page.obj.Resources = Dictionary(XObject=resources)
        page.obj.Contents = self.pdf.make_stream("\n".join(ops).encode())

    def save(self, path: Path, object_streams: bool) -> dict:
        mode = pikepdf.ObjectStreamMode.generate if object_streams else pikepdf.ObjectStreamMode.disable
        self.pdf.save(
            path, deterministic_id=True, stream_decode_level=pikepdf.StreamDecodeLevel.none, object_stream_mode=mode
        )
        every = list(self.images.values()) + list(self.smasks.values())
        return {
            "pages": len(self.pdf.pages),
            "placements": self.placements,
            "image_xobjects": len(self.images),
            "smask_xobjects": len(self.smasks),
            "distinct_outputs": len({repr(i.identity) for i in every}),
            "filters": dict(sorted(Counter(i.filter[1:] for i in every).items())),
            "jpeg_sha256": sorted({hashlib.sha256(i.data).hexdigest() for i in every if i.filter == "/DCTDecode"}),
        }


def grid(count: int, top: int = 700) -> list[tuple]:
    """`count` cells in two columns below the header."""
    height = (top - 36) / ((count + 1) // 2)
    return [(36 + i % 2 * 276, top - (i // 2 + 1) * height, 264, height - 12) for i in range(count)]


def form(rng: random.Random) -> Builder:
    builder = Builder()
    for _ in range(rng.choice([1, 1, 2, 2, 3])):
        width = rng.randint(1000, 1275)
        picture = p.scan(rng, width, width * 11 // 8 - rng.randint(0, 60), color=rng.random() < 0.3)
        image = p.jpeg(picture, rng.randint(60, 85))
        builder.page([(builder.xobject(image), image, FULL_PAGE)])
    return builder


def clinical_makers(rng: random.Random) -> list[tuple[float, Callable[[], Encoded]]]:
    """(weight, maker) of the images a clinical page shows."""
    size = lambda: rng.choice([(800, 600), (1200, 900), (1600, 1200)])  # noqa: E731
    coin = lambda: rng.random() < 0.5  # noqa: E731
    return [
        (4, lambda: p.jpeg(p.photo(rng, *size()), rng.randint(75, 92))),
        (2, lambda: p.jpeg(p.scan(rng, 900, 1150), 80, progressive=rng.random() < 0.3)),
        (2, lambda: p.flate(p.chart(rng, 700, 450), coin())),
        (2, lambda: p.flate(p.chart(rng, 1200, 400, "L"), coin())),
        (1, lambda: p.with_alpha(rng, p.flate(p.photo(rng, 500, 500), coin()))),
        (1, lambda: p.with_alpha(rng, p.jpeg(p.photo(rng, 640, 480), 85))),
        (1, lambda: p.flate(p.signature(rng, 600, 200), coin())),
        (1, lambda: p.ccitt(p.bilevel_scan(rng, 1100, 1400))),
        (0.3, lambda: p.jpx(p.photo(rng, 400, 300))),
    ]


def clinical(rng: random.Random) -> Builder:
    builder = Builder()
    logo_image = p.with_alpha(rng, p.flate(p.chart(rng, 400, 120), True))
    stamp_image = p.jpeg(p.photo(rng, 300, 150), 85)
    logo, stamp = (logo_image, builder.xobject(logo_image)), (stamp_image, builder.xobject(stamp_image))
    makers = clinical_makers(rng)
    for number in range(rng.randint(20, 60)):
        items = [(logo[1], logo[0], LOGO_CELL)]
        if rng.random() < 0.08:  # a faxed page
            fax = p.ccitt(p.bilevel_scan(rng, 1700, 2200))
            builder.page([(builder.xobject(fax), fax, FULL_PAGE)] + items)
            continue
        shown = [rng.choices(makers, [m[0] for m in makers])[0][1]() for _ in range(rng.randint(2, 4))]
        items += [(builder.xobject(image), image, cell) for image, cell in zip(shown, grid(len(shown)))]
        if number % 5 == 4:
            items.append((stamp[1], stamp[0], STAMP_CELL))
        builder.page(items)
    return builder


def legal(rng: random.Random, pages: int) -> Builder:
    builder = Builder()
    header_image = p.jpeg(p.chart(rng, 600, 80), 90)
    header, scans = builder.xobject(header_image), list[Encoded]()
    for _ in range(pages):
        roll = rng.random()
        if roll < 0.1:
            image = p.ccitt(p.bilevel_scan(rng, 1700, 2200))
        elif roll < 0.2:
            image = p.jpeg(p.photo(rng, 1600, 1200), 85)
        elif roll < 0.23 and scans:
            image = rng.choice(scans)  # a duplicate exhibit: the same bytes in a new XObject
        else:
            image = p.jpeg(p.scan(rng, 1275, 1650), rng.randint(65, 85))
            scans.append(image)
        builder.page([(builder.xobject(image), image, (0, 0, 612, 760)), (header, header_image, (0, 760, 612, 32))])
    return builder


def build(task: tuple) -> dict:
    kind, index, seed, scale, out = task
    rng = random.Random(f"{seed}/{kind}/{index}")
    if kind == "forms":
        builder, name = form(rng), f"forms/form-{index:04d}.pdf"
    elif kind == "clinical":
        builder, name = clinical(rng), f"clinical/record-{index:03d}.pdf"
    else:
        builder, name = legal(rng, max(10, round(LEGAL_PAGES * min(scale, 1)))), f"legal/bundle-{index:02d}.pdf"
    path = Path(out) / name
    facts = builder.save(path, object_streams=kind != "forms")
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return {"name": name, "kind": kind, "bytes": path.stat().st_size, "sha256": digest, **facts}


def make_corpus(out: Path, scale: float = 1.0, seed: int = 1, jobs: int | None = None) -> dict:
    """Write the corpus under `out` (unless the same one is there already) and return its ground truth."""
    manifest = out / "corpus.json"
    if manifest.exists() and _same_recipe(json.loads(manifest.read_text()), scale, seed):
        return json.loads(manifest.read_text())
    for kind in ("forms", "clinical", "legal"):
        (out / kind).mkdir(parents=True, exist_ok=True)
    counts = {"legal": max(1, int(scale)), "clinical": max(1, round(10 * scale)), "forms": max(1, round(120 * scale))}
    tasks = [(kind, i, seed, scale, str(out)) for kind, n in counts.items() for i in range(1, n + 1)]
    with multiprocessing.Pool(jobs) as pool:
        files = sorted(pool.map(build, tasks, chunksize=1), key=lambda f: f["name"])
    truth = {"seed": seed, "scale": scale, "versions": _versions(), "totals": _totals(files), "files": files}
    manifest.write_text(json.dumps(truth, indent=1))
    return truth


def _same_recipe(truth: dict, scale: float, seed: int) -> bool:
    return (truth.get("seed"), truth.get("scale"), truth.get("versions")) == (seed, scale, _versions())


def _versions() -> dict:
    return {"pikepdf": pikepdf.__version__, "qpdf": pikepdf.__libqpdf_version__, "pillow": PIL.__version__}


def _totals(files: list[dict]) -> dict:
    keys = ["bytes", "pages", "placements", "image_xobjects", "smask_xobjects", "distinct_outputs"]
    totals = {key: sum(f[key] for f in files) for key in keys}
    totals["files"], totals["jpeg_streams"] = len(files), sum(len(f["jpeg_sha256"]) for f in files)
    totals["filters"] = dict(sorted(sum((Counter(f["filters"]) for f in files), Counter()).items()))
    return totals
