"""A Reprise source for a test agent that keeps every session in one SQLite database, read-only and
without a meter: the seam's proof, found through its entry point alone."""
