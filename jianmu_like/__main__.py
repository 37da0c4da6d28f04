"""`python -m jianmu_like`: the `jianmu-like` command line."""

import sys

from .cli._main import main

sys.exit(main())
