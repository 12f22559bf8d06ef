"""ipc_shm.py: what sending a 383 MiB tensor to another process through a
torch.multiprocessing queue writes into /dev/shm and into the spill
directory, the ordinary way and through spillway.share_memory_for_ipc.
Prints figures; asserts nothing (a benchmark, not a test).

    /usr/bin/python3 tests/bench/ipc_shm.py build/shim/libspillway.so [rounds] [spill dir]

Cases, each a fresh sender process with a fork receiver:
  plain        no shim, torch's reducer (share_memory_: a copy into /dev/shm)
  shim         the shim preloaded, torch's reducer ([shm] redirect: the copy
               goes to a spill file instead of /dev/shm)
  ours-anon    the shim, the tensor in RAM (policy anon), share_memory_for_ipc
               (spill_tensor_to_disk copies it once into a named spill file)
  ours-disk    the shim, the tensor already on disk (policy disk),
               share_memory_for_ipc (names the file in place: no copy)
Figures per case: bytes added to /dev/shm (statvfs, while the receiver
holds the tensor; other processes on the machine add noise), bytes of
/dev/shm or memfd mappings in the receiver (exact), blocks added to the
spill directory's filesystem (statvfs; a copy into a new spill file
reserves all of it; noisy where others write to that filesystem), and the
time from the first call to the receiver holding it. In the ours-disk case
the 383 MiB file existed before the send (the tensor was born there).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHONPATH = os.path.join(HERE, "..", "..", "tools", "python")
NBYTES = 383 << 20

SENDER = r"""
import json, os, sys, time
import torch, torch.multiprocessing as mp
import spillway

def shm_used():
    st = os.statvfs("/dev/shm")
    return (st.f_blocks - st.f_bfree) * st.f_frsize

def spill_fs_used():
    st = os.statvfs(os.environ["SPILLWAY_DIR"])
    return (st.f_blocks - st.f_bfree) * st.f_frsize

def shm_mapped():
    total = 0
    for line in open("/proc/self/maps"):
        parts = line.split(None, 5)
        path = parts[5].strip() if len(parts) > 5 else ""
        if path.startswith(("/dev/shm/", "/memfd:")):
            lo, hi = (int(v, 16) for v in parts[0].split("-"))
            total += hi - lo
    return total

def receiver(inbox, outbox):
    t = inbox.get()
    outbox.put((time.monotonic(), shm_mapped(), float(t[-1])))
    inbox.get()

if __name__ == "__main__":
    mode, nbytes = sys.argv[1], int(sys.argv[2])
    ctx = mp.get_context("fork")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    peer = ctx.Process(target=receiver, args=(inbox, outbox))
    peer.start()
    t = torch.empty(nbytes // 4, dtype=torch.float32)
    t.fill_(1.0)
    shm0, fs0 = shm_used(), spill_fs_used()
    start = time.monotonic()
    if mode.startswith("ours"):
        t = spillway.share_memory_for_ipc(t)
    inbox.put(t)
    got, mapped, last = outbox.get()
    shm1, fs1 = shm_used(), spill_fs_used()
    inbox.put("done")
    peer.join()
    print(json.dumps({"shm_added": shm1 - shm0, "receiver_shm_mapped": mapped,
                      "spill_fs_added": fs1 - fs0, "seconds": got - start, "ok": last == 1.0}))
"""


def run(case, lib, spill_dir):
    shutil.rmtree(spill_dir, ignore_errors=True)
    os.makedirs(spill_dir, mode=0o700)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, SPILLWAY_DIR=spill_dir, SPILLWAY_LOG="error",
               LD_PRELOAD="" if case == "plain" else lib,
               SPILLWAY_POLICY="disk" if case == "ours-disk" else "anon")
    out = subprocess.run(["/usr/bin/python3", "-c", SENDER, case, str(NBYTES)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("ipc_shm: case %s failed:\n%s" % (case, out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    lib = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    spill_dir = sys.argv[3] if len(sys.argv) > 3 else "/var/tmp/spillway-bench-ipc-shm"
    cases = ["plain", "shim", "ours-anon", "ours-disk"]
    results = {c: [] for c in cases}
    for _ in range(rounds):  # interleaved: A B C D A B C D ...
        for case in cases:
            results[case].append(run(case, lib, spill_dir))
    shutil.rmtree(spill_dir, ignore_errors=True)
    mib = 1 << 20
    print("383 MiB float32 tensor through a torch.multiprocessing queue (fork receiver), "
          "median of %d interleaved rounds" % rounds)
    print("%-10s %14s %20s %18s %10s" % ("case", "/dev/shm +MiB", "receiver shm-mapped",
                                         "spill fs +MiB", "put->got s"))
    for case in cases:
        r = results[case]
        med = lambda k: statistics.median(x[k] for x in r)
        print("%-10s %14.1f %20.1f %18.1f %10.3f%s" % (
            case, med("shm_added") / mib, med("receiver_shm_mapped") / mib,
            med("spill_fs_added") / mib, med("seconds"), "" if all(x["ok"] for x in r) else "  WRONG DATA"))


if __name__ == "__main__":
    main()
