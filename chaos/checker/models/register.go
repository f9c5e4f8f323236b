package models

import (
	"encoding/json"
	"fmt"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// register is one read/write/compare-and-set register per key, as in
// Jepsen's etcd test. It holds any JSON value and starts empty (null).
//
//	read        -> the value
//	write(v)
//	cas([from, to]) -> true if the register held from (it now holds to),
//	                   false if it held something else (nothing changed)
//
// The state is the value's canonical JSON text.
type register struct{}

type registerInput struct {
	key string
	f   string
	// value is what write or a successful cas stores.
	value string
	// from is what cas expects to find.
	from string
}

func (register) Input(op history.Op) (any, error) {
	in := registerInput{f: op.F}
	var err error
	// A single register may go unnamed (Jepsen's etcd logs have no keys).
	if op.Key != nil {
		if in.key, err = stringKey(op); err != nil {
			return nil, err
		}
	}
	switch op.F {
	case "read":
	case "write":
		in.value, err = canonical(op.Input)
	case "cas":
		var pair []json.RawMessage
		if json.Unmarshal(op.Input, &pair) != nil || len(pair) != 2 {
			return nil, fmt.Errorf("cas value must be [from, to], got %s", shown(op.Input))
		}
		if in.from, err = canonical(pair[0]); err == nil {
			in.value, err = canonical(pair[1])
		}
	default:
		return nil, badF(op.F, "read", "write", "cas")
	}
	return in, err
}

func (register) Output(input any, value json.RawMessage) (any, error) {
	switch input.(registerInput).f {
	case "read":
		return canonical(value)
	case "cas":
		var swapped bool
		if json.Unmarshal(value, &swapped) != nil {
			return nil, fmt.Errorf("cas must return true or false, got %s", shown(value))
		}
		return swapped, nil
	}
	// A write returns nothing the model checks (Jepsen echoes the value).
	return nil, nil
}

func (register) Init() any { return "null" }

func (register) Step(state, input, output any) (bool, any) {
	held, in := state.(string), input.(registerInput)
	unknown := output == linear.OutputUnknown
	switch in.f {
	case "read":
		return unknown || output.(string) == held, state
	case "write":
		return true, in.value
	}
	// An unknown cas that takes effect here behaves as the register
	// dictates; "it failed" is covered by never linearizing it.
	swapped := held == in.from
	if !unknown && output.(bool) != swapped {
		return false, state
	}
	if swapped {
		return true, in.value
	}
	return true, state
}

func (register) Equal(a, b any) bool        { return a.(string) == b.(string) }
func (register) Hash(state any) uint64      { return hashString(state.(string)) }
func (register) Partition(input any) string { return input.(registerInput).key }
func (register) DescribeState(s any) string { return s.(string) }

// Effect: a write overwrites, a read only looks; a cas both looks and
// changes, so the model claims nothing about it (linear.Pruner).
func (register) Effect(input, output any) (linear.Effect, any) {
	in := input.(registerInput)
	switch in.f {
	case "write":
		return linear.Overwrites, in.value
	case "read":
		if output == linear.OutputUnknown {
			return linear.Reads, nil
		}
		return linear.Reads, output.(string)
	}
	return linear.Acts, nil
}

func (register) DescribeOperation(input, output any) string {
	in := input.(registerInput)
	switch in.f {
	case "read":
		return "read() -> " + returned(output)
	case "write":
		return fmt.Sprintf("write(%s)", in.value)
	}
	return fmt.Sprintf("cas(%s, %s) -> %s", in.from, in.value, returned(output))
}
