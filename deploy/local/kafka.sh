#!/usr/bin/env bash
# deploy/local/kafka.sh — run a real single-node Apache Kafka broker (KRaft mode,
# combined broker+controller) on the loopback interface, for local development
# and integration tests.
#
# Usage: deploy/local/kafka.sh start|stop|restart|status|reset|logs
#
#   start    fetch the broker jars with Maven on first use (cached afterwards),
#            format storage if needed, start the broker in the background and
#            wait until it serves requests. The bootstrap address
#            (e.g. 127.0.0.1:9092) is printed on stdout as the LAST line.
#            Idempotent: if the broker is already running it only prints it.
#   stop     SIGTERM, wait up to KAFKA_STOP_TIMEOUT s, then SIGKILL. Idempotent.
#   status   prints "running" (exit 0) or "stopped" (exit 3).
#   restart  stop + start.
#   reset    stop and delete the data dir (topics, offsets, logs).
#   logs     print the path of the broker's server.log.
#
# Environment (all optional):
#   KAFKA_VERSION          org.apache.kafka:kafka_2.13 version   (default 4.1.2)
#   KAFKA_HOST             listener host                         (default 127.0.0.1)
#   KAFKA_PORT             client (PLAINTEXT) port               (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port                 (default KAFKA_PORT+1 = 9093)
#   KAFKA_CACHE_DIR        jar cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/neardup-stream/kafka)
#   KAFKA_DATA_DIR         data + logs (default ${TMPDIR:-/tmp}/neardup-kafka-$KAFKA_PORT)
#   KAFKA_HEAP_OPTS        JVM heap flags                        (default -Xms256m -Xmx512m)
#   KAFKA_START_TIMEOUT    seconds to wait for readiness         (default 90)
#   KAFKA_STOP_TIMEOUT     seconds to wait before SIGKILL        (default 30)
#   KAFKA_LOG4J2_VERSION   log4j2 backend for Kafka 4.x          (default 2.25.3, as Kafka 4.1.2)
#   JAVA_HOME / MVN        java installation / maven executable
#
# Script diagnostics go to stderr; only the bootstrap address (start) and the
# status word (status) go to stdout.
set -euo pipefail

readonly SCALA_BINARY_VERSION="2.13"
readonly DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

KAFKA_VERSION="${KAFKA_VERSION:-4.1.2}"
KAFKA_HOST="${KAFKA_HOST:-127.0.0.1}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
# Controller port defaults to client port + 1 (9093 for 9092), so brokers on
# different KAFKA_PORTs never collide on the controller port.
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
KAFKA_CACHE_DIR="${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/neardup-stream/kafka}"
KAFKA_DATA_DIR="${KAFKA_DATA_DIR:-${TMPDIR:-/tmp}/neardup-kafka-$KAFKA_PORT}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
MVN="${MVN:-mvn}"
if [[ -n "${JAVA_HOME:-}" ]]; then
    JAVA="$JAVA_HOME/bin/java"
else
    JAVA="java"
fi

KAFKA_MAJOR="${KAFKA_VERSION%%.*}"
VERSION_DIR="$KAFKA_CACHE_DIR/$KAFKA_VERSION"
LIBS_DIR="$VERSION_DIR/libs"
LIBS_MARKER="$VERSION_DIR/.libs-complete"
CONF_DIR="$KAFKA_DATA_DIR/config"
STORAGE_DIR="$KAFKA_DATA_DIR/kraft-logs"
LOG_DIR="$KAFKA_DATA_DIR/logs"
PID_FILE="$KAFKA_DATA_DIR/kafka.pid"
SERVER_PROPERTIES="$CONF_DIR/server.properties"
BOOTSTRAP="$KAFKA_HOST:$KAFKA_PORT"

log() { printf '[kafka.sh] %s\n' "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
}

# --- locking ---------------------------------------------------------------
# Serialise concurrent invocations (e.g. two pytest sessions starting at once).
# flock(1) is util-linux; without it we simply run unlocked.
take_lock() { # $1 = lock file, $2 = fd
    if command -v flock >/dev/null 2>&1; then
        mkdir -p "$(dirname "$1")"
        eval "exec $2>\"\$1\""
        if ! flock -w 180 "$2"; then
            die "timed out waiting for lock $1"
        fi
    fi
}

