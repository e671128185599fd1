"""Prompts as text of a target length in the server's own tokens, with no tokenizer needed.

A server counts tokens with its own tokenizer, which the harness may not have. So a
prompt is built from words, and the server's tokens per word are measured:
`Calibration.fit(points)` takes (words sent, prompt tokens the server's `usage` reported)
for a few probe prompts and fits tokens = overhead + per_word x words by least squares
(the overhead is what the server adds to every prompt: a BOS token, a chat template).
`words_for(tokens)` inverts it. A server that sends no usage leaves `Calibration.assumed()`:
OpenAI's rule of thumb, a token is about 3/4 of a word, and `measured` False says so.
With a tokenizer (`Tokenizer`: anything with `count(text)`), `PromptBuilder.exact` trims
the words until the tokenizer's count is the target.

`PromptBuilder(seed)` draws each request's words from a fixed list of common English
words, by (seed, request index): one seed sends the same text run after run, and two
requests share no prefix beyond chance, so a server's prefix cache cannot answer one
from another. Nothing here does I/O.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np

__all__ = ["ASSUMED_TOKENS_PER_WORD", "WORDS", "Calibration", "PromptBuilder", "Tokenizer", "load_tokenizer"]

ASSUMED_TOKENS_PER_WORD = 4 / 3   # OpenAI's rule of thumb: a token is about 3/4 of a word

WORDS = tuple("""the of and to in is was for on that with as by at from his her they this had not are but
be have one all were we when there can an which their said if do will each about how up out them then she
many some so these would other into has more two like him see time could no make than first been its who
now people my made over did down only way find use may water long little very after words called just where
most know get through back much before go good new write our used me man too any day same right look think
also around another came come work three word must because does part even place well such here take why
things help put years different away again off went old number great tell men say small every found still
between name should home big give air line set own under read last never us left end along while might
next sound below saw something thought both few those always looked show large often together asked house
world going want school important until form food keep children feet land side without boy once animals
life enough took sometimes four head above kind began almost live page got earth need far hand high year
mother light parts country father let night following picture being study second eyes soon times story
boys since white days ever paper hard near sentence better best across during today others however sure
means knew try told young miles sun ways thing whole hear example heard several change answer room sea
against top turned learn point city play toward five using himself usually""".split())


class Tokenizer(Protocol):
    """The one thing prompt building needs of a tokenizer: how many tokens a text is."""

    name: str

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class Calibration:
    """The server's prompt tokens as `overhead_tokens + tokens_per_word x words`. `measured`: fitted
    from the server's `usage` over `probes` prompts (else assumed); `source` says which, in words."""

    tokens_per_word: float
    overhead_tokens: float = 0.0
    measured: bool = False
    probes: int = 0
    source: str = "assumed"

    def __post_init__(self) -> None:
        if not self.tokens_per_word > 0:
            raise ValueError(f"tokens per word must be > 0, got {self.tokens_per_word!r}")

    @classmethod
    def assumed(cls, why: str = "the server sent no usage") -> "Calibration":
        return cls(ASSUMED_TOKENS_PER_WORD, 0.0, False, 0,
                   f"not calibrated ({why}): assumed {1 / ASSUMED_TOKENS_PER_WORD:.2f} words per token")

    @classmethod
    def fit(cls, points: Sequence[tuple[int, int]], what: str = "the server's usage") -> "Calibration":
        """Least squares over (words, tokens) points; through the origin when the fitted overhead
        would be negative or the points have one word count. ValueError with no usable point."""
        pts = [(float(w), float(t)) for w, t in points if w > 0 and t > 0]
        if not pts:
            raise ValueError("no probe gave a token count to calibrate from")
        w = np.array([p[0] for p in pts])
        t = np.array([p[1] for p in pts])
        per_word, overhead = float(t.sum() / w.sum()), 0.0
        if len(set(w.tolist())) > 1:
            slope, intercept = np.polyfit(w, t, 1)
            if intercept >= 0 and slope > 0:
                per_word, overhead = float(slope), float(intercept)
        return cls(per_word, overhead, True, len(pts),
                   f"calibrated from {what} over {len(pts)} probes: {per_word:.3f} tokens per word"
                   + (f" + {overhead:.1f} tokens per prompt" if overhead >= 0.05 else ""))

    def words_for(self, tokens: int) -> int:
        """Words whose prompt the server should count as `tokens` (at least one)."""
        return max(1, int(round((tokens - self.overhead_tokens) / self.tokens_per_word)))

    def tokens_of(self, words: int) -> float:
        return self.overhead_tokens + self.tokens_per_word * words


