"""Audit depends on extraction, never the other way: extraction reaches audit only through the completion
recorder that audit registers (extraction.completion), and names none of audit's modules, even by string."""

import ast
import re
from pathlib import Path

from django.core import checks

from audit.manifest_writing import record_completion
from extraction import completion
from extraction.checks import completion_recorder_registered

EXTRACTION = Path(__file__).resolve().parent.parent / "extraction"
DOTTED_AUDIT_PATH = re.compile(r"audit(\.\w+)+")


def _audit_references(path: Path) -> list[str]:
    """The modules of audit that a module imports or names by a dotted string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "audit"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "audit":
            found.append(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED_AUDIT_PATH.fullmatch(node.value):
            found.append(node.value)  # a task, model or module named by string ("audit.tasks.x", "audit.Asset")
    return found


def test_it_finds_no_module_of_extraction_that_names_audit():
    modules = sorted(EXTRACTION.rglob("*.py"))
    assert len(modules) > 50  # the walk found the package
    assert [
        f"{module.relative_to(EXTRACTION.parent)}: {ref}" for module in modules for ref in _audit_references(module)
    ] == []


def test_it_would_notice_an_import_of_audit(tmp_path):
    module = tmp_path / "runner.py"
    module.write_text(
        (EXTRACTION / "runner.py").read_text()
        + "\nfrom audit.manifest_writing import record_completion"
        + "\nimport audit.metrics"
        + "\nTASK = 'audit.tasks.sweep_outputs'\n"
    )
    assert _audit_references(module) == ["audit.manifest_writing", "audit.metrics", "audit.tasks.sweep_outputs"]


def test_it_has_audit_registered_as_the_completion_recorder():
    assert completion.registered() is record_completion
    assert completion_recorder_registered() == []


def test_it_refuses_to_start_without_a_completion_recorder():
    completion.register(None)
    try:
        [error] = completion_recorder_registered()
        assert (error.level, error.id) == (checks.ERROR, "extraction.E001")
    finally:
        completion.register(record_completion)
