package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// TestHistories checks every hand-made history in testdata/<model>/. A file
// is named <what it shows>.<ok|illegal>.jsonl; its first line's "note" says
// why that verdict is right.
func TestHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no histories in testdata: %v", err)
	}
	for _, name := range Names() {
		if !hasFileFor(files, name) {
			t.Errorf("model %s has no hand-made histories", name)
		}
	}
	for _, file := range files {
		model := filepath.Base(filepath.Dir(file))
		base := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		want := linear.Verdict(base[strings.LastIndex(base, ".")+1:])
		t.Run(model+"/"+base, func(t *testing.T) {
			m, ok := ByName(model)
			if !ok {
				t.Fatalf("no model %q", model)
			}
			ops := readFile(t, m, file)
			res := linear.Check(context.Background(), m, ops)
			if res.Verdict != want {
				t.Fatalf("verdict %s, want %s", res.Verdict, want)
			}
			// The bare search, without the model's pruning or refutation,
			// agrees.
			if bare := linear.Check(context.Background(), searchOnly{m}, ops); bare.Verdict != want {
				t.Fatalf("verdict %s without pruning or refutation, want %s", bare.Verdict, want)
			}
		})
	}
}

func hasFileFor(files []string, model string) bool {
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) == model {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, m Model, path string) []linear.Operation {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := history.ReadJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := Operations(m, hist)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestUnreadableValues: a value a model cannot read is reported against the
// line it is on.
func TestUnreadableValues(t *testing.T) {
	cases := []struct {
		model, history string
		line           int
		mentions       string
	}{
		{"register", `{"process":0,"type":"invoke","f":"incr","key":"x","time":0}`, 1, `"incr"`},
		{"register", `{"process":0,"type":"invoke","f":"cas","key":"x","value":[1],"time":0}`, 1, "[from, to]"},
		{"register", `{"process":0,"type":"invoke","f":"cas","key":"x","value":[1,2],"time":0}
{"process":0,"type":"ok","f":"cas","value":"yes","time":1}`, 2, "true or false"},
		{"kv", `{"process":0,"type":"invoke","f":"put","value":"v","time":0}`, 1, `"key"`},
		{"kv", `{"process":0,"type":"invoke","f":"put","key":"k","value":3,"time":0}`, 1, "string"},
		{"log", `{"process":0,"type":"invoke","f":"send","key":"t-0","time":0}`, 1, "not null"},
		{"log", `{"process":0,"type":"invoke","f":"read","key":"t-0","value":-1,"time":0}`, 1, "negative"},
		{"log", `{"process":0,"type":"invoke","f":"send","key":"t-0","value":"a","time":0}
{"process":0,"type":"ok","f":"send","value":"zero","time":1}`, 2, "offset"},
		{"offsets", `{"process":0,"type":"invoke","f":"fetch","key":"g","time":0}`, 1, `"group"`},
		{"metadata", `{"process":0,"type":"invoke","f":"create","key":"t","value":0,"time":0}`, 1, "at least one partition"},
		{"metadata", `{"process":0,"type":"invoke","f":"describe","key":"t","time":0}
{"process":0,"type":"ok","f":"describe","value":"TOPIC_ALREADY_EXISTS","time":1}`, 2, "cannot return"},
	}
	for _, c := range cases {
		m, _ := ByName(c.model)
		hist, err := history.ReadJSONL(strings.NewReader(c.history))
		if err != nil {
			t.Fatalf("%s: %v", c.history, err)
		}
		_, err = Operations(m, hist)
		var le *history.LineError
		if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(le.Msg, c.mentions) {
			t.Errorf("%s %s: got %v, want line %d mentioning %s", c.model, c.history, err, c.line, c.mentions)
		}
	}
}
