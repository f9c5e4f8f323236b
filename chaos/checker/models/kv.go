package models

import (
	"encoding/json"
	"fmt"
	"strconv"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// kv is a map from string keys to string values, checked one key at a time.
//
//	get         -> the value, or null when the key is absent
//	put(v)
//	append(v)   adds v to the end of the value (an absent key counts as "")
//
// The state is the value of the one key the part is about.
type kv struct{}

type kvInput struct {
	key   string
	f     string
	value string
}

// kvValue is a key's value or its absence (the state, and get's output).
type kvValue struct {
	present bool
	value   string
}

func (v kvValue) String() string {
	if !v.present {
		return "absent"
	}
	return strconv.Quote(v.value)
}

func (kv) Input(op history.Op) (any, error) {
	key, err := stringKey(op)
	if err != nil {
		return nil, err
	}
	in := kvInput{key: key, f: op.F}
	switch op.F {
	case "get":
	case "put", "append":
		in.value, err = decodeString(op.Input, op.F+" value")
	default:
		return nil, badF(op.F, "get", "put", "append")
	}
	return in, err
}

func (kv) Output(input any, value json.RawMessage) (any, error) {
	if input.(kvInput).f != "get" {
		return nil, nil
	}
	if value == nil {
		return kvValue{}, nil
	}
	s, err := decodeString(value, "get result")
	return kvValue{present: true, value: s}, err
}

func (kv) Init() any { return kvValue{} }

func (kv) Step(state, input, output any) (bool, any) {
	held, in := state.(kvValue), input.(kvInput)
	switch in.f {
	case "get":
		return output == linear.OutputUnknown || output.(kvValue) == held, state
	case "put":
		return true, kvValue{present: true, value: in.value}
	}
	return true, kvValue{present: true, value: held.value + in.value}
}

func (kv) Equal(a, b any) bool   { return a.(kvValue) == b.(kvValue) }
func (kv) Hash(state any) uint64 { return hashString(state.(kvValue).String()) }

func (kv) Partition(input any) string { return input.(kvInput).key }
func (kv) DescribeState(s any) string { return s.(kvValue).String() }

// Effect: a put overwrites, a get only looks; an append builds on what was
// there, so the model claims nothing about it (linear.Pruner).
func (kv) Effect(input, output any) (linear.Effect, any) {
	in := input.(kvInput)
	switch in.f {
	case "put":
		return linear.Overwrites, kvValue{present: true, value: in.value}
	case "get":
		if output == linear.OutputUnknown {
			return linear.Reads, nil
		}
		return linear.Reads, output.(kvValue)
	}
	return linear.Acts, nil
}

func (kv) DescribeOperation(input, output any) string {
	in := input.(kvInput)
	if in.f == "get" {
		return "get() -> " + returned(output)
	}
	return fmt.Sprintf("%s(%q)", in.f, in.value)
}
