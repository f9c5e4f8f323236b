package models

import (
	"fmt"
	"sort"

	"kraftlog/checker/linear"
)

// Refute proves a partition's history illegal from what a log gives for
// free, before any search: a send's offset is its place in the order of all
// sends, and a record once at an offset stays there. Each rule below holds
// in every linearization, whatever the operations of unknown outcome did,
// so a broken rule is a proof; the search is left for what they miss.
//
// The rules, cheapest first, each naming the operations that break it:
//   - two sends acknowledged at one offset;
//   - a read of an offset that saw another value than the send acknowledged
//     there, or than another read of that offset;
//   - a read that saw a value no send called before it returned could have
//     put at that offset;
//   - a read (or an acknowledged send) at offset o before o+1 (o) sends had
//     been called;
//   - a send acknowledged at a lower offset than a send that had returned
//     before it was called (offsets against real time);
//   - a read that saw nothing at offset o, called after a send at o or
//     above was acknowledged, or after a read saw something at o or above.
func (partitionLog) Refute(ops []linear.Operation) *linear.Refutation {
	f := collectLogFacts(ops)
	for _, rule := range []func(logFacts) *linear.Refutation{
		sameOffsetTwice, readsDisagree, valueNeverSent, offsetTooSoon, offsetsAgainstTime, seenThenGone,
	} {
		if r := rule(f); r != nil {
			return r
		}
	}
	return nil
}

// logFacts is one partition's operations sorted out for the rules.
type logFacts struct {
	ops []linear.Operation
	// acked are the sends acknowledged with an offset, by index into ops.
	acked []int
	// sendCalls are the call times of every send, acknowledged or not,
	// sorted: how many sends had been called by a time.
	sendCalls []int64
	// sendsOf are the sends (any outcome) of each value.
	sendsOf map[string][]int
	// seen are the reads that saw a record; empty those that saw nothing.
	seen, empty []int
}

func collectLogFacts(ops []linear.Operation) logFacts {
	f := logFacts{ops: ops, sendsOf: map[string][]int{}}
	for i, op := range ops {
		in := op.Input.(logInput)
		unknown := op.Output == linear.OutputUnknown
		switch {
		case in.f == "send":
			f.sendCalls = append(f.sendCalls, op.Call)
			f.sendsOf[in.value] = append(f.sendsOf[in.value], i)
			if !unknown {
				f.acked = append(f.acked, i)
			}
		case unknown:
			// a read of unknown outcome says nothing
		case op.Output.(logRead).visible:
			f.seen = append(f.seen, i)
		default:
			f.empty = append(f.empty, i)
		}
	}
	sort.Slice(f.sendCalls, func(i, j int) bool { return f.sendCalls[i] < f.sendCalls[j] })
	return f
}

// offset is where operation i acted: an acknowledged send's offset or a
// read's.
func (f logFacts) offset(i int) int64 {
	if o, ok := f.ops[i].Output.(int64); ok {
		return o
	}
	return f.ops[i].Input.(logInput).offset
}

func (f logFacts) readValue(i int) string { return f.ops[i].Output.(logRead).value }

// sendsCalledBy counts the sends called no later than t (a call at the
// same instant as a return counts as concurrent with it).
func (f logFacts) sendsCalledBy(t int64) int {
	return sort.Search(len(f.sendCalls), func(k int) bool { return f.sendCalls[k] > t })
}

func refutation(conflict []int, format string, args ...any) *linear.Refutation {
	return &linear.Refutation{Reason: fmt.Sprintf(format, args...), Conflict: conflict}
}

func sameOffsetTwice(f logFacts) *linear.Refutation {
	at := map[int64]int{}
	for _, i := range f.acked {
		o := f.offset(i)
		if j, dup := at[o]; dup {
			return refutation([]int{j, i}, "two sends were acknowledged at offset %d", o)
		}
		at[o] = i
	}
	return nil
}

