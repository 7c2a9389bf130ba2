package gc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// sweep deletes the orphans, adding what it did to st (see the package
// comment for the rule and why its steps come in this order).
func (c *Collector) sweep(ctx context.Context, st *Stats) error {
	if err := c.acquire(ctx); err != nil {
		return err
	}
	acquired := time.Now()
	// Taken before the listing, so that ages are never overstated.
	now := c.opts.Now()
	listed, err := c.list(ctx)
	if err != nil {
		return err
	}
	refs, err := c.references(ctx)
	if err != nil {
		return err
	}
	suspects := map[string]bool{}
	var due []objectstore.Attrs
	for _, o := range listed {
		if refs[o.Key] {
			continue
		}
		age := now.Sub(o.ModTime)
		switch {
		case age < c.cfg.OrphanAge:
			st.YoungOrphans++
		case !c.suspects[o.Key]:
			suspects[o.Key] = true
			st.Suspects++
		default:
			suspects[o.Key] = true // still one if its deletion fails
			due = append(due, o)
		}
	}
	c.suspects = suspects
	c.young.Set(float64(st.YoungOrphans))
	c.suspected.Set(float64(st.Suspects))
	for len(due) > 0 {
		if time.Since(acquired) > c.opts.LeaseTTL/2 {
			if err := c.acquire(ctx); err != nil {
				return err
			}
			acquired = time.Now()
		}
		n := min(batch, len(due))
		part := due[:n]
		ok := c.deleteAll(ctx, n, func(i int) string { return part[i].Key }, func(i int, err error) {
			o := part[i]
			if err != nil {
				c.log.Warn("delete of orphan object failed; retried next sweep", "object", o.Key, "err", err)
				return
			}
			c.log.Info("deleted orphan object", "object", o.Key, "bytes", o.Size,
				"age", now.Sub(o.ModTime).Round(time.Second))
		})
		for i, o := range part {
			switch {
			case ok[i]:
				delete(c.suspects, o.Key)
				st.Orphans++
				st.OrphanBytes += o.Size
				c.orphans.Inc()
				c.orphanBytes.Add(float64(o.Size))
			case ctx.Err() == nil:
				st.Failed++
				c.failed.Inc()
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		due = due[n:]
	}
	st.Swept = true
	c.sweeps.Inc()
	return nil
}

// list returns the objects under the orphan prefixes, each once.
func (c *Collector) list(ctx context.Context) ([]objectstore.Attrs, error) {
	var out []objectstore.Attrs
	for _, p := range c.cfg.OrphanPrefixes {
		err := c.store.List(ctx, p, func(a objectstore.Attrs) error {
			out = append(out, objectstore.Attrs{Key: a.Key, Size: a.Size, ModTime: a.ModTime})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("gc: list %s: %w", p, err)
		}
	}
	// Nested prefixes list an object twice.
	slices.SortFunc(out, func(a, b objectstore.Attrs) int { return strings.Compare(a.Key, b.Key) })
	return slices.CompactFunc(out, func(a, b objectstore.Attrs) bool { return a.Key == b.Key }), nil
}

// references returns the keys the catalog names: every live SSTable of
// the tables of the schema and of the garbage list and of every sstables
// document, and every garbage entry. The live sets are read before the
// garbage list is read again, so that an object that moves from one to the
// other meanwhile is found.
func (c *Collector) references(ctx context.Context) (map[string]bool, error) {
	refs := map[string]bool{}
	tables := map[uuid.UUID]bool{}
	before, err := c.m.Garbage(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range before {
		tables[g.Table] = true
		refs[g.Key] = true
	}
	schema, err := c.m.Schema(ctx)
	if err != nil {
		return nil, err
	}
	for _, ks := range schema.Keyspaces {
		for _, t := range ks.Tables {
			tables[t.ID] = true
		}
	}
	for t := range tables {
		live, err := c.m.SSTables(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, s := range live {
			refs[s.Key] = true
		}
	}
	// Every document too: a table that a DROP took out of the schema but
	// whose SSTables it never moved to the garbage list is in no schema.
	err = c.m.EachSSTablesDocument(ctx, func(ts *manifest.TableSSTables) error {
		for _, s := range ts.SSTables {
			refs[s.Key] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	after, err := c.m.Garbage(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range after {
		refs[g.Key] = true
	}
	return refs, nil
}
