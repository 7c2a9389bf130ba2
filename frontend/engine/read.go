package engine

import (
	"bytes"
	"fmt"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
)

// newPartition returns an empty partition for a partition prefix.
func newPartition(prefix []byte) (*Partition, error) {
	tok, err := keys.Token(prefix)
	if err != nil {
		return nil, err
	}
	pk, err := keys.PartitionKey(prefix)
	if err != nil {
		return nil, err
	}
	return &Partition{Token: tok, Key: pk}, nil
}

// setHeader decodes a header value into p and resolves its static row.
func (p *Partition) setHeader(value []byte, now int64) error {
	if err := model.DecodeHeader(bytes.Clone(value), &p.Header); err != nil {
		return err
	}
	p.StaticLive = p.Header.ResolveStatic(now)
	return nil
}

// addRow resolves the row stored under key (partition prefix of length n)
// and keeps it if it is live.
func (p *Partition) addRow(key, value []byte, n int, now int64) (live bool, err error) {
	var r Row
	if err := model.DecodeRow(bytes.Clone(value), &r.Row); err != nil {
		return false, fmt.Errorf("engine: row %x: %w", key, err)
	}
	r.Key = bytes.Clone(key)
	if !p.Header.Resolve(r.Key[n+1:], &r.Row, now) {
		return false, nil
	}
	p.Rows = append(p.Rows, r)
	return true, nil
}

// readPartition reads the partition with the given prefix from it: its
// header, then its live rows in [start, end) (nil: the partition's edges),
// in reverse if asked, at most limit of them if limit > 0.
func readPartition(it kv.Iterator, prefix, start, end []byte, reverse bool, limit int, now int64) (*Partition, error) {
	p, err := newPartition(prefix)
	if err != nil {
		return nil, err
	}
	n := len(prefix)
	header := append(prefix[:n:n], byte(keys.KindHeader))
	if it.SeekGE(header) && bytes.Equal(it.Key(), header) {
		if err := p.setHeader(it.Value(), now); err != nil {
			return nil, fmt.Errorf("engine: header of %x: %w", prefix, err)
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if start == nil {
		start = append(prefix[:n:n], byte(keys.KindRow))
	}
	if end == nil {
		end = keys.AppendPartitionEnd(nil, prefix)
	}
	if bytes.Compare(start, end) >= 0 {
		return p, nil
	}
	add := func() (bool, error) {
		live, err := p.addRow(it.Key(), it.Value(), n, now)
		return err == nil && (!live || limit <= 0 || len(p.Rows) < limit), err
	}
	if reverse {
		for ok := it.SeekLT(end); ok && bytes.Compare(it.Key(), start) >= 0; ok = it.Prev() {
			if more, err := add(); !more {
				return p, err
			}
		}
	} else {
		for ok := it.SeekGE(start); ok && bytes.Compare(it.Key(), end) < 0; ok = it.Next() {
			if more, err := add(); !more {
				return p, err
			}
		}
	}
	return p, it.Error()
}

// scan reads a page of partitions from lower on. resumed is the prefix of
// the partition the scan resumes (after, Scan.After, lies in it): its header
// is read again, but only rows after after are returned, and its static row
// is not counted again.
func scan(it kv.Iterator, lower, resumed, after []byte, limit int, now int64) (*Page, error) {
	page := &Page{}
	rows := 0
	var (
		cur       *Partition
		curPrefix []byte
		curResume bool
	)
	// done adds cur to the page and reports whether the page is full.
	done := func() bool {
		switch {
		case cur == nil:
			return false
		case len(cur.Rows) > 0:
			page.Partitions = append(page.Partitions, *cur)
		case cur.StaticLive && !curResume:
			page.Partitions = append(page.Partitions, *cur)
			rows++
			if limit > 0 && rows >= limit {
				page.Next = keys.AppendPartitionEnd(nil, curPrefix)
				return true
			}
		}
		cur = nil
		return false
	}
	for ok := it.SeekGE(lower); ok; ok = it.Next() {
		key := it.Key()
		n, err := keys.PartitionPrefixLen(key)
		if err != nil || len(key) == n {
			return nil, fmt.Errorf("engine: malformed stored key %x", key)
		}
		if cur == nil || !bytes.Equal(key[:n], curPrefix) {
			if done() {
				return page, nil
			}
			curPrefix = bytes.Clone(key[:n])
			if cur, err = newPartition(curPrefix); err != nil {
				return nil, err
			}
			curResume = resumed != nil && bytes.Equal(curPrefix, resumed)
		}
		switch keys.Kind(key[n]) {
		case keys.KindHeader:
			if err := cur.setHeader(it.Value(), now); err != nil {
				return nil, fmt.Errorf("engine: header of %x: %w", curPrefix, err)
			}
		case keys.KindRow:
			if curResume && bytes.Compare(key, after) <= 0 {
				continue
			}
			live, err := cur.addRow(key, it.Value(), n, now)
			if err != nil {
				return nil, err
			}
			if live {
				rows++
				if limit > 0 && rows >= limit {
					page.Next = bytes.Clone(key)
					page.Partitions = append(page.Partitions, *cur)
					return page, nil
				}
			}
		default:
			return nil, fmt.Errorf("engine: stored key %x has kind %02x", key, key[n])
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	done()
	return page, nil
}
