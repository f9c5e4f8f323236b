// Package report turns a check's result into the verdict JSON and the HTML
// picture of a failure.
package report

import (
	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// Checked is everything a report draws on: the history as read and as the
// model saw it (same order and length), and the result.
type Checked struct {
	ModelName string
	Model     linear.Model
	History   []history.Op
	Ops       []linear.Operation
	Result    linear.Result
}

// Verdict is the JSON document printed on stdout.
type Verdict struct {
	Result         linear.Verdict  `json:"result"`
	Model          string          `json:"model"`
	Operations     int             `json:"operations"`
	Partitions     []PartitionJSON `json:"partitions"`
	Counterexample *Counterexample `json:"counterexample"`
}

type PartitionJSON struct {
	Key        string         `json:"key"`
	Result     linear.Verdict `json:"result"`
	Operations int            `json:"operations"`
	// Pruned are the operations of unknown outcome (among Operations) left
	// out before the search because no observation could depend on them.
	Pruned    int     `json:"pruned"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// Counterexample explains the first illegal partition (by key).
type Counterexample struct {
	Partition string `json:"partition"`
	// Linearized is the longest linearizable prefix found, in order.
	Linearized []OpJSON `json:"linearized"`
	// State is the model state after Linearized.
	State string `json:"state"`
	// Stuck are the operations that could come next, all of which the
	// model rejects from State.
	Stuck []OpJSON `json:"stuck"`
	// Reason and Conflict are set when the model refuted the partition
	// without a search: the rule broken and the operations breaking it
	// (Linearized and Stuck are then empty).
	Reason   string   `json:"reason,omitempty"`
	Conflict []OpJSON `json:"conflict,omitempty"`
}

type OpJSON struct {
	Process   int    `json:"process"`
	Operation string `json:"operation"`
	// StateAfter is set for linearized operations.
	StateAfter   string `json:"state_after,omitempty"`
	InvokeLine   int    `json:"invoke_line"`
	CompleteLine int    `json:"complete_line,omitempty"`
}

// BuildVerdict summarises c for the JSON output.
func BuildVerdict(c Checked) Verdict {
	v := Verdict{
		Result:     c.Result.Verdict,
		Model:      c.ModelName,
		Operations: len(c.Ops),
		Partitions: make([]PartitionJSON, len(c.Result.Partitions)),
	}
	for i, p := range c.Result.Partitions {
		v.Partitions[i] = PartitionJSON{
			Key:        p.Key,
			Result:     p.Verdict,
			Operations: len(p.Ops),
			Pruned:     p.Pruned,
			ElapsedMS:  float64(p.Elapsed.Microseconds()) / 1000,
		}
	}
	if p := firstIllegal(c.Result); p != nil {
		v.Counterexample = buildCounterexample(c, p)
	}
	return v
}

func firstIllegal(r linear.Result) *linear.PartitionResult {
	for i := range r.Partitions {
		if r.Partitions[i].Verdict == linear.Illegal {
			return &r.Partitions[i]
		}
	}
	return nil
}

func buildCounterexample(c Checked, p *linear.PartitionResult) *Counterexample {
	ce := p.Counterexample
	out := &Counterexample{Partition: p.Key, State: c.Model.DescribeState(ce.Final)}
	out.Linearized = make([]OpJSON, len(ce.Prefix))
	for i, s := range ce.Prefix {
		out.Linearized[i] = describe(c, s.Op)
		out.Linearized[i].StateAfter = c.Model.DescribeState(s.State)
	}
	out.Stuck = describeAll(c, ce.Stuck)
	out.Reason = ce.Reason
	if len(ce.Conflict) > 0 {
		out.Conflict = describeAll(c, ce.Conflict)
	}
	return out
}

func describeAll(c Checked, ids []int) []OpJSON {
	out := make([]OpJSON, len(ids))
	for i, id := range ids {
		out[i] = describe(c, id)
	}
	return out
}

func describe(c Checked, id int) OpJSON {
	op, h := c.Ops[id], c.History[id]
	return OpJSON{
		Process:      op.Process,
		Operation:    c.Model.DescribeOperation(op.Input, op.Output),
		InvokeLine:   h.InvokeLine,
		CompleteLine: h.CompleteLine,
	}
}
