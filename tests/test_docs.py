"""The README and docs/ stay true to the tree: every relative link leads to a file, every management command
is in the operations reference."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def relative_links(page: Path) -> list[str]:
    return [target for target in LINK.findall(page.read_text()) if "://" not in target]


def test_every_relative_link_in_the_readme_and_docs_leads_to_a_file():
    broken = [
        f"{page.relative_to(ROOT)} -> {target}"
        for page in PAGES
        for target in relative_links(page)
        if not (page.parent / target).exists()
    ]
    assert len(PAGES) > 10 and broken == []


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / target).resolve() for target in relative_links(ROOT / "README.md")}
    assert sorted(page.name for page in PAGES[1:] if page.resolve() not in linked) == []


def test_the_operations_reference_names_every_management_command():
    commands = {path.stem for path in ROOT.glob("*/management/commands/*.py") if path.stem != "__init__"}
    reference = (ROOT / "docs" / "operations.md").read_text()
    assert len(commands) > 10 and sorted(name for name in commands if f"`{name}" not in reference) == []
