"""The main screen (`screen.MainScreen`) and what the app exits with from it."""

from .base import Handoff, Picked
from .rows import match_rank, matches
from .screen import MainScreen

__all__ = ["Handoff", "MainScreen", "Picked", "match_rank", "matches"]
