#!/usr/bin/env python
"""LoopX Memory command-line entry point."""

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
    execute_from_command_line(argv)


if __name__ == "__main__":
    main()
