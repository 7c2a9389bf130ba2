package status

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"
)

// A Chart is one time series panel of the page, drawn on the server as
// inline SVG: the page needs no script and loads nothing from elsewhere.
type Chart struct {
	ID, Title string
	// Unit formats the values: "bytes" in binary units, otherwise a
	// suffix such as "/s" or "ms".
	Unit  string
	Lines []Line
	// SVG is the drawing; Window the span of time the x axis covers.
	SVG    template.HTML
	Window string
}

// Line is one series of a chart.
type Line struct {
	Name   string
	Color  string
	Times  []time.Time
	Values []float64 // NaN: no value (no requests in the interval)
	// Last is the newest value that is a number, formatted, and LastRaw
	// the same unformatted for scripts; "n/a" and "" when there is none.
	Last, LastRaw string
}

// palette colours the lines of a chart in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// Chart geometry, in SVG user units.
const (
	chartW, chartH        = 520, 150
	chartLeft, chartRight = 64, 8
	chartTop, chartBottom = 8, 20
	plotW                 = chartW - chartLeft - chartRight
	plotH                 = chartH - chartTop - chartBottom
)

// charts derives the page's charts from the samples, oldest first, over
// the window ending at now.
func charts(ps []point, now time.Time, window time.Duration) []Chart {
	type spec struct {
		id, title, unit string
		lines           func(a, b point) map[string]float64
	}
	specs := []spec{
		{"ops", "CQL requests", "/s", func(a, b point) map[string]float64 {
			return map[string]float64{"requests": rate(a, b, func(p point) float64 { return p.cqlRequests })}
		}},
		{"latency", "CQL request latency", "ms", func(a, b point) map[string]float64 {
			return map[string]float64{"p50": quantile(a, b, 0.5), "p99": quantile(a, b, 0.99)}
		}},
		{"errors", "CQL errors by code", "/s", func(a, b point) map[string]float64 {
			out := map[string]float64{}
			for code := range b.cqlErrors {
				out[code] = rate(a, b, func(p point) float64 { return p.cqlErrors[code] })
			}
			if len(out) == 0 {
				out["all codes"] = rate(a, b, func(point) float64 { return 0 })
			}
			return out
		}},
		{"flushes", "Memtable flushes", "/min", func(a, b point) map[string]float64 {
			return map[string]float64{
				"flushes":  60 * rate(a, b, func(p point) float64 { return p.flushes }),
				"failures": 60 * rate(a, b, func(p point) float64 { return p.flushFails }),
			}
		}},
		{"backlog", "Compaction backlog", "bytes", func(_, b point) map[string]float64 {
			return map[string]float64{"backlog": b.backlog}
		}},
		{"cache", "Block cache hit ratio", "%", func(a, b point) map[string]float64 {
			out := map[string]float64{}
			for tier := range b.cacheHits {
				hits := b.cacheHits[tier] - a.cacheHits[tier]
				all := hits + b.cacheMisses[tier] - a.cacheMisses[tier]
				out[tier] = math.NaN()
				if all > 0 {
					out[tier] = 100 * hits / all
				}
			}
			return out
		}},
		{"requests", "Object-store requests", "/s", func(a, b point) map[string]float64 {
			return map[string]float64{"requests": rate(a, b, func(p point) float64 { return p.requests })}
		}},
		{"cost", "Object-store request cost", "$/h", func(a, b point) map[string]float64 {
			return map[string]float64{"cost": 3600 * rate(a, b, func(p point) float64 { return p.cost })}
		}},
	}
	out := make([]Chart, 0, len(specs))
	for _, sp := range specs {
		c := Chart{ID: sp.id, Title: sp.title, Unit: sp.unit, Window: window.String()}
		byName := map[string]*Line{}
		for i := 1; i < len(ps); i++ {
			for name, v := range sp.lines(ps[i-1], ps[i]) {
				l := byName[name]
				if l == nil {
					l = &Line{Name: name}
					byName[name] = l
				}
				l.Times = append(l.Times, ps[i].at)
				l.Values = append(l.Values, v)
			}
		}
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		slices.Sort(names)
		for i, n := range names {
			l := byName[n]
			l.Color = palette[i%len(palette)]
			l.Last, l.LastRaw = "n/a", ""
			for j := len(l.Values) - 1; j >= 0; j-- {
				if !math.IsNaN(l.Values[j]) {
					l.Last, l.LastRaw = formatValue(l.Values[j], c.Unit), fmt.Sprintf("%.6g", l.Values[j])
					break
				}
			}
			c.Lines = append(c.Lines, *l)
		}
		c.SVG = c.draw(now, window)
		out = append(out, c)
	}
	return out
}

// formatValue formats v in unit u.
func formatValue(v float64, u string) string {
	switch u {
	case "bytes":
		return HumanBytes(int64(v))
	case "$/h":
		return fmt.Sprintf("$%.4f/h", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	}
	switch {
	case v == 0:
		return "0" + u
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f%s", v, u)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f%s", v, u)
	}
	return fmt.Sprintf("%.3g%s", v, u)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so that the
// axis's top label is a round number.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// draw renders the chart over the window ending at now.
func (c Chart) draw(now time.Time, window time.Duration) template.HTML {
	top := 0.0
	for _, l := range c.Lines {
		for _, v := range l.Values {
			if !math.IsNaN(v) && v > top {
				top = v
			}
		}
	}
	if c.Unit == "%" {
		top = 100
	} else {
		top = niceCeil(top)
	}
	from := now.Add(-window)
	x := func(t time.Time) float64 { return chartLeft + plotW*t.Sub(from).Seconds()/window.Seconds() }
	y := func(v float64) float64 { return chartTop + plotH*(1-v/top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, template.HTMLEscapeString(c.Title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fafafa" stroke="#ccc"/>`, chartLeft, chartTop, plotW, plotH)
	for _, frac := range []float64{0.25, 0.5, 0.75} {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, chartLeft, chartLeft+plotW, chartTop+plotH*frac, chartTop+plotH*frac)
	}
	label := func(xp, yp float64, anchor, text string) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="%s" fill="#555">%s</text>`, xp, yp, anchor, template.HTMLEscapeString(text))
	}
	label(chartLeft-4, chartTop+8, "end", formatValue(top, c.Unit))
	label(chartLeft-4, chartTop+plotH, "end", formatValue(0, c.Unit))
	ticks := 4
	for i := 0; i <= ticks; i++ {
		ago := window - window*time.Duration(i)/time.Duration(ticks)
		text := "now"
		if ago > 0 {
			text = "-" + strings.TrimSuffix(ago.Round(time.Minute).String(), "0s")
		}
		anchor := "middle"
		if i == ticks {
			anchor = "end"
		}
		label(chartLeft+plotW*float64(i)/float64(ticks), chartH-6, anchor, text)
	}
	for _, l := range c.Lines {
		// A NaN ends a polyline: no line is drawn across an interval
		// without a value.
		var pts [][2]float64
		flush := func() {
			switch {
			case len(pts) == 1:
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.5" fill="%s"/>`, pts[0][0], pts[0][1], l.Color)
			case len(pts) > 1:
				coords := make([]string, len(pts))
				for i, p := range pts {
					coords[i] = fmt.Sprintf("%.1f,%.1f", p[0], p[1])
				}
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, l.Color, strings.Join(coords, " "))
			}
			pts = pts[:0]
		}
		for i, v := range l.Values {
			if math.IsNaN(v) || l.Times[i].Before(from) {
				flush()
				continue
			}
			pts = append(pts, [2]float64{x(l.Times[i]), y(v)})
		}
		flush()
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