class PromptBuilder:
    """Seeded prompt text: request `index`'s words, the same for every run with one seed."""

    def __init__(self, seed: int = 0, words: Sequence[str] = WORDS) -> None:
        if not words:
            raise ValueError("no words to build prompts from")
        self.seed, self.words = seed, tuple(words)

    def text(self, index: int, n_words: int, probe: bool = False) -> str:
        """`n_words` words (>= 1) for request `index` (>= 0), or for probe `index` (words no request gets)."""
        rng = np.random.default_rng((self.seed, int(probe), index))
        picks = rng.integers(0, len(self.words), max(1, n_words))
        return " ".join(self.words[i] for i in picks)

    def prompt(self, index: int, tokens: int, calibration: Calibration) -> str:
        return self.text(index, calibration.words_for(tokens))

    def exact(self, index: int, tokens: int, tokenizer: Tokenizer, calibration: Calibration) -> str:
        """Words for request `index` that `tokenizer` counts as close to `tokens` as whole words allow
        (never over, unless one word is); exactly `tokens` with a tokenizer that can `cut` a text."""
        n = calibration.words_for(tokens)
        text = self.text(index, n)
        while tokenizer.count(text) < tokens:  # grow by the estimate of what is missing
            n += max(1, int((tokens - tokenizer.count(text)) / calibration.tokens_per_word))
            text = self.text(index, n)
        cut = getattr(tokenizer, "cut", None)
        if cut is not None:  # a tokenizer that can cut between tokens: exactly `tokens`
            exact: str = cut(text, tokens)
            if exact:
                return exact
        words = text.split(" ")
        while len(words) > 1 and tokenizer.count(" ".join(words)) > tokens:
            words.pop()
        return " ".join(words)


class _Tiktoken:
    def __init__(self, encoding: str) -> None:
        import tiktoken

        self.name = f"tiktoken:{encoding}"
        try:
            self._enc = tiktoken.get_encoding(encoding)
        except Exception as exc:  # tiktoken downloads its files on first use: offline, that fails
            raise ValueError(f"tokenizer {self.name}: {exc}") from None

    def count(self, text: str) -> int:
        return len(self._enc.encode(text))


class _HuggingFace:
    def __init__(self, path: str) -> None:
        from transformers import AutoTokenizer

        self.name = f"hf:{path}"
        try:
            self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except Exception as exc:
            raise ValueError(f"tokenizer {self.name}: {exc}") from None

    def count(self, text: str) -> int:
        return len(self._tok(text, add_special_tokens=False)["input_ids"])


_KINDS: dict[str, tuple[str, Callable[[str], Tokenizer]]] = {"tiktoken": ("tiktoken", _Tiktoken),
                                                               "hf": ("transformers", _HuggingFace)}


def load_tokenizer(spec: str) -> Tokenizer:
    """A local `tokenizer.json` or a folder holding one (`tokens.HfTokenizerFile`), `tiktoken:ENCODING`
    or `hf:PATH` (a tokenizer already on this machine). Optional: the package is not a dependency, so
    a missing one is a ValueError saying what to install."""
    from harness.live.openai.tokens import HfTokenizerFile, is_tokenizer_path

    kind, sep, name = spec.partition(":")
    if kind not in _KINDS and is_tokenizer_path(spec):
        return HfTokenizerFile(spec)
    if not sep or not name or kind not in _KINDS:
        raise ValueError(f"tokenizer '{spec}': give tiktoken:ENCODING or hf:PATH, or a tokenizer.json (or its folder)")
    package, make = _KINDS[kind]
    if importlib.util.find_spec(package) is None:
        raise ValueError(f"tokenizer '{spec}' needs the {package} package (pip install {package}); without a "
                         "tokenizer, prompts are sized from the server's usage")
    return make(name)
