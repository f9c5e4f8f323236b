package linear

import "context"

// Verdict is the answer for a history or one part of it.
type Verdict string

const (
	Ok      Verdict = "ok"
	Illegal Verdict = "illegal"
	// Unknown: the time limit passed before the search finished.
	Unknown Verdict = "unknown"
)

// pollEvery is how many search steps pass between looks at the deadline;
// a step is far cheaper than asking the context.
const pollEvery = 1024

// frame remembers one linearized call and the state before it, so that the
// search can undo it.
type frame struct {
	call  *entry
	state any
}

// search decides whether ops (one part of a history) are linearizable.
//
// It walks the time-ordered list of calls and returns. Any call met before
// the first remaining return may be linearized next: the model steps it,
// the call and its return are lifted out of the list, and the walk restarts
// at the head. Meeting a return means that operation had to be linearized
// already, so the last choice is undone (backtracking) and the walk goes on
// after it. Lowe's memoization prunes the walk: a (set of linearized
// operations, model state) pair that was reached once leads to the same
// future every time, so it is never explored twice.
//
// Each set of candidates is walked twice: first only the operations with a
// known return, then, if none of those leads anywhere, the ones of unknown
// outcome. Every candidate is still tried, but what may never have happened
// is put off until something needs it, which finds linearizations of
// histories full of timeouts far sooner. Identical operations of unknown
// outcome are interchangeable, so they are placed in call order only (see
// twins), which spares the search from trying every permutation of them.
//
// On Illegal it also returns the longest linearizable prefix it found, as
// indexes into ops in linearization order.
func search(ctx context.Context, m Model, ops []Operation) (Verdict, []int) {
	head := buildList(ops)
	// Only operations with a known return must be linearized; the others
	// may also never take effect, so the search is done once none is left.
	pending := 0
	for _, op := range ops {
		if op.Return != Infinity {
			pending++
		}
	}
	linearized := newBitset(len(ops))
	var setHash uint64
	seen := newCache()
	state := m.Init()
	var stack []frame
	var best []int
	// deeper is set while the stack is deeper than best; the longest prefix
	// is copied only when the search turns back from it, not at every push.
	deeper := false

	twin := twins(head, ops)
	e := head.next
	unknownPass := false
	for steps := 0; pending > 0; steps++ {
		if steps%pollEvery == 0 && ctx.Err() != nil {
			return Unknown, nil
		}
		// e is never nil here: a return of an operation still pending lies
		// further on, and the walk stops at the first return it meets.
		if e.call {
			// Each pass takes its own kind of operation, and an operation of
			// unknown outcome waits for its earlier twin.
			if (e.match == nil) != unknownPass || (unknownPass && waitsForTwin(twin, linearized, e.op)) {
				e = e.next
				continue
			}
			op := ops[e.op]
			if ok, next := m.Step(state, op.Input, op.Output); ok {
				linearized.set(e.op)
				hash := setHash ^ bitHash(e.op)
				if seen.add(hash^m.Hash(next), linearized, next, m.Equal) {
					stack = append(stack, frame{call: e, state: state})
					state, setHash = next, hash
					lift(e)
					if e.match != nil {
						pending--
					}
					deeper = deeper || len(stack) > len(best)
					e, unknownPass = head.next, false
					continue
				}
				linearized.clear(e.op)
			}
			e = e.next
			continue
		}
		if !unknownPass {
			e, unknownPass = head.next, true
			continue
		}
		if deeper {
			best = prefix(stack)
			deeper = false
		}
		if len(stack) == 0 {
			return Illegal, best
		}
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		state = top.state
		linearized.clear(top.call.op)
		setHash ^= bitHash(top.call.op)
		unlift(top.call)
		if top.call.match != nil {
			pending++
		}
		e, unknownPass = top.call.next, top.call.match == nil
	}
	return Ok, nil
}

func prefix(stack []frame) []int {
	ids := make([]int, len(stack))
	for i, f := range stack {
		ids[i] = f.call.op
	}
	return ids
}

// twins maps each operation of unknown outcome to the previous one in call
// order with an equal input, or -1; every other operation maps to -1. Such
// twins behave alike wherever they are placed, and the earlier one may go
// anywhere the later one may (it was called no later), so any linearization
// can be rewritten to place twins in call order: the search need not place
// an operation before its twin.
func twins(head *entry, ops []Operation) []int {
	twin := make([]int, len(ops))
	for i := range twin {
		twin[i] = -1
	}
	last := map[any]int{}
	for e := head.next; e != nil; e = e.next {
		if e.call && e.match == nil {
			if prev, ok := last[ops[e.op].Input]; ok {
				twin[e.op] = prev
			}
			last[ops[e.op].Input] = e.op
		}
	}
	return twin
}

func waitsForTwin(twin []int, linearized bitset, op int) bool {
	return twin[op] >= 0 && !linearized.has(twin[op])
}
