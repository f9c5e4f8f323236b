// Package linear decides whether a concurrent history is linearizable with
// respect to a sequential model: Wing & Gong's search with Lowe's
// memoization, run separately on each part of a P-compositional history.
package linear

import "math"

// Infinity is the return time of an operation whose outcome is unknown: it
// stays concurrent with everything called after it, so it may be linearized
// at any point after its call, or never.
const Infinity int64 = math.MaxInt64

// unknownOutput is the type of OutputUnknown.
type unknownOutput struct{}

// OutputUnknown is the output of an operation whose outcome is unknown. A model's
// Step must accept it from every state, applying the operation's effect as
// if it had succeeded there.
var OutputUnknown any = unknownOutput{}

// Operation is one call with its outcome, already converted to the model's
// own input and output types.
type Operation struct {
	Process int
	Input   any
	// Output is what the call returned, or OutputUnknown.
	Output any
	// Call and Return are times; Return is Infinity when Output is OutputUnknown.
	Call, Return int64
}

// Model is a sequential specification. States must be treated as values:
// Step returns a new state and never changes the one it was given, because
// the search keeps old states to backtrack to. Inputs must be comparable
// with ==, and equal inputs must mean the same call.
type Model interface {
	Init() any
	// Step applies one operation: ok is false when the model could not have
	// produced output for input from state.
	Step(state, input, output any) (ok bool, next any)
	Equal(a, b any) bool
	// Hash must agree with Equal: equal states hash alike.
	Hash(state any) uint64
	// Partition names the independent part of the history an input belongs
	// to (a key, a topic-partition...). Operations on different parts must
	// not affect each other, so each part can be checked on its own; Check
	// always splits first, so a state only ever describes one part.
	Partition(input any) string
	DescribeOperation(input, output any) string
	DescribeState(state any) string
}
