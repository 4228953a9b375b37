"""PDF inspection and image extraction, each run in a child process under limits.

Nothing here imports Django: the child imports this package by itself.
"""
from .api import extract_images, inspect_pdf
from .errors import Refusal, SandboxError
from .limits import ExtractedAsset, Extraction, Inspection, Limits

__all__ = [
    "Limits", "Refusal", "SandboxError", "Inspection", "Extraction", "ExtractedAsset",
    "inspect_pdf", "extract_images",
]
