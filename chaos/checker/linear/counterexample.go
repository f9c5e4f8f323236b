package linear

// Counterexample explains why a part of a history is not linearizable.
// Operation numbers are indexes into the checked history.
type Counterexample struct {
	// Prefix is the longest linearizable prefix the search found, in
	// linearization order, each with the model state it leads to.
	Prefix []Step
	// Stuck are the operations that could have come next after Prefix (called
	// before the earliest return still outstanding); the model rejects every
	// one of them from the prefix's final state.
	Stuck []int
	// Final is the model state after Prefix.
	Final any
	// Reason and Conflict are set instead of Prefix and Stuck when the
	// model refuted the part without a search (see Refuter): the rule
	// broken, and the operations that cannot all be linearized.
	Reason   string
	Conflict []int
}

// Step is one linearized operation and the state after it.
type Step struct {
	Op    int
	State any
}

// refuted turns a model's refutation into a counterexample; ids maps
// indexes into the part back to indexes into the whole history.
func refuted(m Model, r *Refutation, ids []int) *Counterexample {
	ce := &Counterexample{Final: m.Init(), Reason: r.Reason}
	for _, i := range r.Conflict {
		ce.Conflict = append(ce.Conflict, ids[i])
	}
	return ce
}

// explain replays the longest prefix found by search (best, indexes into
// ops) and lists the operations that could not follow it. ids maps indexes
// into ops back to indexes into the whole history.
func explain(m Model, ops []Operation, best []int, ids []int) *Counterexample {
	ce := &Counterexample{Final: m.Init()}
	done := make([]bool, len(ops))
	for _, i := range best {
		ok, next := m.Step(ce.Final, ops[i].Input, ops[i].Output)
		if !ok {
			panic("linear: a prefix the search accepted does not replay")
		}
		ce.Final = next
		done[i] = true
		ce.Prefix = append(ce.Prefix, Step{Op: ids[i], State: next})
	}
	// The search may place an operation next iff it was called no later than
	// the earliest return still outstanding (calls sort before returns at
	// equal times).
	deadline := Infinity
	for i, op := range ops {
		if !done[i] && op.Return < deadline {
			deadline = op.Return
		}
	}
	for i, op := range ops {
		if !done[i] && op.Call <= deadline {
			ce.Stuck = append(ce.Stuck, ids[i])
		}
	}
	return ce
}
