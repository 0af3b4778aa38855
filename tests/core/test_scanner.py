"""The shared scanner: an adversarial corpus that must be caught (zero misses) and as
many harmless look-alikes that must pass (zero false refusals)."""

import pytest

from loopx_site.core import scanner

ZWSP = "\u200b"
RLO = "\u202e"

# (text, a code that must be among the findings)
CAUGHT = [
    # credentials in prose
    ("the password is hunter2", "credential"),
    ("The Password Is hunter2!", "credential"),
    ("pass=hunter2", "credential"),
    ("passwd: letmein99", "credential"),
    ("api key = abcdef123456", "credential"),
    ("my api_key is a1b2c3d4e5", "credential"),
    ("client_secret => 9f8e7d6c5b", "credential"),
    ("secret: Tr0ub4dor&3", "credential"),
    ("token=deadbeefcafe42", "credential"),
    ("access key: AKIAIOSFODNN7EXAMPLE", "credential"),
    ("AKIAIOSFODNN7EXAMPLE", "credential"),
    ("ASIAIOSFODNN7EXAMPLE", "credential"),
    ("aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "credential"),
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "credential"),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "credential",
    ),
    ("sk-proj-Abc123Def456Ghi789Jkl012Mno345", "credential"),
    ("sk-Abc123Def456Ghi789Jkl012", "credential"),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "credential"),
    ("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "credential"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "credential"),
    ("github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz", "credential"),
    ("glpat-xxxxYYYYzzzz1234abcd", "credential"),
    ("xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx", "credential"),
    ("hf_abcdefghijklmnopqrstuvwxyz012345", "credential"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "credential"),
    ("Authorization: Bearer abc.def.ghi123456", "credential"),
    ("use bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5", "credential"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "credential"),
    ("-----BEGIN RSA PRIVATE KEY-----", "credential"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "credential"),
    ("-----BEGIN PRIVATE KEY-----", "credential"),
    ("random blob Q2xhdWRlSXNBSGVscGZ1bEFzc2lzdGFudDEyMw9x", "credential"),
    # connection strings and URLs with credentials
    ("admin:s3cret@db:5432", "url_with_credentials"),
    ("connect as app:pa55word@pg.internal", "url_with_credentials"),
    ("https://user:pw@example.com/x", "url_with_credentials"),
    ("postgres://app:secret@10.1.2.3/db", "url_with_credentials"),
    ("https://api.example.com/v1?api_key=123", "url_with_credentials"),
    # URLs and hosts with or without a scheme
    ("https://example.com", "url"),
    ("see http://intranet/wiki", "url"),
    ("ftp://files.example.org/pub", "url"),
    ("file:///etc/passwd", "url"),
    ("github.com/org/repo/pull/1", "url"),
    ("www.example.com", "host"),
    ("deploy to api.staging.internal", "host"),
    ("docs.python.org", "host"),
    ("10.0.0.1:8080/admin", "ip_address"),
    ("ping 192.168.1.10", "ip_address"),
    ("fe80::1ff:fe23:4567:890a", "ip_address"),
    ("localhost:8000", "host"),
    ("mail alice@example.com", "email"),
    ("bob.smith+tag@corp.co.uk", "email"),
    # local paths
    ("/home/bob/.ssh/id_rsa", "local_path"),
    ("~/.aws/credentials", "local_path"),
    ("$HOME/.aws/credentials", "local_path"),
    ("${XDG_CONFIG_HOME}/app", "local_path"),
    ("%APPDATA%\\Roaming\\app", "local_path"),
    ("C:/Users/bob/key.pem", "local_path"),
    ("C:\\Users\\bob\\key.pem", "local_path"),
    ("\\\\fileserver\\share", "local_path"),
    ("../../etc/shadow", "local_path"),
    ("/etc/hosts", "local_path"),
    ("/tmp", "local_path"),
    ("/tmp/x", "local_path"),
    ("/etc/passwd", "local_path"),
    ("/home/bob/key.pem", "local_path"),
    # a request log line excuses its URL path, never a filesystem root or what follows
    ("Not Found: /etc/passwd", "local_path"),
    ("GET /home/bob/key.pem", "local_path"),
    ("Unauthorized: /api/v1/goals/demo/ while reading /srv/app/config/loopx.json", "local_path"),
    ("GET /api/v1/goals/?from=/tmp/x", "local_path"),
    ("Unauthorized: /home/alice/.config/loopx.json", "local_path"),
    ("the host token lxh_Q2xhdWRlSXNBSGVscGZ1bEFz leaked", "credential"),
    # confusables: full-width, zero-width and bidi characters
    ("ｈｔｔｐｓ：／／evil.example/x", "url"),
    ("ｐａｓｓ＝ｈｕｎｔｅｒ２", "credential"),
    (f"gh{ZWSP}p_abcdefghijklmnopqrstuvwxyz0123456789", "credential"),
    (f"AKIA{ZWSP}IOSFODNN7EXAMPLE", "credential"),
    (f"https:{ZWSP}//example.com", "url"),
    (f"pass{RLO}word=hunter2", "credential"),
    ("ｅｘａｍｐｌｅ．ｃｏｍ", "host"),
    (f"sk-{ZWSP}proj-Abc123Def456Ghi789Jkl012Mno345", "credential"),
]

