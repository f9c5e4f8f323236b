package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"kraftlog/checker/linear"
	"kraftlog/checker/models"
)

// corpusDir is the Jepsen etcd corpus kept in the repository
// (chaos/checker/testdata/jepsen-etcd, two levels up from this package).
// LINCHECK_CORPUS names another copy of it instead.
var corpusDir = corpusPath()

func corpusPath() string {
	if dir := os.Getenv("LINCHECK_CORPUS"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "testdata", "jepsen-etcd")
}

// perLogBudget is what "well under a second" means for one corpus log: a
// log over it is named in the test's output, never failed (the machines that
// run the tests are shared and noisy; timing is measured, not asserted).
const perLogBudget = 500 * time.Millisecond

// TestCorpusVerdicts checks every Jepsen etcd log of the corpus and must
// agree with every verdict in its expected.tsv.
func TestCorpusVerdicts(t *testing.T) {
	expected := readExpected(t)
	read, name, err := reader("jepsen-etcd", "")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := models.ByName(name)
	var total, slowest time.Duration
	for _, file := range sortedKeys(expected) {
		path := filepath.Join(corpusDir, "etcd", file)
		_, ops, err := load(path, nil, read, m)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		res := linear.Check(ctx, m, ops)
		took := time.Since(start)
		cancel()
		total += took
		if took > slowest {
			slowest = took
		}
		want := linear.Ok
		if expected[file] == "not-linearizable" {
			want = linear.Illegal
		}
		if res.Verdict != want {
			t.Errorf("%s: verdict %s, corpus says %s", file, res.Verdict, expected[file])
		}
		over := ""
		if took > perLogBudget {
			over = fmt.Sprintf("\tover the %v budget", perLogBudget)
		}
		pruned := 0
		for _, p := range res.Partitions {
			pruned += p.Pruned
		}
		t.Logf("%s\t%s\t%d ops\t%d pruned\t%v%s", file, res.Verdict, len(ops), pruned, took, over)
	}
	t.Logf("%d logs: total %v, slowest %v", len(expected), total, slowest)
}

// readExpected reads expected.tsv: file<TAB>linearizable|not-linearizable.
func readExpected(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, "expected.tsv"))
	if os.IsNotExist(err) {
		abs, _ := filepath.Abs(corpusDir)
		t.Fatalf("linearizability corpus not found at %s (chaos/checker/testdata/jepsen-etcd, or LINCHECK_CORPUS)", abs)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	expected := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(strings.TrimSpace(sc.Text()), "\t")
		if len(fields) == 1 && fields[0] == "" {
			continue
		}
		if len(fields) != 2 || (fields[1] != "linearizable" && fields[1] != "not-linearizable") {
			t.Fatalf("expected.tsv line %d: %q", line, sc.Text())
		}
		expected[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(expected) == 0 {
		t.Fatal("expected.tsv lists no logs")
	}
	return expected
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
