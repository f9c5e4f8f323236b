package linear

// Effect is how an operation acts on a model's state, as far as pruning
// needs to know (see Pruner).
type Effect int

const (
	// Acts: anything not below. The operation may depend on the state and
	// change it (a cas, an append, a send). Nothing is assumed about it.
	Acts Effect = iota
	// Reads: Step never changes the state. With a known output, Step
	// accepts the operation from exactly the states Equal to the one
	// Pruner.Effect returns with it; with an unknown output, from every
	// state (as every model must).
	Reads
	// Overwrites: Step accepts the operation from every state, with its
	// output (known or unknown), and always leaves the state Pruner.Effect
	// returns with it, whatever the state before.
	Overwrites
)

// Pruner is a Model that says how its operations act on the state, so that
// operations of unknown outcome on which no observation can depend are
// removed before the search (see prune). Each operation of unknown outcome
// the search must consider doubles, in the worst case, the configurations
// it may have to visit: it may have happened at any point after its call, or
// never.
type Pruner interface {
	// Effect classifies one operation. The state is that of a Reads with a
	// known output (what it saw) and of an Overwrites (what it leaves); it
	// is nil otherwise. A model that cannot say returns Acts.
	Effect(input, output any) (Effect, any)
}

// prune returns the operations of ops (one part of a history) that the
// search still needs, as indexes into ops in their order, and how many it
// left out. The part without those is linearizable if and only if the part
// with them is.
//
// Two kinds of operation of unknown outcome are left out:
//
//  1. A Reads of unknown outcome. It changes nothing and fits any state, so
//     it can be taken out of any linearization, or put back anywhere after
//     its call, without changing another step.
//
//  2. An Overwrites w of unknown outcome, writing state S, when no operation
//     that could be linearized after w is an Acts, nor a Reads with a known
//     output that saw S. "Could be linearized after w" means returned no
//     earlier than w was called (an operation that returned before w's call
//     precedes it in every linearization; one returning at the very instant
//     is concurrent). Soundness: without w, every linearization of the rest
//     is one of the whole (an operation of unknown outcome may never have
//     happened). Conversely, take a linearization L of the whole that
//     places w. Call w's segment the operations L places after w and
//     before the next Overwrites (or the end). They could all be linearized
//     after w, so none is an Acts, and every one is a Reads; one with a
//     known output would have seen S, which none did, so all have unknown
//     outputs. Remove w from L: the segment now runs on the state before w
//     instead of S, which its reads of unknown output accept and do not
//     change; the next Overwrites leaves the same state as before; every
//     other step is untouched, and real-time order holds in a subsequence.
//     So L without w linearizes the rest.
//
// The rule looks at the value S, never at which write a read "belongs to":
// a read that saw S keeps every write of S that it could follow, so writes
// of equal values (a commit retried with the same offset, a register
// written twice with one value) are kept together whenever S was seen, and
// left out together only when nothing that could follow them saw S, where
// the argument above holds for each in turn. It also holds after the
// others are gone: it only looks at the Acts and at the Reads of known
// output, which are never left out, so removing them one at a time (each
// step keeping the verdict) removes them all.
func prune(m Model, ops []Operation) (kept []int, pruned int) {
	p, ok := m.(Pruner)
	if !ok {
		kept = make([]int, len(ops))
		for i := range ops {
			kept[i] = i
		}
		return kept, 0
	}
	effects := make([]Effect, len(ops))
	states := make([]any, len(ops))
	for i, op := range ops {
		effects[i], states[i] = p.Effect(op.Input, op.Output)
	}
	// latestActs is the latest return of an Acts; the reads of known output
	// are grouped by the state they saw (by hash, then Equal), each group
	// keeping its latest return.
	latestActs := int64(-1)
	hasActs := false
	type seenState struct {
		state  any
		latest int64
	}
	seen := map[uint64][]seenState{}
	for i, op := range ops {
		switch {
		case effects[i] == Acts:
			if !hasActs || op.Return > latestActs {
				latestActs, hasActs = op.Return, true
			}
		case effects[i] == Reads && op.Output != OutputUnknown:
			h := m.Hash(states[i])
			group := seen[h]
			found := false
			for j := range group {
				if m.Equal(group[j].state, states[i]) {
					if op.Return > group[j].latest {
						group[j].latest = op.Return
					}
					found = true
					break
				}
			}
			if !found {
				seen[h] = append(group, seenState{state: states[i], latest: op.Return})
			}
		}
	}
	// observedAfter: some read of known output that saw s returned at or
	// after t.
	observedAfter := func(s any, t int64) bool {
		for _, g := range seen[m.Hash(s)] {
			if m.Equal(g.state, s) {
				return g.latest >= t
			}
		}
		return false
	}
	for i, op := range ops {
		if op.Output == OutputUnknown {
			switch effects[i] {
			case Reads:
				pruned++
				continue
			case Overwrites:
				if !(hasActs && latestActs >= op.Call) && !observedAfter(states[i], op.Call) {
					pruned++
					continue
				}
			}
		}
		kept = append(kept, i)
	}
	return kept, pruned
}
