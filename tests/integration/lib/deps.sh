# deps.sh — installs what the suite needs on a fresh Debian 12 machine, only
# when something is missing (apt-get update first, as the mirror may be cold).

INTEGRATION_PACKAGES=(
    docker.io containerd runc          # the daemon and runtime
    gcc libc6-dev                      # scenario programs are built on the host
    meson ninja-build pkg-config g++   # building the shim when no path is given (-Dtests=false: no catch2)
    libmimalloc-dev libunwind-dev libtomlplusplus-dev
    nlohmann-json3-dev                 # meson setup configures the tool too (tools/cli)
    python3 python3-numpy python3-torch
    e2fsprogs util-linux mount coreutils procps
)

ensure_packages() {
    local missing=() p
    for p in "${INTEGRATION_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" = 0 ] || die "packages missing (${missing[*]}) and not root; run as root or install them"
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null || die "apt-get update failed; check the Debian mirror in /etc/apt/sources.list"
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed; run it by hand to see why"
}