# --- jars --------------------------------------------------------------------
write_pom() { # $1 = pom path
    local logging_deps
    if ((KAFKA_MAJOR >= 4)); then
        # Kafka 4 logs through slf4j 1.7 -> log4j2; log4j-core/log4j-api already
        # come with kafka-server, the slf4j binding does not.
        # shellcheck disable=SC2016 # ${log4j2.version} is a Maven property
        logging_deps='
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>${log4j2.version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>${log4j2.version}</version>
    </dependency>'
    else
        # Kafka 3.x: slf4j 1.7 -> reload4j (log4j 1.2 API), as in the binary dist.
        logging_deps='
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>1.7.36</version>
    </dependency>'
    fi
    cat >"$1" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by deploy/local/kafka.sh: only used to fetch the broker jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.neardup-stream</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>$KAFKA_VERSION</version>
  <packaging>pom</packaging>
  <properties>
    <log4j2.version>${KAFKA_LOG4J2_VERSION:-2.25.3}</log4j2.version>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_$SCALA_BINARY_VERSION</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>$logging_deps
  </dependencies>
</project>
EOF
}

ensure_libs() {
    if [[ -f "$LIBS_MARKER" ]]; then
        return 0
    fi
    take_lock "$KAFKA_CACHE_DIR/.fetch.lock" 8
    if [[ -f "$LIBS_MARKER" ]]; then # another process fetched it meanwhile
        return 0
    fi
    command -v "$MVN" >/dev/null 2>&1 ||
        die "Maven ('$MVN') is needed to fetch Kafka $KAFKA_VERSION jars into $LIBS_DIR"
    log "fetching Kafka $KAFKA_VERSION jars from Maven Central into $LIBS_DIR (first run only)"
    mkdir -p "$VERSION_DIR"
    write_pom "$VERSION_DIR/pom.xml"
    local tmp_libs="$VERSION_DIR/libs.tmp.$$"
    rm -rf "$tmp_libs"
    local mvn_log="$VERSION_DIR/maven.log"
    if ! "$MVN" -B -Dstyle.color=never -f "$VERSION_DIR/pom.xml" \
        "$DEPENDENCY_PLUGIN:copy-dependencies" \
        -DincludeScope=runtime -DoutputDirectory="$tmp_libs" >"$mvn_log" 2>&1; then
        tail -n 40 "$mvn_log" >&2
        rm -rf "$tmp_libs"
        die "maven could not fetch org.apache.kafka:kafka_$SCALA_BINARY_VERSION:$KAFKA_VERSION (full log: $mvn_log)"
    fi
    compgen -G "$tmp_libs/kafka_$SCALA_BINARY_VERSION-$KAFKA_VERSION.jar" >/dev/null ||
        die "kafka_$SCALA_BINARY_VERSION-$KAFKA_VERSION.jar missing after maven run"
    rm -rf "$LIBS_DIR"
    mv "$tmp_libs" "$LIBS_DIR"
    date -u +%Y-%m-%dT%H:%M:%SZ >"$LIBS_MARKER"
    log "cached $(find "$LIBS_DIR" -name '*.jar' | wc -l) jars"
}

check_java() {
    command -v "$JAVA" >/dev/null 2>&1 || die "java not found (set JAVA_HOME)"
    local spec
    spec="$("$JAVA" -XshowSettings:properties -version 2>&1 |
        sed -n 's/^ *java\.specification\.version = //p')"
    spec="${spec#1.}"
    if ((KAFKA_MAJOR >= 4)) && ((${spec:-0} < 17)); then
        die "Kafka $KAFKA_VERSION needs Java 17+, found $spec (or set KAFKA_VERSION=3.9.1)"
    fi
}

