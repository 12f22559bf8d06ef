# daemon.sh — makes sure a Docker daemon answers: uses a running one, else
# starts `dockerd --bridge=none --iptables=false` in its own session (so a
# Ctrl-C to the suite does not take it down before cleanup) and stops it at
# exit unless SPILLWAY_INT_KEEP_DAEMON=1.

# The docker.io client; /usr/local/bin may hold a different, newer one.
DOCKER=/usr/bin/docker
dk() { "$DOCKER" "$@"; }

ensure_docker_daemon() {
    [ -x "$DOCKER" ] || DOCKER=$(command -v docker) || die "no docker client found; install docker.io"
    if dk info >/dev/null 2>&1; then
        say "using the running Docker daemon"
        return 0
    fi
    command -v dockerd >/dev/null || die "dockerd not found; install docker.io"
    local log="$WORK/dockerd.log"
    say "starting dockerd --bridge=none --iptables=false (log: $log)"
    setsid dockerd --bridge=none --iptables=false >"$log" 2>&1 </dev/null &
    DOCKERD_PID=$!
    if [ "${SPILLWAY_INT_KEEP_DAEMON:-0}" != 1 ]; then
        on_exit "stop_docker_daemon"
    else
        # The log lives in the scratch dir, which is removed; keep a copy.
        on_exit "cp '$log' /var/tmp/spillway-int-dockerd.log"
    fi
    local i
    for ((i = 0; i < 60; i++)); do
        dk info >/dev/null 2>&1 && return 0
        kill -0 "$DOCKERD_PID" 2>/dev/null || die "dockerd exited at start-up: $(tail -n 1 "$log")"
        sleep 1
    done
    die "dockerd did not answer within 60 s; see $log"
}

stop_docker_daemon() {
    [ -n "${DOCKERD_PID:-}" ] || return 0
    kill -TERM "$DOCKERD_PID" 2>/dev/null || return 0
    local i
    for ((i = 0; i < 40; i++)); do
        kill -0 "$DOCKERD_PID" 2>/dev/null || return 0
        sleep 0.5
    done
    say "dockerd (pid $DOCKERD_PID) did not stop within 20 s; stop it by hand"
}
