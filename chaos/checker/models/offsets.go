package models

import (
	"encoding/json"
	"fmt"
	"strconv"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// offsets is a consumer group's committed offset for one partition; the key
// is {"group": G, "partition": "topic-N"}.
//
//	commit(o)
//	fetch       -> the last committed offset, or -1 when none was
//
// Commits overwrite (a group may rewind), so the state is just the offset.
type offsets struct{}

type offsetsKey struct {
	Group     string `json:"group"`
	Partition string `json:"partition"`
}

type offsetsInput struct {
	// part names the (group, partition) pair as a JSON array, which no two
	// distinct pairs share.
	part   string
	f      string
	offset int64
}

func (offsets) Input(op history.Op) (any, error) {
	var key offsetsKey
	if json.Unmarshal(op.Key, &key) != nil || key.Group == "" || key.Partition == "" {
		return nil, fmt.Errorf(`key must be {"group": ..., "partition": ...} with non-empty strings, got %s`, shown(op.Key))
	}
	part, err := json.Marshal([]string{key.Group, key.Partition})
	if err != nil {
		return nil, err
	}
	in := offsetsInput{part: string(part), f: op.F}
	switch op.F {
	case "fetch":
	case "commit":
		if in.offset, err = decodeInt(op.Input, "commit offset"); err == nil && in.offset < 0 {
			err = fmt.Errorf("commit offset %d is negative", in.offset)
		}
	default:
		return nil, badF(op.F, "commit", "fetch")
	}
	return in, err
}

func (offsets) Output(input any, value json.RawMessage) (any, error) {
	if input.(offsetsInput).f != "fetch" {
		return nil, nil
	}
	offset, err := decodeInt(value, "fetch result")
	if err == nil && offset < -1 {
		err = fmt.Errorf("fetch result %d is below -1", offset)
	}
	return offset, err
}

func (offsets) Init() any { return int64(-1) }

func (offsets) Step(state, input, output any) (bool, any) {
	committed, in := state.(int64), input.(offsetsInput)
	if in.f == "commit" {
		return true, in.offset
	}
	return output == linear.OutputUnknown || output.(int64) == committed, state
}

func (offsets) Equal(a, b any) bool        { return a.(int64) == b.(int64) }
func (offsets) Hash(state any) uint64      { return uint64(state.(int64)) }
func (offsets) Partition(input any) string { return input.(offsetsInput).part }
func (offsets) DescribeState(s any) string { return strconv.FormatInt(s.(int64), 10) }

// Effect: a commit overwrites whatever was committed; a fetch only looks.
// So the search need not consider a commit of unknown outcome whose offset
// no fetch that could follow it returned (linear.Pruner).
func (offsets) Effect(input, output any) (linear.Effect, any) {
	in := input.(offsetsInput)
	if in.f == "commit" {
		return linear.Overwrites, in.offset
	}
	if output == linear.OutputUnknown {
		return linear.Reads, nil
	}
	return linear.Reads, output.(int64)
}

func (offsets) DescribeOperation(input, output any) string {
	in := input.(offsetsInput)
	if in.f == "commit" {
		return fmt.Sprintf("commit(%d)", in.offset)
	}
	return "fetch() -> " + returned(output)
}
