package linear

import (
	"context"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// prunedCell is cell that also says how its operations act (a Pruner):
// writes overwrite, reads look, adds act. cell itself is no Pruner, so the
// same history checked with both is the search with and without pruning.
type prunedCell struct{ cell }

func (prunedCell) Effect(input, output any) (Effect, any) {
	in := input.(cellOp)
	switch {
	case in.write:
		return Overwrites, in.value
	case in.add:
		return Acts, nil
	case output == OutputUnknown:
		return Reads, nil
	}
	return Reads, output.(int)
}

// randomPrunable makes up to n operations on one cell from four processes:
// many of unknown outcome, reads of the values written (or not), and now
// and then an add, which blocks the pruning of earlier-called writes.
func randomPrunable(r *rand.Rand, n int) []Operation {
	return randomOps(r, n, 4, 3, func(p int, call, ret int64) Operation {
		switch k := r.Intn(10); {
		case k < 5:
			return write(p, r.Intn(4), call, ret)
		case k < 9:
			return read(p, r.Intn(4), call, ret)
		default:
			return add(p, 1, call, ret)
		}
	})
}

func subset(ops []Operation, ids []int) []Operation {
	out := make([]Operation, len(ids))
	for i, id := range ids {
		out[i] = ops[id]
	}
	return out
}

// TestPruningAgreesWithBruteForce: on thousands of small random histories,
// legal and illegal, the definition of linearizability gives the same answer
// for the history and for what prune keeps of it, and the search gives that
// answer with and without pruning.
func TestPruningAgreesWithBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	verdicts := map[Verdict]int{}
	prunedWrites := map[Verdict]int{}
	for i := 0; i < 5000; i++ {
		ops := randomPrunable(r, 1+r.Intn(9))
		want := Illegal
		if bruteForce(cell{}, ops) {
			want = Ok
		}
		kept, n := prune(prunedCell{}, ops)
		if len(kept)+n != len(ops) {
			t.Fatalf("history %d: kept %d and pruned %d of %d", i, len(kept), n, len(ops))
		}
		if got := bruteForce(cell{}, subset(ops, kept)); got != (want == Ok) {
			t.Fatalf("history %d: linearizable %v, after pruning %v (kept %v):\n%+v", i, want == Ok, got, kept, ops)
		}
		plain := Check(context.Background(), cell{}, ops)
		pruned := Check(context.Background(), prunedCell{}, ops)
		if plain.Verdict != want || pruned.Verdict != want {
			t.Fatalf("history %d: definition %s, search %s, pruned search %s:\n%+v", i, want, plain.Verdict, pruned.Verdict, ops)
		}
		if pruned.Partitions != nil && pruned.Partitions[0].Pruned != n {
			t.Fatalf("history %d: the result says %d pruned, prune %d", i, pruned.Partitions[0].Pruned, n)
		}
		if want == Illegal {
			checkStuck(t, subset(ops, kept), remap(pruned.Partitions[0].Counterexample, kept))
		}
		verdicts[want]++
		for id, op := range ops {
			if op.Output == OutputUnknown && op.Input.(cellOp).write && !contains(kept, id) {
				prunedWrites[want]++
				break
			}
		}
	}
	// Both answers must be well represented, with writes pruned from both.
	if verdicts[Ok] < 1000 || verdicts[Illegal] < 1000 || prunedWrites[Ok] < 200 || prunedWrites[Illegal] < 200 {
		t.Fatalf("unbalanced sample: %v verdicts, writes pruned in %v", verdicts, prunedWrites)
	}
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// remap turns a counterexample's indexes into the whole history into
// indexes into its kept operations.
func remap(ce *Counterexample, kept []int) *Counterexample {
	at := map[int]int{}
	for i, id := range kept {
		at[id] = i
	}
	out := *ce
	out.Stuck = nil
	for _, id := range ce.Stuck {
		out.Stuck = append(out.Stuck, at[id])
	}
	return &out
}

func TestPruneRules(t *testing.T) {
	cases := []struct {
		name string
		ops  []Operation
		kept []int
	}{
		{"a read of unknown outcome goes", []Operation{write(0, 1, 0, 1), lost(read(1, 0, 2, 0))}, []int{0}},
		{"a write of unknown outcome nothing saw goes", []Operation{
			lost(write(0, 5, 0, 0)), read(1, 0, 1, 2), write(1, 1, 3, 4), read(1, 1, 5, 6),
		}, []int{1, 2, 3}},
		{"a write whose value was read later stays", []Operation{
			lost(write(0, 5, 0, 0)), read(1, 5, 10, 11),
		}, []int{0, 1}},
		{"a read that returned before the call cannot see it", []Operation{
			write(1, 5, 0, 1), read(1, 5, 2, 3), lost(write(0, 5, 4, 0)),
		}, []int{0, 1}},
		{"a read returning at the call instant could see it", []Operation{
			write(1, 5, 0, 1), read(1, 5, 2, 4), lost(write(0, 5, 4, 0)),
		}, []int{0, 1, 2}},
		// The value decides, not which write a read is thought to follow:
		// the read of 5 could be either unknown write's, and needs one of
		// them, since the known write of 5 was overwritten by 6 before it.
		{"every write of a value read stays", []Operation{
			write(2, 5, 0, 1), write(2, 6, 2, 3), lost(write(0, 5, 4, 0)), lost(write(1, 5, 5, 0)), read(3, 5, 10, 11),
		}, []int{0, 1, 2, 3, 4}},
		{"writes of one value nothing saw go together", []Operation{
			lost(write(0, 5, 0, 0)), lost(write(1, 5, 1, 0)), write(2, 6, 2, 3), read(3, 6, 4, 5),
		}, []int{2, 3}},
		{"an add that may follow keeps the write", []Operation{
			lost(write(0, 5, 0, 0)), add(1, 1, 1, 2), read(1, 6, 3, 4),
		}, []int{0, 1, 2}},
		{"an add of unknown outcome may follow anything", []Operation{
			lost(add(1, 1, 0, 0)), lost(write(0, 5, 1, 0)), read(2, 0, 2, 3),
		}, []int{0, 1, 2}},
		{"an add done before the call does not keep it", []Operation{
			add(1, 1, 0, 1), lost(write(0, 5, 2, 0)), read(2, 1, 3, 4),
		}, []int{0, 2}},
		{"a write of known outcome stays", []Operation{write(0, 5, 0, 1), read(1, 0, 2, 3)}, []int{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kept, n := prune(prunedCell{}, c.ops)
			if !reflect.DeepEqual(kept, c.kept) || n != len(c.ops)-len(c.kept) {
				t.Fatalf("kept %v (%d pruned), want %v", kept, n, c.kept)
			}
			// pruning never changes the verdict
			if bruteForce(cell{}, c.ops) != bruteForce(cell{}, subset(c.ops, kept)) {
				t.Fatalf("verdict changed by pruning")
			}
		})
	}
	if kept, n := prune(cell{}, []Operation{lost(read(0, 0, 0, 0))}); n != 0 || len(kept) != 1 {
		t.Fatalf("a model that is no Pruner had %d pruned", n)
	}
}

// manyLost is the shape of the soak's offsets partition chaos-2: a long
// sequential run of writes and reads, with many writes of unknown outcome,
// of values nothing read, spread through it. With illegal set, one read
// near the end sees a value overwritten long before.
func manyLost(n int, illegal bool) []Operation {
	var ops []Operation
	t := int64(0)
	for i := 0; i < n; i++ {
		ops = append(ops, write(0, 2*i, t, t+1), read(1, 2*i, t+2, t+3))
		if i%4 == 0 {
			ops = append(ops, lost(write(2+i, 2*i+1, t+1, 0)))
		}
		t += 4
	}
	if illegal {
		ops = append(ops, read(1, 0, t, t+1))
	}
	return ops
}

// TestPruningDecidesWhatTheSearchCannot: 100 writes of unknown outcome make
// an illegal history's search exponential (each may have happened or not,
// anywhere after its call); pruned, it is one sequence.
func TestPruningDecidesWhatTheSearchCannot(t *testing.T) {
	for _, illegal := range []bool{false, true} {
		want := Ok
		if illegal {
			want = Illegal
		}
		res := Check(context.Background(), prunedCell{}, manyLost(400, illegal))
		if res.Verdict != want || res.Partitions[0].Pruned != 100 {
			t.Fatalf("illegal=%v: verdict %s with %d pruned, want %s with 100", illegal, res.Verdict, res.Partitions[0].Pruned, want)
		}
		if illegal && len(res.Partitions[0].Counterexample.Stuck) == 0 {
			t.Fatalf("no counterexample: %+v", res.Partitions[0].Counterexample)
		}
	}
	// Without pruning the illegal one is still undecided at a deadline far
	// beyond what the pruned search took: the pruning is what decides it.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if res := Check(ctx, cell{}, manyLost(400, true)); res.Verdict != Unknown {
		t.Fatalf("unpruned search says %s", res.Verdict)
	}
}
