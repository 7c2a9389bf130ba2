package model

import (
	"math"
	"math/rand/v2"
)

// gen draws random rows and headers from small domains, so that versions of
// one cell collide often and every tie-break rule gets exercised.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) gen { return gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g gen) ts() int64 {
	switch g.r.IntN(20) {
	case 0:
		return math.MinInt64 + int64(g.r.IntN(3))
	case 1:
		return math.MaxInt64 - int64(g.r.IntN(3))
	case 2:
		return -int64(g.r.IntN(4))
	}
	return 1_700_000_000_000_000 + int64(g.r.IntN(6))
}

func (g gen) localTime() int64 {
	if g.r.IntN(20) == 0 {
		return int64(g.r.IntN(2)) // includes 0, a legal if unusual local time
	}
	return 1_700_000_000 + int64(g.r.IntN(5))
}

func (g gen) deletion() Deletion {
	if g.r.IntN(3) == 0 {
		return Live
	}
	d := Deletion{MarkedForDeleteAt: g.ts(), LocalDeletionTime: g.localTime()}
	if d.IsLive() {
		d.LocalDeletionTime = 1
	}
	return d
}

func (g gen) pick(choices ...string) []byte {
	s := choices[g.r.IntN(len(choices))]
	if s == "" && g.r.IntN(2) == 0 {
		return nil
	}
	return []byte(s)
}

func (g gen) cell() Cell {
	c := Cell{
		Column:    uint32(g.r.IntN(4)),
		Timestamp: g.ts(),
	}
	if g.r.IntN(5) == 0 {
		c.Column = math.MaxUint32 - uint32(g.r.IntN(2))
	}
	if c.Column%2 == 1 {
		c.Path = g.pick("a", "b", "\x00", "ab")
	}
	switch g.r.IntN(3) {
	case 0:
		c.Tombstone = true
		c.LocalDeletionTime = g.localTime()
	case 1:
		c.TTL = int32(1 + g.r.IntN(2))
		if g.r.IntN(10) == 0 {
			c.TTL = math.MaxInt32
		}
		c.LocalDeletionTime = g.localTime()
		c.Value = g.pick("", "x", "y")
	default:
		c.Value = g.pick("", "x", "y", "xy")
	}
	return c
}

func (g gen) liveness() Liveness {
	if g.r.IntN(3) == 0 {
		return Liveness{}
	}
	l := Liveness{Present: true, Timestamp: g.ts()}
	if g.r.IntN(2) == 0 {
		l.TTL = int32(1 + g.r.IntN(2))
		l.Expires = g.localTime()
	}
	return l
}

// row returns a random row, not necessarily in normal form.
func (g gen) row() Row {
	r := Row{Liveness: g.liveness()}
	if g.r.IntN(3) == 0 {
		r.Deletion = g.deletion()
	}
	for range g.r.IntN(3) {
		if d := g.deletion(); !d.IsLive() {
			r.ColumnDeletions = append(r.ColumnDeletions, ColumnDeletion{Column: uint32(g.r.IntN(4)), Deletion: d})
		}
	}
	for range g.r.IntN(6) {
		r.Cells = append(r.Cells, g.cell())
	}
	return r
}

func (g gen) bound() []byte { return g.pick("", "a", "ab", "b", "ba", "c", "d") }

// header returns a random header, not necessarily in normal form.
func (g gen) header() Header {
	h := Header{}
	if g.r.IntN(3) == 0 {
		h.Deletion = g.deletion()
	}
	if g.r.IntN(2) == 0 {
		h.Static = g.row()
		h.Static.Liveness = Liveness{}
	}
	for range g.r.IntN(4) {
		t := RangeTombstone{Start: g.bound(), End: g.bound(), Deletion: g.deletion()}
		if t.Deletion.IsLive() {
			t.Deletion = Deletion{MarkedForDeleteAt: g.ts(), LocalDeletionTime: 2}
		}
		h.RangeTombstones = append(h.RangeTombstones, t)
	}
	return h
}
