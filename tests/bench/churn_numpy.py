"""churn_numpy.py — numpy temporaries in a loop: `a = b * 2 + 1` on big
arrays, the allocator traffic of tests/bench/churn.c as numpy makes it.

usage: /usr/bin/python3 churn_numpy.py MIB ITERATIONS [VARIANT]
Prints CSV rows (bench,variant,param,metric,value,unit): the median and the
first iteration's time in milliseconds, and the total. Checks one element.
"""
import sys
import time

import numpy as np


def main():
    mib, iterations = int(sys.argv[1]), int(sys.argv[2])
    variant = sys.argv[3] if len(sys.argv) > 3 else "run"
    b = np.ones((mib << 20) // 8)
    times = []
    start = time.perf_counter()
    for _ in range(iterations):
        t0 = time.perf_counter()
        a = b * 2 + 1
        if a[-1] != 3.0:
            sys.exit("churn_numpy: wrong result")
        del a
        times.append((time.perf_counter() - t0) * 1e3)
    total = time.perf_counter() - start
    param = "%dMiB" % mib
    print("churn_numpy,%s,%s,first_iter,%.6g,ms" % (variant, param, times[0]))
    print("churn_numpy,%s,%s,median_iter,%.6g,ms" % (variant, param, sorted(times)[len(times) // 2]))
    print("churn_numpy,%s,%s,total,%.6g,s" % (variant, param, total))


main()
