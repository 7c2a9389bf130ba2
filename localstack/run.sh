#!/usr/bin/env bash
# Runs a local Sediment cluster without Docker: MinIO (the bucket), nats-server
# with JetStream (the manifest), then the ingest, compactor and frontend roles
# as separate processes, all on 127.0.0.1. Prints the CQL endpoint once every
# process is ready, then supervises them for failure drills: a process that
# exits is reported and the others go on; `run.sh restart NAME` starts it
# again. Ctrl-C or SIGTERM stops them all, in reverse order. Each run logs
# under logs/<run>/. See localstack/README.md.
#
# Usage: localstack/run.sh [-d DATA_DIR] [kill NAME | restart NAME | status]
set -euo pipefail

usage() {
	cat <<EOF
Usage: $0 [-d DATA_DIR]                 run the stack, supervised
       $0 [-d DATA_DIR] kill NAME       SIGKILL one process of a running stack
       $0 [-d DATA_DIR] restart NAME    (re)start one process, wait until ready
       $0 [-d DATA_DIR] status          each process: pid, running, ready

  -d DATA_DIR   where every process keeps its data and log
                (default \$LOCALSTACK_DATA or ./localstack-data)
  NAME          minio, nats, ingest, compactor or frontend

Environment (defaults in brackets):
  LOCALSTACK_MINIO_PORT [19000]          MinIO S3 API
  LOCALSTACK_NATS_PORT [14222]           NATS client port
  LOCALSTACK_NATS_HTTP_PORT [18222]      NATS monitoring (/healthz)
  LOCALSTACK_CQL_PORT [19042]            frontend CQL native protocol
  LOCALSTACK_FRONTEND_HTTP_PORT [19180]  frontend /metrics, /healthz, /ready
  LOCALSTACK_INGEST_HTTP_PORT [19181]    ingest /metrics, /healthz, /ready
  LOCALSTACK_COMPACTOR_HTTP_PORT [19182] compactor /metrics, /healthz, /ready
  LOCALSTACK_INGEST_RPC_PORT [19190]     ingest RPC, used by the frontend
  LOCALSTACK_BUCKET [sediment]           bucket created in MinIO
  LOCALSTACK_MINIO_USER [sediment]       MinIO root user (access key)
  LOCALSTACK_MINIO_PASSWORD [sediment-secret]
  LOCALSTACK_READY_TIMEOUT [120]         seconds to wait for each /ready
  LOCALSTACK_INSTALL [1]                 0: never go install MinIO or nats-server
  SEDIMENT_BIN                           a sediment binary to run instead of
                                         building ./cmd/sediment
EOF
}

data_dir=${LOCALSTACK_DATA:-./localstack-data}
while getopts "d:h" opt; do
	case $opt in
	d) data_dir=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
