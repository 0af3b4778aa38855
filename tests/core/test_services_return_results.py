"""Services return results; the edges render (``docs/development.md``, "Inside an app").

A service module (``*/services/*.py``, ``*/services.py``, and Reward Memory's
``dogfood``, ``evaluation`` and ``routing``) returns a domain result — a small frozen
dataclass or the rows it wrote — and never imports a ``documents`` module: views,
commands, admin actions, MCP tools and demos hand its result to the app's documents
module. An AST walk over the apps and ``loopx_site`` finds every import of one (``import
…documents…``, ``from … import documents``, ``from ….documents… import …``, relative
forms, ``importlib.import_module("….documents…")``) and the builders taken from it.

Two lists say where a service still renders:

* ``STORED_RECEIPTS`` — ``module -> builders`` that render a *stored receipt* (JSON kept
  on a row), rendered once when the service writes it and answered as stored. Exact: a
  pair no longer used fails, as does any other builder the module uses.
* ``STILL_RENDERING`` — modules not converted yet: empty since issue 37 converted the
  last of them, and it stays empty (a listed module that no longer renders fails).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("loopx_site", "preferences", "reward_memory", "hooks", "turn_recall")
#: Service modules that are not named ``services``. (The evaluation gate's eight cases,
#: ``reward_memory/evaluation_cases.py``, are its harness beside ``evaluation_fixtures``:
#: they check the services' results, and render only the record envelope whose size the
#: restart case reports.)
ALSO_SERVICES = (
    "reward_memory/dogfood.py",
    "reward_memory/evaluation.py",
    "reward_memory/routing.py",
)

#: ``module -> {builder}``: the stored receipts a service renders at write time.
STORED_RECEIPTS: dict[str, set[str]] = {
    "reward_memory/services/experiments.py": {
        "reward_memory.documents.experiments.enablement_receipt"
    },
    "reward_memory/services/ingest.py": {"reward_memory.documents.ingest.receipt"},
    "reward_memory/services/recalls.py": {
        # the packet a ``RecallReceipt`` stores; the application receipt it records
        "reward_memory.documents.recall.public_packet",
        "reward_memory.documents.recall.application_receipt",
    },
    "reward_memory/services/operator_control.py": {
        "reward_memory.documents.operator_control.prepared"
    },
    "reward_memory/services/reflection.py": {
        # the ingest receipt a reflection's candidate keeps, rendered when it is stored
        "reward_memory.documents.ingest.ingest",
        "reward_memory.documents.reflection.validator_validation",
        "reward_memory.documents.reflection.operator_validation",
    },
    "reward_memory/services/review.py": {"reward_memory.documents.review.review"},
}

STILL_RENDERING: set[str] = set()


def is_service(relative: str) -> bool:
    path = Path(relative)
    return (
        path.name == "services.py" or "services" in path.parts[:-1] or relative in ALSO_SERVICES
    ) and "migrations" not in path.parts


def _module_name(relative: str) -> str:
    parts = list(Path(relative).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(node: ast.ImportFrom, module: str, relative: str) -> str:
    """The dotted module an ``ImportFrom`` names, relative forms resolved."""
    if not node.level:
        return node.module or ""
    package = module.split(".")
    if not relative.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_documents(dotted: str) -> bool:
    return "documents" in dotted.split(".")


def builders(source: str, relative: str) -> set[str]:
    """The documents builders (dotted) a module takes; empty when it imports none. An
    import whose names are not seen used counts as the documents module itself."""
    module = _module_name(relative)
    aliases: dict[str, str] = {}  # local name -> documents module or builder
    found: set[str] = set()
    tree = ast.parse(source, filename=relative)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_documents(alias.name):
                    found.add(alias.name)  # ``import a.documents.b``: the module itself
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, relative)
            for alias in node.names:
                target = f"{base}.{alias.name}" if base else alias.name
                if _is_documents(target):
                    aliases[alias.asname or alias.name] = target
        elif isinstance(node, ast.Call) and _is_import_module(node):
            found.add(node.args[0].value)
    bases = set()  # the names an attribute is read from: ``documents`` of ``documents.x``
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Attribute) else None
        if isinstance(value, ast.Name) and value.id in aliases:
            found.add(f"{aliases[value.id]}.{node.attr}")
            bases.add(id(value))
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases:
            used.add(node.id)
            if id(node) not in bases:  # a builder imported by name, or the module passed on
                found.add(aliases[node.id])
    found |= {aliases[name] for name in aliases.keys() - used}
    return found


def _is_import_module(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return (
        name == "import_module"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
        and _is_documents(node.args[0].value)
    )


def rendering(root: Path = ROOT) -> dict[str, set[str]]:
    """``module -> builders`` for every service module that imports a documents module."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if not is_service(relative):
                continue
            taken = builders(path.read_text(), relative)
            if taken:
                found[relative] = taken
    return found


