"""The shared secret / location scanner for public-safe text.

``scan_text(text)`` returns stable reason codes (empty list = clean). Used by the Reward
Memory guards and the suite-wide privacy scan. Every check runs on the *normalised*
text: Unicode NFKC (full-width and compatibility forms fold to ASCII) with zero-width,
bidi-control and other format characters removed, so ``ｈｔｔｐｓ：／／`` or a token with a
zero-width space inside is seen as what it renders as.

Credentials are found by ``detect-secrets`` plugins (AWS, GitHub, Slack, JWT, private
keys, basic auth, keyword assignments, high-entropy strings) plus what prose needs and
those plugins lack: credential phrases (``the password is …``, ``pass=…``,
``api key = …``), connection strings without a scheme (``user:pass@host:5432``),
provider key prefixes (``sk-…``, ``AIza…``, …), ``Authorization: Basic|Bearer …`` and
unquoted high-entropy tokens. Locations: URLs with or without a scheme, bare host names
with a known top-level domain, IPv4/IPv6 addresses, e-mail addresses, and local paths
(POSIX, ``~``, ``$VAR`` / ``${VAR}`` / ``%VAR%``, Windows drive and UNC paths).

Reason codes (stable; callers map them to their own vocabularies):

| code | meaning |
|---|---|
| ``credential`` | a credential, secret, key or token |
| ``url_with_credentials`` | a URL or connection string carrying credentials |
| ``url`` | a URL (any scheme, or none: ``github.com/org/repo``) |
| ``host`` | a host name with a known top-level domain, or a host:port |
| ``ip_address`` | an IPv4 or IPv6 address |
| ``email`` | an e-mail address |
| ``local_path`` | an absolute, home-relative, environment-relative or Windows/UNC path |
"""

import functools
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from http import HTTPStatus

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.slack import SlackDetector

CREDENTIAL = "credential"
URL_WITH_CREDENTIALS = "url_with_credentials"
URL = "url"
HOST = "host"
IP_ADDRESS = "ip_address"
EMAIL = "email"
LOCAL_PATH = "local_path"
REASON_CODES = (CREDENTIAL, URL_WITH_CREDENTIALS, URL, HOST, IP_ADDRESS, EMAIL, LOCAL_PATH)

_PLUGINS = (
    AWSKeyDetector(),
    GitHubTokenDetector(),
    SlackDetector(),
    JwtTokenDetector(),
    PrivateKeyDetector(),
    BasicAuthDetector(),
    KeywordDetector(),
    Base64HighEntropyString(limit=4.5),
)

# -- normalisation ---------------------------------------------------------------------------
_INVISIBLE = {
    0x00AD,  # soft hyphen
    0x034F,  # combining grapheme joiner
    0x061C,  # arabic letter mark
    0x115F,
    0x1160,
    0x17B4,
    0x17B5,
    0x180E,
    0x3164,
    0xFEFF,
    0xFFA0,
}


