#!/usr/bin/env bash
# deploy/local/prometheus.sh — run a real Prometheus (Debian's `prometheus` package) on the
# loopback interface, scraping the targets listed in a file, with the project's alert rules;
# for local development and integration tests.
#
# Usage: deploy/local/prometheus.sh start|stop|restart|status|reset|install|logs|targets
#
#   start    install the package if it is missing (as root, with apt-get), write the config,
#            check it with promtool, start Prometheus in the background and wait until
#            /-/ready answers 200. The base URL (e.g. http://127.0.0.1:9090) is printed on
#            stdout as the LAST line. Idempotent: if it is already running it only prints it.
#   stop     SIGTERM, wait up to PROM_STOP_TIMEOUT s, then SIGKILL. Idempotent.
#   status   prints "running" (exit 0) or "stopped" (exit 3).
#   restart  stop + start.
#   reset    stop and delete the data dir (TSDB, config, logs).
#   install  only make sure `prometheus` and `promtool` are installed (exit 4 if they are
#            missing and cannot be installed here).
#   logs     print the path of Prometheus' log file.
#   targets HOST:PORT...
#            replace the scrape targets (the file_sd file); Prometheus picks the change up
#            without a restart. No argument: no targets.
#
# Scrape targets come from PROM_TARGETS_FILE, a file_sd JSON file:
#   [{"targets": ["127.0.0.1:9108"], "labels": {"test": "x"}}]
# Tests rewrite it (atomically) to point Prometheus at the worker they start.
#
# Environment (all optional):
#   PROM_HOST              listen address                        (default 127.0.0.1)
#   PROM_PORT              listen port                           (default 9090)
#   PROM_DATA_DIR          config, TSDB and logs
#                          (default ${TMPDIR:-/tmp}/neardup-prometheus-$PROM_PORT-<checkout>, as kafka.sh)
#   PROM_TARGETS_FILE      file_sd targets (default $PROM_DATA_DIR/targets.json; `[]` if absent)
#   PROM_RULE_FILES        space-separated rule files (default deploy/prometheus/alerts.yml)
#   PROM_SCRAPE_INTERVAL   scrape and rule evaluation interval   (default 1s)
#   PROM_JOB               job label of the scraped targets      (default neardup-worker)
#   PROM_RETENTION         TSDB retention                        (default 1d)
#   PROM_START_TIMEOUT     seconds to wait for readiness         (default 60)
#   PROM_STOP_TIMEOUT      seconds to wait before SIGKILL        (default 30)
#   PROMETHEUS / PROMTOOL  executables                           (default from PATH)
#
# The Debian package also installs a system service on port 9090; install keeps it from
# being started (policy-rc.d) and stops it if the package started it anyway. This script's
# Prometheus runs as the calling user, on its own port and data dir.
#
# Script diagnostics go to stderr; only the base URL (start), the status word (status) and
# paths (logs) go to stdout.
set -euo pipefail

# shellcheck source=deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO_ROOT="$LIB_REPO_ROOT"
PROM_HOST="${PROM_HOST:-127.0.0.1}"
PROM_PORT="${PROM_PORT:-9090}"
PROM_DATA_DIR="${PROM_DATA_DIR:-${TMPDIR:-/tmp}/neardup-prometheus-$PROM_PORT-$LIB_CHECKOUT_ID}"
PROM_TARGETS_FILE="${PROM_TARGETS_FILE:-$PROM_DATA_DIR/targets.json}"
PROM_RULE_FILES="${PROM_RULE_FILES:-$REPO_ROOT/deploy/prometheus/alerts.yml}"
PROM_SCRAPE_INTERVAL="${PROM_SCRAPE_INTERVAL:-1s}"
PROM_JOB="${PROM_JOB:-neardup-worker}"
PROM_RETENTION="${PROM_RETENTION:-1d}"
PROM_START_TIMEOUT="${PROM_START_TIMEOUT:-60}"
PROM_STOP_TIMEOUT="${PROM_STOP_TIMEOUT:-30}"
PROMETHEUS="${PROMETHEUS:-prometheus}"
PROMTOOL="${PROMTOOL:-promtool}"

