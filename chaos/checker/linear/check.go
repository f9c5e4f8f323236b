package linear

import (
	"context"
	"runtime"
	"sort"
	"sync"
	"time"
)

// PartitionResult is the verdict on one independent part of a history.
type PartitionResult struct {
	Key     string
	Verdict Verdict
	// Ops are indexes into the checked history, in history order.
	Ops     []int
	Elapsed time.Duration
	// Pruned counts the operations of unknown outcome left out before the
	// search because no observation could depend on them (see prune).
	Pruned int
	// Counterexample is set when Verdict is Illegal.
	Counterexample *Counterexample
}

// Result is the verdict on a whole history.
type Result struct {
	// Verdict is Illegal if any part is, else Unknown if any part is, else Ok.
	Verdict    Verdict
	Partitions []PartitionResult // sorted by Key
}

// Check decides whether ops are linearizable with respect to m. The history
// is split with m.Partition and the parts are searched in parallel; a part
// still running when ctx ends is Unknown.
func Check(ctx context.Context, m Model, ops []Operation) Result {
	parts := partition(m, ops)
	results := make([]PartitionResult, len(parts))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = checkPart(ctx, m, ops, parts[i])
			}
		}()
	}
	for i := range parts {
		work <- i
	}
	close(work)
	wg.Wait()

	res := Result{Verdict: Ok, Partitions: results}
	for _, r := range results {
		if r.Verdict == Illegal || (r.Verdict == Unknown && res.Verdict == Ok) {
			res.Verdict = r.Verdict
		}
	}
	return res
}

type part struct {
	key string
	ops []int
}

// partition groups operation indexes by m.Partition, parts sorted by key.
func partition(m Model, ops []Operation) []part {
	byKey := map[string][]int{}
	for i, op := range ops {
		k := m.Partition(op.Input)
		byKey[k] = append(byKey[k], i)
	}
	parts := make([]part, 0, len(byKey))
	for k, ids := range byKey {
		parts = append(parts, part{key: k, ops: ids})
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].key < parts[j].key })
	return parts
}

func checkPart(ctx context.Context, m Model, all []Operation, p part) PartitionResult {
	start := time.Now()
	ops := make([]Operation, len(p.ops))
	for i, id := range p.ops {
		ops[i] = all[id]
	}
	r := PartitionResult{Key: p.key, Ops: p.ops}
	if refuter, ok := m.(Refuter); ok {
		if proof := refuter.Refute(ops); proof != nil {
			r.Verdict, r.Counterexample = Illegal, refuted(m, proof, p.ops)
			r.Elapsed = time.Since(start)
			return r
		}
	}
	kept, pruned := prune(m, ops)
	r.Pruned = pruned
	if pruned > 0 {
		ids := make([]int, len(kept))
		keptOps := make([]Operation, len(kept))
		for i, k := range kept {
			ids[i], keptOps[i] = p.ops[k], ops[k]
		}
		ops = keptOps
		p.ops = ids
	}
	verdict, best := search(ctx, m, ops)
	r.Verdict = verdict
	if verdict == Illegal {
		r.Counterexample = explain(m, ops, best, p.ops)
	}
	r.Elapsed = time.Since(start)
	return r
}
