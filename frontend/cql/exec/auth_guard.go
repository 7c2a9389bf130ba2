package exec

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// AuthConfig configures password authentication's defences and its first
// superuser.
type AuthConfig struct {
	// Superuser, when set, is the superuser Setup creates in a catalog
	// without roles, with the password SuperuserPassword or the content of
	// SuperuserPasswordFile, instead of cassandra/cassandra.
	Superuser             string `yaml:"superuser"`
	SuperuserPassword     string `yaml:"superuser_password"`
	SuperuserPasswordFile string `yaml:"superuser_password_file"`
	// MaxConcurrentChecks bounds the bcrypt comparisons running at once,
	// so that a flood of logins leaves cores to the queries.
	MaxConcurrentChecks int `yaml:"max_concurrent_checks"`
	// FailureBurst failed logins are allowed per source address and per
	// role; past them, one more per FailureRefill. A throttled attempt is
	// refused without a bcrypt comparison.
	FailureBurst  int           `yaml:"failure_burst"`
	FailureRefill time.Duration `yaml:"failure_refill"`
}

// RegisterFlags registers the flags under "cql.auth.".
func (c *AuthConfig) RegisterFlags(f *flag.FlagSet) {
	const p = "cql.auth."
	f.StringVar(&c.Superuser, p+"superuser", "", "Superuser role created at the first start of a cluster (no role yet), with -cql.auth.superuser-password-file or $SEDIMENT_CQL_AUTH_SUPERUSER_PASSWORD, instead of cassandra/cassandra.")
	f.StringVar(&c.SuperuserPassword, p+"superuser-password", "", "Password of -cql.auth.superuser. A secret: set $SEDIMENT_CQL_AUTH_SUPERUSER_PASSWORD or use -cql.auth.superuser-password-file; refused on the command line.")
	f.StringVar(&c.SuperuserPasswordFile, p+"superuser-password-file", "", "File holding the password of -cql.auth.superuser (surrounding white space ignored).")
	f.IntVar(&c.MaxConcurrentChecks, p+"max-concurrent-checks", max(1, runtime.GOMAXPROCS(0)/2), "bcrypt password comparisons running at once; more logins wait (default half the cores).")
	f.IntVar(&c.FailureBurst, p+"failure-burst", 10, "Failed logins allowed per source address and per role before throttling.")
	f.DurationVar(&c.FailureRefill, p+"failure-refill", 6*time.Second, "Once throttled, one more attempt is allowed per source address and per role every this long.")
}

// Validate checks the configuration.
func (c *AuthConfig) Validate() error {
	var errs []error
	if c.SuperuserPassword != "" && c.SuperuserPasswordFile != "" {
		errs = append(errs, errors.New("config: set -cql.auth.superuser-password or -cql.auth.superuser-password-file, not both"))
	}
	if c.Superuser != "" && c.SuperuserPassword == "" && c.SuperuserPasswordFile == "" {
		errs = append(errs, errors.New("config: -cql.auth.superuser needs a password: $SEDIMENT_CQL_AUTH_SUPERUSER_PASSWORD or -cql.auth.superuser-password-file"))
	}
	if c.MaxConcurrentChecks < 1 || c.FailureBurst < 1 || c.FailureRefill <= 0 {
		errs = append(errs, errors.New("config: -cql.auth.max-concurrent-checks, -cql.auth.failure-burst and -cql.auth.failure-refill must be positive"))
	}
	return errors.Join(errs...)
}

// superuserPassword returns the configured first superuser's password.
func (c *AuthConfig) superuserPassword() (string, error) {
	if c.SuperuserPasswordFile == "" {
		return c.SuperuserPassword, nil
	}
	data, err := os.ReadFile(c.SuperuserPasswordFile)
	if err != nil {
		return "", fmt.Errorf("exec: -cql.auth.superuser-password-file: %w", err)
	}
	pw := strings.TrimSpace(string(data))
	if pw == "" {
		return "", errors.New("exec: -cql.auth.superuser-password-file is empty")
	}
	return pw, nil
}

// maxThrottled bounds the source addresses and roles tracked: past it the
// entries that have refilled are dropped, and if none has, all of one
// kind, so that memory stays bounded however many addresses an attacker
// has (which then lets them through, while the per-role limit still
// holds).
const maxThrottled = 1 << 16

// loginGuard throttles failed logins per source and per role, each with a
// token bucket of failures, and bounds the bcrypt work running at once.
type loginGuard struct {
	cfg   AuthConfig
	slots chan struct{}
	now   func() time.Time

	mu      sync.Mutex
	sources map[string]*failureBucket
	roles   map[string]*failureBucket

	failures *prometheus.CounterVec
}

type failureBucket struct {
	tokens float64
	at     time.Time
}

func newLoginGuard(cfg AuthConfig, reg prometheus.Registerer) *loginGuard {
	return &loginGuard{
		cfg: cfg, slots: make(chan struct{}, cfg.MaxConcurrentChecks), now: time.Now,
		sources: map[string]*failureBucket{}, roles: map[string]*failureBucket{},
		failures: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
			Namespace: "sediment", Subsystem: "cql", Name: "auth_failures_total",
			Help: "Failed CQL logins: bad_credentials (wrong password, unknown role or no LOGIN) or throttled (refused unchecked after too many failures from the source or for the role).",
		}, []string{"reason"}),
	}
}

// sourceKey is the throttled unit of a client address: its IP, or for
// IPv6 its /64, which one host usually holds whole.
func sourceKey(addr net.Addr) string {
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case nil:
		return ""
	default:
		host, _, err := net.SplitHostPort(addr.String())
		if err != nil {
			return addr.String()
		}
		ip = net.ParseIP(host)
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// refilled returns b's tokens now.
func (g *loginGuard) refilled(b *failureBucket, now time.Time) float64 {
	return min(float64(g.cfg.FailureBurst), b.tokens+float64(now.Sub(b.at))/float64(g.cfg.FailureRefill))
}

// allow reports whether an attempt from source for role may be checked.
func (g *loginGuard) allow(source, role string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for _, b := range []*failureBucket{g.sources[source], g.roles[role]} {
		if b != nil && g.refilled(b, now) < 1 {
			return false
		}
	}
	return true
}

// failed takes a token from source's and role's buckets.
func (g *loginGuard) failed(source, role string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for _, t := range []struct {
		m   map[string]*failureBucket
		key string
	}{{g.sources, source}, {g.roles, role}} {
		b := t.m[t.key]
		if b == nil {
			g.prune(t.m, now)
			b = &failureBucket{tokens: float64(g.cfg.FailureBurst), at: now}
			t.m[t.key] = b
		}
		b.tokens, b.at = max(0, g.refilled(b, now)-1), now
	}
	g.failures.WithLabelValues("bad_credentials").Inc()
}

// prune makes room in m for one more entry. g.mu is held.
func (g *loginGuard) prune(m map[string]*failureBucket, now time.Time) {
	if len(m) < maxThrottled {
		return
	}
	for k, b := range m {
		if g.refilled(b, now) >= float64(g.cfg.FailureBurst) {
			delete(m, k)
		}
	}
	if len(m) >= maxThrottled {
		clear(m)
	}
}

// compare runs check on one of the bounded slots.
func (g *loginGuard) compare(ctx context.Context, check func() error) error {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-g.slots }()
	return check()
}
