"""The provider LoopX's ``tests/extensions/test_extension_runtime.py`` installs, behaviour
for behaviour: ``--doctor`` exits with ``DOCTOR_EXIT``; otherwise it reads the request
and returns one fixed preference. Tests copy it next to a TOML manifest with a
``#!<python>`` line and the doctor exit they need."""

import json
import sys

DOCTOR_EXIT = 0

if "--doctor" in sys.argv:
    raise SystemExit(DOCTOR_EXIT)

json.load(sys.stdin)
json.dump(
    {
        "schema_version": "semantic_preference_provider_response_v0",
        "items": [
            {
                "preference_ref": "provider://preference/one",
                "summary": "Prefer compact validation notes.",
            }
        ],
    },
    sys.stdout,
)
