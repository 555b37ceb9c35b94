# deploy/local/lib.sh — the process-management skeleton shared by kafka.sh and
# prometheus.sh (sourced, never run): logging, usage from the header comment,
# locking, which checkout this is, and one background server's life cycle
# (pid file, launch, wait for readiness, stop with a timeout then SIGKILL,
# status, reset).
#
# The sourcing script sets, before calling the svc_* functions:
#   SVC_NAME      log prefix and process noun, e.g. "kafka.sh" / "broker"
#   SVC_WHAT      what runs, for messages, e.g. "Kafka broker"
#   SVC_PID_FILE  pid file of the server
#   SVC_CMD_MARK  a string the server's command line must contain (guards
#                 against pid reuse: the pid must still be OUR server)
#   SVC_DATA_DIR  the server's data dir (reset deletes it)
#   SVC_LOG_FILES the logs whose tails are shown when a start fails (array)
#   SVC_STOP_TIMEOUT  seconds between SIGTERM and SIGKILL
# shellcheck shell=bash

# The checkout this copy of the scripts belongs to, and a short stable id of it
# (first 8 hex digits of the SHA-1 of its absolute path): default data dirs are
# keyed by it, so two checkouts never share (or stop) each other's servers.
LIB_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
LIB_CHECKOUT_ID="$(printf '%s' "$LIB_REPO_ROOT" | sha1sum | cut -c1-8)"
# The file in a data dir naming the checkout that owns it.
readonly LIB_OWNER_FILE_NAME="checkout"

log() { printf '[%s] %s\n' "$SVC_NAME" "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

usage() { # the calling script's header comment, up to `set -euo`
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
}

# Serialise concurrent invocations (e.g. two pytest sessions starting at once).
# flock(1) is util-linux; without it we simply run unlocked.
take_lock() { # $1 = lock file, $2 = fd, $3 = seconds to wait (default 180)
    if command -v flock >/dev/null 2>&1; then
        mkdir -p "$(dirname "$1")"
        eval "exec $2>\"\$1\""
        if ! flock -w "${3:-180}" "$2"; then
            die "timed out waiting for lock $1"
        fi
    fi
}

port_open() { # $1 = host, $2 = port
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# --- ownership of a data dir ---------------------------------------------------
claim_data_dir() { # record that this checkout owns SVC_DATA_DIR (refuses another's)
    check_data_dir_owner
    mkdir -p "$SVC_DATA_DIR"
    printf '%s\n' "$LIB_REPO_ROOT" >"$SVC_DATA_DIR/$LIB_OWNER_FILE_NAME"
}

check_data_dir_owner() { # dies if SVC_DATA_DIR belongs to another checkout
    local owner_file="$SVC_DATA_DIR/$LIB_OWNER_FILE_NAME" owner
    [[ -f "$owner_file" ]] || return 0
    owner="$(<"$owner_file")"
    if [[ "$owner" != "$LIB_REPO_ROOT" ]]; then
        die "$SVC_DATA_DIR belongs to the checkout $owner, not this one ($LIB_REPO_ROOT);" \
            "manage it from there, or use another data dir/port"
    fi
}

# --- one server's life cycle ---------------------------------------------------------
svc_pid() { # prints the pid and returns 0 iff our server is alive
    [[ -f "$SVC_PID_FILE" ]] || return 1
    local pid
    pid="$(<"$SVC_PID_FILE")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    if [[ -r "/proc/$pid/cmdline" ]]; then
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$SVC_CMD_MARK" || return 1
    fi
    printf '%s\n' "$pid"
}

svc_show_log_tail() {
    local f
    for f in "${SVC_LOG_FILES[@]}"; do
        if [[ -s "$f" ]]; then
            log "---- last lines of $f ----"
            tail -n 40 "$f" >&2
        fi
    done
}

svc_rotate_logs() { # keep the previous run's logs one generation back
    local f
    for f in "${SVC_LOG_FILES[@]}"; do
        if [[ -f "$f" ]]; then
            mv -f "$f" "$f.prev"
        fi
    done
}

# svc_launch OUT_FILE CMD...: run CMD in the background, detached (setsid) so a
# Ctrl-C in the caller's terminal does not reach it, its pid in SVC_PID_FILE,
# stdout+stderr to OUT_FILE. Lock fds 7-9 are not inherited.
svc_launch() {
    local out="$1" launcher=()
    shift
    if command -v setsid >/dev/null 2>&1; then
        launcher=(setsid)
    fi
    # shellcheck disable=SC2016 # $$/$1 are expanded by the inner shell
    "${launcher[@]}" bash -c 'echo $$ >"$1"; shift; exec "$@"' "$SVC_NAME-launch" "$SVC_PID_FILE" \
        "$@" </dev/null >"$out" 2>&1 7>&- 8>&- 9>&- &
}

# svc_wait_ready TIMEOUT READY_FN: poll READY_FN until it succeeds; dies (after
# stopping the server and showing its logs) if the server exits or TIMEOUT passes.
svc_wait_ready() {
    local timeout="$1" ready_fn="$2"
    local deadline=$((SECONDS + timeout))
    while ((SECONDS < deadline)); do
        if [[ -s "$SVC_PID_FILE" ]] && ! svc_pid >/dev/null; then
            svc_show_log_tail
            die "$SVC_WHAT exited during startup"
        fi
        if "$ready_fn"; then
            log "ready after $((SECONDS - deadline + timeout)) s (pid $(svc_pid))"
            return 0
        fi
        sleep 0.3
    done
    svc_show_log_tail
    log "$SVC_WHAT not ready after $timeout s, stopping it"
    svc_stop || true
    die "$SVC_WHAT failed to start"
}

svc_stop() { # SIGTERM, wait up to SVC_STOP_TIMEOUT s, then SIGKILL. Idempotent.
    local pid
    if ! pid="$(svc_pid)"; then
        rm -f "$SVC_PID_FILE"
        log "not running"
        return 0
    fi
    log "stopping $SVC_WHAT (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + SVC_STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            log "still alive after $SVC_STOP_TIMEOUT s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
            break
        fi
        sleep 0.1
    done
    rm -f "$SVC_PID_FILE"
    log "stopped"
}

svc_status() { # $1 = where it serves, for the message; "running" (0) or "stopped" (3)
    local pid
    if pid="$(svc_pid)"; then
        log "$SVC_WHAT pid $pid on $1, data in $SVC_DATA_DIR"
        echo "running"
        return 0
    fi
    echo "stopped"
    return 3
}

svc_reset() { # stop, then delete the data dir
    svc_stop
    case "$SVC_DATA_DIR" in
    "" | "/" | "$HOME" | "$HOME/") die "refusing to delete the data dir '$SVC_DATA_DIR'" ;;
    esac
    log "deleting $SVC_DATA_DIR"
    rm -rf "$SVC_DATA_DIR"
}
