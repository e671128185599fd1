"""A local Hugging Face tokenizer (`tokenizer.json`, or a folder holding one), read with `tokenizers`.

`HfTokenizerFile(path)` loads it with the `tokenizers` package (the optional extra
`tokenizer`); nothing is downloaded. It counts a text's tokens as a server that uses
it counts a prompt (no special tokens added: a server adds its own, which the
calibration's overhead holds), `cut(text, tokens)` is the text of `text`'s first
`tokens` tokens (re-checked by counting, as decoding and encoding again need not
give back the same ids), and `split(text)` says how many tokens each piece of a text
holds. A path that is not a tokenizer is a ValueError naming it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["HfTokenizerFile", "is_tokenizer_path"]

MAX_CUT_TRIES = 8


def is_tokenizer_path(spec: str) -> bool:
    """`spec` names a file or folder (rather than `kind:name`)."""
    return Path(spec).exists() or spec.endswith(".json") or "/" in spec


class HfTokenizerFile:
    def __init__(self, path: str) -> None:
        if importlib.util.find_spec("tokenizers") is None:
            raise ValueError(f"--tokenizer {path}: needs the tokenizers package (pip install 'inference-harness"
                             "[tokenizer]', or pip install tokenizers)")
        from tokenizers import Tokenizer

        p = Path(path)
        file = p / "tokenizer.json" if p.is_dir() else p
        if not file.is_file():
            where = f"{p} has no tokenizer.json" if p.is_dir() else f"{p} does not exist"
            raise ValueError(f"--tokenizer {path}: {where}")
        try:
            self._tok = Tokenizer.from_file(str(file))
        except Exception as exc:  # tokenizers raises its own Exception subclasses on any bad file
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"--tokenizer {path}: {file} is not a tokenizer.json ({first[:160]})") from None
        self.name = f"file:{file}"

    def ids(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        return len(self.ids(text))

    def cut(self, text: str, tokens: int) -> str:
        """The longest prefix text of `text` made of its first ids that counts as at most `tokens`
        (exactly `tokens` whenever the ids allow)."""
        ids = self.ids(text)
        k = min(tokens, len(ids))
        best = ""
        for _ in range(MAX_CUT_TRIES):
            piece = self._tok.decode(ids[:k])
            n = self.count(piece)
            if n == tokens:
                return piece
            if n < tokens and len(piece) > len(best):
                best = piece
            k += tokens - n
            if not 0 < k <= len(ids):
                break
        return best
