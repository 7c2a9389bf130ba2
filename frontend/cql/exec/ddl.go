package exec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/manifest"
)

// DDL statements change the manifest with one compare-and-set per
// statement, then wait until this frontend's View shows the change, so the
// next statement of the client plans against it. The clients that
// registered for SCHEMA_CHANGE events hear of it from Watch.

// schemaWait bounds the wait for the View to show a change. A change made
// concurrently by another frontend to the same keyspace can replace ours
// before the View shows it; the wait then ends at this bound.
const schemaWait = 10 * time.Second

var _ plan = (*ddlPlan)(nil)

// ddlPlan runs one schema change.
type ddlPlan struct {
	// keyspace is the keyspace whose document the change writes.
	keyspace string
	// change makes the change. It returns applied false when IF [NOT]
	// EXISTS made it a no-op.
	change func(ctx context.Context, x *execCtx) (sc SchemaChange, applied bool, err error)
}

func (*ddlPlan) binds() []ColumnSpec  { return nil }
func (*ddlPlan) result() []ColumnSpec { return nil }

func (p *ddlPlan) execute(ctx context.Context, x *execCtx) (*Result, error) {
	sc, applied, err := p.change(ctx, x)
	if err != nil {
		return nil, err
	}
	if !applied {
		return voidResult, nil
	}
	// Watch announces the change to the clients once the View shows it.
	x.e.awaitSchema(ctx, p.keyspace)
	return &Result{Kind: ResultSchemaChange, Change: sc}, nil
}

// awaitSchema waits until the View holds the keyspace as the manifest
// stores it now (or holds no keyspace if it is gone).
func (e *Executor) awaitSchema(ctx context.Context, keyspace string) {
	ctx, cancel := context.WithTimeout(ctx, schemaWait)
	defer cancel()
	ks, err := e.manifest.Keyspace(ctx, keyspace)
	var want uuid.UUID
	switch {
	case errors.Is(err, manifest.ErrNotFound):
	case err != nil:
		e.log.Warn("reading the keyspace after a schema change", "keyspace", keyspace, "err", err)
		return
	default:
		want = ks.Version
	}
	err = e.view.WaitFor(ctx, func(v *manifest.View) bool {
		k := v.Keyspace(keyspace)
		if want == uuid.Nil {
			return k == nil
		}
		return k != nil && k.Version == want
	})
	if err != nil {
		e.log.Warn("the view did not show a schema change in time", "keyspace", keyspace, "err", err)
	}
}

// manifestError maps an error of a manifest change.
func manifestError(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, manifest.ErrInvalid):
		return invalidf("%s", strings.TrimPrefix(err.Error(), "manifest: invalid: "))
	case errors.Is(err, manifest.ErrConflict):
		return &Error{Code: wire.CodeServer, Message: "Schema change kept conflicting with concurrent changes; retry it", Cause: err}
	}
	return serverError(err)
}

// nameRE is what Cassandra accepts as a keyspace, table or type name.
var nameRE = regexp.MustCompile(`^\w+$`)

// maxNameLength is Cassandra's SchemaConstants.NAME_LENGTH.
const maxNameLength = 48

// badName is Cassandra's message for a keyspace, table or type name it
// refuses, "" for a valid one.
func badName(what, name string) string {
	if name == "" || len(name) > maxNameLength || !nameRE.MatchString(name) {
		return fmt.Sprintf("%s name must not be empty, more than %d characters long, or contain non-alphanumeric-underscore characters (got \"%s\")", what, maxNameLength, name)
	}
	return ""
}

// ---- Properties ---------------------------------------------------------

// propString returns a property's value as text: a literal's text or an
// identifier's name.
func propString(p ast.Property) (string, error) {
	switch v := p.Value.(type) {
	case *ast.Literal:
		return v.Text, nil
	case *ast.Ident:
		return v.Name, nil
	}
	return "", syntaxf("Invalid value for property '%s'. It should be a string", p.Name)
}

