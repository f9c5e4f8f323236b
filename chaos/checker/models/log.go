package models

import (
	"encoding/json"
	"fmt"
	"strings"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// partitionLog is one Kafka partition per key ("topic-N"): an append-only
// sequence of committed records.
//
//	send(v)     -> the offset v was written at
//	read(o)     -> the value at offset o, or null when o is at or above the
//	               high watermark (nothing visible there yet)
//
// A send that times out may or may not have been appended; its offset is
// whatever the log dictates when it is linearized. Values are any JSON but
// null, which would be indistinguishable from "nothing visible".
type partitionLog struct{}

type logInput struct {
	key string
	f   string
	// value is what send appends (canonical JSON).
	value string
	// offset is where read looks.
	offset int64
}

// logRead is read's output.
type logRead struct {
	visible bool
	value   string
}

func (r logRead) String() string {
	if !r.visible {
		return "nothing"
	}
	return r.value
}

// logNode is the state: the newest record of an immutable list that shares
// its older records with the states it grew from, so a send costs O(1).
// A nil *logNode is the empty log.
type logNode struct {
	prev *logNode
	// jump is an older record, far enough back that at() reaches any offset
	// in O(log n) steps (Myers' skip list on an applicative list), not by
	// walking every record in between: a final read of the whole log is a
	// read of each offset.
	jump  *logNode
	value string
	// length counts the records up to and including this one; hash covers
	// them all, so most unequal logs are told apart without a walk.
	length int64
	hash   uint64
}

func (n *logNode) len() int64 {
	if n == nil {
		return 0
	}
	return n.length
}

func (n *logNode) hashOf() uint64 {
	if n == nil {
		return 0
	}
	return n.hash
}

func (n *logNode) appended(value string) *logNode {
	// Mixing in the previous hash makes the hash depend on the order.
	hash := (n.hashOf()*1099511628211 + 1) ^ hashString(value)
	jump := n
	if n != nil && n.jump != nil && n.len()-n.jump.len() == n.jump.len()-n.jump.jump.len() {
		jump = n.jump.jump
	}
	return &logNode{prev: n, jump: jump, value: value, length: n.len() + 1, hash: hash}
}

// at returns the record at offset, which must be below len().
func (n *logNode) at(offset int64) string {
	for n.length-1 > offset {
		if n.jump != nil && n.jump.length-1 >= offset {
			n = n.jump
		} else {
			n = n.prev
		}
	}
	return n.value
}

func (partitionLog) Input(op history.Op) (any, error) {
	key, err := stringKey(op)
	if err != nil {
		return nil, err
	}
	in := logInput{key: key, f: op.F}
	switch op.F {
	case "send":
		if op.Input == nil {
			return nil, fmt.Errorf("send needs a value that is not null")
		}
		in.value, err = canonical(op.Input)
	case "read":
		if in.offset, err = decodeInt(op.Input, "read offset"); err == nil && in.offset < 0 {
			err = fmt.Errorf("read offset %d is negative", in.offset)
		}
	default:
		return nil, badF(op.F, "send", "read")
	}
	return in, err
}

func (partitionLog) Output(input any, value json.RawMessage) (any, error) {
	if input.(logInput).f == "send" {
		offset, err := decodeInt(value, "send result (the offset)")
		if err == nil && offset < 0 {
			err = fmt.Errorf("send offset %d is negative", offset)
		}
		return offset, err
	}
	if value == nil {
		return logRead{}, nil
	}
	v, err := canonical(value)
	return logRead{visible: true, value: v}, err
}

func (partitionLog) Init() any { return (*logNode)(nil) }

func (partitionLog) Step(state, input, output any) (bool, any) {
	log, in := state.(*logNode), input.(logInput)
	unknown := output == linear.OutputUnknown
	if in.f == "send" {
		return unknown || output.(int64) == log.len(), log.appended(in.value)
	}
	if unknown {
		return true, log
	}
	want := logRead{}
	if in.offset < log.len() {
		want = logRead{visible: true, value: log.at(in.offset)}
	}
	return output.(logRead) == want, log
}

func (partitionLog) Equal(a, b any) bool {
	x, y := a.(*logNode), b.(*logNode)
	if x.len() != y.len() || x.hashOf() != y.hashOf() {
		return false
	}
	// Equal logs usually share their tails, so the walk stops early.
	for x != y {
		if x.value != y.value {
			return false
		}
		x, y = x.prev, y.prev
	}
	return true
}

func (partitionLog) Hash(state any) uint64      { return state.(*logNode).hashOf() }
func (partitionLog) Partition(input any) string { return input.(logInput).key }

// Effect: only a read of unknown outcome is pruned: it changes nothing and
// fits any log. A send is never an Overwrites: it takes the next offset, so
// leaving out one of unknown outcome would move every later send's offset
// (a lone send acknowledged at offset 1 needs an unknown send before it,
// read or not: the offset observes it). A read of
// known outcome sees one offset, not one whole state, so it is left
// unclassified (linear.Pruner).
func (partitionLog) Effect(input, output any) (linear.Effect, any) {
	if input.(logInput).f == "read" && output == linear.OutputUnknown {
		return linear.Reads, nil
	}
	return linear.Acts, nil
}

// DescribeState lists the newest records; that is where a failed read or
// send usually looks.
func (partitionLog) DescribeState(s any) string {
	const shown = 8
	var newest []string
	for n := s.(*logNode); n != nil && len(newest) < shown; n = n.prev {
		newest = append([]string{n.value}, newest...)
	}
	if older := s.(*logNode).len() - int64(len(newest)); older > 0 {
		return fmt.Sprintf("[(%d older) %s]", older, strings.Join(newest, " "))
	}
	return "[" + strings.Join(newest, " ") + "]"
}

func (partitionLog) DescribeOperation(input, output any) string {
	in := input.(logInput)
	if in.f == "send" {
		return fmt.Sprintf("send(%s) -> %s", in.value, returned(output))
	}
	return fmt.Sprintf("read(%d) -> %s", in.offset, returned(output))
}