command=run
target=
case ${1:-} in
"") ;;
kill | restart)
	(($# == 2)) || { usage >&2; exit 2; }
	command=$1 target=$2
	;;
status)
	(($# == 1)) || { usage >&2; exit 2; }
	command=status
	;;
*) usage >&2; exit 2 ;;
esac
all_names=(minio nats ingest compactor frontend)
if [[ -n $target ]] && [[ " ${all_names[*]} " != *" $target "* ]]; then
	printf 'localstack: no process %q (want one of: %s)\n' "$target" "${all_names[*]}" >&2
	exit 2
fi

minio_port=${LOCALSTACK_MINIO_PORT:-19000}
nats_port=${LOCALSTACK_NATS_PORT:-14222}
nats_http_port=${LOCALSTACK_NATS_HTTP_PORT:-18222}
cql_port=${LOCALSTACK_CQL_PORT:-19042}
frontend_http_port=${LOCALSTACK_FRONTEND_HTTP_PORT:-19180}
ingest_http_port=${LOCALSTACK_INGEST_HTTP_PORT:-19181}
compactor_http_port=${LOCALSTACK_COMPACTOR_HTTP_PORT:-19182}
ingest_rpc_port=${LOCALSTACK_INGEST_RPC_PORT:-19190}
bucket=${LOCALSTACK_BUCKET:-sediment}
minio_user=${LOCALSTACK_MINIO_USER:-sediment}
minio_password=${LOCALSTACK_MINIO_PASSWORD:-sediment-secret}
ready_timeout=${LOCALSTACK_READY_TIMEOUT:-120}
install=${LOCALSTACK_INSTALL:-1}

log() { printf 'localstack: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

for cmd in go curl; do
	command -v "$cmd" >/dev/null || die "$cmd not found in PATH; it is needed to build and probe the servers"
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$data_dir"
data_dir=$(cd "$data_dir" && pwd)
# run/ holds what a running supervisor shares with `kill`, `restart` and
# `status`: supervisor.pid, NAME.pid, NAME.url (its readiness URL), the
# restart requests and their results.
run_dir=$data_dir/run

# alive PIDFILE: whether the process the file names runs.
alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

case $command in
kill)
	alive "$run_dir/$target.pid" || die "$target is not running (no live pid in $run_dir/$target.pid)"
	pid=$(cat "$run_dir/$target.pid")
	kill -KILL "$pid"
	log "killed $target (pid $pid) with SIGKILL"
	exit 0
	;;
restart)
	alive "$run_dir/supervisor.pid" || die "no run.sh supervises $data_dir (start one with: $0 -d $data_dir)"
	rm -f "$run_dir/restart-$target.result"
	: >"$run_dir/restart-$target"
	deadline=$((SECONDS + ready_timeout + 60))
	until [[ -s $run_dir/restart-$target.result ]]; do
		((SECONDS < deadline)) || die "the supervisor did not restart $target within $((ready_timeout + 60))s"
		alive "$run_dir/supervisor.pid" || die "the supervisor exited before it restarted $target"
		sleep 0.2
	done
	result=$(cat "$run_dir/restart-$target.result")
	rm -f "$run_dir/restart-$target.result"
	[[ $result == ready ]] || die "restart of $target: $result"
	log "$target restarted (pid $(cat "$run_dir/$target.pid")) and ready"
	exit 0
	;;
status)
	alive "$run_dir/supervisor.pid" || die "no run.sh supervises $data_dir"
	printf '%-10s %-8s %-8s %s\n' PROCESS PID RUNNING READY
	for name in "${all_names[@]}"; do
		pid=- running=no ready=no
		[[ -f $run_dir/$name.pid ]] && pid=$(cat "$run_dir/$name.pid")
		alive "$run_dir/$name.pid" && running=yes
		if [[ $running == yes ]] && curl -fsS -o /dev/null --max-time 2 "$(cat "$run_dir/$name.url")" 2>/dev/null; then
			ready=yes
		fi
		printf '%-10s %-8s %-8s %s\n' "$name" "$pid" "$running" "$ready"
	done
	exit 0
	;;
esac

if alive "$run_dir/supervisor.pid"; then
	die "run.sh (pid $(cat "$run_dir/supervisor.pid")) already runs the stack in $data_dir"
