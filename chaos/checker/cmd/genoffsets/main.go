// Command genoffsets writes a synthetic offsets history (JSON lines, the
// checker's input format) shaped like one partition of the 30-minute soak
// (docs/chaos.md, "soak (30 minutes)"): one committer committing rising
// offsets, fetches in between, neighbours overlapping in time, every
// operation on a process of its own, and a burst of commits of unknown
// outcome (the soak's 143 UNKNOWN_MEMBER_ID timeouts on chaos-2), a few of
// which took effect and were fetched.
//
//	go run ./cmd/genoffsets --ops 4000 --info 150 --seen 5 > h.jsonl
//	bin/lincheck --model offsets h.jsonl
//
// The history is linearizable by construction: each operation has a point
// inside its interval, in order, and fetches return the offset committed
// at theirs. With --illegal a last fetch returns an acknowledged commit's
// offset long overwritten (no commit of unknown outcome wrote it), which no
// linearization allows. Deterministic for a given --seed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
)

type line struct {
	Process int    `json:"process"`
	Type    string `json:"type"`
	F       string `json:"f"`
	Key     any    `json:"key,omitempty"`
	Value   any    `json:"value"`
	Time    int64  `json:"time"`
}

func main() {
	ops := flag.Int("ops", 4000, "operations in the history")
	info := flag.Int("info", 150, "commits of unknown outcome, in one burst")
	seen := flag.Int("seen", 5, "of those, how many took effect and were fetched")
	illegal := flag.Bool("illegal", false, "end with a fetch of an offset long overwritten")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()
	if *seen > *info || *info*3 > *ops {
		fmt.Fprintln(os.Stderr, "genoffsets: need seen <= info and info*3 <= ops")
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for _, l := range generate(rand.New(rand.NewSource(*seed)), *ops, *info, *seen, *illegal) {
		if err := enc.Encode(l); err != nil {
			fmt.Fprintln(os.Stderr, "genoffsets:", err)
			os.Exit(1)
		}
	}
}

// spacing is the time between consecutive linearization points; an
// operation's interval reaches up to reach either side of its point, so
// neighbours overlap.
const spacing, reach = 10_000_000, 8_000_000

func generate(r *rand.Rand, n, info, seen int, illegal bool) []line {
	key := map[string]string{"group": "chaos-chaos", "partition": "chaos-2"}
	type op struct{ invoke, done line }
	var all []op
	committed, next := int64(-1), int64(0)
	var acked []int64
	// The burst starts a third of the way in; a few of its commits, spread
	// through it, take effect, each followed at once by a fetch that sees it.
	burstStart := n / 3
	landed := map[int]bool{}
	for len(landed) < seen {
		landed[r.Intn(info)] = true
	}
	burst, pendingFetch := 0, false
	for i := 0; len(all) < n; i++ {
		point := int64(i+1) * spacing
		call := point - r.Int63n(reach)
		ret := point + r.Int63n(reach)
		var o op
		inBurst := len(all) >= burstStart && burst < info
		if pendingFetch || (!inBurst && r.Intn(10) < 3) {
			pendingFetch = false
			o.invoke = line{Type: "invoke", F: "fetch", Key: key, Time: call}
			o.done = line{Type: "ok", F: "fetch", Value: committed, Time: ret}
		} else {
			next += 1 + r.Int63n(12)
			o.invoke = line{Type: "invoke", F: "commit", Key: key, Value: next, Time: call}
			o.done = line{Type: "ok", F: "commit", Time: ret}
			if inBurst {
				o.done = line{Type: "info", F: "commit", Time: ret}
				if landed[burst] {
					committed, pendingFetch = next, true
				}
				burst++
			} else {
				committed = next
				acked = append(acked, next)
			}
		}
		all = append(all, o)
	}
	if illegal {
		// An acknowledged offset from the first tenth: overwritten long ago.
		stale := acked[len(acked)/10]
		point := int64(len(all)+1) * spacing
		all = append(all, op{
			invoke: line{Type: "invoke", F: "fetch", Key: key, Time: point},
			done:   line{Type: "ok", F: "fetch", Value: stale, Time: point + reach},
		})
	}
	// Lines in time order: each operation's invoke and completion, on a
	// process of its own (as the soak's workload numbers them).
	type event struct {
		l   line
		seq int
	}
	var events []event
	for i, o := range all {
		o.invoke.Process, o.done.Process = i, i
		events = append(events, event{o.invoke, 2 * i}, event{o.done, 2*i + 1})
	}
	sort.Slice(events, func(a, b int) bool {
		if events[a].l.Time != events[b].l.Time {
			return events[a].l.Time < events[b].l.Time
		}
		return events[a].seq < events[b].seq
	})
	lines := make([]line, len(events))
	for i, e := range events {
		lines[i] = e.l
	}
	return lines
}
