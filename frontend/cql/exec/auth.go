package exec

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/crypto/bcrypt"

	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/logsample"
	"github.com/sedimentdb/sediment/manifest"
)

// Auth is password authentication and role-based authorization over the
// catalog's roles, as Cassandra's PasswordAuthenticator,
// CassandraRoleManager and CassandraAuthorizer behave. An Executor with a
// nil Auth allows everything (Cassandra's AllowAllAuthenticator and
// AllowAllAuthorizer).
//
// Roles live in the manifest (manifest.Role): a role's document holds its
// bcrypt password hash, its flags, the roles granted to it and the
// permissions granted to it, so every change is one compare-and-set.
// Lookups read the View, and what is derived from it (a user's roles,
// superuser status and permissions) is cached per revision of the roles
// bucket: a change anywhere in the cluster reaches every frontend's
// checks as soon as its View has it.
type Auth struct {
	m    *manifest.Manifest
	view *manifest.View
	cost int
	log  *slog.Logger

	snap atomic.Pointer[authSnapshot]

	// verified remembers, per role, the password last checked right
	// against its current hash, as an HMAC under a key of this process:
	// a driver opens several connections at once, and each would
	// otherwise cost a bcrypt comparison (deliberately slow). Wrong
	// passwords are never remembered and always pay the full cost.
	macKey   [32]byte
	verified sync.Map // role → verifiedPassword

	cfg   AuthConfig
	guard *loginGuard
	// dummy is the hash an unknown role's password is compared with, so
	// that it costs what a wrong password of a known role costs and the
	// time of a refusal does not tell which roles exist.
	dummy string
	// defaultPw caches whether the cassandra role's hash is of the
	// password cassandra, by hash.
	defaultPw struct {
		sync.Mutex
		hash  string
		inUse bool
	}
	// Logins choose how often these are logged: each kind is sampled.
	throttledLog, defaultPwLog logsample.Sampler
}

type verifiedPassword struct {
	hash string // the role's SaltedHash when the password was checked
	mac  []byte
}

var _ transport.Authenticator = (*Auth)(nil)

// AuthOptions tune an Auth. The zero value is Cassandra's setup.
type AuthOptions struct {
	// BcryptCost is the cost of new password hashes (default 10, as
	// Cassandra's auth_bcrypt_gensalt_log2_rounds); tests lower it.
	BcryptCost int
	// Config is the first superuser and the login throttles; zero fields
	// take their flags' defaults.
	Config     AuthConfig
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// DefaultSuperuser is the role, and its password, that Setup creates in a
// catalog without roles, as Cassandra does.
const DefaultSuperuser = "cassandra"

// NewAuth returns an Auth over the roles of m, read through view.
func NewAuth(m *manifest.Manifest, view *manifest.View, o AuthOptions) *Auth {
	if o.BcryptCost == 0 {
		o.BcryptCost = bcrypt.DefaultCost
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	var defaults AuthConfig
	defaults.RegisterFlags(flag.NewFlagSet("", flag.ContinueOnError))
	cfg := o.Config
	if cfg.MaxConcurrentChecks <= 0 {
		cfg.MaxConcurrentChecks = defaults.MaxConcurrentChecks
	}
	if cfg.FailureBurst <= 0 {
		cfg.FailureBurst = defaults.FailureBurst
	}
	if cfg.FailureRefill <= 0 {
		cfg.FailureRefill = defaults.FailureRefill
	}
	a := &Auth{m: m, view: view, cost: o.BcryptCost, log: o.Logger.With("component", "auth"), cfg: cfg, guard: newLoginGuard(cfg, o.Registerer)}
	rand.Read(a.macKey[:])
	var pw [32]byte
	rand.Read(pw[:])
	dummy, err := bcrypt.GenerateFromPassword(pw[:16], a.cost)
	if err != nil {
		panic(err) // only a cost out of range fails, and cost is checked by bcrypt's callers
	}
	a.dummy = string(dummy)
	promauto.With(o.Registerer).NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "sediment", Subsystem: "cql", Name: "default_superuser_password",
		Help: "1 while the role cassandra exists with the password cassandra: change it or drop the role.",
	}, func() float64 {
		if a.DefaultPasswordInUse() {
			return 1
		}
		return 0
	})
	return a
}

