#!/usr/bin/env python3
"""Fail fast (exit 1, one clear line) when HOST:PORT is already taken.

`make run` calls this before any set-up, so a busy port costs nothing and changes
nothing (no migration, no password rotation). Standard library only: it runs before
the virtualenv exists.
"""

import socket
import sys


def main() -> int:
    host, port = sys.argv[1], int(sys.argv[2])
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not "busy"
    try:
        sock.bind((host, port))
    except OSError as exc:
        print(
            f"make run: {host}:{port} is already in use ({exc.strerror}). Stop the other "
            f"server or choose another port: make run PORT=8001",
            file=sys.stderr,
        )
        return 1
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
