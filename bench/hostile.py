"""Hostile files for the refusal table, made by the test suite's factories when they can be imported."""

from pathlib import Path

# Over the default 512 MiB stream limit: the bomb must be inflated that far before it is refused.
BOMB_MIB = 600


def corpus(directory: Path) -> list[tuple[str, Path]]:
    """(name, path) of each hostile file; empty when tests/pdfs.py is not importable."""
    try:
        from tests import pdfs
    except ImportError:
        return []
    factories = [
        pdfs.truncated,
        pdfs.zip_appended,
        pdfs.encrypted,
        pdfs.damaged_xref,
        pdfs.xref_prev_loop,
        pdfs.page_tree_cycle,
        pdfs.absurd_page_count,
        pdfs.huge_length,
        pdfs.huge_image,
        pdfs.javascript_open_action,
        pdfs.embedded_file,
        pdfs.jbig2_image,
        pdfs.big_gray_image,
        lambda d: pdfs.flate_bomb(d, BOMB_MIB),
        lambda d: pdfs.flate_bomb_in_ascii85(d, BOMB_MIB),
    ]
    made = []
    for factory in factories:
        path = factory(directory)
        made.append((path.stem, path))
    return made
