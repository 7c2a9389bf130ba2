package exec

// The keyspaces Sediment answers from the View rather than from storage.
const (
	ksSystem        = "system"
	ksSystemSchema  = "system_schema"
	ksSystemVirtual = "system_virtual_schema"
	ksSystemAuth    = "system_auth"
)

// isSystemKeyspace reports whether ks is one of the read-only system
// keyspaces.
func isSystemKeyspace(ks string) bool {
	switch ks {
	case ksSystem, ksSystemSchema, ksSystemVirtual, ksSystemAuth:
		return true
	}
	return false
}