def violations(found: dict[str, set[str]], stored: dict[str, set[str]], still: set[str]):
    """``(renders, converted, unused)``: modules rendering more than their stored
    receipts (listed ones aside); listed modules that no longer do; stored-receipt pairs
    no longer used."""
    renders = {
        module: sorted(taken - stored.get(module, set()))
        for module, taken in found.items()
        if module not in still and taken - stored.get(module, set())
    }
    converted = sorted(
        module for module in still if not (found.get(module, set()) - stored.get(module, set()))
    )
    unused = {
        module: sorted(pairs - found.get(module, set()))
        for module, pairs in stored.items()
        if pairs - found.get(module, set())
    }
    return renders, converted, unused


def test_services_return_results_and_leave_rendering_to_the_edges():
    renders, converted, unused = violations(rendering(), STORED_RECEIPTS, STILL_RENDERING)
    assert renders == {}, (
        "a service returns a result (a frozen dataclass or its rows); the view, command or "
        "admin action renders it with the app's documents module"
    )
    assert converted == [], "it no longer renders: take it off STILL_RENDERING"
    assert unused == {}, "no longer rendered: take the pair off STORED_RECEIPTS"


def test_the_walk_finds_every_way_a_service_imports_documents(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    app = tmp_path / "hooks"
    (app / "services").mkdir()
    (app / "services" / "__init__.py").write_text("from hooks.services.a import run\n")
    (app / "services" / "a.py").write_text(
        "from hooks import documents\n\ndef run():\n    return documents.todo_list(1, [])\n"
    )
    (app / "services" / "b.py").write_text("from ..documents import intent as packet\n")
    (app / "services" / "c.py").write_text(
        "import importlib\n\ndef f():\n    importlib.import_module('hooks.documents.x')\n"
    )
    (app / "services" / "d.py").write_text("from hooks.documents import receipt\n\nreceipt()\n")
    (app / "services" / "migrations").mkdir()
    (app / "services" / "migrations" / "0001.py").write_text("from hooks import documents\n")
    (app / "views.py").write_text("from hooks import documents\n")  # an edge: fine
    (tmp_path / "turn_recall" / "services.py").write_text(
        "import turn_recall.documents\nfrom turn_recall import contracts\n"
    )
    (tmp_path / "reward_memory" / "routing.py").write_text(
        "from reward_memory.documents import route_check as documents\n\n"
        "def f():\n    return documents.route(1)\n"
    )
    assert rendering(tmp_path) == {
        "hooks/services/a.py": {"hooks.documents.todo_list"},
        "hooks/services/b.py": {"hooks.documents.intent"},
        "hooks/services/c.py": {"hooks.documents.x"},
        "hooks/services/d.py": {"hooks.documents.receipt"},
        "reward_memory/routing.py": {"reward_memory.documents.route_check.route"},
        "turn_recall/services.py": {"turn_recall.documents"},
    }


def test_the_lists_pass_only_stored_receipts_and_modules_left_to_convert():
    found = {
        "a/services.py": {"a.documents.receipt"},
        "b/services.py": {"b.documents.receipt", "b.documents.listing"},
        "c/services.py": {"c.documents.status"},
    }
    stored = {
        "a/services.py": {"a.documents.receipt"},
        "b/services.py": {"b.documents.receipt"},
        "d/services.py": {"d.documents.receipt"},
    }
    renders, converted, unused = violations(found, stored, {"c/services.py", "a/services.py"})
    assert renders == {"b/services.py": ["b.documents.listing"]}
    assert converted == ["a/services.py"]  # only its stored receipt is left: off the list
    assert unused == {"d/services.py": ["d.documents.receipt"]}
