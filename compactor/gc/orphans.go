package gc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

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

// references returns the keys the catalog names: every live SSTable and
// every garbage entry of every sstables document, those of tables no
// longer in the schema included (a DROP that stopped before listing its
// SSTables as garbage), and every SSTable a snapshot pins. An object only
// ever moves within its document (live, then garbage, then gone), and each
// document is read in one get, so an object that moves while the documents
// are read is still found.
func (c *Collector) references(ctx context.Context) (map[string]bool, error) {
	refs, err := c.m.PinnedKeys(ctx)
	if err != nil {
		return nil, err
	}
	err = c.m.EachSSTablesDocument(ctx, func(ts *manifest.TableSSTables) error {
		for _, s := range ts.SSTables {
			refs[s.Key] = true
		}
		for _, g := range ts.Garbage {
			refs[g.Key] = true
		}
		return nil
	})
	return refs, err
}
