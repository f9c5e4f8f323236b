package history

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// jepsenLine matches the client events of a Jepsen etcd log:
// "INFO  jepsen.util - <process>\t:<type>\t:<f>\t<value>". Every other line
// (set-up chatter, nemesis events) is ignored.
var jepsenLine = regexp.MustCompile(`^INFO\s+jepsen\.util - (\d+)\t:(\w+)\t:([\w-]+)\t(.*)$`)

// ReadJepsenEtcd reads a Jepsen etcd log of a single register into operations
// for the register model. There are no clocks in these logs, so an event's
// time is its line number: the log order is the real-time order.
//
// Jepsen's outcomes are translated to ours:
//   - a :cas that :fails saw a value other than FROM; that is an observation,
//     so it becomes a completed cas returning false rather than a dropped one;
//   - a :read or :write that :fails had no effect and is dropped;
//   - an :ok cas returned true; an :ok read returned its value.
func ReadJepsenEtcd(r io.Reader) ([]Op, error) {
	return readEvents(r, func(line int, text []byte) (event, bool, error) {
		m := jepsenLine.FindStringSubmatch(string(text))
		if m == nil {
			return event{}, false, nil
		}
		e, err := jepsenEvent(line, m[1], m[2], m[3], strings.TrimSpace(m[4]))
		return e, true, err
	})
}

func jepsenEvent(line int, process, kind, f, value string) (event, error) {
	proc, err := strconv.Atoi(process)
	if err != nil {
		return event{}, lineErrorf(line, "process %q is not an integer", process)
	}
	e := event{line: line, process: proc, f: f, time: int64(line)}
	switch kind {
	case "invoke":
		e.kind = Invoke
		e.value, err = jepsenValue(value)
	case "ok":
		e.kind = Ok
		if f == "cas" {
			e.value = json.RawMessage("true")
		} else {
			e.value, err = jepsenValue(value)
		}
	case "fail":
		if f == "cas" {
			e.kind, e.value = Ok, json.RawMessage("false")
		} else {
			e.kind = Fail
		}
	case "info":
		// The value is usually :timed-out; the outcome is unknown either way.
		e.kind = Unknown
	default:
		return event{}, lineErrorf(line, "unknown event type :%s", kind)
	}
	if err != nil {
		return event{}, lineErrorf(line, "%v", err)
	}
	return e, nil
}

// jepsenValue converts an EDN value of these logs (nil, an integer, or a
// vector of those) to JSON; nil becomes an absent value.
func jepsenValue(v string) (json.RawMessage, error) {
	if v == "nil" {
		return nil, nil
	}
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		parts := strings.Fields(v[1 : len(v)-1])
		items := make([]string, len(parts))
		for i, part := range parts {
			item, err := jepsenScalar(part)
			if err != nil {
				return nil, err
			}
			items[i] = item
		}
		return json.RawMessage("[" + strings.Join(items, ",") + "]"), nil
	}
	item, err := jepsenScalar(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(item), nil
}

func jepsenScalar(v string) (string, error) {
	if v == "nil" {
		return "null", nil
	}
	if _, err := strconv.ParseInt(v, 10, 64); err != nil {
		return "", fmt.Errorf("value %q is neither nil, an integer nor a vector of them", v)
	}
	return v, nil
}