func readsDisagree(f logFacts) *linear.Refutation {
	// first is whichever operation first fixed the record at an offset.
	first := map[int64]int{}
	value := func(i int) string {
		if f.ops[i].Input.(logInput).f == "send" {
			return f.ops[i].Input.(logInput).value
		}
		return f.readValue(i)
	}
	for _, i := range append(append([]int{}, f.acked...), f.seen...) {
		o := f.offset(i)
		j, fixed := first[o]
		if !fixed {
			first[o] = i
			continue
		}
		if value(i) != value(j) {
			return refutation([]int{j, i}, "offset %d holds %s and %s", o, value(j), value(i))
		}
	}
	return nil
}

func valueNeverSent(f logFacts) *linear.Refutation {
	for _, r := range f.seen {
		read, v := f.ops[r], f.readValue(r)
		possible := false
		for _, s := range f.sendsOf[v] {
			// An acknowledged send of v elsewhere cannot have put v here.
			elsewhere := f.ops[s].Output != linear.OutputUnknown && f.offset(s) != f.offset(r)
			if f.ops[s].Call <= read.Return && !elsewhere {
				possible = true
				break
			}
		}
		if !possible {
			return refutation(append([]int{r}, f.sendsOf[v]...),
				"read(%d) saw %s, which no send called before it returned could have put there", f.offset(r), v)
		}
	}
	return nil
}

func offsetTooSoon(f logFacts) *linear.Refutation {
	for _, i := range f.seen {
		if o := f.offset(i); int64(f.sendsCalledBy(f.ops[i].Return)) < o+1 {
			return refutation([]int{i}, "read(%d) saw a record before %d sends had been called", o, o+1)
		}
	}
	for _, i := range f.acked {
		// the send itself is among those called by its return
		if o := f.offset(i); int64(f.sendsCalledBy(f.ops[i].Return)) < o+1 {
			return refutation([]int{i}, "a send was acknowledged at offset %d before %d other sends had been called", o, o)
		}
	}
	return nil
}

// offsetsAgainstTime: a send at a lower offset is linearized before one at
// a higher offset, so it cannot have been called after the higher one
// returned.
func offsetsAgainstTime(f logFacts) *linear.Refutation {
	byOffset := append([]int{}, f.acked...)
	sort.Slice(byOffset, func(a, b int) bool { return f.offset(byOffset[a]) < f.offset(byOffset[b]) })
	earliest := -1 // the send of earliest return among those above
	for k := len(byOffset) - 1; k >= 0; k-- {
		i := byOffset[k]
		if earliest >= 0 && f.ops[earliest].Return < f.ops[i].Call {
			return refutation([]int{earliest, i},
				"the send at offset %d returned before the send at offset %d was called",
				f.offset(earliest), f.offset(i))
		}
		if earliest < 0 || f.ops[i].Return < f.ops[earliest].Return {
			earliest = i
		}
	}
	return nil
}

// seenThenGone: once a send was acknowledged at offset o, or a read saw a
// record at o, the log is longer than o for good; a read of o or below
// called later must see something.
func seenThenGone(f logFacts) *linear.Refutation {
	evidence := append(append([]int{}, f.acked...), f.seen...)
	sort.Slice(evidence, func(a, b int) bool { return f.ops[evidence[a]].Return < f.ops[evidence[b]].Return })
	empty := append([]int{}, f.empty...)
	sort.Slice(empty, func(a, b int) bool { return f.ops[empty[a]].Call < f.ops[empty[b]].Call })
	longest, k := -1, 0 // the evidence of the highest offset returned so far
	for _, r := range empty {
		for ; k < len(evidence) && f.ops[evidence[k]].Return < f.ops[r].Call; k++ {
			if longest < 0 || f.offset(evidence[k]) > f.offset(longest) {
				longest = evidence[k]
			}
		}
		if longest >= 0 && f.offset(longest) >= f.offset(r) {
			return refutation([]int{longest, r},
				"read(%d) saw nothing after offset %d was already written", f.offset(r), f.offset(longest))
		}
	}
	return nil
}
