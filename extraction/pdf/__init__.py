"""PDF inspection, image extraction and page rendering, each run in a child process under limits.

Nothing here imports Django: the child imports this package by itself.
"""

from .entry_points import extract_images, inspect_pdf, read_page_evidence, render_pages, write_attachment
from .errors import Refusal, SandboxError, WorkerStopping
from .limits import Limits
from .page_evidence import PageEvidence
from .page_hints import Hint, hints
from .render import RenderedPage, Rendering
from .results import Extraction, Inspection, WrittenImage

__all__ = [
    "Limits",
    "Refusal",
    "SandboxError",
    "WorkerStopping",
    "Inspection",
    "Extraction",
    "WrittenImage",
    "RenderedPage",
    "Rendering",
    "inspect_pdf",
    "extract_images",
    "render_pages",
    "write_attachment",
    "read_page_evidence",
    "PageEvidence",
    "Hint",
    "hints",
]
