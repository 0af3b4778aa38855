"""The base of every LoopX management command.

A LoopX command parses its arguments, calls one service and renders the result:

* ``--format json`` (default) prints exactly one JSON object on stdout;
  ``--format text`` prints readable tables (one renderer: ``render_payload`` /
  ``format_table``). ``--format`` is accepted anywhere after the command name, before
  or after a subcommand.
* Every ``DomainError``, every argument error (argparse's included) and a database
  outage becomes the structured error envelope on stdout with exit status 2 — no
  traceback, no usage dump on stdout.
* Human progress goes to stderr (``self.progress``, ``self.progress_bar``), silent in
  ``--format json`` when stderr is not a terminal.

A command without subcommands implements ``add_command_arguments(parser)`` and
``run(**options)`` returning a payload dict; a command with subcommands lists one module
per subcommand in ``subcommand_modules`` (see ``add_subcommand_modules``) and nothing else.
"""

import argparse
import importlib
import inspect
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandParser, handle_default_options
from django.db import DatabaseError, connections

from loopx_site.core.encoding import dumps
from loopx_site.core.errors import DomainError, from_database_error, name_fields
from loopx_site.core.files import is_utf8_text
from loopx_site.core.progress import bar as progress_bar
from loopx_site.core.progress import enabled as progress_enabled
from loopx_site.core.progress import reporting as progress_reporting
from loopx_site.core.progress import write as progress_write

FORMATS = ("json", "text")


class CommandArgumentError(Exception):
    """Raised by the parser instead of printing usage and exiting."""


