package models

import (
	"context"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"kraftlog/checker/linear"
)

// searchOnly hides a model's Refute and Effect, so Check falls back to the
// bare search (which linear's tests compare with the definition).
type searchOnly struct{ linear.Model }

func send(p int, v string, offset int64, call, ret int64) linear.Operation {
	return linear.Operation{Process: p, Input: logInput{key: "t-0", f: "send", value: v}, Output: offset, Call: call, Return: ret}
}

func sendLost(p int, v string, call int64) linear.Operation {
	return linear.Operation{Process: p, Input: logInput{key: "t-0", f: "send", value: v},
		Output: linear.OutputUnknown, Call: call, Return: linear.Infinity}
}

func readAt(p int, offset int64, v string, call, ret int64) linear.Operation {
	out := logRead{}
	if v != "" {
		out = logRead{visible: true, value: v}
	}
	return linear.Operation{Process: p, Input: logInput{key: "t-0", f: "read", offset: offset}, Output: out, Call: call, Return: ret}
}

// Each rule, on the smallest history that breaks it: the reason names it,
// the conflict names the operations, and the search agrees it is illegal.
func TestEachRuleRefutes(t *testing.T) {
	cases := []struct {
		reason   string
		ops      []linear.Operation
		conflict []int
	}{
		{"two sends were acknowledged at offset 0",
			[]linear.Operation{send(0, `"a"`, 0, 0, 1), send(1, `"b"`, 0, 2, 3)}, []int{0, 1}},
		{`offset 0 holds "a" and "b"`,
			[]linear.Operation{send(0, `"a"`, 0, 0, 1), readAt(1, 0, `"b"`, 0, 5), sendLost(2, `"b"`, 0)}, []int{0, 1}},
		{`offset 1 holds "b" and "c"`,
			[]linear.Operation{sendLost(0, `"a"`, 0), sendLost(1, `"b"`, 0), sendLost(2, `"c"`, 0),
				readAt(3, 1, `"b"`, 1, 2), readAt(3, 1, `"c"`, 3, 4)}, []int{3, 4}},
		{`saw "z", which no send`,
			[]linear.Operation{sendLost(0, `"a"`, 0), readAt(1, 0, `"z"`, 1, 2)}, []int{1}},
		{`saw "b", which no send`, // sent, but only after the read returned
			[]linear.Operation{readAt(1, 0, `"b"`, 1, 2), sendLost(0, `"b"`, 3)}, []int{0, 1}},
		{`saw "a", which no send`, // acknowledged at another offset
			[]linear.Operation{sendLost(0, `"x"`, 0), send(1, `"a"`, 1, 0, 5), readAt(2, 0, `"a"`, 0, 5)}, []int{2, 1}},
		{"read(1) saw a record before 2 sends had been called",
			[]linear.Operation{sendLost(0, `"a"`, 0), readAt(1, 1, `"a"`, 1, 2), sendLost(2, `"b"`, 3)}, nil},
		{"acknowledged at offset 1 before 1 other sends",
			[]linear.Operation{send(0, `"a"`, 1, 0, 1), sendLost(1, `"b"`, 2)}, []int{0}},
		{"the send at offset 1 returned before the send at offset 0 was called",
			[]linear.Operation{sendLost(2, `"x"`, 0), send(0, `"a"`, 1, 0, 1), send(1, `"b"`, 0, 2, 3)}, []int{1, 2}},
		{"read(0) saw nothing after offset 0 was already written",
			[]linear.Operation{send(0, `"a"`, 0, 0, 1), readAt(1, 0, "", 2, 3)}, []int{0, 1}},
		{"read(0) saw nothing after offset 1 was already written",
			[]linear.Operation{sendLost(0, `"a"`, 0), sendLost(1, `"b"`, 0), readAt(1, 1, `"b"`, 1, 2), readAt(1, 0, "", 3, 4)}, []int{2, 3}},
	}
	for _, c := range cases {
		r := partitionLog{}.Refute(c.ops)
		if r == nil || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%s: refutation %+v", c.reason, r)
			continue
		}
		if c.conflict != nil && !sameInts(r.Conflict, c.conflict) {
			t.Errorf("%s: conflict %v, want %v", c.reason, r.Conflict, c.conflict)
		}
		if v := linear.Check(context.Background(), searchOnly{partitionLog{}}, c.ops).Verdict; v != linear.Illegal {
			t.Errorf("%s: the search says %s", c.reason, v)
		}
	}
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// randomLogHistory makes a small partition history: a few processes send
// values from a small set (repeats happen) and read low offsets, with
// answers drawn so that legal and illegal histories both come up.
func randomLogHistory(r *rand.Rand, n int) []linear.Operation {
	var ops []linear.Operation
	free := make([]int64, 3)
	values := []string{`"a"`, `"b"`, `"c"`, `"d"`}
	for len(ops) < n {
		p := r.Intn(len(free))
		call := free[p] + int64(r.Intn(3))
		ret := call + int64(r.Intn(6))
		free[p] = ret + 1
		var op linear.Operation
		if r.Intn(2) == 0 {
			op = send(p, values[r.Intn(len(values))], int64(r.Intn(3)), call, ret)
			if r.Intn(4) == 0 {
				op = sendLost(p, op.Input.(logInput).value, call)
				free[p] = call + 100
			}
		} else {
			v := ""
			if r.Intn(3) > 0 {
				v = values[r.Intn(len(values))]
			}
			op = readAt(p, int64(r.Intn(3)), v, call, ret)
		}
		ops = append(ops, op)
	}
	return ops
}