// DefaultPasswordInUse reports whether the role cassandra exists with the
// password cassandra. It costs a bcrypt comparison once per change of
// the role's hash.
func (a *Auth) DefaultPasswordInUse() bool {
	r := a.view.Role(DefaultSuperuser)
	if r == nil || r.SaltedHash == "" {
		return false
	}
	a.defaultPw.Lock()
	defer a.defaultPw.Unlock()
	if a.defaultPw.hash != r.SaltedHash {
		a.defaultPw.hash = r.SaltedHash
		a.defaultPw.inUse = bcrypt.CompareHashAndPassword([]byte(r.SaltedHash), []byte(DefaultSuperuser)) == nil
	}
	return a.defaultPw.inUse
}

// Setup creates the first superuser if the catalog holds no role at all:
// the configured one (AuthConfig.Superuser) with its password, or else
// cassandra, password cassandra, as Cassandra does. Any number of
// frontends may run it at once: one creates the role and the others find
// it. While cassandra keeps its default password, Setup warns.
func (a *Auth) Setup(ctx context.Context) error {
	roles, err := a.m.Roles(ctx)
	if err != nil {
		return err
	}
	if len(roles) > 0 {
		if err := a.sync(ctx); err != nil {
			return err
		}
		if a.DefaultPasswordInUse() {
			a.log.Warn("the superuser role 'cassandra' still has the password 'cassandra': anyone can log in as it; change its password, or create another superuser and drop it")
		}
		return nil
	}
	name, password := DefaultSuperuser, DefaultSuperuser
	if a.cfg.Superuser != "" {
		if password, err = a.cfg.superuserPassword(); err != nil {
			return err
		}
		name = a.cfg.Superuser
	}
	hash, err := a.hash(password)
	if err != nil {
		return err
	}
	err = a.m.CreateRole(ctx, manifest.Role{Name: name, SaltedHash: hash, Login: true, Superuser: true})
	if errors.Is(err, manifest.ErrExists) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.cfg.Superuser != "" {
		a.log.Info("created the first superuser role from -cql.auth.superuser", "role", name)
	} else {
		a.log.Warn("created the default superuser role 'cassandra' with password 'cassandra': create another superuser and drop this one, or change its password; -cql.auth.superuser sets the first superuser from a secret instead")
	}
	return a.sync(ctx)
}

// CheckPassword implements transport.Authenticator: the role must exist,
// have this password and be allowed to log in. As in Cassandra, the
// password is checked first (PasswordAuthenticator), then LOGIN
// (ClientState.login): a role without LOGIN given its right password is
// refused with a Bad credentials error of its own, which the frontend
// sends as it is.
//
// Failures are throttled per source address and per role (loginGuard):
// a throttled attempt is refused without being checked. An unknown role,
// or one without a password, is compared with a dummy hash, so that its
// refusal takes as long as a wrong password's.
func (a *Auth) CheckPassword(ctx context.Context, remote net.Addr, role, password string) (bool, error) {
	source := sourceKey(remote)
	if !a.guard.allow(source, role) {
		a.guard.failures.WithLabelValues("throttled").Inc()
		a.throttledLog.Warn(a.log, "login throttled: too many failures from this address or for this role", "remote", source, "role", role)
		return false, wire.Errorf(wire.CodeBadCredentials, "Too many failed login attempts; retry later")
	}
	r := a.view.Role(role)
	known := r != nil && r.SaltedHash != ""
	hash := a.dummy
	if known {
		hash = r.SaltedHash
	}
	ok, err := a.verify(ctx, role, hash, password)
	if err != nil {
		return false, err
	}
	if !ok || !known {
		a.guard.failed(source, role)
		return false, nil
	}
	if !r.Login {
		a.guard.failed(source, role)
		return false, wire.Errorf(wire.CodeBadCredentials, "%s is not permitted to log in", role)
	}
	if role == DefaultSuperuser && password == DefaultSuperuser {
		a.defaultPwLog.Warn(a.log, "a client logged in as 'cassandra' with the default password: change it", "remote", source)
	}
	return true, nil
}

// verify checks password against the role's salted hash, remembering a
// match so that a pool of connections costs one bcrypt comparison. The
// comparison runs on one of the guard's bounded slots.
func (a *Auth) verify(ctx context.Context, role, hash, password string) (bool, error) {
	mac := hmac.New(sha256.New, a.macKey[:])
	mac.Write([]byte(password))
	sum := mac.Sum(nil)
	if v, ok := a.verified.Load(role); ok {
		if v := v.(verifiedPassword); v.hash == hash && hmac.Equal(v.mac, sum) {
			return true, nil
		}
	}
	var err error
	if cerr := a.guard.compare(ctx, func() error {
		err = bcrypt.CompareHashAndPassword([]byte(hash), []byte(password))
		return nil
	}); cerr != nil {
		return false, cerr
	}
	if errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("exec: password hash of role %q: %w", role, err)
	}
	a.verified.Store(role, verifiedPassword{hash: hash, mac: sum})
	return true, nil
}

