"""`python -m jianmu_like`: the `jianmu-like` command line."""

import sys

from .cli import main

sys.exit(main())
