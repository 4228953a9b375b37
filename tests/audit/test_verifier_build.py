"""One verifier: packages ship `audit.verifier` itself, built at export from the modules verification runs
import, and nothing else implements its checks."""

import ast
import sys
import zipfile
from pathlib import Path

import pytest

from audit.verifier import build
from tests.audit.test_evidence import chain, export, out  # noqa: F401 (fixtures)

ROOT = Path(__file__).parents[2]
VERIFIER = ROOT / "audit" / "verifier"


@pytest.mark.django_db
def test_the_shipped_verifier_is_the_built_one(chain, out):  # noqa: F811
    with zipfile.ZipFile(export(out)) as zf:
        shipped = zf.read(build.NAME)
    assert shipped == build.build()
    with zipfile.ZipFile(out / "evidence.zip") as package, zipfile.ZipFile(out / "evidence.zip") as again:
        assert package.read(build.NAME) == again.read(build.NAME)


def test_the_zipapp_holds_every_module_of_the_package_byte_for_byte(tmp_path):
    path = tmp_path / build.NAME
    path.write_bytes(build.build())
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist() if name != "__main__.py"}
    assert members == {f"{build.PACKAGE}/{p.name}": p.read_bytes() for p in VERIFIER.glob("*.py")}


def test_the_verifier_imports_only_the_standard_library_and_cryptography():
    allowed = set(sys.stdlib_module_names) | {"cryptography"}
    for path in VERIFIER.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, (path.name, roots - allowed)


def test_nothing_outside_the_verifier_reimplements_its_checks():
    """The functions that judge evidence are defined once, in audit/verifier/."""
    judged = {"verify_inclusion", "verify_consistency", "open_checkpoint", "ed25519_ok", "canonical_bytes"}
    judged |= {"leaf_hash", "node_hash", "check_timestamp", "key_hash"}
    for path in [*ROOT.glob("audit/**/*.py"), *ROOT.glob("extraction/**/*.py"), *ROOT.glob("portal/**/*.py")]:
        if VERIFIER in path.parents:
            continue
        defined = {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}
        assert not defined & judged, (path, defined & judged)