// audit logs a change of roles or permissions that p made, with the
// attribute audit=true for log pipelines to route: the trail of who
// changed access. Passwords never appear, only whether one was set.
func (a *Auth) audit(p *principal, action string, args ...any) {
	a.log.Info("audit: "+action, append([]any{"audit", true, "by", p.name}, args...)...)
}

// auditBool shows an optional role flag: "unchanged" when not given.
func auditBool(b *bool) string {
	if b == nil {
		return "unchanged"
	}
	return fmt.Sprint(*b)
}

// grantAction names a GRANT or a REVOKE of what.
func grantAction(what string, grant bool) string {
	if grant {
		return "grant " + what
	}
	return "revoke " + what
}

// hash returns the salted bcrypt hash of a password.
func (a *Auth) hash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), a.cost)
	if errors.Is(err, bcrypt.ErrPasswordTooLong) {
		return "", invalidf("Password must not be longer than 72 bytes")
	}
	if err != nil {
		return "", serverError(err)
	}
	return string(h), nil
}

// sync waits until the View shows every role change made so far, so that
// a session sees its own changes in its next statement.
func (a *Auth) sync(ctx context.Context) error {
	rev, err := a.m.RolesRevision(ctx)
	if err != nil {
		return err
	}
	return a.view.WaitFor(ctx, func(v *manifest.View) bool { return v.RolesRevision() >= rev })
}

// authSnapshot is the roles at one revision and what was derived from
// them.
type authSnapshot struct {
	rev   uint64
	roles map[string]*manifest.Role

	users sync.Map // name → *principal, derived on first use
}

// principal is a logged-in role as checks see it.
type principal struct {
	name string
	// roles are the role itself and every role granted to it, directly or
	// through others.
	roles map[string]bool
	super bool
	// perms are the permissions of every role in roles, by resource.
	perms map[string]permSet
}

// snapshot returns the roles at the View's current revision.
func (a *Auth) snapshot() *authSnapshot {
	if s := a.snap.Load(); s != nil && s.rev == a.view.RolesRevision() {
		return s
	}
	list, rev := a.view.Roles()
	s := &authSnapshot{rev: rev, roles: make(map[string]*manifest.Role, len(list))}
	for _, r := range list {
		s.roles[r.Name] = r
	}
	a.snap.Store(s)
	return s
}

// principal returns the logged-in role name, computed once per revision.
func (a *Auth) principal(name string) *principal {
	s := a.snapshot()
	if p, ok := s.users.Load(name); ok {
		return p.(*principal)
	}
	p := &principal{name: name, roles: s.closure(name, true), perms: map[string]permSet{}}
	for r := range p.roles {
		role := s.roles[r]
		p.super = p.super || role.Superuser
		for res, names := range role.Permissions {
			p.perms[res] |= permsOf(names)
		}
	}
	actual, _ := s.users.LoadOrStore(name, p)
	return actual.(*principal)
}

// closure returns name, if it exists, and the roles granted to it: only
// directly, or also through other roles when recursive. Grants of roles
// since dropped are skipped.
func (s *authSnapshot) closure(name string, recursive bool) map[string]bool {
	out := map[string]bool{}
	if s.roles[name] == nil {
		return out
	}
	out[name] = true
	queue := []string{name}
	for len(queue) > 0 {
		r := s.roles[queue[0]]
		queue = queue[1:]
		for _, m := range r.MemberOf {
			if s.roles[m] == nil || out[m] {
				continue
			}
			out[m] = true
			if recursive {
				queue = append(queue, m)
			}
		}
	}
	return out
}

// permission is one of Cassandra's permissions; the order is its enum's,
// which LIST PERMISSIONS sorts by.
type permission uint8

const (
	permCreate permission = iota
	permAlter
	permDrop
	permSelect
	permModify
	permAuthorize
	permDescribe
	permExecute
	numPerms
)

var permNames = [numPerms]string{"CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE", "DESCRIBE", "EXECUTE"}

func (p permission) String() string { return permNames[p] }

// permSet is a set of permissions, bit i for permission i.
type permSet uint16

