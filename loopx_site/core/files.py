"""Reading operator-supplied files and JSON documents, safely, in one place.

Every command option that names a file (``--input``, ``--manifest``, ``--config``, …)
and every JSON body goes through these helpers:

* only a regular file is read (a FIFO, device or directory is refused without blocking:
  the file is opened with ``O_NONBLOCK`` and checked with ``fstat`` before reading);
* the size is capped before decoding;
* JSON nesting is bounded *before* ``json.loads`` recurses, so a deeply nested document
  is a coded error, never a ``RecursionError``;
* error messages name the option, never the path (it may be an absolute local path);
* the text rule: every string (and object key) of a JSON document is a sequence of
  Unicode scalar values, i.e. encodable as UTF-8. JSON's ``\\ud800`` escape decodes to a
  lone surrogate, which no service can hash or store; such a document is
  ``invalid_argument`` here, at the edge, before any service sees it.
"""

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from loopx_site.core.errors import DomainError

DEFAULT_MAX_BYTES = 256_000
DEFAULT_MAX_DEPTH = 64


def _flag(option: str) -> str:
    """The command-line flag as a person types it (``quota_decision_json`` →
    ``--quota-decision-json``)."""
    return "--" + option.replace("_", "-")


def _error(code: str, message: str, *, option: str, area: str) -> DomainError:
    return DomainError(code, message, field=option, area=area)