class DocumentExit(Exception):
    """Raised after the document was emitted when its verdict exits non-zero (a LoopX
    document such as a dogfood batch on ``hold`` prints on stdout and exits 2)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class LoopxCommandParser(CommandParser):
    def error(self, message: str):
        raise CommandArgumentError(message)


def option_dests(parser: argparse.ArgumentParser) -> frozenset[str]:
    """Every option's ``dest`` in ``parser`` and its subcommands' parsers."""
    dests: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                dests |= option_dests(sub)
        elif action.option_strings:
            dests.add(action.dest)
    return frozenset(dests)


def _sniff_format(argv: Sequence[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--format" and i + 1 < len(argv) and argv[i + 1] in FORMATS:
            return argv[i + 1]
        if arg.startswith("--format=") and arg.split("=", 1)[1] in FORMATS:
            return arg.split("=", 1)[1]
    return "json"


def split_format(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """Take every valid ``--format X`` / ``--format=X`` out of ``argv`` wherever it
    stands (before or after a subcommand); the last one wins. An invalid value is left
    in place for the parser to refuse."""
    rest: list[str] = []
    fmt = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--format" and i + 1 < len(argv) and argv[i + 1] in FORMATS:
            fmt = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--format=") and arg.split("=", 1)[1] in FORMATS:
            fmt = arg.split("=", 1)[1]
            i += 1
            continue
        rest.append(arg)
        i += 1
    return rest, fmt


def _argument_field(message: str) -> str | None:
    """Best-effort name of the offending option in an argparse message."""
    for token in message.replace(",", " ").replace(":", " ").split():
        if token.startswith("--"):
            return token[2:].split("/")[0].replace("-", "_")
    return None


def _cell(value: Any) -> str:
    """One table cell or scalar line: nested values compact (``k=v``, comma lists), never
    a Python repr or a JSON blob."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return " ".join(f"{k}={_cell(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value) or "-"
    return " ".join(str(value).split()) if "\n" in str(value) else str(value)


def format_table(rows: Iterable[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """THE fixed-width table of ``--format text`` (every command's tables come from here).

    Without ``columns``, the union of the rows' keys in first-seen order.
    """
    rows = list(rows)
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    cells = [["" if r.get(c) is None else _cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = "  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))
    out = [line.rstrip()]
    out += [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    if not rows:
        out.append("(none)")
    return "\n".join(out)


def render_payload(payload: dict[str, Any], *, skip: Iterable[str] = (), indent: int = 0) -> str:
    """Readable text for any payload: ``key: value`` lines for scalars, a nested section
    for a mapping, a table (``format_table``) for a list of mappings."""
    skip = set(skip)
    pad = "  " * indent
    lines: list[str] = []
    for key, value in payload.items():
        if key in skip:
            continue
        if isinstance(value, dict) and value:
            lines.append(f"{pad}{key}:")
            lines.append(render_payload(value, indent=indent + 1))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{pad}{key}:")
            lines += [pad + "  " + row for row in format_table(value).splitlines()]
        else:
            lines.append(f"{pad}{key}: {_cell(value)}")
    return "\n".join(lines)


def format_mapping(payload: dict[str, Any], *, skip: Iterable[str] = ()) -> str:
    """``key: value`` lines (nested values as sections and tables) — ``render_payload``."""
    return render_payload(payload, skip=skip)


def call_with_options(service: Callable[..., Any], options: dict[str, Any], **given: Any) -> Any:
    """Call ``service`` with the parsed options its signature names (plus ``given``,
    which win): a command whose option dests are the service's keywords passes them
    through without restating each one. Options the service does not name (``format``,
    ``verbosity`` …) stay behind."""
    names = inspect.signature(service).parameters
    kwargs = {name: options[name] for name in names if name in options}
    return service(**{**kwargs, **given})


class Subcommands:
    """Adds subcommands that each accept ``--format`` at the end: ``add(name, help)``
    makes a leaf, ``group(name, help)`` nests another level (``semantic_preference
    agent …``). Used by ``add_subcommand_modules``, never by a command itself."""

    def __init__(self, action, path: tuple[str, ...] = ()):
        self._action = action
        self._path = path

    def add(self, name: str, help: str) -> CommandParser:
        sub = self._action.add_parser(name, help=help, description=help)
        add_format_argument(sub, nested=True)
        return sub

    def group(self, name: str, help: str) -> "Subcommands":
        parser = self._action.add_parser(name, help=help, description=help)
        dest = "_".join((*self._path, name, "action"))
        action = parser.add_subparsers(dest=dest, required=True, metavar="ACTION")
        return Subcommands(action, (*self._path, name))


def add_subcommand_modules(sub: Subcommands, modules: Iterable[str]) -> None:
    """One subcommand per module, in ``--help`` order. A subcommand module declares:

    - ``NAME`` and ``HELP``;
    - ``arguments(parser)`` (optional): its options;
    - ``run(command, **options) -> document``: parse → one service call → the document
      (``command`` is the running ``LoopxCommand``: ``command.progress`` for long work);
    - ``render(document) -> str`` (optional): its ``--format text`` form (else the
      command's ``render_text``);
    - ``exit_status(document) -> int`` (optional): a non-zero exit for a document whose
      verdict fails, as LoopX's do.

    A group of subcommands (``semantic_preference agent read|remember|…``) is a package
    whose ``__init__`` declares ``NAME``, ``HELP`` and its own ``subcommand_modules``.

    Adding a subcommand is one new module plus its dotted path in the command's (or its
    group's) ``subcommand_modules``."""
    for path in modules:
        module = importlib.import_module(path)
        nested = getattr(module, "subcommand_modules", None)
        if nested is not None:
            add_subcommand_modules(sub.group(module.NAME, module.HELP), nested)
            continue
        parser = sub.add(module.NAME, module.HELP)
        parser.set_defaults(_loopx_module=module)
        arguments = getattr(module, "arguments", None)
        if arguments is not None:
            arguments(parser)


def add_format_argument(parser: argparse.ArgumentParser, *, nested: bool = False) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=argparse.SUPPRESS if nested else "json",
        help="Output format: one JSON object (default) or a readable text summary.",
    )


def add_agent_arguments(
    parser: argparse.ArgumentParser,
    *,
    required: bool = True,
    goal_help: str | None = None,
    agent_help: str | None = None,
) -> None:
    """``--goal-id`` and ``--agent-id``: the (Goal, Agent) a subcommand acts for."""
    parser.add_argument("--goal-id", required=required, help=goal_help)
    parser.add_argument("--agent-id", required=required, help=agent_help)


def add_execute_argument(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--execute``: commit what the subcommand otherwise only previews."""
    parser.add_argument("--execute", action="store_true", help=help)


def check_argv_text(argv: Sequence[str], *, area: str = "loopx") -> None:
    """The text rule for arguments: every argument is UTF-8 text. Python turns bytes
    that are not UTF-8 into lone surrogates (``surrogateescape``), which no service can
    hash or store: ``invalid_argument`` naming the option, never echoing the value."""
    for index, arg in enumerate(argv):
        if arg.isascii() or is_utf8_text(arg):
            continue
        option = arg.split("=", 1)[0] if arg.startswith("--") else None
        if option is None and index and argv[index - 1].startswith("--"):
            option = argv[index - 1]
        field = option[2:].replace("-", "_") if option and is_utf8_text(option) else None
        raise DomainError(
            "invalid_argument",
            f"{option if field else 'an argument'} must be valid UTF-8 text.",
            field=field,
            area=area,
        )


class LoopxCommand(BaseCommand):
    requires_system_checks = []
    #: Area of argument errors raised before a service runs (error schema name).
    error_area = "loopx"
    _option_dests: frozenset[str] = frozenset()
    #: Dotted paths of this command's subcommand modules, in ``--help`` order (see
    #: ``add_subcommand_modules``); a command with none declares its own arguments.
    subcommand_modules: tuple[str, ...] = ()
    #: A service's field name → this command's option (its dest), where they differ, so an
    #: error names the caller's own input (``quota_decision`` → ``quota_decision_json``).
    field_options: dict[str, str] = {}

    # -- parser -----------------------------------------------------------------
    def add_arguments(self, parser: CommandParser) -> None:
        parser.__class__ = LoopxCommandParser  # argument errors raise instead of exiting
        add_format_argument(parser)
        self.add_command_arguments(parser)

    def add_command_arguments(self, parser: CommandParser) -> None:
        """Declare the command's arguments (override), or its ``subcommand_modules``."""
        if self.subcommand_modules:
            action = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
            add_subcommand_modules(Subcommands(action), self.subcommand_modules)

    # -- execution --------------------------------------------------------------
    def run_from_argv(self, argv: list[str]) -> None:
        self._called_from_command_line = True
        fmt = _sniff_format(argv[2:])
        code = 0
        try:
            check_argv_text(argv[2:], area=self.error_area)
            parser = self.create_parser(argv[0], argv[1])
            self._option_dests = option_dests(parser)
            rest, chosen = split_format(argv[2:])
            options = parser.parse_args(rest)
            cmd_options = vars(options)
            if chosen is not None:
                cmd_options["format"] = chosen
            args = cmd_options.pop("args", ())
            handle_default_options(options)
            with progress_reporting(cmd_options.get("format", "json"), self._stderr_stream()):
                self.execute(*args, **cmd_options)
        except DocumentExit as exc:
            code = exc.code
        except CommandArgumentError as exc:
            err = DomainError(
                "invalid_argument",
                str(exc),
                field=_argument_field(str(exc)),
                area=self.error_area,
            )
            self._emit_error(err, fmt)
            code = 2
        except DomainError as exc:
            self._emit_error(exc, fmt)
            code = 2
        except DatabaseError as exc:
            self.stderr.write(f"database error: {type(exc).__name__}")
            self._emit_error(from_database_error(exc, area=self.error_area), fmt)
            code = 2
        except Exception:
            if "--traceback" in argv:
                raise
            self.stderr.write(traceback.format_exc(limit=-3))
            err = DomainError("internal_error", "Unexpected failure.", area=self.error_area)
            self._emit_error(err, fmt)
            code = 1
        finally:
            connections.close_all()
        if code:
            sys.exit(code)

    def handle(self, *args: Any, **options: Any) -> None:
        self.output_format = options.get("format", "json")
        subcommand = options.get("subcommand")
        module = options.pop("_loopx_module", None)
        if module is not None:
            self._run_module(module, subcommand, options)
            return
        payload = self.run(**options)
        self.emit(payload, subcommand=subcommand)
        self._exit_for(payload, subcommand)

    def _run_module(self, module, subcommand: str | None, options: dict[str, Any]) -> None:
        """One subcommand module's run, its document on stdout, and its exit status."""
        payload = module.run(self, **options)
        render = getattr(module, "render", None)
        if self.output_format == "text" and render is not None:
            self.stdout.write(render(payload))
        else:
            self.emit(payload, subcommand=subcommand)
        exit_status = getattr(module, "exit_status", None)
        code = exit_status(payload) if exit_status is not None else 0
        if code:
            raise DocumentExit(code)

    def exit_status(self, payload: dict[str, Any], *, subcommand: str | None = None) -> int:
        """The exit status of an emitted document (0; commands override for documents
        whose verdict exits non-zero, as LoopX's do)."""
        return 0

    def _exit_for(self, payload: dict[str, Any], subcommand: str | None) -> None:
        code = self.exit_status(payload, subcommand=subcommand)
        if code:
            raise DocumentExit(code)

    def run(self, **options: Any) -> dict[str, Any]:
        raise NotImplementedError

    def flag_of(self, field: str) -> str | None:
        """The flag a person types for a service field (``corpus_id`` → ``--corpus-id``),
        or ``None`` if this command has no such option."""
        option = self.field_options.get(field, field)
        if option not in self._option_dests and field not in self.field_options:
            return None
        return "--" + option.replace("_", "-")

    # -- output -----------------------------------------------------------------
    def emit(self, payload: dict[str, Any], *, subcommand: str | None = None) -> None:
        if self.output_format == "text":
            self.stdout.write(self.render_text(payload, subcommand=subcommand))
        else:
            self.stdout.write(dumps(payload))

    def render_text(self, payload: dict[str, Any], *, subcommand: str | None = None) -> str:
        """Readable form of a payload; commands override for tables."""
        return render_payload(payload)

    def progress(self, message: str) -> None:
        """Human progress on stderr (never stdout); silent where the bar is."""
        stream = self._stderr_stream()
        if progress_enabled(getattr(self, "output_format", "json"), stream):
            progress_write(message, file=stream)

    def progress_bar(self, **kwargs: Any):
        """A progress bar on stderr (counts and rate) for long work — see
        ``loopx_site.core.progress.bar``."""
        return progress_bar(
            fmt=getattr(self, "output_format", "json"), file=self._stderr_stream(), **kwargs
        )

    def _stderr_stream(self):
        return getattr(self.stderr, "_out", sys.stderr)

    def _emit_error(self, err: DomainError, fmt: str) -> None:
        if err.field in self.field_options:
            err.field = self.field_options[err.field]
        # The message names the caller's input as the flag they typed.
        err.message = name_fields(err.message, self.flag_of)
        if fmt == "text":
            # A person reads the flag they typed (``--goal-id``), not the field's name.
            flag = self.flag_of(err.field) if err.field else None
            message = err.message
            if flag and message.startswith(f"{err.field} "):
                message = flag + message[len(err.field) :]
            field = f" ({flag or 'field: ' + err.field})" if err.field else ""
            line = f"error: {err.code}{field}: {message}"
            current = err.extra.get("current")
            if isinstance(current, dict) and "revision" in current:
                # A conflict says where the journal is now, so a person can retry.
                line += f"\ncurrent revision: {current['revision']}"
            self.stdout.write(line)
        else:
            self.stdout.write(dumps(err.envelope()))
