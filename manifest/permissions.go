package manifest

import (
	"fmt"
	"slices"
)

// The compaction job queue: a JetStream work-queue stream of the cluster,
// next to its KV buckets. The compactor (package compactor) owns it; its
// names live here with the buckets' so that NATSPermissions covers every
// subject the cluster uses.
const (
	compactionQueueKind = "compaction"
	// CompactionQueueConsumer is the durable consumer of the workers.
	CompactionQueueConsumer = "workers"
)

// CompactionQueueStream is the name of cluster's job queue stream.
func CompactionQueueStream(cluster string) string { return cluster + "_" + compactionQueueKind }

// CompactionQueueSubject is the subject jobs of cluster are published to.
func CompactionQueueSubject(cluster string) string { return cluster + ".compaction.jobs" }

// Roles of NATS users: each process connects as the user of its role, so
// that what one role's credentials can change is what that role changes.
// A process running several roles (the all-in-one mode) needs the union,
// which is what RoleAdmin has.
const (
	RoleFrontend  = "frontend"
	RoleIngest    = "ingest"
	RoleCompactor = "compactor"
	// RoleAdmin is `sediment admin` (restore rewrites every bucket) and
	// processes that run every role.
	RoleAdmin = "admin"
)

// roleWrites are the buckets each role writes, read from the code that
// writes them:
//
//	frontend   schema (DDL), roles (CREATE/ALTER/DROP ROLE, GRANT),
//	           members (its CQL endpoint's heartbeat), sstables (TRUNCATE
//	           drops a table's SSTables: frontend/engine/truncate.go)
//	ingest     ownership (claims, releases), members (heartbeat), leases
//	           (the claim lease), sstables (flush commits)
//	compactor  sstables (compaction swaps, garbage collection), leases
//	           (planner, worker and collector leases), requests (finished
//	           compaction requests)
//
// Every role reads every bucket: the View watches them all.
var roleWrites = map[string][]string{
	RoleFrontend:  {kindSchema, kindRoles, kindMembers, kindSSTables},
	RoleIngest:    {kindOwnership, kindMembers, kindLeases, kindSSTables},
	RoleCompactor: {kindSSTables, kindLeases, kindRequests},
	RoleAdmin:     {kindSchema, kindSSTables, kindOwnership, kindMembers, kindLeases, kindRoles, kindRequests},
}

// allKinds are every bucket of a cluster.
var allKinds = []string{kindSchema, kindSSTables, kindOwnership, kindMembers, kindLeases, kindRoles, kindRequests}

// NATSPermissions are the subjects a NATS user may publish to and
// subscribe to. They are data: docs/security.md and the Terraform NATS
// module (terraform/modules/nats/permissions.json, checked against this by
// a test) configure nats-server's per-user permissions from them.
type NATSPermissions struct {
	Publish   []string `json:"publish"`
	Subscribe []string `json:"subscribe"`
}

// Permissions returns the NATS permissions of role's user in cluster: the
// JetStream API calls that reading and watching the buckets need, and
// publishing (the KV puts and deletes) only to the buckets the role
// writes. A frontend's credentials therefore cannot change ownership or
// leases; an ingest node's cannot change the schema or the roles.
func Permissions(cluster, role string) (NATSPermissions, error) {
	writes, ok := roleWrites[role]
	if !ok {
		return NATSPermissions{}, fmt.Errorf("%w: no NATS role %q", ErrInvalid, role)
	}
	if !clusterNameRE.MatchString(cluster) {
		return NATSPermissions{}, fmt.Errorf("%w: cluster name %q", ErrInvalid, cluster)
	}
	pub := []string{"$JS.API.INFO"}
	streams := make([]string, 0, len(allKinds)+1)
	for _, kind := range allKinds {
		streams = append(streams, "KV_"+cluster+"_"+kind)
	}
	if role == RoleCompactor || role == RoleAdmin {
		streams = append(streams, CompactionQueueStream(cluster))
	}
	for _, s := range streams {
		pub = append(pub,
			// Open creates or updates the buckets it needs.
			"$JS.API.STREAM.CREATE."+s, "$JS.API.STREAM.UPDATE."+s, "$JS.API.STREAM.INFO."+s,
			// Gets.
			"$JS.API.STREAM.MSG.GET."+s, "$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>",
			// Watchers are ordered consumers, made and dropped at will.
			"$JS.API.CONSUMER.CREATE."+s, "$JS.API.CONSUMER.CREATE."+s+".>",
			"$JS.API.CONSUMER.INFO."+s+".>", "$JS.API.CONSUMER.DELETE."+s+".>",
			"$JS.FC."+s+".>",
		)
	}
	for _, kind := range writes {
		pub = append(pub, "$KV."+cluster+"_"+kind+".>")
	}
	if role == RoleCompactor || role == RoleAdmin {
		q := CompactionQueueStream(cluster)
		pub = append(pub, CompactionQueueSubject(cluster),
			"$JS.API.CONSUMER.MSG.NEXT."+q+"."+CompactionQueueConsumer, "$JS.ACK."+q+".>")
	}
	slices.Sort(pub)
	return NATSPermissions{Publish: slices.Compact(pub), Subscribe: []string{"_INBOX.>"}}, nil
}
