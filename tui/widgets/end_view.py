"""A scrolled view that opens at its end and stays there while its text is laid out.

A conversation's newest turn is at the bottom of its text. Scrolling to the end after the next
refresh is not enough: on a busy machine the text's last layout can come after that scroll, and
the view then stays short of its end. So the view follows its end through every layout until the
reader scrolls away from it. (Textual's own `anchor` leaves blank rows above a text shorter than
the view, so it is not used.)"""

from __future__ import annotations

from textual import events
from textual.containers import VerticalScroll


class EndView(VerticalScroll):
    following = False   # at the end since `follow_end`, the reader has not scrolled up

    def follow_end(self) -> None:
        """Show the end now and after every later layout, until the reader scrolls up."""
        self.following = True
        self.scroll_end(animate=False)

    def stop_following(self) -> None:
        self.following = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < self.max_scroll_y:
            self.following = False   # the reader scrolled up, or the view was put elsewhere

    def watch_virtual_size(self) -> None:
        """The text was laid out again (no Resize event says so when only the text's height
        changed): back to the end once the new size is set."""
        if self.following:
            self.call_later(self._keep_end)

    def on_resize(self, event: events.Resize) -> None:
        self._keep_end()

    def _keep_end(self) -> None:
        if self.following:
            self.scroll_end(animate=False, immediate=True)
