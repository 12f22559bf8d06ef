#!/usr/bin/env bash
# real_programs.sh LIB — unmodified real programs under the shim with a
# 1 MiB threshold, so their big buffers really live in spill regions:
# CPython with numpy, g++ compiling and running a program, xz -9 round
# trip, sort -S 256M. Each output is checked against a run without the shim.
set -euo pipefail
# Absolute: a relative path would name nothing once the script changes
# directory, and LD_PRELOAD would then load no shim, silently.
lib=$(realpath -s "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-progs.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { "$here/under_shim.sh" "$lib" "$@"; }

# 1. CPython: bytearrays, bytes joins, dicts, numpy arrays, big list sorts.
cat > "$work/py.py" <<'PY'
import hashlib, numpy as np, random
random.seed(1)
blob = bytearray(32 << 20)
for i in range(0, len(blob), 4099):
    blob[i] = i % 251
h = hashlib.sha256(bytes(blob)).hexdigest()
parts = b"".join(bytes([i % 256]) * 70000 for i in range(300))
a = np.arange(8_000_000, dtype=np.float64)
b = np.zeros((2000, 3000), dtype=np.float32); b[::7, ::3] = 1.5
c = np.concatenate([a, a[::-1]]); c.sort()
d = {i: str(i) * 3 for i in range(300000)}
l = sorted(random.random() for _ in range(500000))
print(h, hashlib.md5(parts).hexdigest(), float(a.sum()), float(b.sum()), float(c[123456]), len(d), round(l[1000], 9))
PY
want=$(/usr/bin/python3 "$work/py.py")
got=$(run /usr/bin/python3 "$work/py.py")
[ "$want" = "$got" ] || { echo "python output differs under the shim: '$got' vs '$want'"; exit 1; }
echo "python: ok"

# 2. g++ compiling (the compiler itself runs under the shim) and the program it built.
cat > "$work/prog.cpp" <<'CPP'
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <vector>
int main() {
    std::vector<long> v(20'000'000);
    std::iota(v.begin(), v.end(), 1);
    std::map<int, std::string> m;
    for (int i = 0; i < 100000; i++) m[i] = std::to_string(i * 7);
    std::vector<std::vector<char>> big;
    for (int i = 0; i < 40; i++) big.emplace_back((1 << 20) * (i % 5 + 1), char(i));
    long s = std::accumulate(v.begin(), v.end(), 0L);
    for (auto &b : big) s += b[b.size() / 2];
    std::printf("%ld %zu\n", s, m.size());
}
CPP
run g++ -O2 -o "$work/prog" "$work/prog.cpp"
want=$("$work/prog")
got=$(run "$work/prog")
[ "$want" = "$got" ] || { echo "compiled program output differs: '$got' vs '$want'"; exit 1; }
echo "g++: ok"

# 3. xz -9 round trip (a 64 MiB dictionary: large allocations on both sides).
head -c 30000000 /dev/urandom | base64 > "$work/text"
run xz -9 -T1 -k -c "$work/text" > "$work/text.xz"
run xz -d -c "$work/text.xz" > "$work/text.out"
cmp "$work/text" "$work/text.out"
echo "xz: ok"

# 4. sort with a 256 MiB buffer.
run sort -S 256M "$work/text" -o "$work/sorted.shim"
sort -S 256M "$work/text" -o "$work/sorted.plain"
cmp "$work/sorted.shim" "$work/sorted.plain"
echo "sort: ok"
