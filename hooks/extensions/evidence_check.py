"""The demo's Todo completion validator (protocol ``loopx_completion_validator_v0``).

Stdlib only; run by the server through the sandbox with the manifest's argv. It reads the
``loopx_completion_validator_input_v0`` document on stdin and passes only when the facts it
can check all hold:

* the durable-writeback receipt is ``committed`` and, for ``todo_completed``, the Todo is
  ``completed`` at the settled revision;
* the reflection names at least one evidence ref and every ref starts with one of the
  ``--allow-prefix`` values of the manifest (e.g. ``validation:``, ``pr:``).

It prints one ``reward_memory_reflection_validation_v0`` echoing the digest and the refs,
with ``status`` ``passed`` or ``failed`` and the names of the checks that held/failed.
"""

import argparse
import json
import sys


def judge(document: dict, prefixes: list[str]) -> tuple[str, list[str]]:
    settlement = document.get("settlement") or {}
    todo = document.get("todo") or {}
    refs = (document.get("reflection") or {}).get("evidence_refs") or []
    failed = []
    if settlement.get("receipt_state") != "committed":
        failed.append("receipt_not_committed")
    if settlement.get("event_kind") == "todo_completed" and todo.get("state") != "completed":
        failed.append("todo_not_completed")
    if not refs:
        failed.append("no_evidence_refs")
    if prefixes and not all(any(r.startswith(p) for p in prefixes) for r in refs):
        failed.append("evidence_ref_kind_not_allowed")
    if failed:
        return "failed", failed
    return "passed", ["receipt_committed", "todo_state_matches", "evidence_ref_kinds_allowed"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allow-prefix", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        document = json.loads(sys.stdin.read(65536))
    except ValueError:
        return 2
    if (
        not isinstance(document, dict)
        or document.get("schema_version") != "loopx_completion_validator_input_v0"
    ):
        return 2
    reflection = document.get("reflection") or {}
    status, checks = judge(document, args.allow_prefix)
    json.dump(
        {
            "schema_version": "reward_memory_reflection_validation_v0",
            "status": status,
            "reflection_digest": reflection.get("reflection_digest"),
            "evidence_refs": list(reflection.get("evidence_refs") or []),
            "checks": checks,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
