"""Tests for reprise.core.tokens: bundled encodings, offline loading, robust counting."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from reprise.core import tokens

GOLDEN_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "tokens_golden.json"
GOLDEN = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
CASES = GOLDEN["cases"]

EXPECTED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
EXPECTED_RANKS = {"o200k_base": 199998, "cl100k_base": 100256}


@pytest.fixture
def fresh_cache(monkeypatch):
    """Make get_encoding rebuild from disk, restoring the process cache afterwards."""
    monkeypatch.setattr(tokens, "_cache", {})


def _run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)


# --------------------------------------------------------------------- golden table


def test_golden_table_shape():
    assert "_comment" in GOLDEN
    assert len(CASES) >= 24
    names = [c["name"] for c in CASES]
    assert len(set(names)) == len(names)
    assert any(c["text"] == "" for c in CASES)
    for case in CASES:
        for enc in tokens.ENCODINGS:
            assert isinstance(case[enc], int) and case[enc] >= 0


@pytest.mark.parametrize("encoding", tokens.ENCODINGS)
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_counts(case, encoding):
    assert tokens.count_tokens(case["text"], encoding) == case[encoding]


def test_encodings_differ_somewhere():
    # Guards against both names accidentally loading the same file.
    assert any(c["o200k_base"] != c["cl100k_base"] for c in CASES)


# --------------------------------------------------------------------- loading


@pytest.mark.parametrize("encoding", tokens.ENCODINGS)
def test_bundled_asset_hash_and_size(encoding):
    import hashlib

    path = tokens._asset_path(encoding)
    assert path.name == f"{encoding}.tiktoken"
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == EXPECTED_SHA256[encoding]
    assert len(data.splitlines()) == EXPECTED_RANKS[encoding]


@pytest.mark.parametrize("encoding", tokens.ENCODINGS)
def test_encoding_properties(encoding):
    enc = tokens.get_encoding(encoding)
    assert enc.name == encoding
    assert enc.n_vocab == {"o200k_base": 200019, "cl100k_base": 100277}[encoding]
    assert enc.eot_token == {"o200k_base": 199999, "cl100k_base": 100257}[encoding]
    assert enc.decode(enc.encode("hello world")) == "hello world"


def test_get_encoding_is_cached():
    for name in tokens.ENCODINGS:
        assert tokens.get_encoding(name) is tokens.get_encoding(name)
    assert tokens.get_encoding("o200k_base") is not tokens.get_encoding("cl100k_base")


@pytest.mark.parametrize("cache_setting", ["empty-dir", "empty-string", "unset", "unwritable"])
def test_loads_without_touching_tiktoken_cache(cache_setting, tmp_path, monkeypatch, fresh_cache):
    # tiktoken would copy even a local file into its cache dir (and raise if a
    # user-specified one is unwritable); our loader must neither read nor write it.
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    cache_dir = tmp_path / "cache"
    if cache_setting == "empty-dir":
        cache_dir.mkdir()
        value = str(cache_dir)
    elif cache_setting == "empty-string":
        value = ""
    elif cache_setting == "unwritable":
        (tmp_path / "a-file").write_text("x")
        value = str(tmp_path / "a-file" / "cache")
    else:
        value = None
    if value is None:
        monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", value)

    for name in tokens.ENCODINGS:
        enc = tokens.get_encoding(name)
        assert len(enc._mergeable_ranks) == EXPECTED_RANKS[name]
    assert tokens.count_tokens("The quick brown fox jumps over the lazy dog.", "o200k_base") == 10

    # Environment restored exactly.
    assert os.environ.get("TIKTOKEN_CACHE_DIR") == value
    # Nothing written anywhere tiktoken might cache.
    if cache_setting == "empty-dir":
        assert list(cache_dir.iterdir()) == []
    assert list((tmp_path / "tmp").iterdir()) == []


def test_concurrent_first_use_loads_once(monkeypatch, fresh_cache):
    calls = []
    real = tokens._load_ranks

    def slow_load(path, sha256):
        calls.append(path.name)
        time.sleep(0.2)  # widen the race window
        return real(path, sha256)

    monkeypatch.setattr(tokens, "_load_ranks", slow_load)
    n = 8
    barrier = threading.Barrier(n)
    results = []

    def worker():
        barrier.wait()
        results.append(tokens.get_encoding("cl100k_base"))

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == n
    assert all(r is results[0] for r in results)
    assert calls == ["cl100k_base.tiktoken"]


def test_tampered_asset_is_rejected_and_not_cached(tmp_path, monkeypatch, fresh_cache):
    good = tokens._asset_path("cl100k_base")
    bad = tmp_path / "cl100k_base.tiktoken"
    data = bytearray(good.read_bytes())
    data[10] ^= 1
    bad.write_bytes(bytes(data))
    monkeypatch.setattr(tokens, "_asset_path", lambda name: bad)
    with pytest.raises(ValueError, match="sha256"):
        tokens.get_encoding("cl100k_base")
    assert "cl100k_base" not in tokens._cache
    monkeypatch.setattr(tokens, "_asset_path", lambda name: good)
    assert tokens.count_tokens("hello world", "cl100k_base") == 2


def test_warm_returns_seconds_and_caches(fresh_cache):
    first = tokens.warm("cl100k_base")
    assert isinstance(first, float) and first > 0
    assert "cl100k_base" in tokens._cache
    again = tokens.warm("cl100k_base")
    assert 0 <= again < 0.05


def test_warm_in_worker_thread(fresh_cache):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("s", tokens.warm("o200k_base")))
    t.start()
    t.join(timeout=60)
    assert out["s"] > 0
    assert tokens._cache["o200k_base"] is tokens.get_encoding("o200k_base")


@pytest.mark.parametrize("bad", ["gpt2", "p50k_base", "O200K_BASE", "", "o200k_harmony"])
def test_unknown_encoding_raises_value_error(bad):
    for call in (tokens.get_encoding, tokens.warm, lambda n: tokens.count_tokens("x", n)):
        with pytest.raises(ValueError) as info:
            call(bad)
        message = str(info.value)
        assert "o200k_base" in message and "cl100k_base" in message


# --------------------------------------------------------------------- subprocesses


IMPORT_PROBE = textwrap.dedent(
    """
    import json, sys
    opened = []
    def hook(event, args):
        if event == "open" and str(args[0]).endswith(".tiktoken"):
            opened.append(str(args[0]))
    sys.addaudithook(hook)
    import reprise.core.tokens as tokens
    after_import = {"opened": list(opened), "cache": sorted(tokens._cache)}
    tokens.get_encoding("cl100k_base")
    after_get = {"opened": [p.rsplit("/", 1)[-1] for p in opened], "cache": sorted(tokens._cache)}
    print(json.dumps({"after_import": after_import, "after_get": after_get}))
    """
)


def test_import_loads_nothing(tmp_path):
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(tmp_path))
    proc = _run([sys.executable, "-c", IMPORT_PROBE], env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["after_import"] == {"opened": [], "cache": []}
    assert result["after_get"]["cache"] == ["cl100k_base"]
    assert "cl100k_base.tiktoken" in result["after_get"]["opened"]
    assert "o200k_base.tiktoken" not in result["after_get"]["opened"]
    assert list(tmp_path.iterdir()) == []


OFFLINE_PROBE = textwrap.dedent(
    """
    import json, socket, sys
    net_events = []
    def hook(event, args):
        if event.startswith("socket.") and event != "socket.__new__":
            net_events.append(event)
    sys.addaudithook(hook)
    interfaces = [name for _, name in socket.if_nameindex()]
    from reprise.core import tokens
    cases = json.load(open(sys.argv[1], encoding="utf-8"))["cases"]
    counts = {
        enc: [tokens.count_tokens(c["text"], enc) for c in cases] for enc in tokens.ENCODINGS
    }
    print(json.dumps({"interfaces": interfaces, "net_events": net_events, "counts": counts}))
    """
)


def _unshare_net_available() -> str | None:
    """Return None if `unshare -n` works here, else the reason it does not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    try:
        probe = _run(["unshare", "-n", "true"])
    except OSError as exc:
        return f"unshare -n cannot run: {exc}"
    if probe.returncode != 0:
        return f"unshare -n not permitted here: {probe.stderr.strip() or probe.returncode}"
    return None


