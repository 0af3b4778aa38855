#!/usr/bin/env python
"""LoopX Memory command-line entry point."""

import gc
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
    from django.core.management import execute_from_command_line

    argv = list(sys.argv)
    # `manage.py --format text goal list`: the global-looking option belongs to the
    # LoopX command; move it after the command name (LoopX commands take it anywhere).
    while len(argv) > 2 and argv[1].startswith("--format"):
        take = 1 if "=" in argv[1] else 2
        moved, argv = argv[1 : 1 + take], [argv[0], *argv[1 + take :]]
        if len(argv) < 2:
            argv += moved
            break
        argv[2:2] = moved
    start_up(argv)
    execute_from_command_line(argv)


def start_up(argv: list[str]) -> None:
    """Set Django up and import the command without the cyclic garbage collector, then
    freeze what start-up built. Start-up allocates hundreds of thousands of long-lived
    objects (model classes, modules) and creates no garbage worth collecting; left on,
    the collector walks them all several times over (about a sixth of a short CLI call,
    docs/development.md "Start-up"). Frozen, later collections skip them. ``runserver``
    sets itself up under its autoreloader, so it is left alone."""
    if len(argv) < 2 or argv[1] in ("runserver", "help") or argv[1].startswith("-"):
        return
    import contextlib

    import django
    from django.conf import settings
    from django.core.management import get_commands, load_command_class

    if not _settings_load(settings):
        return  # Django reports a broken settings module itself
    gc.disable()
    try:
        django.setup()
        app = get_commands().get(argv[1])
        if isinstance(app, str):
            # a command that fails to import fails again, the same, when Django loads it
            with contextlib.suppress(Exception):
                load_command_class(app, argv[1])
    finally:
        gc.freeze()
        gc.enable()


def _settings_load(settings) -> bool:
    try:
        return bool(settings.INSTALLED_APPS)
    except Exception:
        return False


if __name__ == "__main__":
    main()
