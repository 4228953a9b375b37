"""Audit depends on extraction, never the other way: extraction reaches audit only through the completion
recorder that audit registers (extraction.completion), and names none of audit's modules, even by string; no
template of extraction includes or extends one of audit's; neither app takes the other's admin registration."""

import ast
import re
from pathlib import Path

from django.core import checks

from audit.ledger.manifest_writing import record_completion
from extraction import completion
from extraction.checks import completion_recorder_registered

ROOT = Path(__file__).resolve().parent.parent
EXTRACTION, AUDIT, TEMPLATES = ROOT / "extraction", ROOT / "audit", ROOT / "templates"
DOTTED_AUDIT_PATH = re.compile(r"audit(\.\w+)+")
# Extraction's templates: the project's directories named for it, and its app directory should it get one.
EXTRACTION_TEMPLATES = (TEMPLATES / "extraction", TEMPLATES / "admin" / "extraction", EXTRACTION / "templates")
TEMPLATE_REFERENCE = re.compile(r"""{%\s*(?:include|extends)\s+["']([^"']+)["']""")
AUDIT_TEMPLATE = re.compile(r"(admin/)?audit/")


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
        + "\nfrom audit.ledger.manifest_writing import record_completion"
        + "\nimport audit.operations.metrics"
        + "\nTASK = 'audit.tasks.sweep_outputs'\n"
    )
    assert _audit_references(module) == [
        "audit.ledger.manifest_writing",
        "audit.operations.metrics",
        "audit.tasks.sweep_outputs",
    ]


def _audit_templates(path: Path) -> list[str]:
    """The templates of audit that a template includes or extends by name."""
    return [name for name in TEMPLATE_REFERENCE.findall(path.read_text()) if AUDIT_TEMPLATE.match(name)]


def test_it_finds_no_template_of_extraction_that_includes_or_extends_one_of_audit():
    pages = sorted(path for folder in EXTRACTION_TEMPLATES for path in folder.rglob("*") if path.is_file())
    assert len(pages) >= 2  # the walk found the upload and submission pages
    assert [f"{page.relative_to(ROOT)}: {name}" for page in pages for name in _audit_templates(page)] == []


def test_it_would_notice_a_template_that_includes_or_extends_one_of_audit(tmp_path):
    page = tmp_path / "upload.html"
    page.write_text(
        (TEMPLATES / "admin" / "extraction" / "bundle" / "upload.html").read_text()
        + '{% include "audit/includes/form_fields.html" with form=form %}'
        + "{%extends 'admin/audit/verificationrun/change_form.html'%}"
        + '{% include "admin/includes/live_breadcrumbs.html" %}'
    )
    assert _audit_templates(page) == ["audit/includes/form_fields.html", "admin/audit/verificationrun/change_form.html"]


def test_neither_app_unregisters_an_admin_registration():
    """An admin page that needs both apps is registered by the project (portal/admin.py), never over another's."""
    calls = [
        f"{module.relative_to(ROOT)}:{node.lineno}"
        for module in sorted([*EXTRACTION.rglob("*.py"), *AUDIT.rglob("*.py")])
        for node in ast.walk(ast.parse(module.read_text(), filename=str(module)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "unregister"
    ]
    assert calls == []


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