def read_bytes(
    path: str | os.PathLike,
    *,
    option: str,
    area: str = "loopx",
    max_bytes: int = DEFAULT_MAX_BYTES,
    code: str = "invalid_input_file",
    not_found_code: str | None = None,
    allow_stdin: bool = False,
) -> bytes:
    """The bytes of one regular file (or stdin for ``-`` when allowed), at most ``max_bytes``."""
    if allow_stdin and str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream (tests, embedding): encode what it gives
            text = sys.stdin.read(max_bytes + 1)
            if not is_utf8_text(text):
                raise DomainError(
                    "invalid_argument",
                    f"{_flag(option)} is not valid UTF-8 text.",
                    field=option,
                    area=area,
                )
            data = text.encode("utf-8")
        else:
            data = stream.read(max_bytes + 1)
    else:
        try:
            fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise _error(
                not_found_code or code, f"{_flag(option)} does not exist.", option=option, area=area
            ) from None
        except OSError:
            raise _error(
                code, f"{_flag(option)} could not be opened.", option=option, area=area
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _error(
                    code, f"{_flag(option)} must be a regular file.", option=option, area=area
                )
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(max_bytes + 1)
        except OSError:
            raise _error(
                code, f"{_flag(option)} could not be read.", option=option, area=area
            ) from None
        finally:
            os.close(fd)
    if len(data) > max_bytes:
        raise _error(code, f"{_flag(option)} exceeds {max_bytes} bytes.", option=option, area=area)
    return data


def read_text(path: str | os.PathLike, *, option: str, area: str = "loopx", **kwargs: Any) -> str:
    """``read_bytes`` decoded as UTF-8 (a coded error otherwise)."""
    code = kwargs.get("code", "invalid_input_file")
    data = read_bytes(path, option=option, area=area, **kwargs)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _error(
            code, f"{_flag(option)} is not UTF-8 text.", option=option, area=area
        ) from None


def json_depth_exceeds(text: str | bytes, max_depth: int) -> bool:
    """True when brackets outside strings nest deeper than ``max_depth``.

    A linear scan that never recurses; it does not validate JSON (``json.loads`` does).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= max_depth:
        return False  # fast path: nesting can never exceed the number of openers
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth -= 1
    return False


#: A key safe to name in an error (anything else is shown as ``<key>``).
_SAFE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def is_utf8_text(text: str) -> bool:
    """True when ``text`` is a sequence of Unicode scalar values (no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def invalid_text_path(value: Any, path: str = "") -> str | None:
    """The dotted path of the first string or key in ``value`` that is not UTF-8 text
    (``""`` for the value itself), or ``None`` when every string is. Keys that are not
    plain identifiers are named ``<key>`` (a key may be private text)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not is_utf8_text(item):
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                name = key if isinstance(key, str) and _SAFE_KEY.fullmatch(key) else "<key>"
                inner = f"{where}.{name}" if where else name
                if isinstance(key, str) and not is_utf8_text(key):
                    return inner
                stack.append((child, inner))
        elif isinstance(item, list | tuple):
            stack.extend(
                (child, f"{where}.{i}" if where else str(i)) for i, child in enumerate(item)
            )
    return None


def _may_hold_surrogate(text: str | bytes) -> bool:
    """Cheap pre-check: a lone surrogate can only come from a ``\\uD800``-``\\uDFFF`` escape
    (decoded UTF-8 never holds one)."""
    if isinstance(text, bytes):
        return re.search(rb"\\u[dD][89abcdefABCDEF]", text) is not None
    return re.search(r"\\u[dD][89abcdefABCDEF]", text) is not None or not is_utf8_text(text)


def require_utf8_document(
    value: Any, *, option: str, area: str = "loopx", what: str | None = None
) -> Any:
    """``value`` unchanged, or ``invalid_argument`` naming where text is not UTF-8."""
    where = invalid_text_path(value)
    if where is not None:
        subject = what or f"{_flag(option)}"
        at = f" at {where}" if where else ""
        raise DomainError(
            "invalid_argument",
            f"{subject} holds text that is not valid UTF-8 (a lone surrogate){at}.",
            field=option,
            area=area,
            details={"path": where} if where else {},
        )
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_json(
    text: str | bytes,
    *,
    option: str,
    area: str = "loopx",
    max_depth: int = DEFAULT_MAX_DEPTH,
    code: str = "invalid_input_file",
    require_object: bool = True,
) -> Any:
    """Strict JSON (no NaN/Infinity) with bounded nesting; coded errors, no traceback."""
    if json_depth_exceeds(text, max_depth):
        raise _error(
            code, f"{_flag(option)} nests deeper than {max_depth} levels.", option=option, area=area
        )
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:  # where, and what the parser expected (no content)
        where = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise _error(
            code, f"{_flag(option)} is not valid JSON ({where}).", option=option, area=area
        ) from None
    except (ValueError, RecursionError):
        raise _error(
            code, f"{_flag(option)} is not valid JSON.", option=option, area=area
        ) from None
    if require_object and not isinstance(value, dict):
        raise _error(code, f"{_flag(option)} must hold one JSON object.", option=option, area=area)
    if _may_hold_surrogate(text):
        require_utf8_document(value, option=option, area=area)
    return value


def read_json(
    path: str | os.PathLike,
    *,
    option: str,
    area: str = "loopx",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    code: str = "invalid_input_file",
    not_found_code: str | None = None,
    allow_stdin: bool = True,
    require_object: bool = True,
) -> Any:
    """One JSON document from a regular file (or ``-`` for stdin)."""
    text = read_text(
        path,
        option=option,
        area=area,
        max_bytes=max_bytes,
        code=code,
        not_found_code=not_found_code,
        allow_stdin=allow_stdin,
    )
    return loads_json(
        text,
        option=option,
        area=area,
        max_depth=max_depth,
        code=code,
        require_object=require_object,
    )


# -- local-private files: outside every git work tree, or ignored and untracked there ------
def _git_env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
    }


def _git(args: list[str], cwd: Path) -> int | None:
    """Exit status of a read-only git query; ``None`` when git cannot run."""
    git = shutil.which("git", path=os.environ.get("PATH", os.defpath))
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "-c", "safe.directory=*", *args],
            cwd=cwd,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode


def _has_git_ancestor(path: Path) -> bool:
    return any((parent / ".git").exists() for parent in path.parents)


def ensure_ignored(path: Path, *, field_name: str = "config", area: str = "loopx") -> None:
    """Raise ``config_not_ignored`` unless ``path`` is outside every git work tree or
    ignored (and untracked) there.

    Works on the path as given and on its symlink target. When git cannot answer but a
    ``.git`` entry exists above the file, the file is treated as not ignored (fail closed).
    """
    candidates = [path]
    try:
        resolved = path.resolve()
    except OSError:
        resolved = path
    if resolved != path:
        candidates.append(resolved)
    for candidate in candidates:
        directory = candidate.parent
        inside = _git(["rev-parse", "--is-inside-work-tree"], directory)
        if inside != 0 and not _has_git_ancestor(candidate):
            continue
        name = candidate.name
        tracked = _git(["ls-files", "--error-unmatch", "--", name], directory)
        ignored = _git(["check-ignore", "-q", "--", name], directory)
        if tracked == 0 or ignored != 0:
            raise DomainError(
                "config_not_ignored",
                f"The {field_name} file is inside a git work tree and git does not ignore it; "
                "keep it local-private (add it to .gitignore, untracked).",
                field=field_name,
                area=area,
            )


def private_database_file(sender, connection, **_) -> None:
    """``connection_created``: the SQLite database (and its WAL and shared-memory files)
    readable by the server's user only, so no sandboxed child reads it."""
    if connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    for path in (name, name + "-wal", name + "-shm"):
        with contextlib.suppress(OSError):
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o600)
