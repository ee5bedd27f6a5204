"""Lets ``python -m nar_gap`` do what the ``nar-gap`` console script does."""

from nar_gap.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
