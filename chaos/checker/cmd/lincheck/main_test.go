package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lincheck runs the command in-process and returns its exit code, stdout
// and stderr.
func lincheck(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func verdictOf(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	return v
}

// lostSend is refuted by the log model without a search.
const lostSend = `{"process": 0, "type": "invoke", "f": "send", "key": "t-0", "value": "a", "time": 0}
{"process": 0, "type": "ok", "f": "send", "value": 0, "time": 1}
{"process": 1, "type": "invoke", "f": "read", "key": "t-0", "value": 0, "time": 2}
{"process": 1, "type": "ok", "f": "read", "time": 3}
{"process": 2, "type": "invoke", "f": "send", "key": "t-1", "value": "b", "time": 4}
{"process": 2, "type": "ok", "f": "send", "value": 0, "time": 5}
`

// lostWrite is the same loss on registers, which the search must find.
const lostWrite = `{"process": 0, "type": "invoke", "f": "write", "key": "r-0", "value": "a", "time": 0}
{"process": 0, "type": "ok", "f": "write", "time": 1}
{"process": 1, "type": "invoke", "f": "read", "key": "r-0", "time": 2}
{"process": 1, "type": "ok", "f": "read", "time": 3}
{"process": 2, "type": "invoke", "f": "write", "key": "r-1", "value": "b", "time": 4}
{"process": 2, "type": "ok", "f": "write", "time": 5}
`

func TestLegalHistoryExitsZero(t *testing.T) {
	code, out, _ := lincheck(t, "", "--model", "log", filepath.Join("..", "..", "models", "testdata", "log", "info-send-late.ok.jsonl"))
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	v := verdictOf(t, out)
	if v["result"] != "ok" || v["counterexample"] != nil || v["model"] != "log" {
		t.Fatalf("verdict %v", v)
	}
}

func TestIllegalHistoryExplainsItself(t *testing.T) {
	html := filepath.Join(t.TempDir(), "verdict.html")
	code, out, _ := lincheck(t, lostWrite, "--model", "register", "--html", html, "-")
	if code != exitIllegal {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var v struct {
		Result     string
		Partitions []struct {
			Key        string
			Result     string
			Operations int
		}
		Counterexample struct {
			Partition  string
			Linearized []struct{ Operation string }
			Stuck      []struct {
				Operation  string
				InvokeLine int `json:"invoke_line"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Result != "illegal" || len(v.Partitions) != 2 ||
		v.Partitions[0].Key != "r-0" || v.Partitions[0].Result != "illegal" || v.Partitions[0].Operations != 2 ||
		v.Partitions[1].Key != "r-1" || v.Partitions[1].Result != "ok" {
		t.Fatalf("verdict %s", out)
	}
	ce := v.Counterexample
	if ce.Partition != "r-0" || len(ce.Linearized) != 1 || ce.Linearized[0].Operation != `write("a")` ||
		len(ce.Stuck) != 1 || ce.Stuck[0].Operation != "read() -> null" || ce.Stuck[0].InvokeLine != 3 {
		t.Fatalf("counterexample %s", out)
	}

	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", `class="stuck"`, `class="lin"`, "#1 write", "read() -&gt; null", "process 1"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// Self-contained: nothing is fetched from elsewhere.
	for _, external := range []string{"src=", "href=", "@import", "url("} {
		if bytes.Contains(page, []byte(external)) {
			t.Errorf("HTML refers to an external asset (%s)", external)
		}
	}
}

// The verdict counts, per partition, the operations of unknown outcome left
// out before the search: here a timed-out write nothing read and a timed-out
// read, beside the lost write of r-0, which stays illegal; the page's table
// has the count too.
func TestVerdictCountsPruned(t *testing.T) {
	pruned := lostWrite + `{"process": 3, "type": "invoke", "f": "write", "key": "r-0", "value": "z", "time": 6}
{"process": 4, "type": "invoke", "f": "read", "key": "r-0", "time": 7}
{"process": 4, "type": "info", "f": "read", "time": 8}
`
	html := filepath.Join(t.TempDir(), "verdict.html")
	code, out, _ := lincheck(t, pruned, "--model", "register", "--html", html, "-")
	if code != exitIllegal {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var v struct {
		Partitions []struct {
			Key        string
			Operations int
			Pruned     *int
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Partitions) != 2 || v.Partitions[0].Key != "r-0" || v.Partitions[0].Operations != 4 ||
		v.Partitions[0].Pruned == nil || *v.Partitions[0].Pruned != 2 ||
		v.Partitions[1].Pruned == nil || *v.Partitions[1].Pruned != 0 {
		t.Fatalf("verdict %s", out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("<th>pruned</th>")) || !bytes.Contains(page, []byte("<td>4</td><td>2</td>")) {
		t.Errorf("the page's partition table lacks the pruned count")
	}
}

// A log history the model refutes directly: the verdict names the rule and
// the two operations, and the page draws just those.
func TestRefutedHistoryNamesTheConflict(t *testing.T) {
	html := filepath.Join(t.TempDir(), "verdict.html")
	code, out, _ := lincheck(t, lostSend, "--model", "log", "--html", html, "-")
	if code != exitIllegal {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var v struct {
		Result         string
		Counterexample struct {
			Partition string
			Reason    string
			Conflict  []struct {
				Operation  string
				InvokeLine int `json:"invoke_line"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	ce := v.Counterexample
	if v.Result != "illegal" || ce.Partition != "t-0" || !strings.Contains(ce.Reason, "saw nothing") ||
		len(ce.Conflict) != 2 || ce.Conflict[0].Operation != `send("a") -> 0` ||
		ce.Conflict[1].Operation != "read(0) -> nothing" || ce.Conflict[1].InvokeLine != 3 {
		t.Fatalf("verdict %s", out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", `class="stuck"`, "No search was needed", "Operations in conflict", "read(0) -&gt; nothing"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if bytes.Contains(page, []byte(`class="lin"`)) {
		t.Error("a refutation has no linearized prefix to draw")
	}
}

// pathological is a register history whose search is exponential: n
// overlapping writes of distinct values, then a read of a value none wrote.
func pathological(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"process": %d, "type": "invoke", "f": "write", "key": "x", "value": %d, "time": %d}`+"\n", i, i, i)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"process": %d, "type": "ok", "f": "write", "time": %d}`+"\n", i, n+i)
	}
	fmt.Fprintf(&b, `{"process": %d, "type": "invoke", "f": "read", "key": "x", "time": %d}`+"\n", n, 2*n)
	fmt.Fprintf(&b, `{"process": %d, "type": "ok", "f": "read", "value": -1, "time": %d}`+"\n", n, 2*n+1)
	return b.String()
}

func TestTimeLimitAnswersUnknown(t *testing.T) {
	start := time.Now()
	code, out, _ := lincheck(t, pathological(40), "--model", "register", "--time-limit", "0.2", "-")
	if code != exitUnknown {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if v := verdictOf(t, out); v["result"] != "unknown" || v["counterexample"] != nil {
		t.Fatalf("verdict %v", v)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %v with a 0.2 s limit", took)
	}
}

func TestUnreadableInputNamesTheLine(t *testing.T) {
	bad := strings.Replace(lostSend, `"value": 0, "time": 1`, `"value": "zero", "time": 1`, 1)
	code, out, errOut := lincheck(t, bad, "--model", "log", "-")
	if code != exitUnreadable || out != "" || !strings.Contains(errOut, "line 2:") || !strings.Contains(errOut, "offset") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = lincheck(t, "", "--model", "log", filepath.Join(t.TempDir(), "missing.jsonl"))
	if code != exitUnreadable || !strings.Contains(errOut, "missing.jsonl") {
		t.Fatalf("missing file: exit %d, stderr %q", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-"},                     // no model
		{"--model", "queue", "-"}, // unknown model
		{"--model", "log"},        // no history
		{"--model", "log", "--time-limit", "0", "-"},
		{"--format", "jepsen-etcd", "--model", "kv", "-"},
		{"--format", "csv", "--model", "log", "-"},
		{"--no-such-flag"},
	} {
		if code, _, errOut := lincheck(t, "", args...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestJepsenFormatDefaultsToRegister(t *testing.T) {
	log := "INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\t:write\t1\n" +
		"INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\t1\n"
	code, out, _ := lincheck(t, log, "--format", "jepsen-etcd", "-")
	if v := verdictOf(t, out); code != exitOK || v["model"] != "register" {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