fi
mkdir -p "$run_dir"
rm -f "$run_dir"/*
echo $$ >"$run_dir/supervisor.pid"
# Every run logs into a directory of its own, so that a rerun never
# overwrites the logs of a run that crashed; logs/latest is the newest.
run_id=$(date -u +%Y%m%dT%H%M%SZ)-$$
log_dir=$data_dir/logs/$run_id
mkdir -p "$log_dir"
ln -sfn "$run_id" "$data_dir/logs/latest"

# Each server runs in its own process group (job control), so that a Ctrl-C
# in the terminal reaches only this script, which then stops the servers in
# order: the frontend before the ingest node, the ingest node (which flushes
# to the bucket and the manifest) before MinIO and NATS.
set -m

names=()
pids=()
stopping=0

# stop_one I: stops process I with SIGTERM, and SIGKILL after 30s (the
# ingest node flushes on stop).
stop_one() {
	local i=$1 pid=${pids[$1]}
	kill -0 "$pid" 2>/dev/null || return 0
	log "stopping ${names[i]} (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	local waited=0
	while kill -0 "$pid" 2>/dev/null && ((waited < 300)); do
		sleep 0.1
		waited=$((waited + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "${names[i]} did not stop within 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

stop_all() {
	local status=$?
	((stopping)) && return
	stopping=1
	trap '' INT TERM
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop_one "$i"
	done
	rm -f "$run_dir/supervisor.pid"
	log "stopped"
	exit "$status"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# index NAME: the index of process NAME in names.
index() {
	local i
	for i in "${!names[@]}"; do
		[[ ${names[i]} == "$1" ]] && { echo "$i"; return; }
	done
	return 1
}

# start NAME URL: runs the function run_NAME in the background, its output
# appended to $log_dir/NAME.log (a restart adds to the log of the process
# it replaces, after a header line), and records its pid and readiness URL.
start() {
	local name=$1 url=$2 i
	printf '=== localstack: %s started at %s\n' "$name" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$log_dir/$name.log"
	"run_$name" >>"$log_dir/$name.log" 2>&1 &
	if i=$(index "$name"); then
		pids[i]=$!
	else
		names+=("$name")
		pids+=($!)
	fi
	echo $! >"$run_dir/$name.pid"
	echo "$url" >"$run_dir/$name.url"
	log "started $name (pid $!), log in $log_dir/$name.log"
}

# wait_ready NAME: polls NAME's URL until it answers 200; it fails if the
# process exits or the timeout passes.
wait_ready() {
	local name=$1 url pid i
	i=$(index "$name")
	pid=${pids[i]}
	url=$(cat "$run_dir/$name.url")
	local deadline=$((SECONDS + ready_timeout))
	until curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$log_dir/$name.log" >&2 || true
			log "$name exited before it was ready (log: $log_dir/$name.log)"
			return 1
		fi
		if ((SECONDS >= deadline)); then
			tail -n 20 "$log_dir/$name.log" >&2 || true
			log "$name not ready at $url after ${ready_timeout}s"
			return 1
		fi
		sleep 0.2
	done
	# Another server may hold the port and answer in its place.
	if ! kill -0 "$pid" 2>/dev/null; then
		log "$name exited; its port answers for another process (log: $log_dir/$name.log)"
		return 1
	fi
	log "$name ready"
}

# start_ready NAME URL: start, then wait_ready; the stack does not come up
# without every process.
start_ready() {
	start "$1" "$2"
	wait_ready "$1" || die "$1 did not get ready"
}

# makefile_var NAME: the value the Makefile gives NAME, so that this script
# installs exactly the versions the tests use.
makefile_var() {
	local v
	v=$(sed -n "s/^$1 *:= *//p" "$repo/Makefile")
	[[ -n $v ]] || die "no $1 in $repo/Makefile"
	printf '%s' "$v"
}

gobin=$(go env GOBIN)
[[ -n $gobin ]] || gobin=$(go env GOPATH | cut -d: -f1)/bin

# tool NAME MODULE VERSION PACKAGE: the path of binary NAME built from
# MODULE at VERSION, installed with go install unless already there.
tool() {
	local name=$1 module=$2 version=$3 pkg=$4 bin
	bin=$(command -v "$name" 2>/dev/null || true)
	[[ -n $bin ]] || bin=$gobin/$name
	if [[ -x $bin ]] && go version -m "$bin" 2>/dev/null |
		awk -v m="$module" -v v="$version" '$1 == "mod" && $2 == m && $3 == v { found = 1 } END { exit !found }'; then
		printf '%s' "$bin"
		return
	fi
	if [[ $install == 0 ]]; then
		die "$name $version not found in PATH or $gobin; install it with: go install $pkg@$version"
	fi
	log "installing $name $version (go install $pkg@$version)"
	go install "$pkg@$version" >&2
	printf '%s' "$gobin/$name"
}

minio_bin=$(tool minio github.com/minio/minio "$(makefile_var MINIO_VERSION)" github.com/minio/minio)
nats_bin=$(tool nats-server github.com/nats-io/nats-server/v2 "$(makefile_var NATS_VERSION)" github.com/nats-io/nats-server/v2)

sediment_bin=${SEDIMENT_BIN:-}
if [[ -z $sediment_bin ]]; then
	sediment_bin=$data_dir/bin/sediment
	log "building $sediment_bin"
	(cd "$repo" && go build -o "$sediment_bin" ./cmd/sediment)
fi

# run_NAME runs process NAME in the foreground: start runs it in the
# background, at first and at each restart.
run_minio() {
	MINIO_ROOT_USER="$minio_user" MINIO_ROOT_PASSWORD="$minio_password" MINIO_BROWSER=off MINIO_UPDATE=off \
		exec "$minio_bin" server "$data_dir/minio" --address "127.0.0.1:$minio_port" --quiet
}
start_ready minio "http://127.0.0.1:$minio_port/minio/health/ready"