def normalise(text: str) -> str:
    """NFKC, then drop zero-width / bidi / format characters (category Cf and friends)."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(
        ch
        for ch in folded
        if unicodedata.category(ch) != "Cf"
        and ord(ch) not in _INVISIBLE
        and not 0xFE00 <= ord(ch) <= 0xFE0F  # variation selectors
    )


# -- prose additions ---------------------------------------------------------------------------
_CREDENTIAL_NAMES = (
    r"(?:pass(?:word|wd|phrase)?|pwd|secret(?:[ _-]?key)?|api[ _-]?key|apikey|"
    r"access[ _-]?(?:key|token)|auth[ _-]?token|bearer[ _-]?token|client[ _-]?secret|"
    r"private[ _-]?key|token|credentials?)"
)
_PLACEHOLDER = re.compile(
    r"^(?:<[^>]*>|\*+|x+|\.\.\.|…|none|null|nil|empty|redacted|unset|changeme_placeholder|"
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)$",
    re.IGNORECASE,
)
# `password: x`, `pass=x`, `api key = x`, `token => x`
_ASSIGNMENT = re.compile(
    rf"(?i)\b{_CREDENTIAL_NAMES}\s*(?::|=>|==|=|:=)\s*[\"'`]?(?P<value>[^\s\"'`,;]{{3,}})"
)
# `the password is hunter2`, `my api key was abc123`
_PHRASE = re.compile(
    rf"(?i)\b{_CREDENTIAL_NAMES}\s+(?:is|was|are|reads|equals|:)\s+[\"'`]?(?P<value>[^\s\"'`,;]{{4,}})"
)
_PROVIDER_KEY = re.compile(
    r"\b(?:"
    r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{12,}"
    r"|AIza[0-9A-Za-z_-]{30,}"
    r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{16,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|lxh_[A-Za-z0-9_-]{20,}"  # our own host tokens
    r"|hf_[A-Za-z0-9]{20,}|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}"
    r"|ya29\.[A-Za-z0-9_-]{20,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")"
)
_AUTH_HEADER = re.compile(
    r"(?i)\b(?:authorization|proxy-authorization)\s*[:=]\s*(?:basic|bearer|token|digest)\s+"
    r"[A-Za-z0-9]\S{5,}"  # a value, not a placeholder such as `…` or `<token>`
    r"|\b(?:basic|bearer)\s+[A-Za-z0-9._~+/=-]{16,}"
)
_PRIVATE_KEY = re.compile(r"(?i)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
# user:password@host[:port] without a scheme (connection strings)
_CONNECTION = re.compile(
    r"(?<![\w/])[A-Za-z0-9._%+-]{1,64}:[^\s@/:]{1,128}@[A-Za-z0-9.-]+(?::\d{1,5})?\b"
)
_HIGH_ENTROPY_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{24,}")

# -- locations ---------------------------------------------------------------------------------
_SCHEME_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,15}://\S*|\bfile:\S+|\bmailto:\S+")
_URL_CREDENTIALS = re.compile(
    r"(?i)://[^/\s@]+@|[?&#](?:access_token|token|key|api_key|apikey|password|secret|sig|"
    r"signature|auth)="
)
_TLDS = (
    "com|net|org|io|dev|ai|app|co|me|info|biz|edu|gov|mil|int|cloud|tech|site|online|xyz|"
    "local|localhost|internal|lan|corp|home|test|example|invalid|"
    "uk|de|fr|jp|cn|ru|us|eu|in|nl|se|ch|au|ca|br|es|it|pl|kr|tw|be|at|dk|fi|no|cz|"
    "gg|sh|so|to|ly|gl|fm|tv|cc|ws|run|page|pub|blog|digital|services|systems"
)
_HOST = re.compile(
    rf"(?i)(?<![\w.@-])(?:www\.)?(?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.)+(?:{_TLDS})"
    r"(?::\d{1,5})?(?![\w-])(?P<path>/\S*)?"
)
_HOST_PORT = re.compile(
    r"(?i)(?<![\w.:/-])(?:localhost(?::\d{1,5})?\b|[a-z][a-z0-9-]{0,62}:\d{2,5}/)"
)
_IPV4 = re.compile(
    r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.]\d)"
)
_IPV6 = re.compile(
    r"(?i)(?<![\w:])(?:(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}"
    r"|(?:[0-9a-f]{1,4}:){1,6}(?::[0-9a-f]{1,4}){1,6}|::1)(?![\w:])"
    r"|\[[0-9a-f:]{2,}\]"
)
_EMAIL = re.compile(r"(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b")
_LOCAL_PATH = re.compile(
    r"(?<![\w:/.~-])(?:~|\.{1,2})?/(?:[\w.@-]+/)+[\w.@-]*"  # /a/b, ~/a/, ../a/b
    r"|(?<![\w:/.-])~[\w.-]*[/\\]"  # ~/, ~bob/
    r"|(?<![A-Za-z0-9])[A-Za-z]:[\\/]"  # C:\ C:/
    r"|\\\\[\w.$-]+\\[\w.$-]+"  # \\server\share
    r"|(?<![\w:/.-])/(?:home|Users|root|tmp|etc|var|opt|usr|mnt|private|srv|proc|dev|Volumes)\b"
    r"|\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)[/\\]"  # $HOME/ ${HOME}/
    r"|%[A-Za-z_][A-Za-z0-9_()]*%[/\\]?"  # %APPDATA%
)
# Well-known filesystem roots: a path under one of them is a local path wherever it is.
_SYSTEM_ROOT = re.compile(
    r"\A/(?:home|Users|root|tmp|etc|var|opt|usr|mnt|private|srv|proc|dev|Volumes)(?![\w.-])"
)
# The request target of a request log line is a URL path, not a file path:
# ``GET /api/v1/goals/`` and Django's ``Unauthorized: /api/v1/goals/demo/`` or
# ``Method Not Allowed (POST): /admin/dashboard/`` (the reason phrase, then the path).
# Only the path itself is excused (the query string is scanned), and never a path under
# a well-known filesystem root (``Not Found: /etc/passwd`` is still flagged).
_REASON_PHRASES = "|".join(re.escape(s.phrase) for s in HTTPStatus)
_REQUEST_TARGET = re.compile(
    r"(?:\b(?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)\s+"
    rf"|^\s*(?:{_REASON_PHRASES})(?: \([^)\n]*\))?:\s+)"
    r"(?P<target>/[^\s?#]*)",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Finding:
    code: str
    detector: str


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _high_entropy(token: str) -> bool:
    """An unquoted random-looking token: long, mixed classes, high Shannon entropy."""
    stripped = token.strip("=-_")
    if len(stripped) < 24:
        return False
    classes = sum(
        (
            any(c.islower() for c in stripped),
            any(c.isupper() for c in stripped),
            any(c.isdigit() for c in stripped),
        )
    )
    return classes == 3 and _entropy(stripped) >= 4.2


def _local_path(value: str) -> bool:
    """A local path that is not just the request target of a request log line."""
    targets = [
        m.span("target")
        for m in _REQUEST_TARGET.finditer(value)
        if not _SYSTEM_ROOT.search(m.group("target"))
    ]
    for match in _LOCAL_PATH.finditer(value):
        start, end = match.span()
        if not any(lo <= start and end <= hi for lo, hi in targets):
            return True
    return False


def _plugin_findings(text: str) -> list[Finding]:
    found = []
    for line in text.splitlines() or [text]:
        for plugin in _PLUGINS:
            if plugin.analyze_line(filename="scan.txt", line=line, line_number=1):
                found.append(Finding(CREDENTIAL, f"detect_secrets.{type(plugin).__name__}"))
    return found


def scan(text: str) -> list[Finding]:
    """Every finding in ``text`` (after normalisation), with the detector that found it."""
    if not isinstance(text, str) or not text:
        return []
    value = normalise(text)
    findings = _plugin_findings(value)
    for name, regex in (
        ("provider_key_prefix", _PROVIDER_KEY),
        ("authorization_header", _AUTH_HEADER),
        ("private_key_block", _PRIVATE_KEY),
    ):
        if regex.search(value):
            findings.append(Finding(CREDENTIAL, name))
    for name, regex in (("assignment", _ASSIGNMENT), ("phrase", _PHRASE)):
        for match in regex.finditer(value):
            secret = match.group("value").rstrip(".!?)]")
            if _PLACEHOLDER.fullmatch(secret):
                continue
            if name == "phrase" and not (
                any(c.isdigit() for c in secret) or not secret.isalpha() or _high_entropy(secret)
            ):
                continue  # "the password is required" is prose, "is hunter2" is a secret
            findings.append(Finding(CREDENTIAL, f"credential_{name}"))
    if _CONNECTION.search(value):
        findings.append(Finding(URL_WITH_CREDENTIALS, "connection_string"))
    if any(_high_entropy(m.group(0)) for m in _HIGH_ENTROPY_TOKEN.finditer(value)):
        findings.append(Finding(CREDENTIAL, "high_entropy_token"))
    for match in _SCHEME_URL.finditer(value):
        creds = _URL_CREDENTIALS.search(match.group(0))
        findings.append(Finding(URL_WITH_CREDENTIALS if creds else URL, "url"))
    for match in _HOST.finditer(value):
        findings.append(Finding(URL if match.group("path") else HOST, "host"))
    if _HOST_PORT.search(value):
        findings.append(Finding(HOST, "host_port"))
    if _IPV4.search(value) or _IPV6.search(value):
        findings.append(Finding(IP_ADDRESS, "ip_address"))
    if _EMAIL.search(value):
        findings.append(Finding(EMAIL, "email"))
    if _local_path(value):
        findings.append(Finding(LOCAL_PATH, "local_path"))
    return findings


def scan_text(text: str) -> list[str]:
    """Sorted, distinct reason codes for ``text``; an empty list means clean."""
    if not isinstance(text, str) or len(text) > _MEMO_MAX_CHARS:
        return sorted({f.code for f in scan(text)})
    return list(_scan_codes(text))


#: ``scan`` is a pure function of its text (fixed detectors, no configuration), and one
#: request names the same identifiers, corpus and surface in many fields (a recall scans
#: ~17 strings, most of them repeated in every request): the codes of short strings are
#: memoised, bounded, in this process only.
_MEMO_MAX_CHARS = 512


@functools.lru_cache(maxsize=4096)
def _scan_codes(text: str) -> tuple[str, ...]:
    return tuple(sorted({f.code for f in scan(text)}))


def is_clean(text: str) -> bool:
    return not scan_text(text)
