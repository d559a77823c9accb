"""The settings every source's `[sources.<name>]` table starts from. A source's spec names its own
model (`SourceSpec.settings`), a subclass of one of these; `core/config.py` builds the `[sources]`
section from the registered ones. Validated like every section: unknown keys and wrong types are
errors naming the file and the key."""

from __future__ import annotations

from pydantic import Field

from ..settings_models import Text, _Section


class SourceSettings(_Section):
    """A source whose store the generic detection finds (`StoreLocation`): `enabled` unset, it is on
    when a root holds its store; `roots` unset, its variable, else its default folder under HOME."""

    enabled: bool | None = None
    roots: list[Text] | None = Field(default=None, min_length=1)


class SweptSettings(SourceSettings):
    """A source whose agent deletes sessions by age (a sweep): `keep_before_sweep` keeps, during
    listings, the sessions it deletes within the week (`Service.list_sessions`)."""

    keep_before_sweep: bool = False
