package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// maxLine bounds one JSON line; a longer line is reported, not truncated.
const maxLine = 16 << 20

// record is one line of our JSON-lines format (see README.md). Fields other
// than these are allowed and ignored, so recorders may add notes such as an
// error text.
type record struct {
	Process json.RawMessage `json:"process"`
	Type    *string         `json:"type"`
	F       *string         `json:"f"`
	Key     json.RawMessage `json:"key"`
	Value   json.RawMessage `json:"value"`
	Time    *json.Number    `json:"time"`
}

// ReadJSONL reads a history in our JSON-lines format. Blank lines are
// skipped. The first malformed line stops the read with a *LineError.
func ReadJSONL(r io.Reader) ([]Op, error) {
	return readEvents(r, func(line int, text []byte) (event, bool, error) {
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			return event{}, false, nil
		}
		return parseRecord(line, text)
	})
}

// readEvents scans r line by line (1-based line numbers), turns each line
// into an event with parse (which may skip a line), and pairs invocations
// with their completions. The first error stops the read.
func readEvents(r io.Reader, parse func(line int, text []byte) (event, bool, error)) ([]Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	p := newPairer()
	line := 0
	for sc.Scan() {
		line++
		e, ok, err := parse(line, sc.Bytes())
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := p.add(e); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, lineErrorf(line+1, "%v", err)
	}
	return p.finish(), nil
}

// nemesis is the process of fault lines: the chaos runs record every fault
// in the history with its time, for people and pictures; the checker skips
// them, as Jepsen's checkers skip :nemesis operations.
const nemesis = `"nemesis"`

// parseRecord turns one line into an event; false for a line to skip.
func parseRecord(line int, text []byte) (event, bool, error) {
	var rec record
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		return event{}, false, lineErrorf(line, "not a JSON object: %v", err)
	}
	if dec.More() {
		return event{}, false, lineErrorf(line, "more than one JSON value on the line")
	}
	if rec.Process == nil || rec.Type == nil || rec.F == nil || rec.Time == nil {
		return event{}, false, lineErrorf(line, `"process", "type", "f" and "time" are all required`)
	}
	if string(bytes.TrimSpace(rec.Process)) == nemesis {
		return event{}, false, nil
	}
	process, err := strconv.Atoi(string(bytes.TrimSpace(rec.Process)))
	if err != nil {
		return event{}, false, lineErrorf(line, "process %s is not an integer", rec.Process)
	}
	time, err := strconv.ParseInt(rec.Time.String(), 10, 64)
	if err != nil {
		return event{}, false, lineErrorf(line, "time %s is not an integer (nanoseconds)", rec.Time)
	}
	kind := Kind(*rec.Type)
	switch kind {
	case Invoke, Ok, Fail, Unknown:
	default:
		return event{}, false, lineErrorf(line, `type %q is not one of "invoke", "ok", "fail", "info"`, *rec.Type)
	}
	return event{
		line:    line,
		process: process,
		kind:    kind,
		f:       *rec.F,
		key:     nullToNil(rec.Key),
		value:   nullToNil(rec.Value),
		time:    time,
	}, true, nil
}

// nullToNil treats an explicit JSON null like an absent field for keys and
// values, so "value": null and no value mean the same thing.
func nullToNil(raw json.RawMessage) json.RawMessage {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}
