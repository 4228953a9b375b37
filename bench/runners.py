"""The extractors the benchmark times, each writing every image of every PDF into a directory.

Each returns a Run: wall time, files written, and the sha256 of each (every tool hashes what
it writes, as Pagetrail does, so hashing is inside every figure). The reference tools, PyMuPDF
and poppler's pdfimages, are optional: `make bench` installs them; the product never imports them.
"""

import contextlib
import ctypes
import hashlib
import io
import os
import resource
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pikepdf

from extraction.pdf import Limits, extract_images
from extraction.pdf.extract import extract as extract_in_this_process
from extraction.pdf.sandbox import MALLOC_TOP_PAD, idle_pids, stop_idle_children, warm_up
from extraction.pdf.streams import filter_names
from extraction.pdf.wrap import inflates_to

BEST_OF_SECONDS = 15


@dataclass
class Run:
    name: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's and its PDF children's, in the fastest run
    digests: dict[str, list[str]] = field(default_factory=dict)  # corpus file -> sha256 of each output
    placements: dict[str, int] = field(default_factory=dict)  # corpus file -> placements reported
    skipped: str = ""  # why the tool did not run
    directory: Path | None = None

    @property
    def images(self) -> int:
        return sum(len(d) for d in self.digests.values())


def timed(
    name: str, files: list[Path], out: Path, one: Callable, workers: int = 1, warm: bool = False, best_of: int = 1
) -> Run:
    """Run `one(pdf, out_dir)` over every file, `workers` at a time; it returns (digests, placements).
    `warm`: each worker's PDF child is started before the clock starts, as a running worker's is.
    `best_of`: keep the fastest of that many runs, but start no other once BEST_OF_SECONDS are spent
    (the machines here are shared: a single run can take twice as long as the next)."""
    run = Run(name, seconds=float("inf"), directory=out)
    spent = 0.0
    dirs = [out / str(i) for i in range(len(files))]
    for _ in range(best_of):
        shutil.rmtree(out, ignore_errors=True)
        for directory in dirs:
            directory.mkdir(parents=True)
        stop_idle_children()
        if warm:
            warm_up(Limits(), workers)
            _first_command(one, files, out, workers)
        start, cpu = time.perf_counter(), cpu_seconds()
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(one, files, dirs))
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        if seconds < run.seconds:
            run.seconds, run.cpu_seconds = seconds, cpu
        spent += seconds
        if spent > BEST_OF_SECONDS:
            break
    for path, (digests, placements) in zip(files, results):
        name = f"{path.parent.name}/{path.name}"  # as corpus.json names it
        run.digests[name], run.placements[name] = digests, placements
    return run


def _first_command(one: Callable, files: list[Path], out: Path, workers: int) -> None:
    """Give each warm child one command before the clock starts: a running worker's child has answered many."""
    scratch = out / "warming"
    dirs = [scratch / str(i) for i in range(workers)]
    for directory in dirs:
        directory.mkdir(parents=True)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, [files[0]] * workers, dirs))
    shutil.rmtree(scratch)


def cpu_seconds() -> float:
    """CPU seconds of this process, of its idle PDF children (a child's CPU is read only once it
    has answered: between commands), to the microsecond: a form takes about a millisecond, and
    os.times counts in 10 ms ticks; and of the children it has reaped (pdfimages, a PDF child
    replaced: read live before, its whole life is counted once it is reaped)."""
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + reaped.ru_utime + reaped.ru_stime + sum(map(process_cpu, idle_pids()))


def process_cpu(pid: int) -> float:
    """CPU seconds of a live process, every thread (0 once it is gone): the larger of two lower bounds. The user
    + system ticks of /proc/PID/stat count ended threads too (s3transfer's, moto's per request) but only to
    1/100 s; each live thread's /proc/PID/task/TID/schedstat counts to the nanosecond (a warm PDF child's few
    milliseconds a job). /proc/PID/schedstat alone is the main thread's."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        threads = 0.0
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread that just ended
                threads += int((task / "schedstat").read_text().split()[0]) / 1e9
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return max(ticks, threads)


def reaped_cpu(pid: int) -> float:
    """CPU seconds of the children a live process has waited for (their own reaped children included): a cluster's
    workers that django-q2 recycled, PDF children replaced, gunicorn workers past max_requests. Counted once, in
    the parent that reaped them; 0 once the process is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


M_TOP_PAD = -2  # glibc's mallopt parameter, as MALLOC_TOP_PAD_ sets it in the PDF child's environment


def allocate_as_the_child() -> None:
    """Pad this process's heap as the PDF child's is (sandbox.MALLOC_TOP_PAD), so that the floors and Pagetrail in this
    process allocate as the product's child does: without it their buffers of a few hundred KiB each move the heap's
    top, and the page faults that follow made Pagetrail in this process slower than through the child."""
    ctypes.CDLL(None).mallopt(M_TOP_PAD, MALLOC_TOP_PAD)


