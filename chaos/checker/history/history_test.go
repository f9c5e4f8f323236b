package history

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestJSONLPairsCallsWithCompletions(t *testing.T) {
	in := `{"process": 1, "type": "invoke", "f": "send", "key": "t-0", "value": "a", "time": 10}
{"process": 2, "type": "invoke", "f": "send", "key": "t-0", "value": "b", "time": 11}

{"process": 2, "type": "fail", "f": "send", "time": 12, "error": "NOT_LEADER"}
{"process": 1, "type": "ok", "f": "send", "value": 0, "time": 13}
{"process": 3, "type": "invoke", "f": "read", "key": "t-0", "value": 0, "time": 14}
{"process": 3, "type": "info", "f": "read", "time": 15}
{"process": 4, "type": "invoke", "f": "read", "key": "t-0", "value": 0, "time": 16}`
	ops, err := ReadJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{
		{Process: 1, F: "send", Key: raw(`"t-0"`), Input: raw(`"a"`), Output: raw(`0`), Status: OK,
			Call: 10, Return: 13, InvokeLine: 1, CompleteLine: 5},
		{Process: 3, F: "read", Key: raw(`"t-0"`), Input: raw(`0`), Status: Info,
			Call: 14, InvokeLine: 6, CompleteLine: 7},
		{Process: 4, F: "read", Key: raw(`"t-0"`), Input: raw(`0`), Status: Info,
			Call: 16, InvokeLine: 8},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", ops, want)
	}
}

func raw(s string) []byte { return []byte(s) }

func TestJSONLSkipsNemesisLines(t *testing.T) {
	in := `{"process": "nemesis", "type": "info", "f": "kill", "value": {"nodes": [4]}, "time": 5}
{"process": 1, "type": "invoke", "f": "send", "key": "t-0", "value": "a", "time": 10}
{"process": "nemesis", "type": "info", "f": "heal", "time": 11}
{"process": 1, "type": "ok", "f": "send", "value": 0, "time": 13}`
	ops, err := ReadJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].InvokeLine != 2 || ops[0].CompleteLine != 4 {
		t.Fatalf("got %+v, want the one send of lines 2 and 4", ops)
	}
	_, err = ReadJSONL(strings.NewReader(`{"process": "client", "type": "invoke", "f": "read", "time": 1}`))
	if err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("a process other than \"nemesis\" must be an integer: %v", err)
	}
}

func TestJSONLErrorsNameTheLine(t *testing.T) {
	invoke := `{"process": 1, "type": "invoke", "f": "read", "key": "k", "time": 5}` + "\n"
	cases := []struct {
		name, in string
		line     int
		mentions string
	}{
		{"not JSON", invoke + "{oops\n", 2, "not a JSON object"},
		{"missing time", `{"process": 1, "type": "invoke", "f": "read"}`, 1, `"time"`},
		{"fractional process", `{"process": 1.5, "type": "invoke", "f": "read", "time": 0}`, 1, "process"},
		{"bad type", `{"process": 1, "type": "done", "f": "read", "time": 0}`, 1, `"done"`},
		{"completion without invoke", `{"process": 1, "type": "ok", "f": "read", "time": 0}`, 1, "no open invoke"},
		{"two open invokes", invoke + invoke, 2, "still open"},
		{"f differs", invoke + `{"process": 1, "type": "ok", "f": "write", "time": 6}`, 2, `"write"`},
		{"key differs", invoke + `{"process": 1, "type": "ok", "f": "read", "key": "j", "time": 6}`, 2, "key"},
		{"time runs back", invoke + `{"process": 1, "type": "ok", "f": "read", "time": 4}`, 2, "before its invoke"},
		{"two values on a line", `{"process": 1, "type": "invoke", "f": "read", "time": 0} {}`, 1, "more than one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(c.in))
			var le *LineError
			if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(le.Msg, c.mentions) {
				t.Fatalf("got %v, want line %d mentioning %s", err, c.line, c.mentions)
			}
		})
	}
}

func TestJepsenEtcdTranslation(t *testing.T) {
	in := strings.Join([]string{
		"INFO  jepsen.core - some set-up chatter",
		"INFO  jepsen.util - 0\t:invoke\t:read\tnil",
		"INFO  jepsen.util - 1\t:invoke\t:cas\t[3 0]",
		"INFO  jepsen.util - 2\t:invoke\t:cas\t[1 nil]",
		"INFO  jepsen.util - 0\t:ok\t:read\t3",
		"INFO  jepsen.util - 1\t:fail\t:cas\t[3 0]",
		"INFO  jepsen.util - 2\t:ok\t:cas\t[1 nil]",
		"INFO  jepsen.util - 3\t:invoke\t:write\t4",
		"INFO  jepsen.util - 3\t:info\t:write\t:timed-out",
		"INFO  jepsen.util - 4\t:invoke\t:read\tnil",
		"INFO  jepsen.util - 4\t:fail\t:read\t:timed-out",
		"INFO  jepsen.util - :nemesis\t:info\t:start\tnil",
		"INFO  jepsen.util - 5\t:invoke\t:write\t1",
	}, "\n")
	ops, err := ReadJepsenEtcd(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{
		{Process: 0, F: "read", Output: raw("3"), Status: OK, Call: 2, Return: 5, InvokeLine: 2, CompleteLine: 5},
		// A cas whose compare failed observed another value: it completes false.
		{Process: 1, F: "cas", Input: raw("[3,0]"), Output: raw("false"), Status: OK, Call: 3, Return: 6, InvokeLine: 3, CompleteLine: 6},
		{Process: 2, F: "cas", Input: raw("[1,null]"), Output: raw("true"), Status: OK, Call: 4, Return: 7, InvokeLine: 4, CompleteLine: 7},
		{Process: 3, F: "write", Input: raw("4"), Status: Info, Call: 8, InvokeLine: 8, CompleteLine: 9},
		// The read that failed is gone; the write still open at the end is unknown.
		{Process: 5, F: "write", Input: raw("1"), Status: Info, Call: 13, InvokeLine: 13},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", ops, want)
	}
}

func TestJepsenEtcdBadValue(t *testing.T) {
	_, err := ReadJepsenEtcd(strings.NewReader("INFO  jepsen.util - 0\t:invoke\t:write\tfour"))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(le.Msg, `"four"`) {
		t.Fatalf("got %v", err)
	}
}
