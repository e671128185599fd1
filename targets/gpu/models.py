"""Torch models for live mode: built in code with seeded random weights, nothing downloaded.

Each model sits behind a :class:`ModelHandle` that owns the whole request <-> tensor
contract, so the executor, the profiler and the API server never special-case a model:

- ``validate(item)``: raise ``ValueError`` naming what is wrong with one JSON request input.
- ``collate(items, pad_to=None) -> Batch``: validate every input and build one batched
  tensor on the model's device (variable-length inputs padded to the longest, or to
  ``pad_to`` tokens, with an attention padding mask).
- ``forward(batch) -> Tensor``: logits, shape ``(batch, NUM_CLASSES)``.
- ``split(logits) -> list[dict]``: one JSON-friendly answer per request:
  ``{"label": int, "score": float, "logits": [float, ...]}``.
- ``synthetic_input(rng, length=None)``: a valid JSON-friendly input for load generators.

Models (``MODEL_NAMES``): ``mlp`` (512-2048-2048-10), ``cnn`` (3x32x32 images, three conv
blocks) and ``transformer`` (4-layer encoder, d_model 256, token ids of 1..128 tokens).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import torch
from torch import nn

__all__ = [
    "MODEL_NAMES",
    "NUM_CLASSES",
    "Batch",
    "ModelHandle",
    "Rng",
    "create_model",
]

#: A load generator's random source: the stdlib's or numpy's.
Rng = Union[random.Random, np.random.Generator]

NUM_CLASSES = 10


@dataclass(frozen=True)
class Batch:
    """One collated batch, already on the model's device.

    ``tensors`` are the module's positional arguments; ``size`` is the number of requests;
    ``length`` is the padded sequence length in tokens (``None`` for fixed-shape models);
    ``lengths`` are the real per-request lengths (``None`` for fixed-shape models).
    """

    tensors: tuple[torch.Tensor, ...]
    size: int
    length: int | None = None
    lengths: tuple[int, ...] | None = None

    @property
    def padding_fraction(self) -> float:
        """Share of the batch's token slots that are padding (0.0 for fixed-shape models)."""
        if self.length is None or self.lengths is None:
            return 0.0
        return 1.0 - sum(self.lengths) / (self.size * self.length)


