package models

import (
	"context"
	"path/filepath"
	"testing"

	"kraftlog/checker/linear"
)

// TestEffectsMatchSteps: what each model's Effect claims (linear.Pruner)
// holds of its Step, for every operation of its hand-made histories, known
// and with its output made unknown, from every state those histories reach
// or name. Pruning is only as sound as these claims.
func TestEffectsMatchSteps(t *testing.T) {
	for _, name := range Names() {
		m, _ := ByName(name)
		p, ok := m.(linear.Pruner)
		if !ok {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("testdata", name, "*.jsonl"))
		var ops []linear.Operation
		for _, f := range files {
			ops = append(ops, readFile(t, m, f)...)
		}
		for _, op := range ops {
			unknown := op
			unknown.Output = linear.OutputUnknown
			ops = append(ops, unknown)
		}
		// States: the start, and each reached by stepping the operations in
		// turn as if unknown (always accepted), and each one an Effect names.
		states := []any{m.Init()}
		s := m.Init()
		for _, op := range ops {
			if m.Partition(op.Input) != m.Partition(ops[0].Input) {
				continue
			}
			_, s = m.Step(s, op.Input, linear.OutputUnknown)
			states = append(states, s)
		}
		for _, op := range ops {
			if e, named := p.Effect(op.Input, op.Output); e != linear.Acts && named != nil {
				states = append(states, named)
			}
		}
		checked := 0
		for _, op := range ops {
			effect, named := p.Effect(op.Input, op.Output)
			desc := name + ": " + m.DescribeOperation(op.Input, op.Output)
			for _, s := range states {
				ok, next := m.Step(s, op.Input, op.Output)
				switch effect {
				case linear.Reads:
					if !m.Equal(next, s) {
						t.Fatalf("%s claims Reads but changes %s", desc, m.DescribeState(s))
					}
					want := op.Output == linear.OutputUnknown || m.Equal(s, named)
					if ok != want {
						t.Fatalf("%s claims Reads of %v: accepted from %s is %v", desc, named, m.DescribeState(s), ok)
					}
				case linear.Overwrites:
					if !ok || !m.Equal(next, named) {
						t.Fatalf("%s claims Overwrites with %v: from %s gives %v, %s", desc, named, m.DescribeState(s), ok, m.DescribeState(next))
					}
				}
				checked++
			}
		}
		if checked == 0 {
			t.Fatalf("%s: nothing checked", name)
		}
	}
}

// TestPrunedHistoriesSayHowMany: the hand-made histories built for pruning
// prune what their notes say, and the verdict counts it.
func TestPrunedHistoriesSayHowMany(t *testing.T) {
	cases := map[string]int{
		"offsets/unread-info-commits-then-stale-fetch.illegal.jsonl": 3, // two commits, one fetch
		"offsets/info-commit-needed-despite-equal-commit.ok.jsonl":   0,
		"register/unread-info-write-then-stale-read.illegal.jsonl":   1,
		"register/info-write-needed-despite-equal-write.ok.jsonl":    0,
		"kv/unread-info-put-then-stale-get.illegal.jsonl":            1,
	}
	for file, want := range cases {
		m, _ := ByName(filepath.Dir(file))
		res := linear.Check(context.Background(), m, readFile(t, m, filepath.Join("testdata", file)))
		got := 0
		for _, p := range res.Partitions {
			got += p.Pruned
		}
		if got != want {
			t.Errorf("%s: %d pruned, want %d", file, got, want)
		}
	}
}
