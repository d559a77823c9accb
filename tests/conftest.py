"""Every test gets its own state root, cache, config and data folder, and each registered source its
own store folder (its spec's `isolate`, absent so the source is off until a test writes it; its
`unset` variables removed): nothing touches the real ones. The sources come from the registry, read
from their specs alone."""

from __future__ import annotations

import pytest

from reprise.core.sources.registry import NOT_REGISTERED, registry


def pytest_sessionstart(session: pytest.Session) -> None:
    """An install made before the sources were declared as entry points reads none of them."""
    if any(failure.reason == NOT_REGISTERED for failure in registry().failures):
        pytest.exit(NOT_REGISTERED, returncode=4)


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("REPRISE_STATE_DIR", str(state))
    monkeypatch.setenv("REPRISE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REPRISE_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("REPRISE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("REPRISE_FAULTS", raising=False)
    for spec in registry().specs:
        for variable, template in spec.isolate.items():
            monkeypatch.setenv(variable, template.format(tmp=tmp_path, state=state))
        for variable in spec.unset:
            monkeypatch.delenv(variable, raising=False)
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
