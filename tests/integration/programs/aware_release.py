"""aware_release.py — scenario 4, Python part: aware code that uses the
spillway helper module (tools/python/spillway) to call release_page_cache
after writing each CHUNK_MIB numpy buffer and again after verifying it. It
keeps every buffer live and samples the container's memory usage from its
cgroup right after each release. Prints "helper: disk-backed N of N",
"usage baseline=B max_after_release=M samples=S" and "checksum ok"; the
suite asserts M - B stays under its stated bound. Without the shim the
helper's calls are no-ops and the job must be OOM-killed.
Usage: aware_release.py CHUNKS CHUNK_MIB"""
import sys

import numpy as np

import probe
import spillway

WORDS_PER_PAGE = 4096 // 8


def expected_sum(words, seed):
    touched = (words + WORDS_PER_PAGE - 1) // WORDS_PER_PAGE
    return (words * seed + touched) % (1 << 64)


def main():
    if len(sys.argv) < 3:
        sys.exit("aware_release.py: usage: aware_release.py CHUNKS CHUNK_MIB; pass the sizes")
    chunks, words = int(sys.argv[1]), (int(sys.argv[2]) << 20) // 8
    active = spillway.is_active()
    print(f"helper: shim active: {active}", flush=True)
    baseline = probe.cgroup_usage()
    max_after, samples, bad, disk = 0, 0, 0, 0
    bufs = []
    for phase in ("wrote", "verified"):
        for c in range(chunks):
            seed = 0x9E3779B97F4A7C15 * (c + 1) % (1 << 64)
            if phase == "wrote":
                buf = np.empty(words, dtype=np.uint64)  # one malloc of CHUNK_MIB
                buf.fill(seed)
                buf[::WORDS_PER_PAGE] += np.uint64(1)     # in place, one word per page
                bufs.append(buf)
                disk += spillway.is_disk_backed(buf)
            else:
                buf = bufs[c]
                if int(buf.sum()) != expected_sum(words, seed) or int(buf[1]) != seed:
                    bad += 1
            if active and not spillway.release_page_cache(buf):
                sys.exit(f"aware_release.py: spillway.release_page_cache refused chunk {c} "
                         f"(backing {spillway.backing(buf)}); expected a disk-backed buffer")
            now = probe.cgroup_usage()
            max_after = max(max_after, now)
            samples += 1
            print(f"{phase} chunk {c} backing={spillway.backing(buf)} usage={now >> 20} MiB", flush=True)
    print(f"helper: disk-backed {disk} of {chunks}", flush=True)
    print(f"usage baseline={baseline} max_after_release={max_after} samples={samples}", flush=True)
    if bad:
        sys.exit(f"aware_release.py: checksum MISMATCH in {bad} chunks; bytes were lost across release")
    print(f"checksum ok over {chunks * words * 8 >> 20} MiB", flush=True)


if __name__ == "__main__":
    main()