CONFIG_FILE="$PROM_DATA_DIR/prometheus.yml"
TSDB_DIR="$PROM_DATA_DIR/tsdb"
LOG_FILE="$PROM_DATA_DIR/prometheus.log"
PID_FILE="$PROM_DATA_DIR/prometheus.pid"
BASE_URL="http://$PROM_HOST:$PROM_PORT"
# Exit status of `install` (and `start`) when the binaries are missing and cannot be
# installed here; the pytest fixture tells this apart from a failed start.
readonly EXIT_NOT_INSTALLED=4

SVC_NAME="prometheus.sh"
SVC_WHAT="Prometheus"
SVC_PID_FILE="$PID_FILE"
SVC_CMD_MARK="--config.file=$CONFIG_FILE"
SVC_DATA_DIR="$PROM_DATA_DIR"
SVC_LOG_FILES=("$LOG_FILE")
SVC_STOP_TIMEOUT="$PROM_STOP_TIMEOUT"

# --- installation --------------------------------------------------------------
installed() {
    command -v "$PROMETHEUS" >/dev/null 2>&1 && command -v "$PROMTOOL" >/dev/null 2>&1
}

apt_install_prometheus() {
    local policy=/usr/sbin/policy-rc.d created_policy=0 was_active=0
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
        was_active=1
    fi
    # Keep the package's maintainer scripts from starting the system service on :9090.
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\n# neardup-stream prometheus.sh: no service starts during install\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        created_policy=1
    fi
    local rc=0
    (
        export DEBIAN_FRONTEND=noninteractive
        local policy_out # no pipe into grep -q: under pipefail its early exit reads as failure
        policy_out="$(apt-cache policy prometheus 2>/dev/null || true)"
        if [[ "$policy_out" != *"Candidate: "[0-9]* ]]; then
            log "apt-get update (the package index does not know prometheus yet)"
            apt-get update -qq
        fi
        log "apt-get install prometheus (Debian's package; ships promtool)"
        apt-get install -y -qq --no-install-recommends prometheus >&2
    ) || rc=$?
    if ((created_policy)); then
        rm -f "$policy"
    fi
    if ((!was_active)) && command -v systemctl >/dev/null 2>&1 &&
        systemctl is-active --quiet prometheus 2>/dev/null; then
        log "stopping the system prometheus service the package started"
        systemctl stop prometheus || true
    fi
    return "$rc"
}

ensure_installed() {
    if installed; then
        return 0
    fi
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        take_lock "${TMPDIR:-/tmp}/neardup-prometheus-install.lock" 7 300
        if ! installed; then
            apt_install_prometheus || die "apt-get install prometheus failed"
        fi
        exec 7>&-
        installed && return 0
    fi
    log "ERROR: '$PROMETHEUS' and '$PROMTOOL' are needed: install Debian's prometheus package" \
        "(sudo apt-get install --no-install-recommends prometheus) or set PROMETHEUS/PROMTOOL"
    exit "$EXIT_NOT_INSTALLED"
}