class ModelHandle(ABC):
    """A model plus its request codec. Not thread-safe: one handle per worker thread."""

    #: True when inputs have a length (sequence models), which costs padding in a batch.
    variable_length: bool = False

    def __init__(self, name: str, module: nn.Module, device: torch.device) -> None:
        self.name = name
        # eval(): no dropout, and lets torch take its fused inference kernels.
        self.module = module.eval().to(device)
        self.device = device

    @property
    def max_length(self) -> int | None:
        """Longest accepted input in tokens; ``None`` for fixed-shape models."""
        return None

    def to(self, device: str | torch.device) -> ModelHandle:
        """Move the weights to ``device`` (in place) and return self."""
        self.device = torch.device(device)
        self.module.to(self.device)
        return self

    def validate(self, item: Any) -> np.ndarray:
        """Raise ``ValueError`` saying what is wrong with one request input; else return it as the
        array the model takes (an API server keeps it as the request's payload, so neither the
        dedupe's digest nor the batch's collate converts the JSON list again)."""
        return self._check(item)

    def input_length(self, item: Any) -> int | None:
        """The input's length in tokens (``None`` for fixed-shape models). Does not validate."""
        return None

    def collate(self, items: Sequence[Any], pad_to: int | None = None) -> Batch:
        """Validate ``items`` and stack them into one batch on the device.

        ``pad_to`` (tokens, variable-length models only) pads to a fixed bucket length
        instead of the longest input. Raises ``ValueError("input <i>: ...")`` on the first
        bad input, so one bad request is attributable.
        """
        if len(items) == 0:
            raise ValueError("empty batch: need at least one input")
        arrays = []
        for i, item in enumerate(items):
            try:
                arrays.append(self._check(item))
            except ValueError as exc:
                raise ValueError(f"input {i}: {exc}") from None
        return self._collate(arrays, pad_to)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Logits of shape ``(batch.size, NUM_CLASSES)`` on the device (asynchronous on CUDA)."""
        with torch.inference_mode():
            return self.module(*batch.tensors)

    def split(self, logits: torch.Tensor) -> list[dict[str, Any]]:
        """Per-request JSON-friendly answers: argmax ``label``, its softmax ``score``, ``logits``."""
        logits = logits.detach().float().cpu()
        scores, labels = torch.softmax(logits, dim=1).max(dim=1)
        # .tolist() once per tensor: per-element float() calls cost ~1 us each.
        return [
            {"label": label, "score": score, "logits": row}
            for label, score, row in zip(labels.tolist(), scores.tolist(), logits.tolist())
        ]

    def run(self, items: Sequence[Any], pad_to: int | None = None) -> list[dict[str, Any]]:
        """collate + forward + split, synchronously on the calling thread."""
        return self.split(self.forward(self.collate(items, pad_to)))

    @abstractmethod
    def synthetic_input(self, rng: Rng, length: int | None = None) -> list[Any]:
        """A valid random input. ``length`` (tokens) applies to variable-length models only;
        fixed-shape models ignore it."""

    @abstractmethod
    def _check(self, item: Any) -> np.ndarray:
        """Validate one input and return it as a numpy array (converted once, reused)."""

    @abstractmethod
    def _collate(self, arrays: list[np.ndarray], pad_to: int | None) -> Batch:
        """Stack already-validated arrays into a batch on the device."""


def _as_array(item: Any, what: str) -> np.ndarray:
    """Convert a JSON list to a numeric array, or raise ValueError naming the problem."""
    if isinstance(item, (str, bytes)) or not isinstance(item, (list, tuple, np.ndarray)):
        raise ValueError(f"expected {what} as a list, got {type(item).__name__}")
    try:
        arr = np.asarray(item)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"expected {what}: nested lists are ragged or malformed ({exc})") from None
    # 'b' (bool), 'U' (strings) and 'O' (None, dicts, mixed types) are not numbers.
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"expected {what}: found non-numeric values (numpy dtype {arr.dtype})")
    return arr


class _DenseHandle(ModelHandle):
    """Fixed-shape float inputs: a flat row-major list, or nested lists of ``input_shape``."""

    def __init__(self, name: str, module: nn.Module, device: torch.device,
                 input_shape: tuple[int, ...]) -> None:
        super().__init__(name, module, device)
        self.input_shape = input_shape
        self.input_size = int(np.prod(input_shape))

    def _describe(self) -> str:
        if len(self.input_shape) == 1:
            return f"{self.input_size} numbers"
        dims = "x".join(map(str, self.input_shape))
        return f"{dims} = {self.input_size} numbers (flat row-major, or nested lists)"

    def _check(self, item: Any) -> np.ndarray:
        arr = _as_array(item, self._describe())
        if arr.shape != self.input_shape and arr.shape != (self.input_size,):
            got = f"{arr.shape[0]} numbers" if arr.ndim == 1 else f"shape {arr.shape}"
            raise ValueError(f"expected {self._describe()}, got {got}")
        finite = np.isfinite(arr)
        if not finite.all():
            bad = int(np.flatnonzero(~finite.ravel())[0])
            raise ValueError(f"non-finite value (NaN or inf) at flat index {bad}")
        return arr.reshape(self.input_shape)

    def _collate(self, arrays: list[np.ndarray], pad_to: int | None) -> Batch:
        if pad_to is not None:
            raise ValueError(f"model {self.name!r} has fixed-shape inputs; pad_to must be None")
        stacked = np.stack(arrays).astype(np.float32, copy=False)
        return Batch(tensors=(torch.from_numpy(stacked).to(self.device),), size=len(arrays))

    def synthetic_input(self, rng: Rng, length: int | None = None) -> list[float]:
        if isinstance(rng, np.random.Generator):
            return rng.standard_normal(self.input_size).tolist()
        return [rng.gauss(0.0, 1.0) for _ in range(self.input_size)]


class _TokenHandle(ModelHandle):
    """Token-id sequences of 1..max_length ids in [0, vocab_size), padded per batch."""

    variable_length = True

    def __init__(self, name: str, module: nn.Module, device: torch.device,
                 vocab_size: int, max_length: int) -> None:
        super().__init__(name, module, device)
        self.vocab_size = vocab_size
        self._max_length = max_length

    @property
    def max_length(self) -> int:
        return self._max_length

    def input_length(self, item: Any) -> int | None:
        return len(item) if isinstance(item, (list, tuple, np.ndarray)) else None

    def _check(self, item: Any) -> np.ndarray:
        what = f"a list of 1..{self._max_length} token ids"
        if isinstance(item, (list, tuple, np.ndarray)):
            # Length first: an empty list has no dtype worth reporting.
            if len(item) == 0:
                raise ValueError(f"token sequence is empty; expected {what}")
            if len(item) > self._max_length:
                raise ValueError(
                    f"token sequence has {len(item)} tokens; max_length is {self._max_length}")
        arr = _as_array(item, what)
        if arr.ndim != 1:
            raise ValueError(f"expected {what} (flat), got shape {arr.shape}")
        if arr.dtype.kind == "f":
            raise ValueError(f"token ids must be integers, got floats (numpy dtype {arr.dtype})")
        bad = np.flatnonzero((arr < 0) | (arr >= self.vocab_size))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"token id {int(arr[i])} at index {i} out of range [0, {self.vocab_size})")
        return arr

    def _collate(self, arrays: list[np.ndarray], pad_to: int | None) -> Batch:
        lengths = tuple(len(a) for a in arrays)
        longest = max(lengths)
        length = longest if pad_to is None else pad_to
        if not longest <= length <= self._max_length:
            raise ValueError(
                f"pad_to={pad_to} must be between the longest input ({longest}) "
                f"and max_length ({self._max_length})")
        tokens = np.zeros((len(arrays), length), dtype=np.int64)
        pad_mask = np.ones((len(arrays), length), dtype=np.bool_)  # True = padding
        for row, arr in enumerate(arrays):
            tokens[row, : len(arr)] = arr
            pad_mask[row, : len(arr)] = False
        return Batch(
            tensors=(torch.from_numpy(tokens).to(self.device),
                     torch.from_numpy(pad_mask).to(self.device)),
            size=len(arrays), length=length, lengths=lengths)

    def synthetic_input(self, rng: Rng, length: int | None = None) -> list[int]:
        """Uniform token ids; ``length`` None draws a length uniformly in 1..max_length."""
        if length is not None and not 1 <= length <= self._max_length:
            raise ValueError(f"length must be in 1..{self._max_length}, got {length}")
        if isinstance(rng, np.random.Generator):
            n = length if length is not None else int(rng.integers(1, self._max_length + 1))
            return rng.integers(0, self.vocab_size, size=n).tolist()
        n = length if length is not None else rng.randint(1, self._max_length)
        return [rng.randrange(self.vocab_size) for _ in range(n)]


class _Mlp(nn.Sequential):
    def __init__(self) -> None:
        super().__init__(
            nn.Linear(512, 2048), nn.ReLU(),
            nn.Linear(2048, 2048), nn.ReLU(),
            nn.Linear(2048, NUM_CLASSES))


class _Cnn(nn.Sequential):
    """Three conv blocks over 3x32x32 (CIFAR-sized) images, global pooling, linear head."""

    def __init__(self) -> None:
        super().__init__(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 32x16x16
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 64x8x8
            nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(128, NUM_CLASSES))


class _Encoder(nn.Module):
    """Token + learned position embeddings, a post-norm encoder, masked mean pool, head."""

    def __init__(self, vocab_size: int, d_model: int, nhead: int, layers: int,
                 dim_feedforward: int, max_length: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_length, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0,
                                           batch_first=True)
        # enable_nested_tensor=False: compute over the padded (batch, length) tensor, as a
        # plain serving stack does, so a batch costs as much as its longest input; nested
        # tensors would skip padding and hide the fixed-batch-time flaw.
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, NUM_CLASSES)

    def forward(self, tokens: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.position(positions)
        x = self.encoder(x, src_key_padding_mask=pad_mask)
        # masked_fill, not multiply-by-mask: padded rows may hold garbage (even NaN) and
        # NaN * 0 is NaN. Pooling over real tokens only is what makes padding invisible.
        x = x.masked_fill(pad_mask.unsqueeze(-1), 0.0)
        real = (~pad_mask).sum(dim=1, keepdim=True).clamp(min=1).to(x.dtype)
        return self.head(self.norm(x.sum(dim=1) / real))


def _seeded(seed: int, build: Callable[[], nn.Module]) -> nn.Module:
    """Build a module with weights drawn from ``seed``, leaving the global RNG untouched."""
    # fork_rng(devices=[]): restore only the CPU generator afterwards; weights are always
    # drawn on the CPU so a seed gives the same weights on every device.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def _mlp(seed: int, device: torch.device) -> ModelHandle:
    return _DenseHandle("mlp", _seeded(seed, _Mlp), device, (512,))


def _cnn(seed: int, device: torch.device) -> ModelHandle:
    return _DenseHandle("cnn", _seeded(seed, _Cnn), device, (3, 32, 32))


def _transformer(seed: int, device: torch.device) -> ModelHandle:
    vocab_size, max_length = 1000, 128
    module = _seeded(seed, lambda: _Encoder(vocab_size, d_model=256, nhead=4, layers=4,
                                            dim_feedforward=1024, max_length=max_length))
    return _TokenHandle("transformer", module, device, vocab_size, max_length)


_REGISTRY: dict[str, Callable[[int, torch.device], ModelHandle]] = {
    "mlp": _mlp,
    "cnn": _cnn,
    "transformer": _transformer,
}

MODEL_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def create_model(name: str, seed: int = 0, device: str | torch.device = "cpu") -> ModelHandle:
    """Build model ``name`` with weights drawn from ``seed`` (same seed, same weights).

    Raises ``ValueError`` listing the valid names when ``name`` is unknown.
    """
    try:
        build = _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown model {name!r}; valid names: {', '.join(MODEL_NAMES)}") from None
    return build(seed, torch.device(device))
