"""numpy_reduce.py — scenario 3: a numpy job that builds one array of
ARRAY_MIB (int64, built and transformed in place, no full-size temporaries)
and reduces it (sum, min, max, xor). Each reduction is checked against its
closed form. Without the shim in a container limited below ARRAY_MIB it must
be OOM-killed; with it it must print "reductions ok" with the array on disk.
Usage: numpy_reduce.py ARRAY_MIB"""
import sys

import numpy as np

import probe


def main():
    if len(sys.argv) < 2:
        sys.exit("numpy_reduce.py: usage: numpy_reduce.py ARRAY_MIB; pass the array size")
    n = (int(sys.argv[1]) << 20) // 8
    a = np.arange(n, dtype=np.int64)     # one malloc of the whole array
    print(f"array: {a.nbytes >> 20} MiB, backing={probe.backing(a.ctypes.data)}", flush=True)
    a *= 3                                # in place: a[i] = 3i + 1
    a += 1
    got = {"sum": int(a.sum()), "min": int(a.min()), "max": int(a.max()),
           "xor": int(np.bitwise_xor.reduce(a[: 1 << 20]))}
    want = {"sum": 3 * n * (n - 1) // 2 + n, "min": 1, "max": 3 * (n - 1) + 1, "xor": 0}
    xor = 0
    for i in range(1 << 20):              # closed forms by definition, small slice for xor
        xor ^= 3 * i + 1
    want["xor"] = xor
    for key in want:
        print(f"{key}: got {got[key]} expected {want[key]}", flush=True)
    if got != want:
        sys.exit("numpy_reduce.py: a reduction is wrong; the array's bytes were not preserved")
    print("reductions ok", flush=True)


if __name__ == "__main__":
    main()
