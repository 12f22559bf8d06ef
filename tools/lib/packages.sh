# packages.sh — the Debian 12 packages spillway needs, as four named lists
# (sourced by tools/setup-deps.sh).
#
# DEMO_PACKAGES: what tools/demo.sh needs and nothing more: the build tools,
# the shim's three libraries (mimalloc, libunwind, toml++ headers), the
# tool's JSON reader (nlohmann-json, headers) and numpy
# for the demo's job. Installed with --no-install-recommends, they pull in
# only their own dependencies (about 100 packages on a minimal Debian 12).
DEMO_PACKAGES=(
  meson ninja-build pkg-config g++
  libmimalloc-dev libunwind-dev libtomlplusplus-dev
  nlohmann-json3-dev  # the spillway tool reads JSON with it (tools/cli/json.h)
  python3-numpy
)

# BUILD_TEST_PACKAGES: what compiling the tests adds to DEMO_PACKAGES
# (`setup-deps.sh --build`): tools/test-all.sh installs these first, and
# TEST_PACKAGES in the background while it builds.
BUILD_TEST_PACKAGES=(
  build-essential catch2
)

# TEST_PACKAGES: what the test suites themselves use (run, not compile):
# unpacking them takes minutes on a fresh machine (600 MB, 640 packages;
# the download is seconds of it, dpkg the rest).
TEST_PACKAGES=(
  python3-torch
  docker.io e2fsprogs util-linux procps
  xfsprogs btrfs-progs strace  # tests/control/on_filesystem.sh: XFS and btrfs spill dirs; whose thread closes a file
  libjemalloc2 libtcmalloc-minimal4 python3-matplotlib xz-utils
  libpython3.11-testsuite  # CPython's regression tests (tests/hardening/cpython.sh)
  glibc-source  # glibc's own malloc tests (tests/hardening/glibc_malloc.sh)
  clang libclang-rt-14-dev  # libFuzzer, ASan and UBSan for tests/hardening/fuzz.sh
  time  # /usr/bin/time: tests/hardening/pysuite.sh's CPU times
  python3-pandas python3-pytest python3-hypothesis  # pandas' and numpy's own tests (tests/hardening/pysuite.sh)
  python3-yaml  # the Kubernetes examples are parsed in tests/cli/k8s_examples.sh
  chromium  # spillway report's HTML page is opened headless in tests/cli/report_browser.sh
  # tools/package.sh (the .deb and the wheel) and tests/packaging (venvs, a debootstrap root)
  dpkg-dev debhelper dh-python lintian python3-mesonpy python3-pip python3-venv debootstrap
)

# BENCH_PACKAGES: the libraries of the real jobs tests/bench/jobs.sh runs
# (tests/bench/jobs/), which installs them itself (setup-deps.sh --bench,
# with DEMO_PACKAGES for the build and numpy). Not needed by the tests.
BENCH_PACKAGES=(
  python3-pandas python3-xgboost python3-sklearn python3-torchvision python3-scipy python3-torch
  libopenblas0-pthread  # numpy and scipy use it through libblas.so.3: the reference BLAS a minimal install
                        # gets made PCA 4x the CPU and 6x the disk reads (2026-12-02)
)
