"""Every test gets its own state root, cache, config, data folder and Claude Code root: nothing
touches the real ones."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("REPRISE_STATE_DIR", str(state))
    monkeypatch.setenv("REPRISE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REPRISE_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("FRACTAL_STATE_HOME", str(state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("REPRISE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))   # absent: Claude Code's source is off
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))   # absent: Codex's source is off
    monkeypatch.delenv("REPRISE_FAULTS", raising=False)
    monkeypatch.delenv("FRACTAL_MODEL", raising=False)
    return state


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run `async def` tests (Textual's Pilot) in a fresh event loop, without a plugin."""
    import asyncio
    import inspect

    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
        return True
    return None
