"""The search index built in the background of the app, not of the search dialog: a search that met
sessions the index does not hold starts it, and it goes on after the dialog closes (a later search
in the same process then finds them in the index), until done, a build for another scope replaces
it, or the app ends (the worker is cancelled between two batches; what was indexed stays).

How far it is ("indexing 812/2,500 sessions", then "indexed 2,500 of 2,500 sessions") is kept on
the app (`index_status`) and handed to the search dialog while one is open (`IndexStatus`)."""

from __future__ import annotations

from textual import on, work
from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from reprise.core.errors import RepriseError
from reprise.core.progress import Progress
from reprise.core.service import Service


def progress_phrase(progress: Progress) -> str:
    """"searching 300/2,500 sessions", "indexing 812/2,500 sessions"."""
    return f"{progress.doing} {progress.done:,}/{progress.total:,} sessions"


class IndexStatus(Message, bubble=False):
    """How far the background indexing is, as the search dialog shows it ("" once there is nothing
    to say)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class _Built(Message):
    """A step of the build, from its worker thread: how far it is, or its last word."""

    def __init__(self, progress: Progress | None, text: str = "") -> None:
        super().__init__()
        self.progress = progress
        self.text = text


class _Ended(Message):
    """A build's worker is done (its scope), from its thread."""

    def __init__(self, scope: tuple[bool, str | None] | None) -> None:
        super().__init__()
        self.scope = scope


class IndexesInBackground(App[object]):
    """The part of the app that builds the search index in the background (a mixin of `RepriseApp`)."""

    service: Service
    index_status = ""   # what the search dialog shows of the build: how far, or how it ended

    _index_scope: tuple[bool, str | None] | None = None   # the scope of the build running, if any

    def index_in_background(self, *, all_workspaces: bool, key: str | None) -> None:
        """Index the sessions of this scope the index does not hold, newest first, in a worker of the
        app; a build for another scope running is cancelled (between two batches) for this one, one
        for the same scope goes on."""
        scope = (all_workspaces, None if all_workspaces else key)
        if scope != self._index_scope:
            self._index_scope = scope
            self._build_index(all_workspaces, key)

    @work(thread=True, exclusive=True, group="index", exit_on_error=False)
    def _build_index(self, all_workspaces: bool, key: str | None) -> None:
        worker = get_current_worker()
        scope = self._index_scope
        try:
            built = self.service.build_index(all_workspaces=all_workspaces, key=key,
                                             should_stop=lambda: worker.is_cancelled,
                                             progress=lambda progress: self.post_message(_Built(progress)))
        except RepriseError as exc:
            self.post_message(_Built(None, f"indexing stopped: {exc}"))
            return
        finally:
            self.post_message(_Ended(scope))
        if built.total:
            capped = " (at its [search] max_mb cap)" if built.capped else ""
            self.post_message(_Built(None, f"indexed {built.added:,} of {built.total:,} sessions{capped}"))

    @on(_Ended)
    def _on_ended(self, message: _Ended) -> None:
        if self._index_scope == message.scope:
            self._index_scope = None   # a later search of this scope builds again (files may have changed)

    @on(_Built)
    def _on_built(self, message: _Built) -> None:
        progress = message.progress
        if progress is None:
            self.index_status = message.text
        elif not progress.finished:
            self.index_status = progress_phrase(progress)
        for screen in self.screen_stack:
            screen.post_message(IndexStatus(self.index_status))