// truthfully answers ops as a log would: each takes effect at a random
// instant inside its call, lost sends at a random instant after theirs or
// never. The result is linearizable; a few answers are then spoiled.
func truthfully(r *rand.Rand, ops []linear.Operation) []linear.Operation {
	at := make([]int64, len(ops))
	order := make([]int, len(ops))
	for i, op := range ops {
		end := op.Return
		if end == linear.Infinity {
			end = op.Call + 20
		}
		at[i], order[i] = op.Call+r.Int63n(end-op.Call+1), i
	}
	sort.SliceStable(order, func(a, b int) bool { return at[order[a]] < at[order[b]] })
	var log []string
	for _, i := range order {
		in := ops[i].Input.(logInput)
		switch {
		case in.f == "send" && ops[i].Return == linear.Infinity:
			if r.Intn(2) == 0 {
				log = append(log, in.value)
			}
		case in.f == "send":
			ops[i].Output = int64(len(log))
			log = append(log, in.value)
		case in.offset < int64(len(log)):
			ops[i].Output = logRead{visible: true, value: log[in.offset]}
		default:
			ops[i].Output = logRead{}
		}
	}
	if i := r.Intn(len(ops)); r.Intn(2) == 0 && ops[i].Return != linear.Infinity {
		if ops[i].Input.(logInput).f == "send" {
			ops[i].Output = int64(r.Intn(3))
		} else {
			ops[i].Output = readAt(0, 0, []string{"", `"a"`, `"b"`}[r.Intn(3)], 0, 0).Output
		}
	}
	return ops
}

// The refuter must never refute a linearizable history; and it should
// catch a fair share of the illegal ones, or it saves nothing.
func TestRefuterIsSoundOnRandomHistories(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	refuted, illegal, legal := 0, 0, 0
	for i := 0; i < 5000; i++ {
		ops := randomLogHistory(r, 1+r.Intn(8))
		if i%2 == 0 {
			ops = truthfully(r, ops)
		}
		verdict := linear.Check(context.Background(), searchOnly{partitionLog{}}, ops).Verdict
		proof := partitionLog{}.Refute(ops)
		if verdict == linear.Ok {
			legal++
			if proof != nil {
				t.Fatalf("history %d is linearizable but refuted (%s, %v):\n%+v", i, proof.Reason, proof.Conflict, ops)
			}
			continue
		}
		illegal++
		if proof != nil {
			refuted++
		}
	}
	if legal < 300 || illegal < 300 || refuted < illegal/2 {
		t.Fatalf("weak sample: %d legal, %d illegal, %d of them refuted", legal, illegal, refuted)
	}
	t.Logf("%d legal, %d illegal, %d of them refuted without a search", legal, illegal, refuted)
}
