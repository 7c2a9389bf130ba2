package compactor

import (
	"bytes"
	"context"
	"maps"
	"sync"
	"testing"
)

var fuzzBase struct {
	once  sync.Once
	store *memStore
	trial trial
	view  string
}

// FuzzRunCorruptInput damages bytes of an input object, which come from
// outside: Run must fail with an error or, if the damage changed nothing
// that matters, produce what the clean input gives; never panic or return
// wrong data.
func FuzzRunCorruptInput(f *testing.F) {
	f.Add(uint8(0), uint32(0), uint8(1), uint16(0))
	f.Add(uint8(1), uint32(100), uint8(0x80), uint16(0))
	f.Add(uint8(0), uint32(1<<31), uint8(0xff), uint16(3))
	f.Add(uint8(2), uint32(7), uint8(4), uint16(60))
	f.Add(uint8(1), uint32(5000), uint8(0x10), uint16(0))
	f.Fuzz(func(t *testing.T, input uint8, off uint32, xor uint8, cut uint16) {
		fuzzBase.once.Do(func() {
			fuzzBase.store = newMemStore()
			fuzzBase.trial = randomTrial(t, fuzzBase.store, 7)
			fuzzBase.trial.job.GCBefore = 0
			outs, _, err := Run(context.Background(), fuzzBase.trial.job, RunDeps{Store: fuzzBase.store})
			if err != nil {
				t.Fatal(err)
			}
			fuzzBase.view = view(t, readTables(t, fuzzBase.store, outs), fuzzBase.trial.job.Now)
		})
		s := newMemStore()
		fuzzBase.store.mu.Lock()
		s.objects = maps.Clone(fuzzBase.store.objects)
		fuzzBase.store.mu.Unlock()
		job := fuzzBase.trial.job
		key := job.Inputs[int(input)%len(job.Inputs)].Key
		data := bytes.Clone(s.objects[key])
		data[int(off)%len(data)] ^= xor
		data = data[:len(data)-int(cut)%len(data)]
		s.objects[key] = data
		outs, _, err := Run(context.Background(), job, RunDeps{Store: s})
		if err != nil {
			return
		}
		if v := view(t, readTables(t, s, outs), job.Now); v != fuzzBase.view {
			t.Fatalf("damaged input %s merged without error into\n%s\nwant\n%s", key, v, fuzzBase.view)
		}
	})
}