# --- config ------------------------------------------------------------------
write_config() {
    mkdir -p "$CONF_DIR" "$STORAGE_DIR" "$LOG_DIR"
    cat >"$SERVER_PROPERTIES" <<EOF
# Generated by deploy/local/kafka.sh — single-node KRaft broker for local use.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$STORAGE_DIR

num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
delete.topic.enable=true

# Internal topics: one replica, few partitions (fast first use on one node).
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1

group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
log.retention.check.interval.ms=30000
EOF
    if ((KAFKA_MAJOR >= 4)); then
        cat >"$CONF_DIR/log4j2.properties" <<'EOF'
# Generated by deploy/local/kafka.sh: broker logs go to files, not the console.
status = warn
name = neardup-kafka
appender.server.type = File
appender.server.name = server
appender.server.fileName = ${sys:kafka.logs.dir}/server.log
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.state.type = File
appender.state.name = state
appender.state.fileName = ${sys:kafka.logs.dir}/state-change.log
appender.state.layout.type = PatternLayout
appender.state.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = server
logger.state.name = state.change.logger
logger.state.level = INFO
logger.state.additivity = false
logger.state.appenderRef.state.ref = state
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
    else
        cat >"$CONF_DIR/log4j.properties" <<'EOF'
# Generated by deploy/local/kafka.sh: broker logs go to files, not the console.
log4j.rootLogger=INFO, server
log4j.appender.server=org.apache.log4j.FileAppender
log4j.appender.server.File=${kafka.logs.dir}/server.log
log4j.appender.server.layout=org.apache.log4j.PatternLayout
log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.state=org.apache.log4j.FileAppender
log4j.appender.state.File=${kafka.logs.dir}/state-change.log
log4j.appender.state.layout=org.apache.log4j.PatternLayout
log4j.appender.state.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=INFO, state
log4j.additivity.state.change.logger=false
log4j.logger.kafka.request.logger=WARN
EOF
    fi
}

jvm_log_opts() {
    if ((KAFKA_MAJOR >= 4)); then
        printf '%s\n' "-Dlog4j2.configurationFile=$CONF_DIR/log4j2.properties"
    else
        printf '%s\n' "-Dlog4j.configuration=file:$CONF_DIR/log4j.properties"
    fi
    printf '%s\n' "-Dkafka.logs.dir=$LOG_DIR"
}

new_cluster_id() {
    # Kafka cluster ids are 16 random bytes, URL-safe base64 without padding.
    head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'
}

format_storage() {
    if [[ -f "$STORAGE_DIR/meta.properties" ]]; then
        return 0
    fi
    local cluster_id log_opts
    cluster_id="$(new_cluster_id)"
    mapfile -t log_opts < <(jvm_log_opts)
    log "formatting KRaft storage in $STORAGE_DIR (cluster id $cluster_id)"
    if ! "$JAVA" -Xmx256m "${log_opts[@]}" -cp "$LIBS_DIR/*" kafka.tools.StorageTool \
        format --ignore-formatted -t "$cluster_id" -c "$SERVER_PROPERTIES" \
        >"$LOG_DIR/storage-format.log" 2>&1; then
        cat "$LOG_DIR/storage-format.log" >&2
        die "kafka-storage format failed"
    fi
}

# --- process management ------------------------------------------------------
broker_pid() { # prints the pid and returns 0 iff our broker is alive
    [[ -f "$PID_FILE" ]] || return 1
    local pid
    pid="$(<"$PID_FILE")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    # Guard against pid reuse: the process must be a kafka.Kafka using our config.
    if [[ -r "/proc/$pid/cmdline" ]]; then
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$SERVER_PROPERTIES" || return 1
    fi
    printf '%s\n' "$pid"
}

port_open() { # $1 = port
    (exec 3<>"/dev/tcp/$KAFKA_HOST/$1") 2>/dev/null
}

show_log_tail() {
    local f
    for f in "$LOG_DIR/kafka.out" "$LOG_DIR/server.log"; do
        if [[ -s "$f" ]]; then
            log "---- last lines of $f ----"
            tail -n 40 "$f" >&2
        fi
    done
}