// propMap returns a map property's entries as text.
func propMap(p ast.Property) (map[string]string, error) {
	var m *ast.Map
	switch v := p.Value.(type) {
	case *ast.Map:
		m = v
	case *ast.Set:
		if len(v.Elems) == 0 {
			return map[string]string{}, nil
		}
	}
	if m == nil {
		return nil, syntaxf("Invalid value for property '%s'. It should be a map.", p.Name)
	}
	out := make(map[string]string, len(m.Keys))
	for i := range m.Keys {
		k, err := propString(ast.Property{Name: p.Name, Value: m.Keys[i]})
		if err != nil {
			return nil, err
		}
		v, err := propString(ast.Property{Name: p.Name, Value: m.Values[i]})
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func propBool(p ast.Property) (bool, error) {
	s, err := propString(p)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, syntaxf("Invalid boolean value %s for '%s'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'.", s, p.Name)
}

func propInt(p ast.Property) (int64, error) {
	s, err := propString(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, syntaxf("Invalid integer value %s for '%s'", s, p.Name)
	}
	return n, nil
}

func propDouble(p ast.Property) (float64, error) {
	s, err := propString(p)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, syntaxf("Invalid double value %s for '%s'", s, p.Name)
	}
	return f, nil
}

// checkDuplicates rejects a property given twice.
func checkDuplicates(props []ast.Property) error {
	seen := map[string]bool{}
	for _, p := range props {
		if seen[p.Name] {
			return syntaxf("Multiple definition for property '%s'", p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// ---- Keyspaces ----------------------------------------------------------

// Replication strategy classes, as system_schema shows them.
const (
	simpleStrategy  = "org.apache.cassandra.locator.SimpleStrategy"
	networkStrategy = "org.apache.cassandra.locator.NetworkTopologyStrategy"
)

// keyspaceProps are the validated options of CREATE or ALTER KEYSPACE.
type keyspaceProps struct {
	replication   map[string]string // as given, nil when not given
	durableWrites *bool
}

// parseKeyspaceProps checks a keyspace's options; dc is the data center
// a NetworkTopologyStrategy replication_factor expands to.
func parseKeyspaceProps(keyspace, dc string, props []ast.Property) (keyspaceProps, error) {
	var kp keyspaceProps
	if err := checkDuplicates(props); err != nil {
		return kp, err
	}
	for _, p := range props {
		switch p.Name {
		case "replication":
			m, err := propMap(p)
			if err != nil {
				return kp, err
			}
			if _, err := validReplication(keyspace, m, nil, dc); err != nil {
				return kp, err
			}
			kp.replication = m
		case "durable_writes":
			b, err := propBool(p)
			if err != nil {
				return kp, err
			}
			kp.durableWrites = &b
		default:
			return kp, syntaxf("Unknown property '%s'", p.Name)
		}
	}
	return kp, nil
}

// validReplication checks a replication map as Cassandra 4's strategies do
// and returns it as Cassandra stores it: the class's full name and, for
// NetworkTopologyStrategy, replication_factor expanded to the data center
// dc (keeping the factors of previous, the keyspace's replication before an
// ALTER) and data centers of factor 0 left out.
func validReplication(keyspace string, m, previous map[string]string, dc string) (map[string]string, error) {
	class, ok := m["class"]
	if !ok {
		return nil, configf("Missing replication strategy class")
	}
	out := maps.Clone(m)
	switch short := strings.TrimPrefix(class, "org.apache.cassandra.locator."); short {
	case "SimpleStrategy":
		out["class"] = simpleStrategy
		rf, ok := m["replication_factor"]
		if !ok {
			return nil, configf("SimpleStrategy requires a replication_factor strategy option.")
		}
		if _, err := validRF(rf); err != nil {
			return nil, err
		}
		for k := range m {
			if k != "class" && k != "replication_factor" {
				return nil, configf("Unrecognized strategy option {%s} passed to SimpleStrategy for keyspace %s", k, keyspace)
			}
		}
	case "NetworkTopologyStrategy":
		delete(out, "class")
		rf, ok := out["replication_factor"]
		delete(out, "replication_factor")
		switch {
		case !ok && len(out) == 0:
			// ALTER from SimpleStrategy keeps its factor.
			rf, ok = previous["replication_factor"]
		case ok:
			// An expanding ALTER leaves the data centers it had alone.
			for k, v := range previous {
				if _, set := out[k]; !set && k != "class" && k != "replication_factor" {
					out[k] = v
				}
			}
		}
		if ok {
			norm, err := validRF(rf)
			if err != nil {
				return nil, err
			}
			if _, set := out[dc]; !set {
				out[dc] = norm
			}
		}
		for k, v := range out {
			if v == "0" {
				delete(out, k)
				continue
			}
			if _, err := validRF(v); err != nil {
				return nil, err
			}
		}
		out["class"] = networkStrategy
	case "LocalStrategy":
		return nil, configf("Unable to use given strategy class: LocalStrategy is reserved for internal use.")
	default:
		if !strings.Contains(class, ".") {
			class = "org.apache.cassandra.locator." + short
		}
		return nil, configf("Unable to find replication strategy class '%s'", class)
	}
	return out, nil
}

// validRF checks a replication factor as Cassandra's ReplicationFactor
// parses it, a count or "total/transient", and returns it in its
// parseable form.
func validRF(s string) (string, error) {
	all, trans, transient := strings.Cut(s, "/")
	if transient && (all == "" || trans == "" || strings.Contains(trans, "/")) {
		return "", configf("Replication factor format is <replicas> or <replicas>/<transient>")
	}
	n, err := strconv.ParseInt(all, 10, 32)
	if err != nil {
		return "", configf("For input string: \"%s\"", all) // Java's NumberFormatException
	}
	if transient {
		if _, err := strconv.ParseInt(trans, 10, 32); err != nil {
			return "", configf("For input string: \"%s\"", trans)
		}
		// Cassandra's default: transient replication is off.
		return "", configf("Transient replication is not enabled on this node")
	}
	if n < 0 {
		return "", configf("Replication factor must be non-negative, found %d", n)
	}
	return strconv.FormatInt(n, 10), nil
}

func (e *Executor) planCreateKeyspace(st *ast.CreateKeyspace) (plan, error) {
	if isSystemKeyspace(st.Name) {
		return nil, invalidf("Keyspace %s is a system keyspace", st.Name)
	}
	kp, err := parseKeyspaceProps(st.Name, e.cfg.Local.DataCenter, st.Properties)
	if err != nil {
		return nil, err
	}
	if kp.replication == nil {
		return nil, configf("Missing mandatory option 'replication'")
	}
	replication, err := validReplication(st.Name, kp.replication, nil, e.cfg.Local.DataCenter)
	if err != nil {
		return nil, err
	}
	// KeyspaceMetadata.validate checks the name last, as a
	// ConfigurationException.
	if msg := badName("Keyspace", st.Name); msg != "" {
		return nil, configf("%s", msg)
	}
	if replicatedSystemKeyspace(st.Name) {
		// They exist in Cassandra, so creating one is creating it again.
		if st.IfNotExists {
			return &ddlPlan{keyspace: st.Name, change: func(context.Context, *execCtx) (SchemaChange, bool, error) {
				return SchemaChange{}, false, nil
			}}, nil
		}
		return nil, alreadyExists(st.Name, "")
	}
	durable := kp.durableWrites == nil || *kp.durableWrites
	return &ddlPlan{keyspace: st.Name, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		sc := SchemaChange{Change: ChangeCreated, Target: TargetKeyspace, Keyspace: st.Name}
		err := x.e.manifest.CreateKeyspace(ctx, st.Name, replication, durable)
		if errors.Is(err, manifest.ErrExists) {
			if st.IfNotExists {
				return sc, false, nil
			}
			return sc, false, alreadyExists(st.Name, "")
		}
		if err != nil {
			return sc, false, manifestError(err)
		}
		return sc, true, nil
	}}, nil
}

func (e *Executor) planAlterKeyspace(st *ast.AlterKeyspace) (plan, error) {
	replicated := replicatedSystemKeyspace(st.Name)
	if isSystemKeyspace(st.Name) && !replicated {
		return nil, unauthorizedf("%s keyspace is not user-modifiable.", st.Name)
	}
	dc := e.cfg.Local.DataCenter
	kp, err := parseKeyspaceProps(st.Name, dc, st.Properties)
	if err != nil {
		return nil, err
	}
	if replicated {
		// Cassandra lets operators set the replication of its replicated
		// system keyspaces, and setup scripts do. Sediment keeps roles in the
		// manifest, which object storage replicates, and has no tracing or
		// repair history: the options are checked and change nothing.
		return &ddlPlan{keyspace: st.Name, change: func(context.Context, *execCtx) (SchemaChange, bool, error) {
			return SchemaChange{}, false, nil
		}}, nil
	}
	return &ddlPlan{keyspace: st.Name, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		sc := SchemaChange{Change: ChangeUpdated, Target: TargetKeyspace, Keyspace: st.Name}
		cur := x.e.view.Keyspace(st.Name)
		if cur == nil {
			if st.IfExists {
				return sc, false, nil
			}
			return sc, false, invalidf("Keyspace '%s' doesn't exist", st.Name)
		}
		repl, durable := cur.Replication, cur.DurableWrites
		if kp.replication != nil {
			var err error
			if repl, err = validReplication(st.Name, kp.replication, cur.Replication, dc); err != nil {
				return sc, false, err
			}
		}
		if kp.durableWrites != nil {
			durable = *kp.durableWrites
		}
		err := x.e.manifest.AlterKeyspace(ctx, st.Name, repl, durable)
		if errors.Is(err, manifest.ErrNotFound) {
			if st.IfExists {
				return sc, false, nil
			}
			return sc, false, invalidf("Keyspace '%s' doesn't exist", st.Name)
		}
		if err != nil {
			return sc, false, manifestError(err)
		}
		return sc, true, nil
	}}, nil
}

func (e *Executor) planDropKeyspace(st *ast.DropKeyspace) (plan, error) {
	switch {
	case replicatedSystemKeyspace(st.Name):
		// Cassandra's ClientState words it with the DataResource.
		return nil, unauthorizedf("Cannot DROP <keyspace %s>", st.Name)
	case isSystemKeyspace(st.Name):
		return nil, unauthorizedf("%s keyspace is not user-modifiable.", st.Name)
	}
	return &ddlPlan{keyspace: st.Name, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		sc := SchemaChange{Change: ChangeDropped, Target: TargetKeyspace, Keyspace: st.Name}
		ks, err := x.e.manifest.Keyspace(ctx, st.Name)
		if err == nil {
			err = x.e.manifest.DropKeyspace(ctx, st.Name)
		}
		if errors.Is(err, manifest.ErrNotFound) {
			if st.IfExists {
				return sc, false, nil
			}
			return sc, false, invalidf("Keyspace '%s' doesn't exist", st.Name)
		}
		if err != nil {
			return sc, false, manifestError(err)
		}
		// The schema is gone; now the data. Truncating a table no schema
		// names any more is safe to retry and reaches every node.
		for _, t := range ks.Tables {
			if err := x.e.truncate(ctx, t.ID); err != nil {
				return sc, false, err
			}
		}
		return sc, true, nil
	}}, nil
}

// replicatedSystemKeyspace reports whether ks is one of Cassandra's
// replicated system keyspaces, whose replication operators may alter but
// which nobody may drop.
func replicatedSystemKeyspace(ks string) bool {
	switch ks {
	case ksSystemAuth, "system_distributed", "system_traces":
		return true
	}
	return false
}

// truncate drops a table's data from memtables and SSTables.
func (e *Executor) truncate(ctx context.Context, table uuid.UUID) error {
	if err := e.eng.Truncate(ctx, table); err != nil {
		return truncateError(err)
	}
	return nil
}
