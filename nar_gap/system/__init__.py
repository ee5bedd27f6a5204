"""The machine and the files: backend self-check, provenance, atomic writers."""
