"""Dense sentence embeddings from a model shipped inside a PyPI wheel (no download).

The model is WordLlama's ``l2_supercat`` 256-dimension static token embeddings (the
``wordllama`` wheel carries its weights and tokenizer): a text's vector is the mean of
its tokens' vectors, L2-normalised, so the dot product of two vectors is their cosine.
A text embeds in well under a millisecond on one core; the model loads once per process
(about 2 s), on first use.

Public API:

- ``MODEL_ID``, ``DIM`` — what produced a vector and its length;
- ``embed(texts)`` — an ``(n, DIM)`` float32 array of unit vectors (zero for a text with
  no known token);
- ``to_bytes(vector)`` / ``from_bytes(blob)`` — the stored form (little-endian float32);
- ``stack(blobs)`` — one ``(n, DIM)`` matrix from stored vectors (``None`` → zeros);
- ``cosine(matrix, vector)`` — every row's cosine with ``vector``.
"""

import threading

import numpy as np

MODEL_ID = "wordllama-l2-supercat-256"
DIM = 256
_DTYPE = np.dtype("<f4")
_lock = threading.Lock()
_model = None


def _load():
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from pathlib import Path

                import wordllama

                # the wheel ships its weights and tokenizer: point the loader at them and
                # forbid a download
                _model = wordllama.WordLlama.load(
                    config="l2_supercat",
                    dim=DIM,
                    cache_dir=Path(wordllama.__file__).parent,
                    disable_download=True,
                )
    return _model


def embed(texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts`` (``(len(texts), DIM)`` float32)."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    raw = np.asarray(_load().embed(list(texts), norm=False), dtype=np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    return np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)


def to_bytes(vector: np.ndarray) -> bytes:
    vector = np.asarray(vector, dtype=_DTYPE)
    if vector.shape != (DIM,):
        raise ValueError(f"an embedding has {DIM} dimensions")
    return vector.tobytes()


def from_bytes(blob: bytes) -> np.ndarray:
    vector = np.frombuffer(bytes(blob), dtype=_DTYPE)
    if vector.shape != (DIM,):
        raise ValueError(f"an embedding has {DIM} dimensions")
    return vector.astype(np.float32)


def stack(blobs) -> np.ndarray:
    """One float32 matrix of stored vectors; a missing one (``None``) is a zero row."""
    rows = list(blobs)
    matrix = np.zeros((len(rows), DIM), dtype=np.float32)
    for i, blob in enumerate(rows):
        if blob is not None:
            matrix[i] = np.frombuffer(bytes(blob), dtype=_DTYPE)
    return matrix


def cosine(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each row's cosine with ``vector`` (rows and vector are unit vectors or zero).

    Computed in numpy's own loop, on the calling thread: a BLAS matrix-vector product
    may spread over a thread pool, which on a busy machine costs far more than it saves
    (measured: 43 ms against 0.07 ms for 2,000 rows at load 20), and its rounding may
    depend on the thread count."""
    return np.einsum("ij,j->i", matrix, np.asarray(vector, dtype=np.float32))


__all__ = ["DIM", "MODEL_ID", "cosine", "embed", "from_bytes", "stack", "to_bytes"]
