package linear

import (
	"context"
	"math/rand"
	"testing"
)

// bruteForce decides linearizability straight from the definition, with no
// list, memo or ordering tricks: some order of all operations with a known
// return, plus any subset of the others, that respects real time (an
// operation that returned before another was called comes first) and that
// the model accepts.
func bruteForce(m Model, ops []Operation) bool {
	placed := make([]bool, len(ops))
	var extend func(state any) bool
	extend = func(state any) bool {
		done := true
		for i, op := range ops {
			if !placed[i] && op.Return != Infinity {
				done = false
			}
		}
		if done {
			return true
		}
		for i, op := range ops {
			if placed[i] || !mayGoNext(ops, placed, op) {
				continue
			}
			if ok, next := m.Step(state, op.Input, op.Output); ok {
				placed[i] = true
				if extend(next) {
					return true
				}
				placed[i] = false
			}
		}
		return false
	}
	return extend(m.Init())
}

func mayGoNext(ops []Operation, placed []bool, op Operation) bool {
	for j, other := range ops {
		if !placed[j] && other.Return < op.Call {
			return false
		}
	}
	return true
}

// randomHistory makes up to n operations on one cell from a few processes,
// with small values and times so that overlaps, ties, repeated values and
// unknown outcomes are common.
func randomHistory(r *rand.Rand, n int) []Operation {
	return randomOps(r, n, 3, 4, func(p int, call, ret int64) Operation {
		if r.Intn(2) == 0 {
			return write(p, r.Intn(3), call, ret)
		}
		return read(p, r.Intn(3), call, ret)
	})
}

// randomOps makes up to n operations from `procs` processes, each one's
// calls after its last return, `pick` choosing what each is; one in
// `lostOneIn` has an unknown outcome.
func randomOps(r *rand.Rand, n, procs, lostOneIn int, pick func(p int, call, ret int64) Operation) []Operation {
	var ops []Operation
	free := make([]int64, procs) // when each process may call again
	for len(ops) < n {
		p := r.Intn(len(free))
		call := free[p] + int64(r.Intn(3))
		ret := call + int64(r.Intn(6))
		free[p] = ret + 1
		op := pick(p, call, ret)
		if r.Intn(lostOneIn) == 0 {
			op = lost(op)
			free[p] = call + 100 // a process does not go on after a timeout
		}
		ops = append(ops, op)
	}
	return ops
}

// TestSearchAgreesWithBruteForce compares the search, with all its
// shortcuts, with the definition on thousands of small random histories.
func TestSearchAgreesWithBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	verdicts := map[Verdict]int{}
	for i := 0; i < 3000; i++ {
		ops := randomHistory(r, 1+r.Intn(8))
		want := Illegal
		if bruteForce(cell{}, ops) {
			want = Ok
		}
		res := Check(context.Background(), cell{}, ops)
		if res.Verdict != want {
			t.Fatalf("history %d: search says %s, definition says %s:\n%+v", i, res.Verdict, want, ops)
		}
		verdicts[want]++
		if want == Illegal {
			checkStuck(t, ops, res.Partitions[0].Counterexample)
		}
	}
	// Both answers must be well represented, or the comparison proves little.
	if verdicts[Ok] < 500 || verdicts[Illegal] < 500 {
		t.Fatalf("unbalanced sample: %v", verdicts)
	}
}

// checkStuck: a counterexample names at least one operation that could come
// next, and the model rejects each of them after the prefix.
func checkStuck(t *testing.T, ops []Operation, ce *Counterexample) {
	t.Helper()
	if len(ce.Stuck) == 0 {
		t.Fatalf("counterexample with nothing stuck: %+v\n%+v", ce, ops)
	}
	for _, id := range ce.Stuck {
		if ok, _ := (cell{}).Step(ce.Final, ops[id].Input, ops[id].Output); ok {
			t.Fatalf("stuck operation %d fits state %v: %+v\n%+v", id, ce.Final, ce, ops)
		}
	}
}
