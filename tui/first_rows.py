"""The workspace's rows as the catalog stored them, read in a thread from the start of the process
while Textual is imported and the app starts, so the main screen's first frame can draw them
(`Service.stored_rows`). It imports no Textual: the command line starts it before the app exists."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reprise.core.rows import SessionRow
    from reprise.core.service import Service


class FirstRows:
    """`service.stored_rows()` of the service's workspace, being read in a thread of its own."""

    def __init__(self, service: Service) -> None:
        self._service = service
        self._done = threading.Event()
        self._rows: list[SessionRow] = []
        self._error: BaseException | None = None
        threading.Thread(target=self._read, name="reprise-first-rows", daemon=True).start()

    def _read(self) -> None:
        try:
            self._rows = self._service.stored_rows()
        except BaseException as exc:   # raised where the rows are taken, as the call itself would
            self._error = exc
        finally:
            self._done.set()

    def wait(self, seconds: float) -> bool:
        """Whether the read has ended within `seconds`."""
        return self._done.wait(seconds)

    def ready(self) -> bool:
        """The read has ended (with its rows or its error)."""
        return self._done.is_set()

    def rows(self) -> list[SessionRow]:
        """The rows, once read (this waits for the read); the read's error is raised here."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._rows
