"""`python -m reprise.tui.cli`: what the `reprise` script runs."""

from .entry import main

raise SystemExit(main())
