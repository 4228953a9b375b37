"""What parent and child say to each other: arguments in, one JSON document out."""

import json
from dataclasses import asdict, is_dataclass
from functools import lru_cache
from typing import Any

from .limits import Limits
from .results import Extraction, WrittenImage

MODULE = "extraction.pdf.child"
# A child out of memory may not manage to print anything, so it says so by exit status.
EXIT_OUT_OF_MEMORY = 86
# Suffix of files being written in out_dir; they are renamed once complete.
PARTIAL = ".partial"
# The child's first line, once it has imported everything: before it, a command would wait for that.
READY = b'{"ready": true}\n'


# A worker sends the same limits with every command: they are written, and read back, once (Limits is frozen).
@lru_cache(maxsize=16)
def limits_to_json(limits: Limits) -> str:
    return json.dumps(asdict(limits))


@lru_cache(maxsize=16)
def limits_from_json(text: str) -> Limits:
    fields = json.loads(text)
    fields["allowed_filters"] = tuple(fields["allowed_filters"])
    return Limits(**fields)


def extraction_from_dict(result: dict[str, Any]) -> Extraction:
    assets = [
        WrittenImage(**{**asset, "placements": [tuple(p) for p in asset["placements"]]}) for asset in result["assets"]
    ]
    return Extraction(**{**result, "assets": assets})


def to_json(value: object) -> str:
    """A result as JSON: each dataclass an object of its fields, tuples arrays. The C encoder walks it all; a walk in
    Python first (dataclasses.asdict, or a plain-dicts copy) took a millisecond a clinical record, mostly over its
    placements."""
    return json.dumps(value, default=_fields)


def _fields(value: object) -> dict[str, Any]:
    if is_dataclass(value) and not isinstance(value, type):
        return vars(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