cmd_start() {
    take_lock "$KAFKA_DATA_DIR/.lock" 9
    if broker_pid >/dev/null; then
        log "already running (pid $(broker_pid)), data in $KAFKA_DATA_DIR"
        printf '%s\n' "$BOOTSTRAP"
        return 0
    fi
    rm -f "$PID_FILE"
    local p
    for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
        if port_open "$p"; then
            die "port $KAFKA_HOST:$p is already in use by another process (set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
        fi
    done

    check_java
    ensure_libs
    write_config
    # Keep the previous run's logs one generation back; the readiness check
    # below greps the fresh server.log.
    local f
    for f in kafka.out server.log state-change.log; do
        if [[ -f "$LOG_DIR/$f" ]]; then
            mv -f "$LOG_DIR/$f" "$LOG_DIR/$f.prev"
        fi
    done
    format_storage

    local -a log_opts jvm_opts heap_opts launcher=()
    mapfile -t log_opts < <(jvm_log_opts)
    read -r -a heap_opts <<<"$KAFKA_HEAP_OPTS"
    jvm_opts=(
        "${heap_opts[@]}"
        -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
        -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
        "${log_opts[@]}"
    )
    # setsid: detach from our process group so a Ctrl-C in the caller's
    # terminal does not take the broker down half-way. The inner shell writes
    # its own pid before exec'ing java, so the pid file is the JVM's pid.
    if command -v setsid >/dev/null 2>&1; then
        launcher=(setsid)
    fi
    log "starting Kafka $KAFKA_VERSION on $BOOTSTRAP (controller :$KAFKA_CONTROLLER_PORT), data in $KAFKA_DATA_DIR"
    # shellcheck disable=SC2016 # $$/$1 are expanded by the inner shell
    "${launcher[@]}" bash -c 'echo $$ >"$1"; shift; exec "$@"' kafka-launch "$PID_FILE" \
        "$JAVA" "${jvm_opts[@]}" -cp "$LIBS_DIR/*" kafka.Kafka "$SERVER_PROPERTIES" \
        </dev/null >"$LOG_DIR/kafka.out" 2>&1 8>&- 9>&- &

    local deadline=$((SECONDS + KAFKA_START_TIMEOUT))
    while ((SECONDS < deadline)); do
        if [[ -s "$PID_FILE" ]] && ! broker_pid >/dev/null; then
            show_log_tail
            die "broker exited during startup"
        fi
        # Ready = client port accepts connections AND the server finished
        # startup (in KRaft this happens after the broker is unfenced).
        if port_open "$KAFKA_PORT" &&
            grep -q 'Kafka Server started' "$LOG_DIR/server.log" 2>/dev/null; then
            log "ready after $((SECONDS - deadline + KAFKA_START_TIMEOUT)) s (pid $(broker_pid)); logs in $LOG_DIR"
            printf '%s\n' "$BOOTSTRAP"
            return 0
        fi
        sleep 0.5
    done
    show_log_tail
    log "broker not ready after $KAFKA_START_TIMEOUT s, stopping it"
    stop_broker || true
    die "Kafka failed to start"
}

stop_broker() {
    local pid
    if ! pid="$(broker_pid)"; then
        rm -f "$PID_FILE"
        log "not running"
        return 0
    fi
    log "stopping broker (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + KAFKA_STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            log "still alive after $KAFKA_STOP_TIMEOUT s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
            break
        fi
        sleep 0.2
    done
    rm -f "$PID_FILE"
    log "stopped"
}

cmd_stop() {
    take_lock "$KAFKA_DATA_DIR/.lock" 9
    stop_broker
}

cmd_status() {
    local pid
    if pid="$(broker_pid)"; then
        log "Kafka broker pid $pid on $BOOTSTRAP, data in $KAFKA_DATA_DIR"
        echo "running"
        return 0
    fi
    echo "stopped"
    return 3
}

cmd_reset() {
    take_lock "$KAFKA_DATA_DIR/.lock" 9
    stop_broker
    case "$KAFKA_DATA_DIR" in
    "" | "/" | "$HOME" | "$HOME/") die "refusing to delete KAFKA_DATA_DIR='$KAFKA_DATA_DIR'" ;;
    esac
    log "deleting $KAFKA_DATA_DIR"
    rm -rf "$KAFKA_DATA_DIR"
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
    status) cmd_status ;;
    reset) cmd_reset ;;
    logs) printf '%s\n' "$LOG_DIR/server.log" ;;
    -h | --help | help) usage ;;
    *)
        usage
        exit 2
        ;;
    esac
}

main "$@"
