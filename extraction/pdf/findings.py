"""What inspection found that an intake policy decides on (active content, attachments, trailing data, an owner
password, repaired damage), collected rather than refused here: the decision is the policy's, outside the child."""

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pikepdf

# Every kind a policy names, with what it is. `objects` of a finding are "n g" of the indirect objects it was in.
KINDS = {
    "javascript": "JavaScript",
    "launch": "a Launch action (it starts a program)",
    "executable": "an embedded executable",
    "submit_form": "a SubmitForm action (it sends form data to a server)",
    "import_data": "an ImportData action (it reads data from another file)",
    "remote_goto": "a GoToR or GoToE action (it opens another file)",
    "uri": "a URI link",
    "embedded_file": "an embedded file (an attachment)",
    "rich_media": "rich media",
    "xfa_form": "an XFA form",
    "trailing_data": "data after the PDF end-of-file marker",
    "owner_password": "encryption with an empty user password (an owner password restricts it)",
    "repaired": "damage qpdf repaired (its cross-reference table, page tree or encryption entry)",
}
MOST_OBJECTS = 20  # a file with ten thousand links names the first twenty; `count` says how many there were
HEAD = 1024  # where a file's magic number or `%PDF-` header is looked for
EXECUTABLE_MAGIC = (b"MZ", b"\x7fELF", b"\xfe\xed\xfa", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
EXECUTABLE_NAME = re.compile(
    r"\.(exe|dll|scr|com|bat|cmd|msi|ps1|vbs|vbe|jse?|wsf|hta|jar|sh|app|apk|lnk|pif|cpl)$", re.IGNORECASE
)


@dataclass
class Finding:
    kind: str
    objects: list[str] = field(default_factory=list)
    count: int = 0
    detail: str = ""  # where, when no object says it: "23 bytes after the final end-of-file marker"


@dataclass
class Findings:
    """Findings by kind, and the files attached, in the order first seen."""

    by_kind: dict[str, Finding] = field(default_factory=dict)
    attachments: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Called with an attached file's stream before it is read: the limits' check, which refuses a bomb before it
    # is decoded (the stream itself may be visited only later).
    before_reading: Callable[[pikepdf.Stream, str], None] = lambda stream, where: None

    def add(self, kind: str, obj: str | None = None, detail: str = "") -> None:
        found = self.by_kind.setdefault(kind, Finding(kind))
        if obj is not None and obj in found.objects:
            return  # the same object seen again (two keys of one dictionary): one finding
        found.count += 1
        if obj is not None and len(found.objects) < MOST_OBJECTS:
            found.objects.append(obj)
        found.detail = found.detail or detail

    def attach(self, spec: pikepdf.Dictionary, where: str) -> None:
        """Record the file a file specification embeds (its name, sha256, size), once per stream."""
        ef = spec.get("/EF")
        stream = next((ef.get(k) for k in ("/UF", "/F") if isinstance(ef, pikepdf.Dictionary) and k in ef), None)
        if not isinstance(stream, pikepdf.Stream):
            return
        obj = "{} {}".format(*stream.objgen) if stream.is_indirect else where
        if obj in self.attachments:
            return
        name = _name_of(spec)
        self.before_reading(stream, f"object {obj}")
        try:
            data = stream.read_bytes()
        except pikepdf.PdfError:
            data = None  # a filter that cannot be decoded: listed, with no hash to give
        self.attachments[obj] = {
            "name": name,
            "sha256": hashlib.sha256(data).hexdigest() if data is not None else "",
            "size": len(data) if data is not None else 0,
            "pdf": data is not None and b"%PDF-" in data[:HEAD],
            "object": obj,
        }
        if EXECUTABLE_NAME.search(name) or (data is not None and data.startswith(EXECUTABLE_MAGIC)):
            self.add("executable", obj)

    def as_plain(self) -> dict[str, Any]:
        found = [
            {"kind": f.kind, "what": KINDS[f.kind], "objects": f.objects, "count": f.count}
            | ({"detail": f.detail} if f.detail else {})
            for f in self.by_kind.values()
        ]
        return {"findings": found, "attachments": list(self.attachments.values())}


def _name_of(spec: pikepdf.Dictionary) -> str:
    for key in ("/UF", "/F"):
        value = spec.get(key)
        if isinstance(value, pikepdf.String):
            return str(value)[:255]
    return ""


def trailing_data(detail: str) -> dict[str, Any]:
    """The finding for data appended after an end-of-file marker, which the parent finds in the tail."""
    return {"kind": "trailing_data", "what": KINDS["trailing_data"], "objects": [], "count": 1, "detail": detail}