# Create the bucket with a SigV4-signed PUT; 409 means it already exists
# (a restart on the same data).
code=$(curl -sS -o "$log_dir/create-bucket.out" -w '%{http_code}' -X PUT \
	--user "$minio_user:$minio_password" --aws-sigv4 "aws:amz:us-east-1:s3" \
	"http://127.0.0.1:$minio_port/$bucket") || die "create bucket $bucket: curl failed"
case $code in
200) log "created bucket $bucket" ;;
409) log "bucket $bucket exists" ;;
*) die "create bucket $bucket: HTTP $code: $(cat "$log_dir/create-bucket.out")" ;;
esac

run_nats() {
	exec "$nats_bin" -js -a 127.0.0.1 -p "$nats_port" -m "$nats_http_port" \
		-sd "$data_dir/nats" -n sediment-localstack
}
start_ready nats "http://127.0.0.1:$nats_http_port/healthz?js-enabled-only=true"

export SEDIMENT_OBJECTSTORE_SECRET_ACCESS_KEY=$minio_password
common=(
	-manifest.nats-url="nats://127.0.0.1:$nats_port"
	-objectstore.backend=minio
	-objectstore.endpoint="127.0.0.1:$minio_port"
	-objectstore.insecure
	-objectstore.path-style
	-objectstore.bucket="$bucket"
	-objectstore.access-key-id="$minio_user"
)

# The ingest node first: the first node of a cluster fixes its token ranges,
# and the frontend writes through it.
run_ingest() {
	exec "$sediment_bin" -target=ingest "${common[@]}" \
		-data.dir="$data_dir/ingest" \
		-http.listen-address="127.0.0.1:$ingest_http_port" \
		-ingest.rpc-address="127.0.0.1:$ingest_rpc_port"
}
start_ready ingest "http://127.0.0.1:$ingest_http_port/ready"

run_compactor() {
	exec "$sediment_bin" -target=compactor "${common[@]}" \
		-data.dir="$data_dir/compactor" \
		-http.listen-address="127.0.0.1:$compactor_http_port"
}
start_ready compactor "http://127.0.0.1:$compactor_http_port/ready"

run_frontend() {
	exec "$sediment_bin" -target=frontend "${common[@]}" \
		-data.dir="$data_dir/frontend" \
		-http.listen-address="127.0.0.1:$frontend_http_port" \
		-cql.listen-address="127.0.0.1:$cql_port"
}
start_ready frontend "http://127.0.0.1:$frontend_http_port/ready"

# The supervisor below waits on a FIFO nobody writes, opened read-write so
# that the open does not block: `read -t` is a builtin, so polling forks
# nothing, and a signal interrupts it at once. Made before the stack is
# announced, so that nothing but the servers runs once it is.
mkfifo "$run_dir/tick"
exec {tick}<>"$run_dir/tick"

# The one line on stdout: tools and tests wait for it.
echo "CQL endpoint: 127.0.0.1:$cql_port"
log "running; Ctrl-C stops everything; '$0 -d $data_dir restart NAME' restarts one process"

# restart NAME: stops NAME if it runs, starts it again and waits until it is
# ready; the result goes to run/restart-NAME.result for the client.
restart() {
	local name=$1 result=ready
	stop_one "$(index "$name")"
	start "$name" "$(cat "$run_dir/$name.url")"
	wait_ready "$name" || result="$name did not get ready (log: $log_dir/$name.log)"
	# One write of a builtin, which the client waits for (-s): no
	# command runs here that a look at the processes could catch.
	echo "$result" >"$run_dir/restart-$name.result"
}

# Supervise until a signal: a process that exits is reported once, with the
# tail of its log, and the others go on, as in a cluster that lost a
# machine; a restart request starts it again.
set +e
reported=()
while :; do
	for i in "${!pids[@]}"; do
		if ! kill -0 "${pids[i]}" 2>/dev/null && [[ ${reported[i]:-} != "${pids[i]}" ]]; then
			wait "${pids[i]}" 2>/dev/null
			status=$?
			reported[i]=${pids[i]}
			log "${names[i]} exited (status $status); the others go on. Log tail:"
			tail -n 20 "$log_dir/${names[i]}.log" >&2
		fi
	done
	for req in "$run_dir"/restart-*; do
		[[ -e $req && $req != *.result ]] || continue
		name=${req##*/restart-}
		rm -f "$req"
		log "restarting $name on request"
		restart "$name"
	done
	read -r -t 0.2 -u "$tick"
done
