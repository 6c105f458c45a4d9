"""`python -m numpile`: the command line (see `numpile.cli`)."""

from __future__ import annotations

import sys

from numpile.cli import main

if __name__ == "__main__":
    sys.exit(main())
