#!/usr/bin/env bash
# deploy/local/kafka.sh — run a real single-node Apache Kafka broker (KRaft mode,
# combined broker+controller) on the loopback interface, for local development
# and integration tests; plain (PLAINTEXT) or secured (SASL_SSL, SCRAM-SHA-512).
#
# Usage: deploy/local/kafka.sh start|stop|restart|status|reset|logs|client-env
#
#   start    fetch the broker jars with Maven on first use (cached afterwards),
#            format storage if needed, start the broker in the background and
#            wait until it serves requests. The bootstrap address
#            (e.g. 127.0.0.1:9092) is printed on stdout as the LAST line.
#            Idempotent: if this checkout's broker is already running it only
#            prints it. Fails (naming it) if the port is served by a broker of
#            another checkout: it is never reused nor stopped.
#   stop     SIGTERM, wait up to KAFKA_STOP_TIMEOUT s, then SIGKILL. Idempotent.
#            Only ever stops this checkout's broker.
#   status   prints "running" (exit 0) or "stopped" (exit 3).
#   restart  stop + start.
#   reset    stop and delete the data dir (topics, offsets, logs, certificates).
#   logs     print the path of the broker's server.log.
#   client-env
#            (KAFKA_SECURITY=sasl_ssl) print the path of the client settings file
#            (NEARDUP_KAFKA__* lines: bootstrap, protocol, mechanism, user,
#            password, CA file); `set -a; . FILE; set +a` configures a worker.
#
# The broker runs KRaft's StandardAuthorizer with no ACL set (everyone allowed): a test
# adds the ACLs it needs (tests/integration/test_authorization.py).
#
# KAFKA_SECURITY=sasl_ssl: the client listener is SASL_SSL with SCRAM-SHA-512.
# The first start generates a throwaway CA and broker certificate (openssl) and
# random passwords, and creates the SCRAM users when it formats the storage:
# see deploy/local/kafka-sasl-ssl.sh for the files under the data dir
# (client/ca.pem, client/client.env, client/client.properties).
#
# Environment (all optional):
#   KAFKA_VERSION          org.apache.kafka:kafka_2.13 version   (default 4.1.2)
#   KAFKA_HOST             listener host                         (default 127.0.0.1)
#   KAFKA_PORT             client port                           (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port                 (default KAFKA_PORT+1 = 9093)
#   KAFKA_SECURITY         plaintext | sasl_ssl                  (default plaintext)
#   KAFKA_SASL_USERNAME    SCRAM user of the clients (sasl_ssl)  (default neardup)
#   KAFKA_SASL_PASSWORD    its password (sasl_ssl; default random, chosen at first start)
#   KAFKA_CACHE_DIR        jar cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/neardup-stream/kafka)
#   KAFKA_DATA_DIR         data + logs (default ${TMPDIR:-/tmp}/neardup-kafka-$KAFKA_PORT-<checkout>,
#                          <checkout> = 8 hex digits of the SHA-1 of this repository's path)
#   KAFKA_HEAP_OPTS        JVM heap flags                        (default -Xms256m -Xmx512m)
#   KAFKA_START_TIMEOUT    seconds to wait for readiness         (default 90)
#   KAFKA_STOP_TIMEOUT     seconds to wait before SIGKILL        (default 30)
#   KAFKA_EXTRA_PROPERTIES lines appended to server.properties    (default none; e.g. a short
#                          offsets.retention.minutes for the offset-expiry test)
#   KAFKA_LOG4J2_VERSION   log4j2 backend for Kafka 4.x          (default 2.25.3, as Kafka 4.1.2)
#   JAVA_HOME / MVN        java installation / maven executable
#
# Script diagnostics go to stderr; only the bootstrap address (start), the
# status word (status) and paths (logs, client-env) go to stdout.
set -euo pipefail

# shellcheck source=deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly SCALA_BINARY_VERSION="2.13"
readonly DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

KAFKA_VERSION="${KAFKA_VERSION:-4.1.2}"
KAFKA_HOST="${KAFKA_HOST:-127.0.0.1}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
# Controller port defaults to client port + 1 (9093 for 9092), so brokers on
# different KAFKA_PORTs never collide on the controller port.
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
KAFKA_SECURITY="${KAFKA_SECURITY:-plaintext}"
KAFKA_CACHE_DIR="${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/neardup-stream/kafka}"
KAFKA_DATA_DIR="${KAFKA_DATA_DIR:-${TMPDIR:-/tmp}/neardup-kafka-$KAFKA_PORT-$LIB_CHECKOUT_ID}"
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
SERVER_PROPERTIES="$CONF_DIR/server.properties"
# What the data dir was formatted for; a different KAFKA_SECURITY is refused.
SECURITY_FILE="$KAFKA_DATA_DIR/security"
BOOTSTRAP="$KAFKA_HOST:$KAFKA_PORT"

