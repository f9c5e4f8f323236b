package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"kraftlog/checker/linear"
)

// Geometry of the drawing, in pixels. Time is drawn by rank (the n-th
// distinct call or return time), not to scale: what matters is which
// operations overlap, and real gaps would squash short operations to
// nothing.
const (
	laneLabelWidth = 110
	rankWidth      = 34
	laneHeight     = 34
	barHeight      = 22
	topMargin      = 30
	charWidth      = 7
)

type page struct {
	Verdict    Verdict
	Partition  string
	Width      int
	Height     int
	Lanes      []lane
	Bars       []bar
	DeadlineX  int
	LaneBottom int
	// Counter is the verdict's counterexample; Prefix and Stuck are its
	// operations as table rows.
	Counter *Counterexample
	Prefix  []row
	Stuck   []row
	// Conflict are the operations of a refutation (no search ran).
	Conflict []row
}

type row struct {
	N int
	OpJSON
	Lines string
}

type lane struct {
	Y     int
	Label string
}

type bar struct {
	X, Y, W int
	Class   string
	Label   string
	Tip     string
}

// WriteHTML writes a self-contained page: for an illegal history, the
// failing partition drawn per process on a time line, with the longest
// linearizable prefix numbered in order and the operations that could not
// come next in red; otherwise just the verdict.
func WriteHTML(w io.Writer, c Checked) error {
	p := page{Verdict: BuildVerdict(c)}
	if part := firstIllegal(c.Result); part != nil {
		p.Counter = p.Verdict.Counterexample
		p.Partition = part.Key
		for i, op := range p.Counter.Linearized {
			p.Prefix = append(p.Prefix, row{N: i + 1, OpJSON: op, Lines: lines(op)})
		}
		for _, op := range p.Counter.Stuck {
			p.Stuck = append(p.Stuck, row{OpJSON: op, Lines: lines(op)})
		}
		for _, op := range p.Counter.Conflict {
			p.Conflict = append(p.Conflict, row{OpJSON: op, Lines: lines(op)})
		}
		// A refutation names the few operations that contradict each
		// other: drawing the partition's thousands of others would hide them.
		drawn := part.Ops
		if len(part.Counterexample.Conflict) > 0 {
			drawn = part.Counterexample.Conflict
		}
		draw(&p, c, part, drawn)
	}
	return pageTemplate.Execute(w, p)
}

// draw pictures the operations ids of the failing partition.
func draw(p *page, c Checked, part *linear.PartitionResult, ids []int) {
	order := map[int]int{}
	for i, s := range part.Counterexample.Prefix {
		order[s.Op] = i + 1
	}
	stuck := map[int]bool{}
	for _, id := range append(append([]int{}, part.Counterexample.Stuck...), part.Counterexample.Conflict...) {
		stuck[id] = true
	}

	ranks, end := rankTimes(c.Ops, ids)
	x := func(t int64) int {
		if t == linear.Infinity {
			return laneLabelWidth + end*rankWidth
		}
		return laneLabelWidth + ranks[t]*rankWidth
	}
	laneOf := lanes(c.Ops, ids)
	for proc, i := range laneOf {
		p.Lanes = append(p.Lanes, lane{Y: topMargin + i*laneHeight, Label: fmt.Sprintf("process %d", proc)})
	}
	sort.Slice(p.Lanes, func(i, j int) bool { return p.Lanes[i].Y < p.Lanes[j].Y })

	deadline := linear.Infinity
	for _, id := range ids {
		op, h := c.Ops[id], c.History[id]
		if len(part.Counterexample.Conflict) == 0 && order[id] == 0 && op.Return < deadline {
			deadline = op.Return
		}
		b := bar{X: x(op.Call), Y: topMargin + laneOf[op.Process]*laneHeight + (laneHeight-barHeight)/2, Class: "other"}
		b.W = x(op.Return) - b.X
		if b.W < rankWidth/2 {
			b.W = rankWidth / 2
		}
		desc, tag := c.Model.DescribeOperation(op.Input, op.Output), ""
		switch {
		case stuck[id]:
			b.Class = "stuck"
		case order[id] > 0:
			b.Class, tag = "lin", fmt.Sprintf("#%d", order[id])
		}
		if op.Return == linear.Infinity {
			b.Class += " open"
		}
		b.Tip = fmt.Sprintf("%s\nprocess %d, lines %s", strings.TrimSpace(tag+" "+desc), op.Process,
			lines(OpJSON{InvokeLine: h.InvokeLine, CompleteLine: h.CompleteLine}))
		b.Label = fit(tag, desc, b.W)
		p.Bars = append(p.Bars, b)
	}
	if deadline != linear.Infinity {
		p.DeadlineX = x(deadline)
	}
	p.Width = laneLabelWidth + (end+2)*rankWidth
	p.LaneBottom = topMargin + len(laneOf)*laneHeight
	p.Height = p.LaneBottom + 10
}

