package manifest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Role is a CQL role: a user when it may log in. It is stored as one
// document under "role.<escaped name>" in the roles bucket, with the
// permissions granted to it and the roles granted to it, so that CREATE,
// ALTER, GRANT and REVOKE are each one compare-and-set of one key.
type Role struct {
	Name string `json:"name"`
	// SaltedHash is the bcrypt hash of the password (it carries its own
	// salt and cost); empty for a role without a password.
	SaltedHash string `json:"salted_hash,omitempty"`
	Login      bool   `json:"login"`
	Superuser  bool   `json:"superuser"`
	// Options are the role's custom OPTIONS.
	Options map[string]string `json:"options,omitempty"`
	// MemberOf lists the roles granted to this one, sorted.
	MemberOf []string `json:"member_of,omitempty"`
	// Permissions maps a resource, by its Cassandra name ("data",
	// "data/ks", "data/ks/t", "roles", "roles/r"), to the permissions
	// granted on it, sorted; a resource never maps to an empty list.
	Permissions map[string][]string `json:"permissions,omitempty"`
}

// Clone returns a deep copy of r, for changing a role a View shares.
func (r *Role) Clone() *Role {
	c := *r
	c.Options = maps.Clone(r.Options)
	c.MemberOf = slices.Clone(r.MemberOf)
	if r.Permissions != nil {
		c.Permissions = make(map[string][]string, len(r.Permissions))
		for k, v := range r.Permissions {
			c.Permissions[k] = slices.Clone(v)
		}
	}
	return &c
}

// Grant adds permissions on resource and reports whether any was new.
func (r *Role) Grant(resource string, perms ...string) bool {
	have := r.Permissions[resource]
	changed := false
	for _, p := range perms {
		if !slices.Contains(have, p) {
			have = append(have, p)
			changed = true
		}
	}
	if changed {
		slices.Sort(have)
		if r.Permissions == nil {
			r.Permissions = map[string][]string{}
		}
		r.Permissions[resource] = have
	}
	return changed
}

// Revoke removes permissions on resource and reports whether any was
// held.
func (r *Role) Revoke(resource string, perms ...string) bool {
	have := r.Permissions[resource]
	n := len(have)
	have = slices.DeleteFunc(slices.Clone(have), func(p string) bool { return slices.Contains(perms, p) })
	if len(have) == n {
		return false
	}
	if len(have) == 0 {
		delete(r.Permissions, resource)
	} else {
		r.Permissions[resource] = have
	}
	return true
}

// RevokeOn removes every permission on resource and on the resources
// under it ("data/ks" takes "data/ks/t" along), and reports whether any
// was held.
func (r *Role) RevokeOn(resource string) bool {
	changed := false
	for k := range r.Permissions {
		if k == resource || strings.HasPrefix(k, resource+"/") {
			delete(r.Permissions, k)
			changed = true
		}
	}
	return changed
}

// AddMember records that role is granted to r; it reports whether it was
// not already.
func (r *Role) AddMember(role string) bool {
	i, found := slices.BinarySearch(r.MemberOf, role)
	if found {
		return false
	}
	r.MemberOf = slices.Insert(r.MemberOf, i, role)
	return true
}

// RemoveMember records that role is no longer granted to r; it reports
// whether it was.
func (r *Role) RemoveMember(role string) bool {
	i, found := slices.BinarySearch(r.MemberOf, role)
	if !found {
		return false
	}
	r.MemberOf = slices.Delete(r.MemberOf, i, i+1)
	if len(r.MemberOf) == 0 {
		r.MemberOf = nil
	}
	return true
}

func roleKey(name string) string { return "role." + escapeName(name) }

// CreateRole creates a role; ErrExists if one of that name exists.
func (m *Manifest) CreateRole(ctx context.Context, r Role) error {
	if r.Name == "" {
		return fmt.Errorf("%w: empty role name", ErrInvalid)
	}
	r = *r.Clone()
	slices.Sort(r.MemberOf)
	return mutateJSON(ctx, m, m.roles, roleKey(r.Name), func(cur *Role) (*Role, error) {
		if cur != nil {
			return nil, fmt.Errorf("%w: role %q", ErrExists, r.Name)
		}
		return &r, nil
	})
}

