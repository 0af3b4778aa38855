"""Every document has one home: a ``"schema_version":`` dict literal may stand only in
a documents module or a contract module (issue 22). Services, selectors, views and
commands call those modules; they never assemble a ``schema_version`` dict themselves.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("loopx_site", "preferences", "reward_memory", "hooks", "turn_recall")
CONTRACT_NAMES = {"contracts.py", "protocol.py"}
#: External programs that speak a wire protocol over stdin/stdout. They run as their own
#: process through the sandbox, import nothing of this service (stdlib only), so they
#: cannot call a documents module: the protocol document is theirs to write.
EXTERNAL_SCRIPTS = {
    "hooks/extensions/evidence_check.py",  # a completion validator
    "preferences/extensions/loopx_openviking.py",  # a semantic-preference provider
}


def _is_home(relative: str) -> bool:
    path = Path(relative)
    if path.name == "documents.py" or "documents" in path.parts[:-1]:
        return True
    if path.name in CONTRACT_NAMES or "contracts" in path.parts[:-1]:
        return True
    return relative in EXTERNAL_SCRIPTS


def _schema_dicts(source: str) -> list[int]:
    """Line numbers of dict literals with a ``"schema_version"`` key (code only: a
    docstring that shows a document is not one)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value == "schema_version" for k in node.keys
        ):
            lines.append(node.lineno)
    return lines


def _production_modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "migrations" in path.parts or "__pycache__" in path.parts:
                continue
            yield relative, path


def stray_documents() -> dict[str, list[int]]:
    stray = {}
    for relative, path in _production_modules():
        if _is_home(relative):
            continue
        lines = _schema_dicts(path.read_text(encoding="utf-8"))
        if lines:
            stray[relative] = lines
    return stray


def test_the_walk_finds_the_documents_modules_and_reads_code_not_docstrings():
    assert _is_home("hooks/documents.py")
    assert _is_home("reward_memory/documents/recall.py")
    assert _is_home("hooks/contracts.py")
    assert _is_home("preferences/recall/protocol.py")
    assert not _is_home("hooks/selectors.py")
    assert _schema_dicts('x = {"ok": True, "schema_version": "a_v0"}\n') == [1]
    assert _schema_dicts('"""Shows {"schema_version": "a_v0"}."""\nx = {"a": 1}\n') == []
    relatives = {r for r, _ in _production_modules()}
    assert "hooks/documents.py" in relatives
    assert "loopx_site/core/documents.py" in relatives
    assert not any("migrations" in r for r in relatives)


def test_hooks_and_core_build_no_document_outside_a_documents_or_contract_module():
    """The modules this round moved (hooks, loopx_site.core) — strict."""
    stray = {
        path: lines
        for path, lines in stray_documents().items()
        if path.startswith(("hooks/", "loopx_site/"))
    }
    assert stray == {}


def test_no_schema_version_literal_outside_a_documents_or_contract_module():
    assert stray_documents() == {}