// rankTimes numbers the distinct finite call and return times of the
// operations ids in order; end is the rank just past the last, where
// operations of unknown outcome are drawn to end.
func rankTimes(ops []linear.Operation, ids []int) (map[int64]int, int) {
	var times []int64
	for _, id := range ids {
		times = append(times, ops[id].Call)
		if ops[id].Return != linear.Infinity {
			times = append(times, ops[id].Return)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	ranks := map[int64]int{}
	for _, t := range times {
		if _, seen := ranks[t]; !seen {
			ranks[t] = len(ranks)
		}
	}
	return ranks, len(ranks)
}

// lanes gives each process of the partition a row, in process order.
func lanes(ops []linear.Operation, ids []int) map[int]int {
	var procs []int
	row := map[int]int{}
	for _, id := range ids {
		if _, seen := row[ops[id].Process]; !seen {
			row[ops[id].Process] = 0
			procs = append(procs, ops[id].Process)
		}
	}
	sort.Ints(procs)
	for i, proc := range procs {
		row[proc] = i
	}
	return row
}

// lines names an operation's lines in the history; an operation still open
// when the history ended has no completion line.
func lines(op OpJSON) string {
	if op.CompleteLine == 0 {
		return fmt.Sprintf("%d-", op.InvokeLine)
	}
	return fmt.Sprintf("%d-%d", op.InvokeLine, op.CompleteLine)
}

// fit shortens a bar's label to its width, keeping the order number tag
// whole if anything; the tooltip has the label in full.
func fit(tag, desc string, width int) string {
	label := []rune(strings.TrimSpace(tag + " " + desc))
	max := (width - 6) / charWidth
	switch {
	case len(label) <= max:
		return string(label)
	case len([]rune(tag)) <= max && tag != "":
		return tag
	case max >= 2:
		return string(label[:max-1]) + "…"
	}
	return ""
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>lincheck: {{.Verdict.Model}} {{.Verdict.Result}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
.scroll { overflow-x: auto; border: 1px solid #ccc; }
svg text { font-family: monospace; font-size: 11px; }
.lane { stroke: #ddd; }
rect.other { fill: #e4e4e4; stroke: #999; }
rect.lin { fill: #b7e1b0; stroke: #3a8a2e; }
rect.stuck { fill: #f4b4b4; stroke: #c0302b; stroke-width: 2; }
rect.open { stroke-dasharray: 4 3; fill-opacity: 0.5; }
.deadline { stroke: #c0302b; stroke-dasharray: 6 4; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-family: monospace; }
.key span { display: inline-block; width: 1em; height: 0.8em; margin: 0 0.3em 0 1em; border: 1px solid #666; }
</style>
</head>
<body>
<h1>{{.Verdict.Model}}: {{.Verdict.Result}}</h1>
<p>{{.Verdict.Operations}} operations in {{len .Verdict.Partitions}} partition(s).</p>
{{with .Counter}}
<h2>Partition {{printf "%q" .Partition}} is not linearizable</h2>
{{if .Reason}}
<p>No search was needed: {{.Reason}}. The operations below (red) cannot all be linearized,
whatever the others did; only they are drawn.</p>
{{else}}
<p>The longest linearizable prefix has {{len .Linearized}} operation(s) and leaves the state at
<code>{{.State}}</code>. None of the operations that could come next (red) fits that state.
The dashed red line is the earliest return still outstanding: one of the red operations had to
take effect before it.</p>
<p class="key"><span style="background:#b7e1b0"></span>linearized, numbered in order
<span style="background:#f4b4b4"></span>could not be placed next
<span style="background:#e4e4e4"></span>not reached
<span style="background:#fff;border-style:dashed"></span>outcome unknown (no return)</p>
{{end}}
{{end}}
{{if .Bars}}
<div class="scroll">
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}">
<text x="4" y="14">time, by order of calls and returns →</text>
{{range .Lanes}}<line class="lane" x1="0" x2="100%" y1="{{.Y}}" y2="{{.Y}}"/>
<text x="4" y="{{.Y}}" dy="21">{{.Label}}</text>
{{end}}
{{range .Bars}}<g><title>{{.Tip}}</title>
<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="22" rx="3"/>
<text x="{{.X}}" y="{{.Y}}" dx="3" dy="15">{{.Label}}</text></g>
{{end}}
{{if .DeadlineX}}<line class="deadline" x1="{{.DeadlineX}}" x2="{{.DeadlineX}}" y1="20" y2="{{.LaneBottom}}"/>{{end}}
</svg>
</div>
{{end}}
{{if .Conflict}}
<h3>Operations in conflict</h3>
<table><tr><th>process</th><th>operation</th><th>lines</th></tr>
{{range .Conflict}}<tr><td>{{.Process}}</td><td>{{.Operation}}</td><td>{{.Lines}}</td></tr>
{{end}}</table>
{{else if .Counter}}
<h3>Longest linearizable prefix</h3>
<table><tr><th>#</th><th>process</th><th>operation</th><th>state after</th><th>lines</th></tr>
{{range .Prefix}}<tr><td>{{.N}}</td><td>{{.Process}}</td><td>{{.Operation}}</td><td>{{.StateAfter}}</td><td>{{.Lines}}</td></tr>
{{end}}</table>
<h3>Could not be placed next (state <code>{{.Counter.State}}</code>)</h3>
<table><tr><th>process</th><th>operation</th><th>lines</th></tr>
{{range .Stuck}}<tr><td>{{.Process}}</td><td>{{.Operation}}</td><td>{{.Lines}}</td></tr>
{{end}}</table>
{{end}}
<h3>Partitions</h3>
<table><tr><th>key</th><th>result</th><th>operations</th><th>pruned</th><th>ms</th></tr>
{{range .Verdict.Partitions}}<tr><td>{{.Key}}</td><td>{{.Result}}</td><td>{{.Operations}}</td><td>{{.Pruned}}</td><td>{{.ElapsedMS}}</td></tr>
{{end}}</table>
</body>
</html>
`))