# --- config ------------------------------------------------------------------
write_targets() { # $@ = host:port targets; atomic, so Prometheus never reads half a file
    mkdir -p "$(dirname "$PROM_TARGETS_FILE")"
    local tmp="$PROM_TARGETS_FILE.tmp.$$" list="" t
    for t in "$@"; do
        list+="${list:+, }\"$t\""
    done
    if (($#)); then
        printf '[{"targets": [%s]}]\n' "$list" >"$tmp"
    else
        printf '[]\n' >"$tmp"
    fi
    mv -f "$tmp" "$PROM_TARGETS_FILE"
}

write_config() {
    mkdir -p "$PROM_DATA_DIR" "$TSDB_DIR"
    if [[ ! -f "$PROM_TARGETS_FILE" ]]; then
        write_targets
    fi
    local rules="" f
    for f in $PROM_RULE_FILES; do
        [[ -f "$f" ]] || die "rule file $f not found"
        rules+="  - $(cd "$(dirname "$f")" && pwd)/$(basename "$f")"$'\n'
    done
    cat >"$CONFIG_FILE" <<EOF
# Generated by deploy/local/prometheus.sh — local Prometheus for development and tests.
global:
  scrape_interval: $PROM_SCRAPE_INTERVAL
  scrape_timeout: $PROM_SCRAPE_INTERVAL
  evaluation_interval: $PROM_SCRAPE_INTERVAL

rule_files:
${rules:-  []}
scrape_configs:
  - job_name: $PROM_JOB
    metrics_path: /metrics
    file_sd_configs:
      # Watched with inotify; the refresh is a fallback.
      - files: ["$PROM_TARGETS_FILE"]
        refresh_interval: 5s
EOF
    if ! "$PROMTOOL" check config "$CONFIG_FILE" >"$PROM_DATA_DIR/check-config.log" 2>&1; then
        cat "$PROM_DATA_DIR/check-config.log" >&2
        die "promtool check config $CONFIG_FILE failed"
    fi
}

# --- process management ------------------------------------------------------
http_status() { # $1 = path; prints the HTTP status code (no curl needed)
    (
        exec 3<>"/dev/tcp/$PROM_HOST/$PROM_PORT" || exit 1
        printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\n\r\n' "$1" "$PROM_HOST" "$PROM_PORT" >&3
        local line
        IFS= read -r -t 5 line <&3 || exit 1
        line="${line#HTTP/* }"
        printf '%s\n' "${line%% *}"
    ) 2>/dev/null
}

prometheus_ready() { [[ "$(http_status /-/ready || true)" == 200 ]]; }

cmd_start() {
    ensure_installed
    take_lock "$PROM_DATA_DIR/.lock" 9 300
    check_data_dir_owner
    if svc_pid >/dev/null; then
        log "already running (pid $(svc_pid)), data in $PROM_DATA_DIR"
        printf '%s\n' "$BASE_URL"
        return 0
    fi
    rm -f "$PID_FILE"
    if port_open "$PROM_HOST" "$PROM_PORT"; then
        die "port $PROM_HOST:$PROM_PORT is already in use by another process (set PROM_PORT)"
    fi
    claim_data_dir
    write_config
    svc_rotate_logs

    log "starting $("$PROMETHEUS" --version 2>&1 | head -n 1) on $BASE_URL, data in $PROM_DATA_DIR"
    svc_launch "$LOG_FILE" \
        "$PROMETHEUS" \
        "--config.file=$CONFIG_FILE" \
        "--storage.tsdb.path=$TSDB_DIR" \
        "--storage.tsdb.retention.time=$PROM_RETENTION" \
        "--web.listen-address=$PROM_HOST:$PROM_PORT" \
        "--web.enable-lifecycle"
    svc_wait_ready "$PROM_START_TIMEOUT" prometheus_ready
    log "log in $LOG_FILE"
    printf '%s\n' "$BASE_URL"
}

cmd_stop() {
    take_lock "$PROM_DATA_DIR/.lock" 9 300
    check_data_dir_owner
    svc_stop
}

cmd_reset() {
    take_lock "$PROM_DATA_DIR/.lock" 9 300
    check_data_dir_owner
    svc_reset
}

main() {
    local cmd="${1:-}"
    case "$cmd" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    restart)
        cmd_stop
        cmd_start
        ;;
    status) svc_status "$BASE_URL" ;;
    reset) cmd_reset ;;
    install) ensure_installed ;;
    logs) printf '%s\n' "$LOG_FILE" ;;
    targets)
        shift
        write_targets "$@"
        ;;
    -h | --help | help) usage ;;
    *)
        usage
        exit 2
        ;;
    esac
}

main "$@"
