"""Install small, real completion validator extensions for tests (scripts run by the
server's sandbox exactly as an operator's would be)."""

import json
import sys
import textwrap

from hooks.services import validators

#: Echo a passing document for exactly the input's digest and refs.
PASSING = """
import json, sys
doc = json.load(sys.stdin)
r = doc["reflection"]
print(json.dumps({"schema_version": "reward_memory_reflection_validation_v0",
                  "status": "passed", "reflection_digest": r["reflection_digest"],
                  "evidence_refs": r["evidence_refs"], "checks": ["echo"]}))
"""
#: A plain "tests passed" command: exit 0, no document.
PLAIN_EXIT_0 = "import sys; sys.stdin.read(); print('all 12 tests passed')"
EMPTY_EXIT_0 = "import sys; sys.stdin.read()"
GARBAGE = "import sys; sys.stdin.read(); sys.stdout.write('{\\\\x00not json' * 3)"
SLEEPER = "import sys, time; sys.stdin.read(); time.sleep(30)"
FLOOD = "import sys; sys.stdin.read(); sys.stdout.write('x' * 200000)"
OTHER_DIGEST = """
import json, sys
doc = json.load(sys.stdin)
print(json.dumps({"schema_version": "reward_memory_reflection_validation_v0",
                  "status": "passed", "reflection_digest": "sha256:" + "0" * 64,
                  "evidence_refs": doc["reflection"]["evidence_refs"]}))
"""
NONZERO = "import sys; sys.stdin.read(); sys.exit(3)"


def manifest_file(tmp_path, validator_id: str, body: str, *, timeout: int = 5, **extra):
    script = tmp_path / f"{validator_id}.py"
    script.write_text(textwrap.dedent(body))
    path = tmp_path / f"{validator_id}.json"
    manifest = {
        "schema_version": "loopx_completion_validator_manifest_v0",
        "validator_id": validator_id,
        "protocol": "loopx_completion_validator_v0",
        "entrypoint": [sys.executable, f"./{script.name}"],
        "timeout_seconds": timeout,
        **extra,
    }
    path.write_text(json.dumps(manifest))
    return path


def install(tmp_path, validator_id: str, body: str, *, timeout: int = 5):
    path = manifest_file(tmp_path, validator_id, body, timeout=timeout)
    return validators.install_validator(validators.read_manifest_file(path), execute=True)
