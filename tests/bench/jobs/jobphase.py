"""jobphase.py — the clock the library jobs of jobs.sh put around their phases.

The jobs themselves are written as the libraries' users write them; this is
the only thing they import from here. Each phase prints one line on stdout:
  JOBPHASE job=J phase=P s=SECONDS cpu_s=X runq_s=X shim_cpu_s=X minflt=N
           majflt=N io_read_mib=X io_write_mib=X dev_read_mib=X dev_write_mib=X
cpu_s/runq_s: time this process's threads ran, and waited runnable for a
CPU (/proc/self/task/*/schedstat; threads that ended inside the phase are
missed): on a shared machine the second is what others' load added;
shim_cpu_s: the part of the CPU time spent by the shim's own threads
(named spillway-*), not counted in cpu_s;
minflt/majflt: getrusage of this process (all its threads; DataLoader
workers are other processes and not counted); io_*: /proc/self/io
read_bytes/write_bytes (what this process made the block layer read or
write: page-cache misses of its file mappings, swap-ins it faulted, writeback
it did itself); dev_*: /sys/block/$JOB_DEV/stat, the whole device (the spill
filesystem's loop device: spill files and the swap file alike), -1 without
JOB_DEV. At the end `result(job, value)` prints
  JOBRESULT job=J value=V
a figure of the job's output, which must be the same in every variant.
"""
import os
import resource
import time

_DEV = os.environ.get("JOB_DEV", "")


def _dev_mib():
    if not _DEV:
        return -1.0, -1.0
    with open(f"/sys/block/{_DEV}/stat") as f:
        v = f.read().split()
    return int(v[2]) * 512 / 2**20, int(v[6]) * 512 / 2**20


def _sched_s():
    """(cpu, run-queue wait) of the job's threads, and cpu of the shim's."""
    cpu = wait = shim = 0
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                mine = f.read().startswith("spillway-")
            with open(f"/proc/self/task/{t}/schedstat") as f:
                v = f.read().split()
            if mine:
                shim += int(v[0])
            else:
                cpu, wait = cpu + int(v[0]), wait + int(v[1])
        except (OSError, IndexError, ValueError):
            pass
    return cpu / 1e9, wait / 1e9, shim / 1e9


def _io_mib():
    got = {}
    try:
        with open("/proc/self/io") as f:
            for line in f:
                k, _, v = line.partition(":")
                got[k] = int(v)
    except OSError:
        return -1.0, -1.0
    return got.get("read_bytes", 0) / 2**20, got.get("write_bytes", 0) / 2**20


class phase:
    """with phase("pandas", "merge"): ...  — times the block and prints its line."""

    def __init__(self, job, name):
        self.job, self.name = job, name

    def __enter__(self):
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.flt = ru.ru_minflt, ru.ru_majflt
        self.io, self.dev, self.sched = _io_mib(), _dev_mib(), _sched_s()
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc):
        s = time.monotonic() - self.t0
        ru = resource.getrusage(resource.RUSAGE_SELF)
        io, dev, sched = _io_mib(), _dev_mib(), _sched_s()
        d = lambda a, b: b - a if a >= 0 else -1.0
        print(f"JOBPHASE job={self.job} phase={self.name} s={s:.3f} "
              f"cpu_s={sched[0] - self.sched[0]:.3f} runq_s={sched[1] - self.sched[1]:.3f} "
              f"shim_cpu_s={sched[2] - self.sched[2]:.3f} "
              f"minflt={ru.ru_minflt - self.flt[0]} majflt={ru.ru_majflt - self.flt[1]} "
              f"io_read_mib={d(self.io[0], io[0]):.1f} io_write_mib={d(self.io[1], io[1]):.1f} "
              f"dev_read_mib={d(self.dev[0], dev[0]):.1f} dev_write_mib={d(self.dev[1], dev[1]):.1f}",
              flush=True)
        return False


def result(job, value):
    print(f"JOBRESULT job={job} value={value}", flush=True)
