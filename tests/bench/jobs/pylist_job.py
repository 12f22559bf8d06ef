"""pylist_job.py — a pure-Python job whose data are Python objects, as a
script that turns an array into a list does: 30M ints from numpy's
tolist() (CPython's small objects, in its 1 MiB object arenas: 960 MB of
int objects and a 240 MB list of pointers), one pass over them, then the
list dropped (CPython frees its items last to first, so the drop reads
every object back from the highest address down) (jobs.sh runs it;
jobphase.py times it).

Phases: array (numpy builds the values), tolist (the objects), scan (a sum
over every item, in order), drop (del of the list).

Usage: pylist_job.py [ITEMS_M]   (default 30)
"""
import sys

import numpy as np

from jobphase import phase, result

items = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 30_000_000

with phase("pylist", "array"):
    values = np.arange(items, dtype=np.int64) * 2654435761 % (1 << 40) + (1 << 40)

with phase("pylist", "tolist"):
    numbers = values.tolist()  # ints past CPython's small-int cache: one object each
    del values

with phase("pylist", "scan"):
    total = 0
    for n in numbers:
        total += n

with phase("pylist", "drop"):
    del numbers

result("pylist", f"{total}")
