"""A server process's heap, set up once the process is loaded.

- **Frozen start-up objects.** A full (generation 2) garbage collection visits every
  tracked object, and a loaded Django process holds a few hundred thousand of them
  (modules, the URLconf, admin, DRF serializers, numpy): on a small machine one such
  collection takes tens of milliseconds, paid by whichever request happens to allocate
  past the collector's threshold (measured on a recall at a million records: a 9 ms
  read of posting blocks stretched to 55 ms). ``gc.freeze()`` moves everything alive
  into a permanent generation that no collection visits; what requests allocate is
  collected as ever. In a forking server it also keeps the frozen objects' pages shared
  with the parent, since a collection writes to every object it visits.
- **Freed memory kept for reuse** (glibc). By default glibc maps each allocation above
  a threshold that only grows with use (128 KB at first) afresh from the kernel and
  returns it on free, so the next one page-faults on every 4 KB it touches. A recall at
  a million records allocates a few such arrays of megabytes (numpy), and their page
  faults were about an eighth of its time. ``keep_freed_memory`` makes allocations up to
  32 MB come from the heap and lets the heap keep up to 128 MB of freed memory: the
  pages are reused warm. The process's peak size is unchanged; after a peak it may stay
  up to 128 MB larger than it would have.

Called by the WSGI and ASGI entry points and by each Celery worker process, after they
have loaded everything a request or task needs.
"""

import ctypes
import gc
import sys

MMAP_THRESHOLD = 32 << 20  # glibc's largest: allocations up to this come from the heap
TRIM_THRESHOLD = 128 << 20  # freed memory the heap keeps before returning any
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def freeze() -> int:
    """Collect what is garbage now, freeze the rest and keep freed memory for reuse;
    returns the frozen count."""
    gc.collect()
    gc.freeze()
    keep_freed_memory()
    return gc.get_freeze_count()


def keep_freed_memory() -> bool:
    """Tune glibc's allocator as described above; ``False`` where it is not glibc's (or
    it refused), which changes nothing but speed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # not glibc (musl's mallopt is a stub)
        return False
    return bool(
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