HARMLESS = [
    "Lead PR descriptions with the user-visible effect.",
    "Two maintainers asked for the effect first.",
    "the password is required on first login",
    "the password policy needs a reviewer",
    "Rotate the API key every quarter and document the rotation.",
    "token budget stays under four thousand",
    "the token is refreshed by the host",
    "secret management belongs in the vault module",
    "Keep credentials out of receipts.",
    "pass the review before merging",
    "password reset flows need a regression test",
    "Use the key insight from the last review.",
    "feedback:proj-a/pr/17",
    "review:proj-a#12/r-1",
    "user:maint-1",
    "repo:proj-a/maintainers",
    "checkpoint:roles/proj-a/1",
    "issue:proj-a#12",
    "issue_fix.pr_description",
    "agent_workflow.turn_admission",
    "issue_fix.request_reproduction",
    "review.merge is a forbidden scope family",
    "sha256:" + "ab" * 32,
    "cand_" + "0f" * 32,
    "rmr_" + "1a2b" * 16,
    "Prefer finishing an in-progress Todo over opening a new one.",
    "Version 1.2.3 fixed the regression.",
    "Run the tests on Python 3.11 and PostgreSQL 15.",
    "Ratio 3:2 keeps the layout balanced.",
    "Meet at 10:30 for the review.",
    "Use and/or sparingly in docs.",
    "input/output serializers stay thin",
    "the read/write split is explicit",
    "Keep PR descriptions under twenty lines; link follow-up work instead.",
    "e.g. prefer the smaller patch",
    "i.e. the owner decides",
    "Score: 4/5 from two reviewers.",
    "Use 50% of the quota at most.",
    "The config file name is settings.py in the repo.",
    "call services.remember() from the view",
    "node.js and next.js projects differ",
    "set max_age to 30 days",
    "The secret sauce is a short feedback loop.",
    "Passing tests are required before merge.",
    "author: maintainer team",
    "key: value pairs are fine in summaries",
    "A bearer of bad news still reports it.",
    "Basic authentication is disabled in this service.",
    "The private key never leaves the host.",
    "ssh access is operator-only",
    "Write the effect first, then the cause.",
    "recall profile ids stay opaque",
    "goal demo / agent author",
    "reward_memory_candidate_v0",
    "The API returns 404 for unknown corpora.",
    "half-width and full-width forms differ visually",
    "Keep commits small: one behaviour per commit.",
    "A 40 character limit applies to titles.",
    "Compare v2.0 with v1.9 before release notes.",
    "Priority order: safety, scope, freshness.",
    "Token counts are reported as zero.",
    "owner/name, exactly as GitHub spells it",
    "Ask for a reproduction before patching a storage contract.",
    "Use the PR template; the description explains the user-visible effect.",
    "Mention the linked issue number like #3237.",
    "password: <redacted>",
    "api_key = ${API_KEY}",
    "token: none",
    "Meet at 10:30:00 for the stand-up.",
    "The ratio 16:9 suits slides.",
    "Chapter 2.1.3 explains the lifecycle.",
    "Use semver 1.0.0-rc.1 for the candidate.",
    "list[str] | None is the return type",
    "Prefer dict.get over try/except KeyError here.",
    "A user-private corpus stays private.",
    "The peer label never grants authority.",
    "Expiry is measured in days, not hours.",
    "Readback must match byte for byte.",
    "the credential scanner runs before the provider call",
    "Secrets and tokens are never derived from feedback.",
    "Unauthorized: /api/v1/goals/demo/",
    "Forbidden (Permission denied): /admin/dashboard/",
    "Method Not Allowed (POST): /admin/dashboard/",
    "Not Found: /api/v1/goals/unknown/preferences/",
    "GET /api/v1/goals/demo/agents/author/preferences/ 200",
    "Service Unavailable: /admin/reward_memory/authoritycheckpoint/",
    "Shown once; only its sha256 is stored. Send as 'Authorization: Bearer …'.",
    "Send it as Authorization: Bearer <token>",
]


@pytest.mark.parametrize(("text", "code"), CAUGHT, ids=[t[:40] for t, _ in CAUGHT])
def test_adversarial_string_is_caught(text, code):
    assert code in scanner.scan_text(text)


@pytest.mark.parametrize("text", HARMLESS, ids=[t[:40] for t in HARMLESS])
def test_harmless_look_alike_passes(text):
    assert scanner.scan_text(text) == []


def test_corpus_is_large_enough():
    assert len(CAUGHT) >= 60
    assert len(HARMLESS) >= len(CAUGHT)


def test_normalise_folds_width_and_drops_invisible_characters():
    assert scanner.normalise(f"ｐａ{ZWSP}ｓｓ{RLO}") == "pass"


def test_scan_text_of_empty_or_non_string_is_clean():
    assert scanner.scan_text("") == []
    assert scanner.scan_text(None) == []  # type: ignore[arg-type]
