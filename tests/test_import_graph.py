"""The product's import graph has no circle and no arrow up its layers: every module of core, portal, extraction,
audit and bench, with the imports inside functions (the lazy ones) counted too, and the templates with their
includes and extends."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "portal", "extraction", "audit", "bench")
TEMPLATE_TAG = re.compile(r"""\{%\s*(?:include|extends)\s+["']([^"']+)["']""")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = ROOT, packages=PACKAGES) -> dict[str, Path]:
    return {
        module_name(p, root): p
        for package in packages
        for p in sorted((root / package).rglob("*.py"))
        if "migrations" not in p.parts
    }


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules that `name` imports anywhere in its body (a name imported from a package counts as its
    module when it is one, else as the package)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{alias.name}" for alias in node.names] or [module]
            targets = [t if _known(t, known) else module for t in targets]
        else:
            continue
        found |= {m for t in targets if (m := _known(t, known)) and m != name and not name.startswith(m + ".")}
    return found


def _known(target: str, known: dict[str, Path]) -> str | None:
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node, or one node with an edge to itself (Tarjan, iterative:
    the graph has hundreds of nodes)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = counter
                    counter += 1
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(edges.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1 or node in edges.get(node, ()):
                    found.append(sorted(part))
    return found


def module_graph(root: Path = ROOT, packages=PACKAGES) -> dict[str, set[str]]:
    known = modules(root, packages)
    return {name: imported(name, path, known) for name, path in known.items()}


def template_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Our templates (the project's directory and each app's) and the ones of ours they include or extend (one
    that extends the template it overrides, as the admin's do, is Django's: not an edge)."""
    bases = [root / "templates", *root.glob("*/templates")]
    names = {p.relative_to(base).as_posix(): p for base in bases for p in base.rglob("*.html")}
    return {
        name: {used for used in TEMPLATE_TAG.findall(path.read_text()) if used in names and used != name}
        for name, path in names.items()
    }


def test_no_module_of_the_product_imports_itself_back():
    graph = module_graph()
    assert len(graph) > 200 and graph["extraction.runner"]  # the walk found the product and its imports
    assert circles(graph) == []


def test_no_template_includes_itself_back():
    graph = template_graph()
    assert "admin/base_site.html" in graph
    assert circles(graph) == []


def test_it_finds_a_circle_through_a_lazy_import_and_a_relative_one(tmp_path):
    package = tmp_path / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "orders.py").write_text("from . import stock\n")
    (package / "stock.py").write_text("def f():\n    from shop.billing import total\n")
    (package / "billing.py").write_text("from .orders import place\n")
    (package / "alone.py").write_text("import shop.stock\n")
    graph = module_graph(tmp_path, ("shop",))
    assert graph["shop.billing"] == {"shop.orders"} and graph["shop.alone"] == {"shop.stock"}
    assert circles(graph) == [["shop.billing", "shop.orders", "shop.stock"]]


def test_it_finds_templates_that_include_each_other(tmp_path):
    (tmp_path / "templates" / "app").mkdir(parents=True)
    (tmp_path / "templates" / "app" / "a.html").write_text('{% extends "app/b.html" %}')
    (tmp_path / "templates" / "app" / "b.html").write_text("{% include 'app/a.html' %}")
    (tmp_path / "templates" / "app" / "c.html").write_text('{% extends "admin/base.html" %}')
    assert circles(template_graph(tmp_path)) == [["app/a.html", "app/b.html"]]


# Lower layers never import higher ones: the Django-free packages (the PDF child's, the verifier every package
# ships), then the shared kernel, then extraction, then audit, then the project (settings, URLs, API wiring,
# the admin registrations that need both apps), then the benchmarks.
LAYERS = (("extraction.pdf", "audit.verifier"), ("core",), ("extraction",), ("audit",), ("portal",), ("bench",))


def layer(module: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if any(module == n or module.startswith(n + ".") for n in names))


def upward(graph: dict[str, set[str]]) -> list[str]:
    return [f"{m} -> {d}" for m, deps in sorted(graph.items()) for d in sorted(deps) if layer(d) > layer(m)]


def test_no_module_imports_a_higher_layer():
    graph = module_graph()
    assert graph["extraction.runner"] & {"core.stores", "core.retry"}  # the kernel is found and used
    assert upward(graph) == []


def test_it_finds_an_import_of_a_higher_layer():
    graph = {"core.stores": {"extraction.models"}, "audit.verification.verify": {"core.stores", "extraction.models"}}
    assert upward(graph) == ["core.stores -> extraction.models"]
