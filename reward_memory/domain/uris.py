"""Provider URI rules in one place (registration, read and write).

* The scheme and the root segment compare case-insensitively (``VIKING://Agent/`` is
  ``viking://agent/``).
* Reward Memory never uses ``viking://agent/…`` (not a per-peer durable memory root).
* A ``viking://user/<user>/…`` scope must sit under ``peers/<peer>/``: a user-private
  path without an actor-bound peer is refused.
* The actor peer is never derived from a URI: it comes from the operator-configured
  binding of the (Goal, Agent). Before any provider call the URI's peer must equal it
  (``peer_matches``).
"""

import re

VIKING = "viking"
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")
_PEER = re.compile(r"(?i)(?:^|/)peers/(?P<peer>[^/]+)(?:/|$)")


def scheme_of(ref: str) -> str | None:
    match = _SCHEME.fullmatch(ref or "")
    return match.group("scheme").lower() if match else None


def _segments(ref: str) -> list[str]:
    match = _SCHEME.fullmatch(ref or "")
    rest = match.group("rest") if match else (ref or "")
    return [s for s in rest.split("/") if s]


_DOT_SEGMENT = re.compile(r"(?i)^(?:\.|%2e){1,2}$")


def _has_dot_segment(ref: str) -> bool:
    """A ``.`` or ``..`` path segment, also percent-encoded or after a backslash."""
    match = _SCHEME.fullmatch(ref or "")
    rest = match.group("rest") if match else (ref or "")
    rest = rest.split(":", 1)[1] if match is None and ":" in rest else rest
    return any(_DOT_SEGMENT.fullmatch(s) for s in re.split(r"[/\\]", rest))


def scope_ref_problem(scope_ref: str) -> str | None:
    """Why a provider scope ref may not be registered, or ``None``."""
    if _has_dot_segment(scope_ref):
        return "a scope ref must not contain . or .. segments"
    if scheme_of(scope_ref) != VIKING:
        if "viking:" in (scope_ref or "").lower():
            return "a viking scope ref must be viking://…"
        return None
    segments = _segments(scope_ref)
    root = segments[0].lower() if segments else ""
    if root == "agent":
        return "Reward Memory never uses viking://agent/; use a user peer scope"
    if root == "user":
        lowered = [s.lower() for s in segments]
        if len(segments) < 4 or lowered[2] != "peers" or not segments[3]:
            return "a viking://user/<user>/ scope must be under peers/<peer>/"
    elif root not in ("resources",):
        return "a viking scope ref must be viking://user/<user>/peers/<peer>/…"
    return None


def peer_of(ref: str) -> str | None:
    """The actor peer a URI names (``…/peers/<peer>/…``), or ``None``."""
    match = _PEER.search(ref or "")
    return match.group("peer") if match else None


def peer_matches(ref: str, binding_peer: str | None) -> bool:
    """The URI may be used with this configured peer: a peer-scoped URI only when the
    binding's peer is exactly equal; a URI without a peer needs none."""
    uri_peer = peer_of(ref)
    if uri_peer is None:
        return True
    return binding_peer is not None and uri_peer == binding_peer
