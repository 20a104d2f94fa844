package console

import "strconv"

// Chart is an SVG bar chart of requests (errors drawn over them) and of
// tokens, drawn by the server: the page needs no script.
type Chart struct {
	Width, Height int
	Bars          []Bar
	Max           int64
	MaxTokens     int64
}

// Bar is one bucket's bars, in SVG user units.
type Bar struct {
	X, W       int
	ReqY, ReqH int
	ErrY, ErrH int
	TokY, TokH int
	Title      string
}

const chartH = 120

func chartOf(points []Point, gap int) Chart {
	const barW = 18
	c := Chart{Width: len(points) * (barW + gap), Height: 2*chartH + 20}
	for _, p := range points {
		c.Max = max(c.Max, p.Counts.Requests)
		c.MaxTokens = max(c.MaxTokens, p.Counts.InputTokens+p.Counts.OutputTokens)
	}
	scale := func(n, of int64) int {
		if of == 0 {
			return 0
		}
		return int(n * chartH / of)
	}
	for i, p := range points {
		rh, eh := scale(p.Counts.Requests, c.Max), scale(p.Counts.Errors, c.Max)
		th := scale(p.Counts.InputTokens+p.Counts.OutputTokens, c.MaxTokens)
		c.Bars = append(c.Bars, Bar{X: i * (barW + gap), W: barW,
			ReqY: chartH - rh, ReqH: rh, ErrY: chartH - eh, ErrH: eh,
			TokY: 2*chartH + 20 - th, TokH: th,
			Title: p.Label + ": " + strconv.FormatInt(p.Counts.Requests, 10) + " requests, " + strconv.FormatInt(p.Counts.Errors, 10) + " errors, " +
				strconv.FormatInt(p.Counts.InputTokens, 10) + " input, " + strconv.FormatInt(p.Counts.OutputTokens, 10) + " output, " +
				strconv.FormatInt(p.Counts.CachedTokens, 10) + " cached tokens"})
	}
	return c
}
