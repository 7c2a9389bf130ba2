package exec_test

import (
	"flag"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

var rewrite = flag.Bool("rewrite", false, "write the .result files of testdata/transcripts instead of comparing them")

// TestTranscripts runs the CQL transcripts of testdata/transcripts, each a
// .cql session and the .result a gocql session answers to it (see
// cqltest.Server.RunTranscripts).
func TestTranscripts(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	srv.RunTranscripts(t, "testdata/transcripts", *rewrite)
}
