// Command lincheck checks a recorded history for linearizability against one
// of kraftlog's models and prints a verdict as JSON. See ../../README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
	"kraftlog/checker/models"
	"kraftlog/checker/report"
)

// Exit codes. The verdicts come first so that a caller can tell "the
// system misbehaved" (1) from "the checker could not say" (2, 3, 4).
const (
	exitOK         = 0
	exitIllegal    = 1
	exitUnknown    = 2
	exitUnreadable = 3
	exitUsage      = 4
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lincheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modelName := fs.String("model", "", "model: "+strings.Join(models.Names(), ", ")+" (jepsen-etcd implies register)")
	format := fs.String("format", "jsonl", "input format: jsonl (ours) or jepsen-etcd")
	limit := fs.Float64("time-limit", 10, "seconds to search before answering unknown")
	htmlPath := fs.String("html", "", "also write an HTML picture of the verdict to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the check to this file (go tool pprof reads it)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lincheck --model NAME [--format jsonl|jepsen-etcd] [--time-limit S] [--html FILE] HISTORY|-")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	read, name, err := reader(*format, *modelName)
	if err == nil && fs.NArg() != 1 {
		err = errors.New("give exactly one history file, or - for stdin")
	}
	if err == nil && *limit <= 0 {
		err = errors.New("--time-limit must be positive")
	}
	if err != nil {
		fmt.Fprintln(stderr, "lincheck:", err)
		fs.Usage()
		return exitUsage
	}
	m, _ := models.ByName(name)

	hist, ops, err := load(fs.Arg(0), stdin, read, m)
	if err != nil {
		fmt.Fprintf(stderr, "lincheck: %s: %v\n", fs.Arg(0), err)
		return exitUnreadable
	}

	if *cpuProfile != "" {
		stop, err := startProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "lincheck:", err)
			return exitUsage
		}
		defer stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*limit*float64(time.Second)))
	defer cancel()
	checked := report.Checked{ModelName: name, Model: m, History: hist, Ops: ops, Result: linear.Check(ctx, m, ops)}

	if *htmlPath != "" {
		if err := writeHTML(*htmlPath, checked); err != nil {
			fmt.Fprintln(stderr, "lincheck:", err)
			return exitUsage
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	// Descriptions such as "read() -> 3" stay readable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(report.BuildVerdict(checked)); err != nil {
		fmt.Fprintln(stderr, "lincheck:", err)
		return exitUsage
	}
	switch checked.Result.Verdict {
	case linear.Ok:
		return exitOK
	case linear.Illegal:
		return exitIllegal
	}
	return exitUnknown
}

// readFunc reads a whole history in one format.
type readFunc func(io.Reader) ([]history.Op, error)

// reader picks the history reader for format and settles the model name.
func reader(format, model string) (readFunc, string, error) {
	switch format {
	case "jsonl":
		if _, ok := models.ByName(model); !ok {
			return nil, "", fmt.Errorf("--model must be one of %s", strings.Join(models.Names(), ", "))
		}
		return history.ReadJSONL, model, nil
	case "jepsen-etcd":
		if model != "" && model != "register" {
			return nil, "", errors.New("jepsen-etcd logs hold a single register: use --model register or no --model")
		}
		return history.ReadJepsenEtcd, "register", nil
	}
	return nil, "", fmt.Errorf("unknown --format %q", format)
}

// load reads the history at path ("-" for stdin) into the model's terms.
func load(path string, stdin io.Reader, read readFunc, m models.Model) ([]history.Op, []linear.Operation, error) {
	in := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		in = f
	}
	hist, err := read(in)
	if err != nil {
		return nil, nil, err
	}
	ops, err := models.Operations(m, hist)
	return hist, ops, err
}

// startProfile starts CPU profiling into path; the returned func stops it.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func writeHTML(path string, c report.Checked) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteHTML(f, c); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
