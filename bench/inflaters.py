"""The inflaters the registries offer, on the corpus's Flate image streams: CPU time and peak memory.

    python -m bench.inflaters [--scale 1] [--seed 1] [--out var/bench] [--rounds 5]

Wrapping a Flate image proves it whole by inflating it once and dropping the output (extraction/pdf/wrap.py),
so the inflater sets the guarantee floor of every Flate-heavy kind. Each inflater inflates every Flate
image stream of the corpus to its end and checks its length: zlib (the standard library), zlib-ng (the
product's), python-isal (ISA-L), each in chunks of the size the product uses so memory stays flat, and
libdeflate (the `deflate` package), which inflates the whole output at once into a buffer of the declared
size. They take turns; each figure is the median CPU seconds of --rounds rounds in this process. Peak memory
is traced (tracemalloc) in a pass of its own. An inflater not installed is left out.
"""

import argparse
import statistics
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pikepdf

from extraction.pdf.streams import filter_names
from extraction.pdf.wrap import INFLATE_CHUNK

from .corpus import make_corpus
from .runners import _placed_images
from .tables import table

PRODUCT, WHOLE = "zlib-ng (the product's)", "deflate (libdeflate, whole output)"
Inflate = Callable[[bytes, int], int]  # (stream, inflated size) -> bytes it inflates to


def chunked(decompressobj: Callable) -> Inflate:
    """Inflate as wrap.inflates_to does: at most INFLATE_CHUNK bytes out at a time, each dropped."""

    def inflate(raw: bytes, size: int) -> int:
        inflater, total, pending = decompressobj(), 0, raw
        while not inflater.eof:
            chunk = inflater.decompress(pending, INFLATE_CHUNK)
            pending = inflater.unconsumed_tail
            if not chunk and not pending:
                break
            total += len(chunk)
        return total

    return inflate


def inflaters() -> dict[str, Inflate]:
    """Every inflater installed here, by the name it has on PyPI."""
    found: dict[str, Inflate] = {"zlib (standard library)": chunked(zlib.decompressobj)}
    try:
        from zlib_ng import zlib_ng

        found[PRODUCT] = chunked(zlib_ng.decompressobj)
    except ImportError:
        pass
    try:
        from isal import isal_zlib

        found["isal (python-isal)"] = chunked(isal_zlib.decompressobj)
    except ImportError:
        pass
    try:
        import deflate

        found[WHOLE] = lambda raw, size: len(deflate.zlib_decompress(raw, size))
    except ImportError:
        pass
    return found


def flate_streams(files: list[Path]) -> list[tuple[bytes, int]]:
    """(raw data, inflated size, PNG predictor rows included) of every placed Flate-only image and soft mask."""
    found = []
    for path in files:
        with pikepdf.open(path) as pdf:
            for image in _placed_images(pdf):
                if filter_names(image) == ["FlateDecode"]:
                    raw = image.read_raw_bytes()
                    found.append((raw, len(zlib.decompress(raw))))
    return found


def measure(streams: list[tuple[bytes, int]], rounds: int) -> dict[str, tuple[float, int, bool]]:
    """{inflater: (median CPU seconds, peak traced bytes, every stream inflated to its length)}."""
    found = inflaters()
    cpu: dict[str, list[float]] = {}
    for _ in range(rounds):
        for name, inflate in found.items():
            start = time.process_time()
            for raw, size in streams:
                inflate(raw, size)
            cpu.setdefault(name, []).append(time.process_time() - start)
    result = {}
    for name, inflate in found.items():
        tracemalloc.start()
        whole = all(inflate(raw, size) == size for raw, size in streams)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        result[name] = (statistics.median(cpu[name]), peak, whole)
    return result


def print_table(result: dict[str, tuple[float, int, bool]], streams: list[tuple[bytes, int]], rounds: int) -> dict:
    stored, inflated = sum(len(r) for r, _ in streams) / 1e6, sum(s for _, s in streams) / 1e6
    largest = max((s for _, s in streams), default=0) / 2**20
    print(
        f"\n### Inflaters on the corpus's Flate images ({len(streams)} streams, {stored:.0f} MB stored, "
        f"{inflated:.0f} MB inflated, the largest {largest:.1f} MiB; one core, median CPU of {rounds} rounds)\n"
    )
    reference = result.get(PRODUCT, next(iter(result.values())))[0]
    rows = [
        [
            name,
            f"{cpu:.3f}",
            f"{inflated / cpu:.0f}",
            f"{reference / cpu:.2f}",
            f"{peak / 2**20:.1f}",
            "yes" if ok else "NO",
        ]
        for name, (cpu, peak, ok) in result.items()
    ]
    table(["inflater", "CPU s", "MB/s out", "× zlib-ng", "peak traced MiB", "every stream whole"], rows)
    return {name: {"cpu_s": cpu, "peak_bytes": peak, "flat": name != WHOLE} for name, (cpu, peak, _) in result.items()}


def summary_row(figures: dict) -> list:
    """The product's inflater beside the fastest one whose memory stays flat."""
    if PRODUCT not in figures:
        return ["1. inflater", "not measured", "", "", "the fastest maintained inflater, memory flat"]
    flat = {name: f for name, f in figures.items() if f["flat"]}
    fastest = min(flat, key=lambda name: flat[name]["cpu_s"])
    ours = figures[PRODUCT]["cpu_s"]
    return [
        "1. inflater (wrapping's proof)",
        f"zlib-ng {ours:.3f} s CPU",
        f"fastest with flat memory: {fastest} {flat[fastest]['cpu_s']:.3f} s",
        f"{flat[fastest]['cpu_s'] / ours:.2f}× zlib-ng's time",
        "the fastest maintained inflater, memory flat",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inflaters", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("var/bench"), help="where the corpus is kept")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    corpus = options.out / f"corpus-seed{options.seed}-scale{options.scale:g}"
    truth = make_corpus(corpus, options.scale, options.seed)
    streams = flate_streams([corpus / f["name"] for f in truth["files"]])
    print_table(measure(streams, options.rounds), streams, options.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
