package linear

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// cell is a minimal test model: integer registers named by key, read and
// written whole. It keeps the search tests independent of the real models.
type cell struct{}

type cellOp struct {
	key   string
	write bool
	// add adds value to the cell: it depends on the state and changes it
	// (an Acts, for the pruning tests).
	add   bool
	value int
}

func (cell) Init() any { return 0 }

func (cell) Step(state, input, output any) (bool, any) {
	in := input.(cellOp)
	if in.write {
		return true, in.value
	}
	if in.add {
		return true, state.(int) + in.value
	}
	return output == OutputUnknown || output.(int) == state.(int), state
}

func (cell) Equal(a, b any) bool        { return a.(int) == b.(int) }
func (cell) Hash(s any) uint64          { return uint64(s.(int)) }
func (cell) Partition(input any) string { return input.(cellOp).key }
func (cell) DescribeState(s any) string { return fmt.Sprint(s) }

func (cell) DescribeOperation(input, output any) string {
	in := input.(cellOp)
	if in.write {
		return fmt.Sprintf("write(%d)", in.value)
	}
	if in.add {
		return fmt.Sprintf("add(%d)", in.value)
	}
	return fmt.Sprintf("read() -> %v", output)
}

func write(process int, v int, call, ret int64) Operation {
	return Operation{Process: process, Input: cellOp{write: true, value: v}, Output: nil, Call: call, Return: ret}
}

func read(process int, v int, call, ret int64) Operation {
	return Operation{Process: process, Input: cellOp{}, Output: v, Call: call, Return: ret}
}

func add(process int, v int, call, ret int64) Operation {
	return Operation{Process: process, Input: cellOp{add: true, value: v}, Output: nil, Call: call, Return: ret}
}

// lost is an operation whose outcome is unknown.
func lost(op Operation) Operation {
	op.Output, op.Return = OutputUnknown, Infinity
	return op
}

func on(key string, op Operation) Operation {
	in := op.Input.(cellOp)
	in.key = key
	op.Input = in
	return op
}

func verdict(t *testing.T, ops ...Operation) Verdict {
	t.Helper()
	return Check(context.Background(), cell{}, ops).Verdict
}

func TestSearchVerdicts(t *testing.T) {
	cases := []struct {
		name string
		want Verdict
		ops  []Operation
	}{
		{"empty history", Ok, nil},
		{"sequential", Ok, []Operation{write(0, 1, 0, 1), read(1, 1, 2, 3)}},
		{"stale read after write returned", Illegal, []Operation{write(0, 1, 0, 1), read(1, 0, 2, 3)}},
		{"read concurrent with write sees old value", Ok, []Operation{write(0, 1, 0, 10), read(1, 0, 2, 3)}},
		{"read concurrent with write sees new value", Ok, []Operation{write(0, 1, 0, 10), read(1, 1, 2, 3)}},
		{"concurrent writes reorder", Ok, []Operation{
			write(0, 1, 0, 10), write(1, 2, 1, 11), read(2, 1, 12, 13),
		}},
		{"values flip back and forth", Illegal, []Operation{
			write(0, 1, 0, 10), write(1, 2, 1, 11),
			read(2, 1, 12, 13), read(2, 2, 14, 15), read(2, 1, 16, 17),
		}},
		{"touching operations count as concurrent", Ok, []Operation{write(0, 1, 0, 5), read(1, 0, 5, 6)}},
		{"unknown write takes effect late", Ok, []Operation{
			lost(write(0, 1, 0, 0)), read(1, 0, 10, 11), read(1, 0, 20, 21), read(1, 1, 30, 31),
		}},
		{"unknown write never takes effect", Ok, []Operation{
			lost(write(0, 1, 0, 0)), read(1, 0, 10, 11), read(1, 0, 20, 21),
		}},
		{"unknown write cannot act before its call", Illegal, []Operation{
			read(1, 1, 0, 1), lost(write(0, 1, 5, 0)),
		}},
		{"unknown write takes effect once", Illegal, []Operation{
			lost(write(0, 1, 0, 0)), write(1, 2, 1, 2), read(2, 1, 3, 4), read(2, 2, 5, 6), read(2, 1, 7, 8),
		}},
		{"identical unknown writes both take effect", Ok, []Operation{
			lost(write(0, 1, 0, 0)), lost(write(1, 1, 1, 0)), write(2, 2, 2, 20),
			read(3, 1, 3, 4), read(3, 2, 21, 22), read(3, 1, 23, 24),
		}},
		{"identical unknown writes take effect once each", Illegal, []Operation{
			lost(write(0, 1, 0, 0)), lost(write(1, 1, 1, 0)), write(2, 2, 2, 20), write(2, 2, 25, 26),
			read(3, 1, 3, 4), read(3, 2, 21, 22), read(3, 1, 23, 24), read(3, 2, 27, 28), read(3, 1, 29, 30),
		}},
		{"parts are independent", Ok, []Operation{
			on("a", write(0, 1, 0, 1)), on("b", read(1, 0, 2, 3)), on("a", read(1, 1, 4, 5)),
		}},
		{"one illegal part makes the history illegal", Illegal, []Operation{
			on("a", write(0, 1, 0, 1)), on("b", read(1, 0, 2, 3)), on("b", read(1, 1, 4, 5)),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := verdict(t, c.ops...); got != c.want {
				t.Fatalf("verdict %s, want %s", got, c.want)
			}
		})
	}
}

