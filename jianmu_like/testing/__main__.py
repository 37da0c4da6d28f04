"""`python -m jianmu_like.testing REPLIES [--port N]`: serve a replies file (see `testing._mock`)."""

import sys

from ._mock import main

if __name__ == "__main__":  # imported (a test walking the package): nothing runs
    sys.exit(main())
