#!/usr/bin/env bash
# Start or stop the three nodes of server-1/2/3.properties on this machine.
#
#   ./run.sh start    fetch Apache Kafka with Maven (once), format each node's storage (once),
#                     start the nodes and wait until each one accepts clients
#   ./run.sh stop     stop them (SIGTERM: each node shuts down cleanly), wait until they are gone
#
# Everything the nodes write goes under $DATA_DIR (default: ./data next to this script): the jars
# (libs/), the cluster id, each node's log directory (kafka-N/), its console log and its pid.
# Needs java (17 or later) and mvn on PATH. $KAFKA_HEAP_MB sets each node's heap (default 512).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
data=${DATA_DIR:-$here/data}
heap=${KAFKA_HEAP_MB:-512}
nodes=(1 2 3)

client_port() { sed -n 's/^advertised.listeners=PLAINTEXT:\/\/[^:]*:\([0-9]*\).*/\1/p' "$here/server-$1.properties"; }

start() {
    mkdir -p "$data"
    cd "$data"
    if [ ! -d libs ]; then
        rm -rf libs.partial
        if ! mvn -B -f "$here/pom.xml" dependency:copy-dependencies \
            -DoutputDirectory="$data/libs.partial" -DincludeScope=runtime > mvn.log 2>&1; then
            echo "mvn could not fetch Apache Kafka: see $data/mvn.log" >&2
            exit 1
        fi
        mv libs.partial libs
    fi
    java_cmd=(java "-Xms$((heap / 2))m" "-Xmx${heap}m" -cp "$data/libs/*")
    [ -f cluster-id ] || "${java_cmd[@]}" kafka.tools.StorageTool random-uuid > cluster-id
    for n in "${nodes[@]}"; do
        if [ ! -f "kafka-$n/meta.properties" ]; then
            "${java_cmd[@]}" kafka.tools.StorageTool format -t "$(cat cluster-id)" \
                -c "$here/server-$n.properties" > "kafka-$n.format.log"
        fi
        if [ -f "kafka-$n.pid" ] && kill -0 "$(cat "kafka-$n.pid")" 2> /dev/null; then
            echo "node $n is already running (pid $(cat "kafka-$n.pid"))"
            continue
        fi
        nohup "${java_cmd[@]}" -Dkafka.logs.dir="$data/kafka-$n.logs" kafka.Kafka \
            "$here/server-$n.properties" > "kafka-$n.console.log" 2>&1 &
        echo $! > "kafka-$n.pid"
    done
    for n in "${nodes[@]}"; do
        port=$(client_port "$n")
        for _ in $(seq 1 240); do
            if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
                echo "node $n accepts clients on 127.0.0.1:$port"
                continue 2
            fi
            kill -0 "$(cat "kafka-$n.pid")" 2> /dev/null || { echo "node $n exited: see $data/kafka-$n.console.log" >&2; exit 1; }
            sleep 0.5
        done
        echo "node $n did not open 127.0.0.1:$port within 120 s: see $data/kafka-$n.console.log" >&2
        exit 1
    done
}

stop() {
    # Every node at once: stopped one by one, the last ones would wait for a controller quorum
    # that is already gone.
    pids=()
    for n in "${nodes[@]}"; do
        pid_file="$data/kafka-$n.pid"
        [ -f "$pid_file" ] || continue
        pid=$(cat "$pid_file")
        kill "$pid" 2> /dev/null || true
        pids+=("$n:$pid")
    done
    for entry in "${pids[@]}"; do
        n=${entry%%:*} pid=${entry#*:}
        for _ in $(seq 1 120); do
            kill -0 "$pid" 2> /dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2> /dev/null; then
            echo "node $n did not stop within 60 s: killing it" >&2
            kill -9 "$pid" 2> /dev/null || true
        fi
        rm -f "$data/kafka-$n.pid"
        echo "node $n stopped"
    done
}

case ${1:-} in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