func TestCounterexample(t *testing.T) {
	ops := []Operation{
		on("b", write(3, 7, 0, 1)),
		on("a", write(0, 1, 0, 10)),
		on("a", write(1, 2, 1, 11)),
		on("a", read(2, 2, 12, 13)),
		on("a", read(2, 1, 14, 15)),
	}
	res := Check(context.Background(), cell{}, ops)
	if res.Verdict != Illegal {
		t.Fatalf("verdict %s, want illegal", res.Verdict)
	}
	a, b := res.Partitions[0], res.Partitions[1]
	if a.Key != "a" || a.Verdict != Illegal || b.Key != "b" || b.Verdict != Ok {
		t.Fatalf("partitions %+v", res.Partitions)
	}
	if !reflect.DeepEqual(a.Ops, []int{1, 2, 3, 4}) {
		t.Fatalf("part a holds %v", a.Ops)
	}
	ce := a.Counterexample
	// write 1, write 2, read 2 is as far as it goes; the final read of 1
	// cannot follow, and nothing else is left.
	want := []Step{{Op: 1, State: 1}, {Op: 2, State: 2}, {Op: 3, State: 2}}
	if !reflect.DeepEqual(ce.Prefix, want) || !reflect.DeepEqual(ce.Stuck, []int{4}) || ce.Final != 2 {
		t.Fatalf("counterexample %+v", ce)
	}
}

// pathological is a history whose search is exponential in n: n writes of
// distinct values all overlap, then a read returns a value none wrote. Every
// order of the writes must be tried before the answer is known.
func pathological(n int) []Operation {
	var ops []Operation
	for i := 0; i < n; i++ {
		ops = append(ops, write(i, i+1, int64(i), int64(n+i)))
	}
	return append(ops, read(n, -1, int64(3*n), int64(3*n+1)))
}

func TestTimeLimitAnswersUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := Check(ctx, cell{}, pathological(40))
	if res.Verdict != Unknown || res.Partitions[0].Verdict != Unknown {
		t.Fatalf("verdict %s, want unknown", res.Verdict)
	}
	if res.Partitions[0].Counterexample != nil {
		t.Fatalf("an unfinished search gave a counterexample")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %v to stop after a 100ms limit", took)
	}
}

func TestPathologicalSmallCaseFinishes(t *testing.T) {
	// The same shape, small enough to finish: the time limit test above is
	// slow because of the search, not because the history is wrong.
	if got := verdict(t, pathological(8)...); got != Illegal {
		t.Fatalf("verdict %s, want illegal", got)
	}
}
