"""``local_preference_provider recall``: one provider request on stdin, one response."""

import os
import sys

NAME = "recall"
HELP = "Answer one provider request read from stdin."


def arguments(parser):
    parser.add_argument("--project", help="Corpus project (default: the request's).")


def run(command, *, project=None, **_):
    from preferences.recall import local_provider

    project = project or local_provider.project_from_env(os.environ)
    stdin = _read_stdin(local_provider.MAX_REQUEST_BYTES + 1)
    request = local_provider.parse_request(stdin, project=project)
    return local_provider.recall_response(**request)


def _read_stdin(limit: int) -> bytes:
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is not None:
        return stream.read(limit)
    return sys.stdin.read(limit).encode("utf-8")
