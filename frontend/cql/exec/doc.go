// Package exec executes CQL statements: it plans each statement once against
// the schema of a manifest.View, binds its values, and runs it over an
// engine.Engine. An Executor serves the native protocol server's requests
// (QUERY, PREPARE, EXECUTE, BATCH) for every connection's Session.
package exec
