"""Convert a length: convert.py VALUE FROM TO (km, mi, m, ft); prints the value in TO."""

import sys

METRES = {"km": 1000.0, "mi": 1609.344, "m": 1.0, "ft": 0.3048}

value, source, target = float(sys.argv[1]), sys.argv[2], sys.argv[3]
if source not in METRES or target not in METRES:
    sys.exit(f"unknown unit: use one of {', '.join(METRES)}")
print(f"{value * METRES[source] / METRES[target]:.3f} {target}")
