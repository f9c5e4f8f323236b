package models

import (
	"fmt"
	"testing"
)

// Logs built apart with the same records are equal, whatever their sharing;
// order matters.
func TestLogStatesCompareByContent(t *testing.T) {
	var m partitionLog
	var empty *logNode
	ab := empty.appended("a").appended("b")
	abAgain := empty.appended("a").appended("b")
	ba := empty.appended("b").appended("a")
	shared := ab.prev.appended("b")
	if !m.Equal(ab, abAgain) || !m.Equal(ab, shared) || m.Hash(ab) != m.Hash(abAgain) {
		t.Fatal("equal logs compare unequal")
	}
	if m.Equal(ab, ba) || m.Equal(ab, ab.prev) || m.Equal(empty, ab) {
		t.Fatal("different logs compare equal")
	}
	if ab.at(0) != "a" || ab.at(1) != "b" {
		t.Fatalf("records %q %q", ab.at(0), ab.at(1))
	}
	if got := m.DescribeState(ab); got != "[a b]" {
		t.Fatalf("described as %q", got)
	}
}

// at() finds every offset of a long log, through the jumps.
func TestLogReadsEveryOffset(t *testing.T) {
	var log *logNode
	const n = 5000
	for i := 0; i < n; i++ {
		log = log.appended(fmt.Sprint(i))
	}
	steps := 0
	for i := int64(0); i < n; i++ {
		if got := log.at(i); got != fmt.Sprint(i) {
			t.Fatalf("at(%d) = %s", i, got)
		}
	}
	// the walk to offset 0 is logarithmic, not n steps
	for node := log; node.length > 1; steps++ {
		if node.jump != nil && node.jump.length >= 1 {
			node = node.jump
		} else {
			node = node.prev
		}
	}
	if steps > 64 {
		t.Fatalf("%d steps to offset 0 of %d records", steps, n)
	}
}