def raw_copy(pdf: Path, out: Path) -> tuple[list[str], int]:
    """The floor: each image XObject and soft mask's stored bytes copied out as they are."""
    digests = []
    with pikepdf.open(pdf) as doc:
        for image in _placed_images(doc):
            data = image.read_raw_bytes()
            (out / f"{image.objgen[0]}.raw").write_bytes(data)
            digests.append(hashlib.sha256(data).hexdigest())
    return digests, 0


def guarantee_floor(pdf: Path, out: Path) -> tuple[list[str], int]:
    """The floor of an extractor that guarantees its files: the raw copy, plus one inflate of each
    Flate image with the inflater the product uses (its output dropped), which is what proving a
    wrapped image whole costs at the least."""
    return _guaranteed(pdf, out, placements=False)


def placements_floor(pdf: Path, out: Path) -> tuple[list[str], int]:
    """The guarantee floor, plus what saying where each image is drawn costs at the least: each page's content
    parsed once, for the operators that draw an image (the guarantee floor takes images from the pages' resources,
    which name what a page may draw, not what it draws, nor in what order). Forms, patterns and annotations,
    which Pagetrail also reads, are left out: the floor stays below any extractor that reports placements."""
    return _guaranteed(pdf, out, placements=True)


def _guaranteed(pdf: Path, out: Path, placements: bool) -> tuple[list[str], int]:
    digests = []
    with pikepdf.open(pdf) as doc:
        if placements:
            for page in doc.pages:
                pikepdf.parse_content_stream(page, "Do BI ID EI")
        for image in _placed_images(doc):
            data = image.read_raw_bytes()
            if filter_names(image)[:1] == ["FlateDecode"]:
                inflates_to(data, UNBOUNDED)
            (out / f"{image.objgen[0]}.raw").write_bytes(data)
            digests.append(hashlib.sha256(data).hexdigest())
    return digests, 0


UNBOUNDED = 1 << 62  # no image is this large: inflates_to reads the whole stream


def _placed_images(doc: pikepdf.Pdf):
    seen = set()
    for page in doc.pages:
        for image in page.get_images().values():
            for stream in (image, image.get("/SMask")):
                if isinstance(stream, pikepdf.Stream) and stream.objgen not in seen:
                    seen.add(stream.objgen)
                    yield stream


def pagetrail(pdf: Path, out: Path) -> tuple[list[str], int]:
    """The product's own path: a limited, warm child process per worker."""
    return _reported(extract_images(pdf, out, Limits()))


def pagetrail_fresh_child(pdf: Path, out: Path) -> tuple[list[str], int]:
    """The product's path with PAGETRAIL_CHILD_REUSE=1: a fresh child process for every PDF."""
    return _reported(extract_images(pdf, out, Limits(child_reuse=1)))


def pagetrail_in_process(pdf: Path, out: Path) -> tuple[list[str], int]:
    """The same extraction without the child process: what the child's start-up costs."""
    return _reported(extract_in_this_process(pdf, out, Limits()))


def _reported(extraction) -> tuple[list[str], int]:
    return [a.sha256 for a in extraction.assets], sum(len(a.placements) for a in extraction.assets)


def pymupdf_tool() -> Callable | None:
    try:
        import pymupdf
    except ImportError:
        return None

    def extract(pdf: Path, out: Path) -> tuple[list[str], int]:
        digests = []
        with pymupdf.open(pdf) as doc:
            xrefs = {x for page in doc for item in page.get_images(full=True) for x in item[:2] if x}
            for xref in sorted(xrefs):
                found = doc.extract_image(xref)
                (out / f"{xref}.{found['ext']}").write_bytes(found["image"])
                digests.append(hashlib.sha256(found["image"]).hexdigest())
        return digests, 0

    return extract


def pdfimages_tool() -> Callable | None:
    program = shutil.which("pdfimages")
    if program is None:
        return None

    def extract(pdf: Path, out: Path) -> tuple[list[str], int]:
        subprocess.run([program, "-all", str(pdf), str(out / "img")], check=True, capture_output=True)
        digests = []
        for path in sorted(out.iterdir()):
            with open(path, "rb") as f:
                digests.append(hashlib.file_digest(f, "sha256").hexdigest())
        return digests, 0

    return extract


def pikepdf_images(pdf: Path, out: Path) -> tuple[list[str], int]:
    """pikepdf's own extraction (`PdfImage.extract_to`) of every placed image and soft mask; an image
    it cannot write is skipped, as its users would find."""
    digests = []
    with pikepdf.open(pdf) as doc:
        for image in _placed_images(doc):
            buffer = io.BytesIO()
            try:
                extension = pikepdf.PdfImage(image).extract_to(stream=buffer)
            except (pikepdf.PdfError, pikepdf.UnsupportedImageTypeError, NotImplementedError, ValueError):
                continue
            data = buffer.getvalue()
            (out / f"{image.objgen[0]}{extension}").write_bytes(data)
            digests.append(hashlib.sha256(data).hexdigest())
    return digests, 0


def skipped(name: str, reason: str) -> Run:
    return Run(name, skipped=reason)
