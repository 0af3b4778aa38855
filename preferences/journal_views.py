"""The preference journal's decoded current views, remembered per scope (beside
``journal_store``, which reads the text they are decoded from).

A write's snapshot returns every stored item of the scope as one joined text; decoding it
is the write path's largest cost. ``decoded_view`` remembers the decode of exactly that
text and hands out copies, and ``after_commit`` remembers the text the next snapshot is
expected to return. A hit needs the text to be byte-for-byte the remembered one, so
another process's commit, a rollback or an evicted entry is only a miss, never a stale
view.
"""

import bisect
import itertools
import threading
from typing import Any, NamedTuple

import orjson

from preferences import selectors
from preferences.domain import journal as rules


class View(NamedTuple):
    """One scope's current items exactly as a snapshot returned them: ``joined`` is the
    snapshot's text of every stored item, ``texts``/``items``/``keys`` the items in that
    order (``items`` is ``decode_items([joined])``; it is never handed out, only copied)."""

    joined: str
    keys: list[str]
    texts: list[str]
    items: list[dict[str, Any]]
    ordered: bool  # keys strictly ascending in localeCompare order: already the view's order
    expiring: bool  # some item carries ``expires_at``: the view must be projected

    @classmethod
    def of(cls, keys: list, texts: list, items: list, *, ordered=None, expiring=None) -> "View":
        if ordered is None:  # in the view's order (LoopX's localeCompare), not code points
            order = [rules.locale_compare_key(k) for k in keys]
            ordered = all(a < b for a, b in itertools.pairwise(order))
        if expiring is None:
            expiring = any(i["expires_at"] is not None for i in items)
        return cls(",".join(texts), keys, texts, items, ordered, expiring)


#: scope id → its last view. A hit needs the snapshot's text — read inside the write's
#: own transaction, under the scope lock — to be byte-for-byte the remembered one, so
#: another process's commit, a rollback or an evicted entry is only a miss (decoded as
#: before), never a stale view.
_VIEWS: dict[int, View] = {}
_VIEWS_LOCK = threading.Lock()
_MAX_VIEWS = 256
#: Where one stored item ends and the next begins in the joined text: every item is a
#: flat JSON object, and inside a JSON string ``"`` is always escaped.
_ITEM_BOUNDARY = ',{"'


def decoded_view(scope_id: int, joined: str | None) -> tuple[View | None, list[dict]]:
    """The scope's view and fresh copies of its items, from the snapshot's joined text —
    copied from the remembered decode of exactly that text, or decoded (and
    remembered)."""
    if joined is None:
        return None, []
    view = _VIEWS.get(scope_id)
    if view is not None and view.joined == joined:
        return view, [item.copy() for item in view.items]
    items = selectors.decode_items([joined])
    texts = joined.split(_ITEM_BOUNDARY)
    if len(texts) != len(items):  # not flat items: decoded every time
        return None, items
    texts[1:] = ['{"' + text for text in texts[1:]]
    view = View.of([i["key"] for i in items], texts, [i.copy() for i in items])
    _remember(scope_id, view)
    return view, items


def _remember(scope_id: int, view: View) -> None:
    with _VIEWS_LOCK:
        if len(_VIEWS) >= _MAX_VIEWS and scope_id not in _VIEWS:
            del _VIEWS[next(iter(_VIEWS))]
        _VIEWS[scope_id] = view


def after_commit(
    scope_id: int, view: View | None, had_items: bool, text: str, key: str, existing: bool
) -> None:
    """Remember the text the next snapshot of this scope is expected to return: the
    snapshot's items (``view``) in their order, the written item's ``text`` under ``key``
    replaced in place (``existing``) or inserted in key order (the order the subjects' key
    index returns them). A wrong guess is only a miss."""
    if view is None:
        if had_items:
            return
        keys, texts, items, ordered, expiring = [], [], [], True, False
    else:
        keys, texts, items = view.keys[:], view.texts[:], view.items[:]
        ordered, expiring = view.ordered, view.expiring
    item = orjson.loads(text)  # as a later snapshot decodes it (the stored field order)
    if existing and key in keys:
        at = keys.index(key)
        texts[at], items[at] = text, item
        expiring = None if expiring else item["expires_at"] is not None  # None: recount
    else:
        at = bisect.bisect(keys, key)
        keys.insert(at, key)
        texts.insert(at, text)
        items.insert(at, item)
        ordered = None  # inserted in the key index's order: recount in the view's order
        expiring = expiring or item["expires_at"] is not None
    view = View.of(keys, texts, items, ordered=ordered, expiring=expiring)
    _remember(scope_id, view)