def test_counts_inside_network_namespace_without_network(tmp_path):
    reason = _unshare_net_available()
    if reason is not None:
        pytest.skip(reason)
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(cache_dir))
    proc = _run(
        ["unshare", "-n", sys.executable, "-c", OFFLINE_PROBE, str(GOLDEN_PATH)],
        env=env,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["interfaces"] == ["lo"]  # really no network in there
    assert result["net_events"] == []
    for enc in tokens.ENCODINGS:
        assert result["counts"][enc] == [c[enc] for c in CASES]
    assert list(cache_dir.iterdir()) == []


# --------------------------------------------------------------------- hostile input


@pytest.mark.parametrize("encoding", tokens.ENCODINGS)
def test_lone_surrogates(encoding):
    # tiktoken's own fallback turns lone surrogates into U+FFFD and joins pairs.
    assert tokens.count_tokens("\ud800", encoding) == tokens.count_tokens("\ufffd", encoding) == 1
    assert tokens.count_tokens("x\udfffy\ud800", encoding) == tokens.count_tokens(
        "x\ufffdy\ufffd", encoding
    )
    assert tokens.count_tokens("a\ud83d\ude00b", encoding) == tokens.count_tokens("a😀b", encoding)
    assert tokens.count_tokens("a\ud83d\ude00b", encoding) == {"o200k_base": 3, "cl100k_base": 4}[
        encoding
    ]
    # Same result as tiktoken's own encode fallback.
    enc = tokens.get_encoding(encoding)
    text = "héllo \ud800 wörld \udc00\ud83d"
    assert tokens.count_tokens(text, encoding) == len(enc.encode(text, disallowed_special=()))


@pytest.mark.parametrize(
    ("text", "o200k", "cl100k"),
    [
        ("\x00", 1, 1),
        ("\x00" * 1000, 500, 1000),
        ("\x1b[31mred\x1b[0m", 9, 7),
        ("".join(chr(i) for i in range(32)) + "\x7f", None, None),
    ],
    ids=["nul", "nul_run", "ansi", "all_controls"],
)
def test_nul_and_control_characters(text, o200k, cl100k):
    for encoding, expected in (("o200k_base", o200k), ("cl100k_base", cl100k)):
        n = tokens.count_tokens(text, encoding)
        if expected is None:
            assert 1 <= n <= len(text)
        else:
            assert n == expected


@pytest.mark.parametrize("encoding", tokens.ENCODINGS)
@pytest.mark.parametrize(
    "look_alike", ["<|endoftext|>", "<|im_start|>", "<|endofprompt|>", "<|fim_prefix|>"]
)
def test_special_token_look_alikes_count_as_text(encoding, look_alike):
    enc = tokens.get_encoding(encoding)
    n = tokens.count_tokens(look_alike, encoding)
    assert n > 1
    assert n == len(enc.encode_ordinary(look_alike))
    if look_alike in enc.special_tokens_set:
        assert len(enc.encode(look_alike, allowed_special="all")) == 1


def test_ten_megabytes_ascii():
    reps = 10 * 1024 * 1024 // 4
    text = "a b " * reps  # "a", " b", " a", ... " b", then the trailing " "
    assert len(text) == 10 * 1024 * 1024
    for encoding in tokens.ENCODINGS:
        tokens.get_encoding(encoding)
        start = time.perf_counter()
        n = tokens.count_tokens(text, encoding)
        elapsed = time.perf_counter() - start
        print(f"10 MB ascii {encoding}: {n} tokens in {elapsed:.2f}s")
        assert n == 2 * reps + 1
        assert elapsed < 30


def test_ten_megabytes_cjk_with_lone_surrogates():
    unit = "漢字かな交じり文 " * 1000 + "\ud800"
    reps = 10 * 1024 * 1024 // len(unit.encode("utf-8", "surrogatepass"))
    text = unit * reps
    start = time.perf_counter()
    n = tokens.count_tokens(text, "o200k_base")
    elapsed = time.perf_counter() - start
    print(f"~10 MB CJK+surrogates o200k_base: {n} tokens in {elapsed:.2f}s")
    assert n == reps * tokens.count_tokens(unit, "o200k_base")
    assert elapsed < 30


# --------------------------------------------------------------------- bounded work on long runs (issue 24, section 3)


def _tiktoken_count(text: str, encoding: str) -> int:
    return len(tokens.get_encoding(encoding).encode(text, allowed_special=set(), disallowed_special=()))


def _ordinary_texts() -> list[str]:
    """Source, docs, JSON sessions and mixed scripts, with runs of one class just under RUN_CHARS."""
    root = Path(__file__).resolve().parents[2]
    sources = "".join(path.read_text(encoding="utf-8") for path in sorted((root / "core").rglob("*.py")))
    docs = "".join(path.read_text(encoding="utf-8") for path in sorted((root / "docs").glob("*.md")))
    fixtures = "".join(path.read_text(encoding="utf-8", errors="replace")
                       for path in sorted((root / "tests" / "fixtures").rglob("*.json*"))[:40])
    under = tokens.RUN_CHARS - 1
    edges = ("=" * under + "\n" + "a" * under + " " + " " * under + "x" + "\n/" * (under // 2) + "1"
             + "é" * under + "\t" * under + "漢" * under)
    return [sources, docs, fixtures, edges * 3, GOLDEN_TEXT]


GOLDEN_TEXT = "".join(case["text"] for case in CASES) * 50


@pytest.mark.parametrize("encoding", tokens.ENCODINGS)
def test_ordinary_text_is_counted_exactly_as_tiktoken_counts_it(encoding):
    for text in _ordinary_texts():
        assert len(text) > 2 * tokens.RUN_CHARS
        assert tokens.count_tokens(text, encoding) == _tiktoken_count(text, encoding)


RUNS = {
    "one letter": "a" * 60_000,
    "a line of =": "=" * 60_000,
    "spaces": " " * 60_000,
    "newlines": "\n" * 60_000,
    "newline and slash": "=" + "\n/" * 30_000,
    "random letters": "".join(__import__("random").Random(5).choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", k=60_000)),
    "random punctuation": "".join(__import__("random").Random(6).choices("!#$%&()*+,-.:;<=>?@[]^_{|}~", k=60_000)),
    "letters and marks": "e\u0301" * 30_000,
    "CJK": "漢字かな" * 15_000,
}


@pytest.mark.parametrize("encoding", tokens.ENCODINGS)
@pytest.mark.parametrize("run", RUNS, ids=list(RUNS))
def test_a_long_run_without_token_breaks_is_counted_within_the_stated_error(run, encoding):
    """A run is cut into pieces of RUN_CHARS: its count is off by at most RUN_ERROR tokens a piece."""
    for before, after in (("", ""), ("Hello world, the log:\n", "\nand then 42 more words."), ("x=", "1")):
        text = before + RUNS[run] + after
        pieces = -(-len(RUNS[run]) // tokens.RUN_CHARS) + 1
        exact = _tiktoken_count(text, encoding)
        assert abs(tokens.count_tokens(text, encoding) - exact) <= tokens.RUN_ERROR * pieces, (run, before)


def test_a_million_spaces_are_counted_where_tiktoken_fails():
    """tiktoken's pre-tokenizer runs out of backtracking stack on a million spaces (ValueError)."""
    text = "start" + " " * 1_000_000 + "end"
    for encoding in tokens.ENCODINGS:
        count = tokens.count_tokens(text, encoding)
        assert 2 <= count <= 1_000_000 // 4


def test_counting_a_32_mb_run_takes_memory_bounded_by_its_size():
    """tiktoken holds about 60 bytes a character of one piece (2 GB here): the count holds the text
    and a piece of RUN_CHARS. Peak memory in a child process, after the encoding and the text are built."""
    script = textwrap.dedent(
        """
        import resource, sys
        from reprise.core import tokens
        tokens.count_tokens("warm up", "o200k_base")
        text = "x" + "a" * (32 << 20) + "\\nthe end"
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        count = tokens.count_tokens(text, "o200k_base")
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(count, grown * 1024)
        """
    )
    done = _run([sys.executable, "-c", script])
    assert done.returncode == 0, done.stderr
    count, grown = map(int, done.stdout.split())
    assert count > (32 << 20) // 16
    assert grown < 32 << 20, f"counting a 32 MB run grew the peak memory by {grown:,} bytes"
