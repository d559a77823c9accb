"""Offline token counting with the tiktoken encodings bundled in ``reprise.assets``.

Encodings are built lazily, once per process, from the bundled files only; nothing is fetched or cached on disk.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where an encoding is built: a command that counts nothing never loads tiktoken
    import tiktoken

ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")

# Constants copied from tiktoken_ext/openai_public.py (tiktoken 0.14.0).
_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

_CL100K_PAT_STR = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                   r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")

_O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# name -> (sha256 of the bundled file, pat_str, special tokens)
_SPECS: dict[str, tuple[str, str, dict[str, int]]] = {
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT_STR,
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT_STR,
        {
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}
assert tuple(_SPECS) == ENCODINGS

_cache: dict[str, tiktoken.Encoding] = {}
_locks: dict[str, threading.Lock] = {name: threading.Lock() for name in ENCODINGS}
# Serialises the temporary TIKTOKEN_CACHE_DIR override across encodings.
_env_lock = threading.Lock()

_SURROGATES = re.compile("[\ud800-\udfff]")


def _spec(name: str) -> tuple[str, str, dict[str, int]]:
    try:
        return _SPECS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown encoding {name!r}; known encodings: {', '.join(ENCODINGS)}"
        ) from None


def _asset_path(name: str) -> Path:
    import importlib.resources  # here: a command that counts nothing does without it (2 ms)

    filename = f"{name}.tiktoken"
    resource = importlib.resources.files("reprise.assets") / "tokenizers" / filename
    if not isinstance(resource, Path):
        raise FileNotFoundError(f"bundled tokenizer file {filename} is not on the filesystem")
    return resource


def _load_ranks(path: Path, sha256: str) -> dict[bytes, int]:
    blobpath = str(path)
    if "://" in blobpath:  # tiktoken would treat this as a URL
        raise RuntimeError(f"refusing to load tokenizer from non-local path {blobpath!r}")
    # tiktoken.load.read_file_cached would copy even a local file into TIKTOKEN_CACHE_DIR
    # (or /tmp/data-gym-cache) and may reuse/delete entries there; an empty cache dir is
    # its documented "no caching" switch. That branch skips the hash check, so check here.
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise ValueError(f"bundled tokenizer {path.name} has sha256 {actual}, expected {sha256}")
    del data
    import tiktoken.load

    with _env_lock:
        saved = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = ""
        try:
            return tiktoken.load.load_tiktoken_bpe(blobpath, expected_hash=sha256)
        finally:
            if saved is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


def get_encoding(name: str) -> tiktoken.Encoding:
    """Return the encoding ``name``, building it from the bundled file on first use."""
    sha256, pat_str, special_tokens = _spec(name)
    enc = _cache.get(name)
    if enc is not None:
        return enc
    with _locks[name]:
        enc = _cache.get(name)
        if enc is None:
            import tiktoken

            ranks = _load_ranks(_asset_path(name), sha256)
            enc = tiktoken.Encoding(
                name,
                pat_str=pat_str,
                mergeable_ranks=ranks,
                special_tokens=dict(special_tokens),
            )
            _cache[name] = enc
    return enc


def _fix_surrogates(text: str) -> str:
    # Same fixup as tiktoken.Encoding.encode's UnicodeEncodeError fallback: pairs are
    # joined, lone surrogates become U+FFFD.
    if text.isascii() or _SURROGATES.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def count_tokens(text: str, encoding: str) -> int:
    """Count tokens in ``text``; special-token look-alikes count as ordinary text.

    A long text is counted slice by slice (see ``_slices``), each as tiktoken's buffer of
    4-byte ranks rather than a list of ints (about 36 bytes a token): the same count, without
    a token list the size of a 300 MB session's summary. A run of one character class of
    ``RUN_CHARS`` or more (a model repeating a letter, a line of `=`, a page of spaces) is cut
    into pieces of that size before the encoder (see ``_parts``): tiktoken holds about 60 bytes
    a character of one piece (and fails on a million spaces), so a 200 MB run would take 12 GB.
    Text without such a run is counted exactly as tiktoken does; a run's count is off by at most
    ``RUN_ERROR`` tokens for each piece it is cut into (0.05% of its characters)."""
    enc = get_encoding(encoding)
    text = _fix_surrogates(text)
    encode_to_buffer = getattr(getattr(enc, "_core_bpe", None), "encode_to_tiktoken_buffer", None)
    if encode_to_buffer is None:
        return sum(len(enc.encode(part, allowed_special=set(), disallowed_special=()))
                   for piece in _slices(text) for part in _parts(piece))
    # The same tokens as enc.encode(piece, allowed_special=set(), disallowed_special=()).
    counted: dict[str, int] = {}   # a run's pieces are often the same text: counted once
    total = 0
    for piece in _slices(text):
        for part in _parts(piece):
            if len(part) == RUN_CHARS:
                known = counted.get(part)
                if known is None:
                    if len(counted) >= 256:
                        counted.clear()
                    known = counted[part] = memoryview(encode_to_buffer(part, set())).nbytes // 4
                total += known
            else:
                total += memoryview(encode_to_buffer(part, set())).nbytes // 4
    return total


RUN_CHARS = 4096
RUN_ERROR = 2   # the tokens each piece of a cut run may add or take (tests/core/test_tokens.py)
# The classes of characters one pre-tokenizer piece of either encoding is made of (its pieces are a
# run of letters and marks, of other non-space non-digit characters followed by newlines or slashes,
# or of white space; digits come in threes): a piece of 2 x RUN_CHARS + 2 characters or more holds a
# run of one class covering a whole window of RUN_CHARS starting at a multiple of RUN_CHARS.
_RUN_CLASSES = (r"[\p{L}\p{M}]", r"[^\s\p{L}\p{N}]", r"\s", r"[\r\n/]")
_runs: tuple[Any, tuple[Any, ...], tuple[Any, ...]] | None = None


def _run_patterns() -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """(a window of one class, each class's run forwards, each class's run backwards), compiled once."""
    global _runs
    if _runs is None:
        import regex  # type: ignore[import-untyped]  # tiktoken's own dependency: the Unicode classes its patterns use

        window = regex.compile("|".join(f"({cls}{{{RUN_CHARS}}})" for cls in _RUN_CLASSES))
        _runs = (window, tuple(regex.compile(f"{cls}*+") for cls in _RUN_CLASSES),
                 tuple(regex.compile(f"(?r){cls}*+") for cls in _RUN_CLASSES))
    return _runs


def _parts(text: str) -> Iterator[str]:
    """The text as the encoder is given it: whole, unless it holds a run of one class of characters
    of RUN_CHARS or more; such a run comes in pieces of RUN_CHARS (its last one shorter) between
    the text before and after it. Only one window in RUN_CHARS characters is tried (a match that
    fails at the window's first change of class), so ordinary text costs next to nothing."""
    if len(text) < 2 * RUN_CHARS:
        yield text
        return
    window, forwards, backwards = _run_patterns()
    done = at = 0
    while at + RUN_CHARS <= len(text):
        found = window.match(text, at, at + RUN_CHARS)
        if found is None:
            at += RUN_CHARS
            continue
        kind = found.lastindex - 1
        start = backwards[kind].match(text, done, at).start()
        end = forwards[kind].match(text, at + RUN_CHARS).end()
        if start > done:
            yield text[done:start]
        for cut in range(start, end, RUN_CHARS):
            yield text[cut:min(cut + RUN_CHARS, end)]
        done = at = end
    if done == 0:
        yield text
    elif done < len(text):
        yield text[done:]


_SLICE_CHARS = 1 << 20
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _slices(text: str, size: int = _SLICE_CHARS) -> Iterator[str]:
    """The text in slices of about `size` characters, cut only between a newline and an ASCII
    letter. Both encodings' pre-tokenizers always cut there (no piece pattern spans a newline
    followed by a letter, and none looks behind), and BPE never crosses a piece, so the counts
    of the slices add up to the count of the whole text."""
    start = 0
    while len(text) - start > size:
        cut = text.find("\n", start + size)
        while cut != -1 and (cut + 1 == len(text) or text[cut + 1] not in _ASCII_LETTERS):
            cut = text.find("\n", cut + 1)
        if cut == -1:
            break
        yield text[start:cut + 1]
        start = cut + 1
    yield text[start:] if start else text


def warm(name: str) -> float:
    """Load encoding ``name`` in the calling thread; return the seconds taken."""
    start = time.perf_counter()
    get_encoding(name)
    return time.perf_counter() - start
