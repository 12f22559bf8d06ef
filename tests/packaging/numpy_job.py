# numpy_job.py ROWS — an ordinary, unmodified numpy job (it knows nothing of
# spillway): build a ROWS x 1024 float32 dataset in chunks, normalise it,
# reduce it. Prints one line whose checksum depends only on ROWS, so a run
# under a memory limit can be compared with the unconstrained reference.
import sys

import numpy as np

rows, cols = int(sys.argv[1]), 1024
data = np.empty((rows, cols), dtype=np.float32)  # the big buffer
for start in range(0, rows, 8192):  # filled in order
    stop = min(rows, start + 8192)
    data[start:stop] = np.arange(start, stop, dtype=np.float32)[:, None] % 97
means = data.mean(axis=0, dtype=np.float64)
print(f"rows={rows} checksum={float(means.sum()):.6f}")
