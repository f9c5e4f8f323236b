// Package history reads recorded client histories (our JSON-lines format and
// Jepsen's etcd logs) into paired operations: each call matched with its
// completion, with operations that definitely had no effect already removed.
package history

import (
	"encoding/json"
	"fmt"
)

// Status says what the client learnt about an operation's outcome.
type Status int

const (
	// OK: the operation returned; Output holds what it returned.
	OK Status = iota
	// Info: the outcome is unknown (timed out, or still open when the history
	// ended). The operation may have taken effect at any time after its call,
	// or never, and its output is unknown.
	Info
)

func (s Status) String() string {
	if s == OK {
		return "ok"
	}
	return "info"
}

// Op is one operation: a call and what became of it.
type Op struct {
	Process int
	F       string
	// Key names the object the operation acts on (register, partition,
	// topic...); nil when the record had none. Its meaning is the model's.
	Key json.RawMessage
	// Input is the value given at the call; nil when there was none.
	Input json.RawMessage
	// Output is the value given at an OK completion; nil for Info.
	Output json.RawMessage
	Status Status
	// Call and Return are times; Return is meaningful only for OK.
	Call, Return int64
	// InvokeLine and CompleteLine are 1-based input line numbers, so that
	// verdicts and errors can point back into the file. CompleteLine is 0
	// when the history ended with the operation still open.
	InvokeLine, CompleteLine int
}

// LineError says which input line is wrong and why.
type LineError struct {
	Line int
	Msg  string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func lineErrorf(line int, format string, args ...any) *LineError {
	return &LineError{Line: line, Msg: fmt.Sprintf(format, args...)}
}
