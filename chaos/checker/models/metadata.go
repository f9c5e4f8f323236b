package models

import (
	"encoding/json"
	"fmt"
	"strconv"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// metadata is the controller's view of one topic per key (the topic name).
//
//	create(n)   -> "ok" (the topic now has n partitions)
//	               | "TOPIC_ALREADY_EXISTS" (nothing changed)
//	delete      -> "ok" | "UNKNOWN_TOPIC_OR_PARTITION"
//	describe    -> n, the partition count | "UNKNOWN_TOPIC_OR_PARTITION"
//
// An error code is an answer the controller gave about the topic, so it is
// recorded as an ok completion; "fail" is for requests that had no effect
// for other reasons. The state is the partition count, 0 for no topic.
type metadata struct{}

const (
	codeOK           = "ok"
	codeTopicExists  = "TOPIC_ALREADY_EXISTS"
	codeUnknownTopic = "UNKNOWN_TOPIC_OR_PARTITION"
)

type metadataInput struct {
	topic      string
	f          string
	partitions int64
}

// metadataResult is an output: an error code, or (describe) a count.
type metadataResult struct {
	code       string
	partitions int64
}

func (r metadataResult) String() string {
	if r.code != "" {
		return r.code
	}
	return strconv.FormatInt(r.partitions, 10)
}

func (metadata) Input(op history.Op) (any, error) {
	topic, err := stringKey(op)
	if err != nil {
		return nil, err
	}
	in := metadataInput{topic: topic, f: op.F}
	switch op.F {
	case "delete", "describe":
	case "create":
		if in.partitions, err = decodeInt(op.Input, "create value (partitions)"); err == nil && in.partitions < 1 {
			err = fmt.Errorf("create needs at least one partition, got %d", in.partitions)
		}
	default:
		return nil, badF(op.F, "create", "delete", "describe")
	}
	return in, err
}

func (metadata) Output(input any, value json.RawMessage) (any, error) {
	f := input.(metadataInput).f
	var code string
	if json.Unmarshal(value, &code) == nil {
		expected := codeTopicExists
		if f != "create" {
			expected = codeUnknownTopic
		}
		if (code == codeOK && f != "describe") || code == expected {
			return metadataResult{code: code}, nil
		}
		return nil, fmt.Errorf("%s cannot return %q", f, code)
	}
	if f == "describe" {
		n, err := decodeInt(value, "describe result")
		if err == nil && n < 1 {
			err = fmt.Errorf("describe result %d is not a partition count", n)
		}
		return metadataResult{partitions: n}, err
	}
	return nil, fmt.Errorf(`%s must return "ok" or an error code, got %s`, f, shown(value))
}

func (metadata) Init() any { return int64(0) }

func (metadata) Step(state, input, output any) (bool, any) {
	partitions, in := state.(int64), input.(metadataInput)
	exists := partitions > 0
	var want metadataResult
	next := partitions
	switch in.f {
	case "create":
		want.code = codeOK
		if exists {
			want.code = codeTopicExists
		} else {
			next = in.partitions
		}
	case "delete":
		want.code = codeOK
		if exists {
			next = 0
		} else {
			want.code = codeUnknownTopic
		}
	case "describe":
		want.partitions = partitions
		if !exists {
			want.code = codeUnknownTopic
		}
	}
	return output == linear.OutputUnknown || output.(metadataResult) == want, next
}

func (metadata) Equal(a, b any) bool        { return a.(int64) == b.(int64) }
func (metadata) Hash(state any) uint64      { return uint64(state.(int64)) }
func (metadata) Partition(input any) string { return input.(metadataInput).topic }

// Effect: a describe of unknown outcome changes nothing and fits any state,
// so the search may leave it out. A known describe is left unclassified
// (Acts): there are no Overwrites here for it to keep, and "no topic" is a
// code, not one state the Reads contract could name. Create and delete
// both look and change (linear.Pruner).
func (metadata) Effect(input, output any) (linear.Effect, any) {
	if input.(metadataInput).f == "describe" && output == linear.OutputUnknown {
		return linear.Reads, nil
	}
	return linear.Acts, nil
}

func (metadata) DescribeState(s any) string {
	if n := s.(int64); n > 0 {
		return fmt.Sprintf("%d partitions", n)
	}
	return "no topic"
}

func (metadata) DescribeOperation(input, output any) string {
	in := input.(metadataInput)
	if in.f == "create" {
		return fmt.Sprintf("create(%d) -> %s", in.partitions, returned(output))
	}
	return fmt.Sprintf("%s() -> %s", in.f, returned(output))
}
