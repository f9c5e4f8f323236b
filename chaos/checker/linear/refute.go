package linear

// Refuter is a Model that can prove some histories illegal without a
// search, from facts a quick pass over the operations establishes (for a
// log: offsets order the writes, so two values at one offset are already a
// contradiction). The search is exponential in the worst case, and the
// histories that exhaust it are mostly the illegal ones, so a model that can
// name a contradiction directly saves the whole time limit.
type Refuter interface {
	// Refute looks at one part of a history. It returns a refutation when
	// the operations cannot be linearized, or nil when it proves nothing
	// (the search then decides). It must never refute a linearizable
	// history.
	Refute(ops []Operation) *Refutation
}

// Refutation is a direct proof that a part of a history is illegal.
type Refutation struct {
	// Reason says, in a sentence, which rule the operations break.
	Reason string
	// Conflict are the operations (indexes into the part) that cannot all
	// be linearized together.
	Conflict []int
}
