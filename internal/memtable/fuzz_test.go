package memtable

import (
	"errors"
	"testing"
)

// FuzzMemtable interprets its input as writer operations and snapshot
// checks, and compares the memtable with the model after each.
func FuzzMemtable(f *testing.F) {
	f.Add([]byte("\x00\x03abc\x02xy\x02\x03"))
	f.Add([]byte("\x00\x08\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7fa\x01v\x00\x01a\x01w\x02\x03\x00\x01a\x01\xff\x02\x03"))
	f.Add([]byte("\x01\x00\x00\x02\x03\x01\x09zzzzzzzzz\x05hello\x03\x02\x03"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := New(Options{Merge: maxMerge, ChunkSize: 4096})
		staged := &model{values: map[string]string{}}
		committed := staged.clone()
		var snaps []snapModel
		take := func(n int) []byte {
			n = min(n, len(data))
			b := data[:n]
			data = data[n:]
			return b
		}
		for len(data) > 0 {
			switch op := take(1)[0]; op % 4 {
			case 0, 1:
				var k, v []byte
				if l := take(1); len(l) == 1 {
					k = take(int(l[0] % 13))
				}
				if l := take(1); len(l) == 1 {
					v = take(int(l[0] % 17))
				}
				errModel := staged.set(string(k), string(v))
				if err := m.Set(k, v); !errors.Is(err, errModel) {
					t.Fatalf("Set(%q, %q): error %v, model %v", k, v, err, errModel)
				}
			case 2:
				m.Commit()
				committed = staged.clone()
			case 3:
				snaps = append(snaps, snapModel{m.Snapshot(), committed})
				for _, sm := range snaps {
					checkScan(t, sm.snap, sm.md)
				}
			}
		}
	})
}
