package history

import (
	"bytes"
	"encoding/json"
)

// Kind is the type of one history event, as Jepsen names them.
type Kind string

const (
	Invoke Kind = "invoke"
	// Ok: the operation completed and returned a value.
	Ok Kind = "ok"
	// Fail: the operation definitely had no effect.
	Fail Kind = "fail"
	// Unknown: Jepsen's "info", the outcome is not known.
	Unknown Kind = "info"
)

// event is one line of a history, whatever format it came from.
type event struct {
	line    int
	process int
	kind    Kind
	f       string
	key     json.RawMessage
	value   json.RawMessage
	time    int64
}

// pairer matches each completion with the open invoke of the same process.
// A Jepsen process runs one operation at a time, so the process number is
// enough to pair them.
type pairer struct {
	open map[int]*Op
	ops  []*Op
	// dropped marks failed operations; they are removed at the end so that
	// the survivors keep their invoke order.
	dropped map[*Op]bool
}

func newPairer() *pairer {
	return &pairer{open: map[int]*Op{}, dropped: map[*Op]bool{}}
}

func (p *pairer) add(e event) error {
	if e.kind == Invoke {
		if prev, busy := p.open[e.process]; busy {
			return lineErrorf(e.line, "process %d invoked %q while its %q from line %d is still open",
				e.process, e.f, prev.F, prev.InvokeLine)
		}
		op := &Op{Process: e.process, F: e.f, Key: e.key, Input: e.value, Call: e.time, InvokeLine: e.line}
		p.open[e.process] = op
		p.ops = append(p.ops, op)
		return nil
	}
	op, found := p.open[e.process]
	if !found {
		return lineErrorf(e.line, "%s for process %d, which has no open invoke", e.kind, e.process)
	}
	if e.f != op.F {
		return lineErrorf(e.line, "completion is %q but process %d invoked %q at line %d", e.f, e.process, op.F, op.InvokeLine)
	}
	if e.key != nil && !sameJSON(e.key, op.Key) {
		return lineErrorf(e.line, "completion key %s differs from the invoke's key at line %d", e.key, op.InvokeLine)
	}
	if e.time < op.Call {
		return lineErrorf(e.line, "completion time %d is before its invoke time %d (line %d)", e.time, op.Call, op.InvokeLine)
	}
	delete(p.open, e.process)
	op.CompleteLine = e.line
	switch e.kind {
	case Ok:
		op.Status, op.Output, op.Return = OK, e.value, e.time
	case Unknown:
		op.Status = Info
	case Fail:
		p.dropped[op] = true
	}
	return nil
}

// finish returns the operations in invoke order (the order they were
// opened). Operations still open are
// Info: the client never learnt their outcome.
func (p *pairer) finish() []Op {
	for _, op := range p.open {
		op.Status = Info
	}
	out := make([]Op, 0, len(p.ops)-len(p.dropped))
	for _, op := range p.ops {
		if !p.dropped[op] {
			out = append(out, *op)
		}
	}
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
