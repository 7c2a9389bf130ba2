package compactor

// L0Pressure returns how close the fullest range of snap is to L0Limit: 0
// while every range has at most L0Threshold SSTables in L0, rising
// linearly to 1 at L0Limit, and beyond. Ingest slows flushes as it rises
// and stops them at 1, so that read amplification stays bounded when
// compaction falls behind.
func (s Strategy) L0Pressure(snap Snapshot) float64 {
	most := 0
	for _, ts := range snap.Ranges {
		n := 0
		for _, t := range ts {
			if t.Level <= 0 {
				n++
			}
		}
		most = max(most, n)
	}
	if most <= s.L0Threshold {
		return 0
	}
	return float64(most-s.L0Threshold) / float64(s.L0Limit-s.L0Threshold)
}

// Backlog is what a table's compactions have yet to do, for the autoscaler.
type Backlog struct {
	// Bytes waiting to be compacted: every L0 SSTable, and the excess of
	// each level over its target.
	Bytes int64
	// L0Tables counts the SSTables in L0 over all ranges, MaxL0 in the
	// fullest range.
	L0Tables, MaxL0 int
}

// Backlog returns snap's backlog.
func (s Strategy) Backlog(snap Snapshot) Backlog {
	var b Backlog
	for _, ts := range snap.Ranges {
		var levels [NumLevels]int64
		n := 0
		for _, t := range ts {
			l := min(max(t.Level, 0), NumLevels-1)
			levels[l] += t.Size
			if l == 0 {
				n++
			}
		}
		b.Bytes += levels[0]
		for l := 1; l < NumLevels-1; l++ {
			b.Bytes += max(0, levels[l]-s.LevelTarget(l))
		}
		b.L0Tables += n
		b.MaxL0 = max(b.MaxL0, n)
	}
	return b
}
