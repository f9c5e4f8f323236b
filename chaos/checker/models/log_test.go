package models

import "testing"

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
