"""`python -m jianmu_like.testing REPLIES [--port N]`: serve a replies file (see `testing.mock`)."""

import sys

from .mock import main

sys.exit(main())
