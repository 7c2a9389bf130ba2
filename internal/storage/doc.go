// Package storage is the contract between the CQL layer and the nodes that
// hold data: what a write carries (a Mutation of Entries of one table), and
// the classes its failures fall in.
//
// Errors are classified where they arise: the ingest node returns or wraps
// these classes, package ingest/rpc carries them across the hop (and
// classifies its own connection failures), and the engine wraps its own
// errors in them. A caller matches a class with errors.Is and never needs
// to know which layer failed; the CQL edge (frontend/cql/exec) maps each
// class to one protocol error code.
package storage