func (s permSet) has(p permission) bool { return s&(1<<p) != 0 }

func setOf(ps ...permission) permSet {
	var s permSet
	for _, p := range ps {
		s |= 1 << p
	}
	return s
}

// permsOf parses stored permission names; unknown ones, which a newer
// version may have written, grant nothing.
func permsOf(names []string) permSet {
	var s permSet
	for _, n := range names {
		if i := slices.Index(permNames[:], n); i >= 0 {
			s |= 1 << i
		}
	}
	return s
}

// names lists the permissions of s in enum order.
func (s permSet) names() []string {
	var out []string
	for p := range numPerms {
		if s.has(p) {
			out = append(out, p.String())
		}
	}
	return out
}

// resource is an authorization resource by its Cassandra name:
//
//	data            ALL KEYSPACES   <all keyspaces>
//	data/k          KEYSPACE k      <keyspace k>
//	data/k/t        TABLE k.t       <table k.t>
//	roles           ALL ROLES       <all roles>
//	roles/r         ROLE r          <role r>
type resource string

const (
	resData  resource = "data"
	resRoles resource = "roles"
)

func keyspaceResource(ks string) resource { return resource("data/" + ks) }
func tableResource(ks, t string) resource { return resource("data/" + ks + "/" + t) }
func roleResource(name string) resource   { return resource("roles/" + name) }
func (r resource) isRoles() bool          { return r == resRoles || strings.HasPrefix(string(r), "roles/") }

// parts returns the keyspace and table of a data resource, or the role of
// a role resource.
func (r resource) parts() (string, string) {
	if rest, ok := strings.CutPrefix(string(r), "roles/"); ok {
		return rest, ""
	}
	rest, ok := strings.CutPrefix(string(r), "data/")
	if !ok {
		return "", ""
	}
	ks, t, _ := strings.Cut(rest, "/")
	return ks, t
}

// String is the resource as Cassandra prints it.
func (r resource) String() string {
	switch r {
	case resData:
		return "<all keyspaces>"
	case resRoles:
		return "<all roles>"
	}
	a, b := r.parts()
	switch {
	case r.isRoles():
		return "<role " + a + ">"
	case b != "":
		return "<table " + a + "." + b + ">"
	}
	return "<keyspace " + a + ">"
}

// parent returns the resource r is in: a table's keyspace, a keyspace's
// ALL KEYSPACES, a role's ALL ROLES. The roots have none.
func (r resource) parent() (resource, bool) {
	switch {
	case r == resData || r == resRoles:
		return "", false
	case r.isRoles():
		return resRoles, true // a role's name may hold '/'
	}
	i := strings.LastIndexByte(string(r), '/')
	return r[:i], true
}

// chain returns r and its parents, r first.
func (r resource) chain() []resource {
	out := []resource{r}
	for p, ok := r.parent(); ok; p, ok = p.parent() {
		out = append(out, p)
	}
	return out
}

// applicable returns the permissions that may be granted on r.
func (r resource) applicable() permSet {
	_, t := r.parts()
	switch {
	case r == resRoles:
		return setOf(permCreate, permAlter, permDrop, permAuthorize, permDescribe)
	case r.isRoles():
		return setOf(permAlter, permDrop, permAuthorize)
	case t != "":
		return setOf(permAlter, permDrop, permSelect, permModify, permAuthorize)
	}
	return setOf(permCreate, permAlter, permDrop, permSelect, permModify, permAuthorize)
}

// has reports whether p holds perm on r or any of its parents.
func (p *principal) has(perm permission, r resource) bool {
	if p.super {
		return true
	}
	for ok := true; ok; r, ok = r.parent() {
		if p.perms[string(r)].has(perm) {
			return true
		}
	}
	return false
}

// ensure is has as an Unauthorized error with Cassandra's message.
func (p *principal) ensure(perm permission, r resource) error {
	if p.has(perm, r) {
		return nil
	}
	return unauthorizedf("User %s has no %s permission on %s or any of its parents", p.name, perm, r)
}

// ensureForRoles is ensure for the role statements (CREATE, ALTER and
// DROP ROLE, GRANT and REVOKE of roles), whose refusal Cassandra's
// AuthenticationStatement.checkPermission words without the permission.
func (p *principal) ensureForRoles(perm permission, r resource) error {
	if p.has(perm, r) {
		return nil
	}
	return unauthorizedf("User %s does not have sufficient privileges to perform the requested operation", p.name)
}
