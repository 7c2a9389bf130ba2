#!/usr/bin/env bash
# Runs a local Sediment cluster without Docker: MinIO (the bucket), nats-server
# with JetStream (the manifest), then the ingest, compactor and frontend roles
# as separate processes, all on 127.0.0.1. Prints the CQL endpoint once every
# process is ready; Ctrl-C, SIGTERM or any process exiting stops them all, in
# reverse order. See localstack/README.md.
#
# Usage: localstack/run.sh [-d DATA_DIR]
set -euo pipefail

usage() {
	cat <<EOF
Usage: $0 [-d DATA_DIR]

  -d DATA_DIR   where every process keeps its data and log
                (default \$LOCALSTACK_DATA or ./localstack-data)

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
if (($# > 0)); then
	usage >&2
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
mkdir -p "$data_dir/logs"

# Each server runs in its own process group (job control), so that a Ctrl-C
# in the terminal reaches only this script, which then stops the servers in
# order: the frontend before the ingest node, the ingest node (which flushes
# to the bucket and the manifest) before MinIO and NATS.
set -m

names=()
pids=()
stopping=0

stop_all() {
	local status=$?
	((stopping)) && return
	stopping=1
	trap '' INT TERM
	local i pid
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		pid=${pids[i]}
		kill -0 "$pid" 2>/dev/null || continue
		log "stopping ${names[i]} (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		# The ingest node flushes on stop; give each process 30s, then kill it.
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
	done
	log "stopped"
	exit "$status"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME CMD...: runs CMD in the background with its output in
# $data_dir/logs/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$data_dir/logs/$name.log" 2>&1 &
	names+=("$name")
	pids+=($!)
	log "started $name (pid $!), log in $data_dir/logs/$name.log"
}

# wait_ready NAME URL: polls URL until it answers 200, failing if the last
# started process exits or the timeout passes.
wait_ready() {
	local name=$1 url=$2 pid=${pids[-1]}
	local deadline=$((SECONDS + ready_timeout))
	until curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$data_dir/logs/$name.log" >&2 || true
			die "$name exited before it was ready (log: $data_dir/logs/$name.log)"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 20 "$data_dir/logs/$name.log" >&2 || true
			die "$name not ready at $url after ${ready_timeout}s"
		fi
		sleep 0.2
	done
	# Another server may hold the port and answer in its place.
	kill -0 "$pid" 2>/dev/null || die "$name exited; its port answers for another process (log: $data_dir/logs/$name.log)"
	log "$name ready"
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

start minio env MINIO_ROOT_USER="$minio_user" MINIO_ROOT_PASSWORD="$minio_password" \
	MINIO_BROWSER=off MINIO_UPDATE=off \
	"$minio_bin" server "$data_dir/minio" --address "127.0.0.1:$minio_port" --quiet
wait_ready minio "http://127.0.0.1:$minio_port/minio/health/ready"

# Create the bucket with a SigV4-signed PUT; 409 means it already exists
# (a restart on the same data).
code=$(curl -sS -o "$data_dir/logs/create-bucket.out" -w '%{http_code}' -X PUT \
	--user "$minio_user:$minio_password" --aws-sigv4 "aws:amz:us-east-1:s3" \
	"http://127.0.0.1:$minio_port/$bucket") || die "create bucket $bucket: curl failed"
case $code in
200) log "created bucket $bucket" ;;
409) log "bucket $bucket exists" ;;
*) die "create bucket $bucket: HTTP $code: $(cat "$data_dir/logs/create-bucket.out")" ;;
esac

start nats "$nats_bin" -js -a 127.0.0.1 -p "$nats_port" -m "$nats_http_port" \
	-sd "$data_dir/nats" -n sediment-localstack
wait_ready nats "http://127.0.0.1:$nats_http_port/healthz?js-enabled-only=true"

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
start ingest "$sediment_bin" -target=ingest "${common[@]}" \
	-data.dir="$data_dir/ingest" \
	-http.listen-address="127.0.0.1:$ingest_http_port" \
	-ingest.rpc-address="127.0.0.1:$ingest_rpc_port"
wait_ready ingest "http://127.0.0.1:$ingest_http_port/ready"

start compactor "$sediment_bin" -target=compactor "${common[@]}" \
	-data.dir="$data_dir/compactor" \
	-http.listen-address="127.0.0.1:$compactor_http_port"
wait_ready compactor "http://127.0.0.1:$compactor_http_port/ready"

start frontend "$sediment_bin" -target=frontend "${common[@]}" \
	-data.dir="$data_dir/frontend" \
	-http.listen-address="127.0.0.1:$frontend_http_port" \
	-cql.listen-address="127.0.0.1:$cql_port"
wait_ready frontend "http://127.0.0.1:$frontend_http_port/ready"

# The one line on stdout: tools and tests wait for it.
echo "CQL endpoint: 127.0.0.1:$cql_port"
log "running; Ctrl-C stops everything"

# Run until a signal, or until any process exits on its own.
set +e
wait -n "${pids[@]}"
status=$?
set -e
for i in "${!pids[@]}"; do
	if ! kill -0 "${pids[i]}" 2>/dev/null; then
		log "${names[i]} exited (status $status); log tail:"
		tail -n 20 "$data_dir/logs/${names[i]}.log" >&2 || true
	fi
done
exit 1
