"""A server process's start-up heap, frozen once it is loaded.

A full (generation 2) garbage collection visits every tracked object, and a loaded
Django process holds a few hundred thousand of them (modules, the URLconf, admin, DRF
serializers, numpy): on a small machine one such collection takes tens of milliseconds,
paid by whichever request happens to allocate past the collector's threshold (measured
on a recall at a million records: a 9 ms read of posting blocks stretched to 55 ms).
``gc.freeze()`` moves everything alive into a permanent generation that no collection
visits; what requests allocate is collected as ever. In a forking server it also keeps
the frozen objects' pages shared with the parent, since a collection writes to every
object it visits.

Called by the WSGI and ASGI entry points and by each Celery worker process, after they
have loaded everything a request or task needs.
"""

import gc


def freeze() -> int:
    """Collect what is garbage now, then freeze the rest; returns the frozen count."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