SVC_NAME="kafka.sh"
SVC_WHAT="Kafka broker"
SVC_PID_FILE="$KAFKA_DATA_DIR/kafka.pid"
SVC_CMD_MARK="$SERVER_PROPERTIES"
SVC_DATA_DIR="$KAFKA_DATA_DIR"
SVC_LOG_FILES=("$LOG_DIR/kafka.out" "$LOG_DIR/server.log" "$LOG_DIR/state-change.log")
SVC_STOP_TIMEOUT="$KAFKA_STOP_TIMEOUT"

case "$KAFKA_SECURITY" in
plaintext) ;;
sasl_ssl)
    # shellcheck source=deploy/local/kafka-sasl-ssl.sh
    source "$(dirname "${BASH_SOURCE[0]}")/kafka-sasl-ssl.sh"
    ;;
*) die "KAFKA_SECURITY must be plaintext or sasl_ssl, not '$KAFKA_SECURITY'" ;;
esac

security_id() { # what the data dir is formatted for: the mode (and SCRAM user)
    if [[ "$KAFKA_SECURITY" == sasl_ssl ]]; then
        printf 'sasl_ssl user=%s\n' "$KAFKA_SASL_USERNAME"
    else
        printf 'plaintext\n'
    fi
}

check_security_matches() { # settings are inputs: never mix a data dir's mode with another
    [[ -f "$SECURITY_FILE" ]] || return 0
    local formatted
    formatted="$(<"$SECURITY_FILE")"
    if [[ "$formatted" != "$(security_id)" ]]; then
        die "the broker data in $KAFKA_DATA_DIR was made with KAFKA_SECURITY/KAFKA_SASL_USERNAME" \
            "'$formatted', not '$(security_id)': use another KAFKA_PORT/KAFKA_DATA_DIR or '$0 reset'"
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
listener_properties() { # the client listener: PLAINTEXT, or SASL_SSL (kafka-sasl-ssl.sh)
    if [[ "$KAFKA_SECURITY" == sasl_ssl ]]; then
        security_properties
        return 0
    fi
    cat <<EOF
listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
EOF
}

write_config() {
    mkdir -p "$CONF_DIR" "$STORAGE_DIR" "$LOG_DIR"
    # The file may hold the inter-broker user's password (sasl_ssl): only we read it.
    (umask 077 && : >"$SERVER_PROPERTIES")
    cat >"$SERVER_PROPERTIES" <<EOF
# Generated by deploy/local/kafka.sh — single-node KRaft broker for local use.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
$(listener_properties)
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

# ACLs (KRaft's StandardAuthorizer): none are set, so everyone may do everything; a test
# denies what it needs to (tests/integration/test_authorization.py).
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=true

group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
log.retention.check.interval.ms=30000
${KAFKA_EXTRA_PROPERTIES:-}
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
    # Kafka cluster ids are 16 random bytes, URL-safe base64 without padding. Like Kafka's
    # own Uuid.randomUuid, never one that starts with '-': the storage tool would read it as
    # an option ("argument --cluster-id/-t: expected one argument").
    local id
    while :; do
        id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
        [[ "$id" != -* ]] && break
    done
    printf '%s\n' "$id"
}

format_storage() {
    if [[ -f "$STORAGE_DIR/meta.properties" ]]; then
        return 0
    fi
    local cluster_id log_opts scram_args=()
    cluster_id="$(new_cluster_id)"
    mapfile -t log_opts < <(jvm_log_opts)
    if [[ "$KAFKA_SECURITY" == sasl_ssl ]]; then
        mapfile -t scram_args < <(scram_format_args)
    fi
    log "formatting KRaft storage in $STORAGE_DIR (cluster id $cluster_id)"
    if ! "$JAVA" -Xmx256m "${log_opts[@]}" -cp "$LIBS_DIR/*" kafka.tools.StorageTool \
        format --ignore-formatted -t "$cluster_id" -c "$SERVER_PROPERTIES" "${scram_args[@]}" \
        >"$LOG_DIR/storage-format.log" 2>&1; then
        cat "$LOG_DIR/storage-format.log" >&2
        die "kafka-storage format failed"
    fi
}

# --- who serves a port ---------------------------------------------------------
port_owner() { # $1 = port; describes the local kafka.Kafka process listening there, if any
    local cmdline props dir owner p
    for p in /proc/[0-9]*; do
        [[ -r "$p/cmdline" ]] || continue
        cmdline="$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null)" || continue
        grep -qx 'kafka.Kafka' <<<"$cmdline" || continue
        props="$(tail -n 1 <<<"$cmdline")"
        [[ -r "$props" ]] || continue
        grep -Eq "^listeners=.*:$1(,|\$)" "$props" || continue
        dir="$(dirname "$(dirname "$props")")"
        if [[ ! -f "$dir/$LIB_OWNER_FILE_NAME" ]]; then
            owner="an older kafka.sh (no checkout recorded)"
        elif [[ "$(<"$dir/$LIB_OWNER_FILE_NAME")" == "$LIB_REPO_ROOT" ]]; then
            owner="this checkout, started with another KAFKA_DATA_DIR"
        else
            owner="the checkout $(<"$dir/$LIB_OWNER_FILE_NAME"), not this one ($LIB_REPO_ROOT)"
        fi
        printf 'a Kafka broker (pid %s, data dir %s) of %s\n' "${p#/proc/}" "$dir" "$owner"
        return 0
    done
    return 1
}

refuse_taken_ports() {
    local p who
    for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
        port_open "$KAFKA_HOST" "$p" || continue
        if who="$(port_owner "$p")"; then
            die "port $KAFKA_HOST:$p is served by $who; it is left alone (not reused, not" \
                "stopped): use it with KAFKA_BOOTSTRAP_SERVERS, stop it from its checkout with" \
                "its KAFKA_DATA_DIR, or set another KAFKA_PORT"
        fi
        die "port $KAFKA_HOST:$p is already in use by another process (set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
    done
}

broker_ready() { # the client port accepts connections AND the server finished startup
    port_open "$KAFKA_HOST" "$KAFKA_PORT" &&
        grep -q 'Kafka Server started' "$LOG_DIR/server.log" 2>/dev/null
}

# --- commands ----------------------------------------------------------------
cmd_start() {
    take_lock "$KAFKA_DATA_DIR/.lock" 9
    check_data_dir_owner
    check_security_matches
    if svc_pid >/dev/null; then
        log "already running (pid $(svc_pid)), data in $KAFKA_DATA_DIR"
        printf '%s\n' "$BOOTSTRAP"
        return 0
    fi
    rm -f "$SVC_PID_FILE"
    refuse_taken_ports

    check_java
    ensure_libs
    claim_data_dir
    if [[ "$KAFKA_SECURITY" == sasl_ssl ]]; then
        ensure_security_material
    fi
    write_config
    svc_rotate_logs
    format_storage
    security_id >"$SECURITY_FILE"

    local -a log_opts jvm_opts heap_opts
    mapfile -t log_opts < <(jvm_log_opts)
    read -r -a heap_opts <<<"$KAFKA_HEAP_OPTS"
    jvm_opts=(
        "${heap_opts[@]}"
        -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
        -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
        "${log_opts[@]}"
    )
    log "starting Kafka $KAFKA_VERSION ($KAFKA_SECURITY) on $BOOTSTRAP (controller :$KAFKA_CONTROLLER_PORT), data in $KAFKA_DATA_DIR"
    svc_launch "$LOG_DIR/kafka.out" \
        "$JAVA" "${jvm_opts[@]}" -cp "$LIBS_DIR/*" kafka.Kafka "$SERVER_PROPERTIES"
    svc_wait_ready "$KAFKA_START_TIMEOUT" broker_ready
    log "logs in $LOG_DIR"
    if [[ "$KAFKA_SECURITY" == sasl_ssl ]]; then
        log "SASL_SSL ($SASL_MECHANISM) user '$KAFKA_SASL_USERNAME'; client CA $CLIENT_CA;" \
            "client settings (with the password) in $CLIENT_ENV"
    fi
    printf '%s\n' "$BOOTSTRAP"
}

cmd_stop() {
    take_lock "$KAFKA_DATA_DIR/.lock" 9
    check_data_dir_owner
    svc_stop
}

cmd_reset() {
    take_lock "$KAFKA_DATA_DIR/.lock" 9
    check_data_dir_owner
    svc_reset
}

cmd_client_env() {
    [[ "$KAFKA_SECURITY" == sasl_ssl ]] || die "client-env needs KAFKA_SECURITY=sasl_ssl"
    [[ -f "$CLIENT_ENV" ]] || die "$CLIENT_ENV does not exist yet: run '$0 start' first"
    printf '%s\n' "$CLIENT_ENV"
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
    status) svc_status "$BOOTSTRAP" ;;
    reset) cmd_reset ;;
    logs) printf '%s\n' "$LOG_DIR/server.log" ;;
    client-env) cmd_client_env ;;
    -h | --help | help) usage ;;
    *)
        usage
        exit 2
        ;;
    esac
}

main "$@"
