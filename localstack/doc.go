// Package localstack holds the tests of Sediment's local stack: the files
// in this directory that run a whole cluster on one machine, each role as
// its own process.
//
//	file           what it is
//	-------------  ------------------------------------------------------------
//	run.sh         without Docker: installs and starts MinIO and nats-server -js,
//	               builds sediment and starts its ingest, compactor and frontend
//	               roles, prints the CQL endpoint, stops all on Ctrl-C or SIGTERM
//	compose.yaml   with Docker: LocalStack (S3, IAM), MinIO, NATS with JetStream
//	               and the three Sediment roles as containers, each with a
//	               healthcheck on /ready
//	Dockerfile     the Sediment image: a static binary on distroless, non-root
//	healthcheck/   the static probe the image's healthchecks run
//
// The tests run run.sh and talk CQL to it through gocql, and check the
// structure of compose.yaml and the Dockerfile, which cannot be run here
// (no Docker). README.md is the operator's guide.
package localstack
