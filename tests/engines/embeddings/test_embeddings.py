"""The embeddings engine: unit vectors from the wheel's model, exact blob round trips."""

import numpy as np
import pytest

from loopx_site.engines import embeddings


def test_embed_returns_unit_vectors_of_the_model_dimension():
    vectors = embeddings.embed(["Never commit secrets or credentials.", "Run the tests."])
    assert vectors.shape == (2, embeddings.DIM)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_related_texts_are_closer_than_unrelated_ones():
    secrets, tests, query = embeddings.embed(
        [
            "Never commit API keys, passwords or tokens to the repository.",
            "Run the whole test suite before opening a pull request.",
            "I pasted my password into the config file",
        ]
    )
    assert float(secrets @ query) > float(tests @ query)


def test_empty_input_is_an_empty_matrix():
    assert embeddings.embed([]).shape == (0, embeddings.DIM)


def test_blob_round_trip_is_exact():
    vector = embeddings.embed(["Keep pull requests small."])[0]
    blob = embeddings.to_bytes(vector)
    assert len(blob) == 4 * embeddings.DIM
    assert np.array_equal(embeddings.from_bytes(blob), vector)


def test_stack_puts_a_zero_row_for_a_missing_vector():
    vector = embeddings.embed(["Keep pull requests small."])[0]
    matrix = embeddings.stack([embeddings.to_bytes(vector), None])
    assert np.array_equal(matrix[0], vector)
    assert not matrix[1].any()
    assert embeddings.cosine(matrix, vector)[1] == 0.0


def test_a_blob_of_another_length_is_refused():
    with pytest.raises(ValueError, match="dimensions"):
        embeddings.from_bytes(b"\0" * 8)
    with pytest.raises(ValueError, match="dimensions"):
        embeddings.to_bytes(np.zeros(3))
