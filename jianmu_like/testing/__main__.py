"""`python -m jianmu_like.testing REPLIES [--port N]`: serve a replies file (see `testing.mock`)."""

import sys

from .mock import main

if __name__ == "__main__":  # imported (a test walking the package): nothing runs
    sys.exit(main())