// AlterRole applies fn to role name; ErrNotFound if there is none. fn
// changes the role it is given (a copy) and may be run more than once,
// on a fresh copy each time; its error ends the change without writing.
// A change that leaves the role as it was writes nothing.
func (m *Manifest) AlterRole(ctx context.Context, name string, fn func(*Role) error) error {
	return mutateJSON(ctx, m, m.roles, roleKey(name), func(cur *Role) (*Role, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: role %q", ErrNotFound, name)
		}
		next := cur.Clone()
		if err := fn(next); err != nil {
			return nil, err
		}
		if next.Name != name {
			return nil, fmt.Errorf("%w: a role cannot be renamed", ErrInvalid)
		}
		if rolesEqual(cur, next) {
			return nil, errUnchanged
		}
		return next, nil
	})
}

// rolesEqual compares two roles, treating nil and empty maps and lists
// alike.
func rolesEqual(a, b *Role) bool {
	if a.Name != b.Name || a.SaltedHash != b.SaltedHash || a.Login != b.Login || a.Superuser != b.Superuser ||
		!maps.Equal(a.Options, b.Options) || !slices.Equal(a.MemberOf, b.MemberOf) || len(a.Permissions) != len(b.Permissions) {
		return false
	}
	for k, v := range a.Permissions {
		if w, ok := b.Permissions[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// DropRole drops a role; ErrNotFound if there is none. Grants of the role
// to others and permissions on it are the caller's to remove (see
// AlterRole): each is a change of another role's document.
func (m *Manifest) DropRole(ctx context.Context, name string) error {
	return mutateJSON(ctx, m, m.roles, roleKey(name), func(cur *Role) (*Role, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: role %q", ErrNotFound, name)
		}
		return nil, nil
	})
}

// Role reads one role; ErrNotFound if there is none.
func (m *Manifest) Role(ctx context.Context, name string) (*Role, error) {
	r, err := getJSON[Role](ctx, m.roles, roleKey(name))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%w: role %q", ErrNotFound, name)
	}
	return r, nil
}

// Roles reads every role, sorted by name.
func (m *Manifest) Roles(ctx context.Context) ([]*Role, error) {
	docs, err := list(ctx, m.roles)
	if err != nil {
		return nil, err
	}
	out := make([]*Role, 0, len(docs))
	for key, raw := range docs {
		r, err := decoders[kindRoles](key, raw)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", m.roles.name, key, err)
		}
		out = append(out, r.(*Role))
	}
	slices.SortFunc(out, func(a, b *Role) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RolesRevision returns the revision of the roles bucket's newest change
// (0 for none). A View whose RolesRevision has reached it shows every
// role change made before the call.
func (m *Manifest) RolesRevision(ctx context.Context) (uint64, error) {
	st, err := m.roles.kv.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("manifest: status %s: %w", m.roles.name, err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return 0, fmt.Errorf("manifest: status %s: no stream state", m.roles.name)
	}
	return bs.StreamInfo().State.LastSeq, nil
}

// Role returns role name as the view last saw it, or nil.
func (v *View) Role(name string) *Role {
	r, _ := v.doc(kindRoles, roleKey(name)).(*Role)
	return r
}

// Roles returns every role as the view last saw it, sorted by name, and
// the revision of the roles bucket that state is at: two calls that give
// the same revision give the same roles, so callers may cache what they
// derive from them per revision.
func (v *View) Roles() ([]*Role, uint64) {
	v.mu.RLock()
	docs, rev := v.docs[kindRoles], v.rolesRev
	v.mu.RUnlock()
	out := make([]*Role, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.(*Role))
	}
	slices.SortFunc(out, func(a, b *Role) int { return strings.Compare(a.Name, b.Name) })
	return out, rev
}

// RolesRevision returns the highest revision of the roles bucket the view
// has applied.
func (v *View) RolesRevision() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.rolesRev
}
