// Package models holds the sequential specifications the checker knows, and
// reads recorded operations into each model's own inputs and outputs.
package models

import (
	"encoding/json"
	"sort"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// Model is a sequential specification that can also read recorded
// operations.
type Model interface {
	linear.Model
	// Input reads an operation's call: its f, key and input value.
	Input(op history.Op) (any, error)
	// Output reads what a completed call returned (nil when the completion
	// had no value).
	Output(input any, value json.RawMessage) (any, error)
}

var byName = map[string]Model{
	"register": register{},
	"kv":       kv{},
	"log":      partitionLog{},
	"offsets":  offsets{},
	"metadata": metadata{},
}

// ByName returns the model called name.
func ByName(name string) (Model, bool) {
	m, ok := byName[name]
	return m, ok
}

// Names lists the models, sorted.
func Names() []string {
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Operations reads a paired history into the model's terms. A value the
// model cannot read is reported against the line it came from.
func Operations(m Model, ops []history.Op) ([]linear.Operation, error) {
	out := make([]linear.Operation, len(ops))
	for i, op := range ops {
		in, err := m.Input(op)
		if err != nil {
			return nil, &history.LineError{Line: op.InvokeLine, Msg: err.Error()}
		}
		res := linear.Operation{Process: op.Process, Input: in, Call: op.Call}
		if op.Status == history.Info {
			res.Output, res.Return = linear.OutputUnknown, linear.Infinity
		} else {
			res.Return = op.Return
			if res.Output, err = m.Output(in, op.Output); err != nil {
				return nil, &history.LineError{Line: op.CompleteLine, Msg: err.Error()}
			}
		}
		out[i] = res
	}
	return out, nil
}
