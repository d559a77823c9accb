"""The agent backends `[agent] backend` and `--agent` accept by name: Reprise's own (`command`, `echo`)
and those the registered sources offer (each spec's `backends`, such as Fractal's `fractal`). Read from
the specs alone: the command line's choices come from here, so it imports no pydantic and no
source's code."""

from __future__ import annotations

from .sources.registry import registry

OWN_BACKENDS = ("command", "echo")


def offered_backends() -> dict[str, str]:
    """{backend name: dotted path of its class} the registered sources offer, in the sources' order;
    a name Reprise's own backends or an earlier source took is not offered again."""
    offered: dict[str, str] = {}
    for spec in registry().specs:
        for name, dotted in spec.backends.items():
            if name not in OWN_BACKENDS and name not in offered:
                offered[name] = dotted
    return offered


def backend_names() -> tuple[str, ...]:
    """Every backend name the settings and the command line accept."""
    return (*OWN_BACKENDS, *offered_backends())
