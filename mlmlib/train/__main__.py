"""mlmlib.train.__main__ - ``python -m mlmlib.train`` runs :func:`mlmlib.train.cli.main`.

Does not: anything else.
"""

from mlmlib.train.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
