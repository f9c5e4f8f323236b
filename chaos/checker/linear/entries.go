package linear

import "sort"

// entry is a call or a return of one operation in the time-ordered,
// doubly linked history list that the search walks.
type entry struct {
	call bool
	op   int
	time int64
	// match is a call's return entry; nil for a return, and for a call whose
	// outcome is unknown (it has no return and never blocks the search).
	match      *entry
	prev, next *entry
}

// buildList links the calls and returns of ops in time order behind a
// sentinel head. At equal times calls come first, so operations that touch
// at an instant count as concurrent: the clock cannot tell their order.
func buildList(ops []Operation) *entry {
	entries := make([]*entry, 0, 2*len(ops))
	for i, op := range ops {
		call := &entry{call: true, op: i, time: op.Call}
		entries = append(entries, call)
		if op.Return != Infinity {
			call.match = &entry{op: i, time: op.Return}
			entries = append(entries, call.match)
		}
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.time != b.time {
			return a.time < b.time
		}
		if a.call != b.call {
			return a.call
		}
		return a.op < b.op
	})
	head := &entry{}
	prev := head
	for _, e := range entries {
		prev.next, e.prev = e, prev
		prev = e
	}
	return head
}

// lift takes a linearized call and its return out of the list.
func lift(call *entry) {
	unlink(call)
	if call.match != nil {
		unlink(call.match)
	}
}

// unlift puts back what lift took out. Lifts are undone in reverse order,
// so the neighbours an entry kept still surround its old place.
func unlift(call *entry) {
	if call.match != nil {
		relink(call.match)
	}
	relink(call)
}

func unlink(e *entry) {
	e.prev.next = e.next
	if e.next != nil {
		e.next.prev = e.prev
	}
}

func relink(e *entry) {
	e.prev.next = e
	if e.next != nil {
		e.next.prev = e
	}
}
