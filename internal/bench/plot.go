package bench

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"slices"
	"strconv"
)

// A plot drawn with the standard library only: panels of lines against N on a log axis.

type point struct{ x, y float64 }

type series struct {
	label  string
	col    color.RGBA
	dashed bool
	pts    []point
}

type hline struct {
	y     float64
	label string
	below bool // label under the line rather than above
}

type panel struct {
	title, ylabel string
	series        []series
	hlines        []hline
}

var (
	white     = color.RGBA{255, 255, 255, 255}
	black     = color.RGBA{0, 0, 0, 255}
	gridGray  = color.RGBA{225, 225, 225, 255}
	boundGray = color.RGBA{120, 120, 120, 255}
	targetRed = color.RGBA{200, 0, 0, 255}
	opColors  = map[Op]color.RGBA{
		OpCreate: {31, 119, 180, 255}, OpPlan: {44, 160, 44, 255},
		OpUpdate: {255, 127, 14, 255}, OpDestroy: {214, 39, 40, 255},
	}
)

const (
	panelW, panelH          = 560, 560
	marginL, marginR        = 78, 24
	marginT, plotH          = 48, 330
	legendTop               = marginT + plotH + 58
	textScale, titleScale   = 1, 2
	lineThick, markerRadius = 2, 3
	dashOn, dashPeriod      = 8, 14
)

// renderPNG draws the panels side by side, N on a log axis with a tick at every N in ns.
func renderPNG(panels []panel, ns []int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, panelW*len(panels), panelH))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	for i, p := range panels {
		drawPanel(img, i*panelW, p, ns)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// panelYMax is the largest value p shows: a point of a series or a target line.
func panelYMax(p panel) float64 {
	ymax := 0.0
	for _, s := range p.series {
		for _, q := range s.pts {
			ymax = max(ymax, q.y)
		}
	}
	for _, h := range p.hlines {
		ymax = max(ymax, h.y)
	}
	return ymax
}

func drawPanel(img *image.RGBA, x0 int, p panel, ns []int) {
	left, right := x0+marginL, x0+panelW-marginR
	top, bottom := marginT, marginT+plotH
	drawText(img, x0+(panelW-textWidth(p.title, titleScale))/2, 12, p.title, titleScale, black)

	// Axes ranges: x is log10(N); y from 0 to a nice maximum.
	xmin, xmax := math.Log10(float64(slices.Min(ns))), math.Log10(float64(slices.Max(ns)))
	if xmax-xmin < 1e-9 {
		xmin, xmax = xmin-0.5, xmax+0.5
	}
	pad := (xmax - xmin) * 0.05
	xmin, xmax = xmin-pad, xmax+pad
	step, top1 := niceScale(panelYMax(p))
	px := func(n float64) int {
		return left + int(math.Round((math.Log10(n)-xmin)/(xmax-xmin)*float64(right-left)))
	}
	py := func(v float64) int { return bottom - int(math.Round(v/top1*float64(bottom-top))) }

	// Grid, ticks and labels.
	for v := 0.0; v <= top1+step/2; v += step {
		y := py(v)
		hlineAt(img, left, right, y, gridGray)
		lbl := formatTick(v, step)
		drawText(img, left-8-textWidth(lbl, textScale), y-3, lbl, textScale, black)
	}
	for _, n := range ns {
		x := px(float64(n))
		vlineAt(img, x, top, bottom, gridGray)
		lbl := strconv.Itoa(n)
		drawText(img, x-textWidth(lbl, textScale)/2, bottom+8, lbl, textScale, black)
	}
	hlineAt(img, left, right, bottom, black)
	vlineAt(img, left, top, bottom, black)
	xl := "N (VMs, log scale)"
	drawText(img, left+(right-left-textWidth(xl, textScale))/2, bottom+24, xl, textScale, black)
	drawTextUp(img, x0+10, top+(bottom-top+textWidth(p.ylabel, textScale))/2, p.ylabel, textScale, black)

	for _, h := range p.hlines {
		y := py(h.y)
		dashedLine(img, left, y, right, y, targetRed, true)
		ly := y - 11
		if h.below {
			ly = y + 5
		}
		drawText(img, right-textWidth(h.label, textScale)-2, ly, h.label, textScale, targetRed)
	}
	for _, s := range p.series {
		for i := 1; i < len(s.pts); i++ {
			a, b := s.pts[i-1], s.pts[i]
			dashedLine(img, px(a.x), py(a.y), px(b.x), py(b.y), s.col, s.dashed)
		}
		for _, q := range s.pts {
			square(img, px(q.x), py(q.y), markerRadius, s.col)
		}
	}

	// Legend: two columns below the axis label.
	for i, s := range p.series {
		lx := x0 + marginL + (i%2)*((panelW-marginL)/2)
		ly := legendTop + (i/2)*16
		dashedLine(img, lx, ly+3, lx+28, ly+3, s.col, s.dashed)
		square(img, lx+14, ly+3, markerRadius, s.col)
		drawText(img, lx+36, ly, s.label, textScale, black)
	}
}

// niceScale returns a tick step (1, 2 or 5 times a power of ten) and the axis top for
// values up to vmax, with about five ticks.
func niceScale(vmax float64) (step, top float64) {
	if vmax <= 0 {
		return 1, 1
	}
	raw := vmax * 1.05 / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return step, math.Ceil(vmax*1.05/step) * step
}

// formatTick prints v with as many decimals as the step needs (0.25: two, 0.5: one).
func formatTick(v, step float64) string {
	dec := 0
	for ; dec < 4; dec++ {
		x := step * math.Pow(10, float64(dec))
		if math.Abs(x-math.Round(x)) < 1e-9 {
			break
		}
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

func hlineAt(img *image.RGBA, x1, x2, y int, c color.Color) {
	for x := x1; x <= x2; x++ {
		img.Set(x, y, c)
	}
}

func vlineAt(img *image.RGBA, x, y1, y2 int, c color.Color) {
	for y := y1; y <= y2; y++ {
		img.Set(x, y, c)
	}
}

func square(img *image.RGBA, x, y, r int, c color.Color) {
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			img.Set(x+dx, y+dy, c)
		}
	}
}

// dashedLine draws a thick line from (x1, y1) to (x2, y2) (Bresenham), dashed or solid.
func dashedLine(img *image.RGBA, x1, y1, x2, y2 int, c color.Color, dashed bool) {
	dx, dy := abs(x2-x1), -abs(y2-y1)
	sx, sy := sign(x2-x1), sign(y2-y1)
	e := dx + dy
	for i := 0; ; i++ {
		if !dashed || i%dashPeriod < dashOn {
			for t := 0; t < lineThick; t++ {
				img.Set(x1, y1+t, c)
				img.Set(x1+t, y1, c)
			}
		}
		if x1 == x2 && y1 == y2 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x1 += sx
		} else {
			e += dx
			y1 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// plotPanels builds the three panels of a run: time at a real host's pace (wall × speed)
// with the create lower bound, wall over lower bound with the targets, and requests per
// VM. The highest parallelism run is drawn solid, the others dashed.
func plotPanels(rs []Result) ([]panel, []int) {
	var ns, ps []int
	for _, r := range rs {
		if !slices.Contains(ns, r.N) {
			ns = append(ns, r.N)
		}
		if !slices.Contains(ps, r.P) {
			ps = append(ps, r.P)
		}
	}
	slices.Sort(ns)
	slices.Sort(ps)
	slices.Reverse(ps)
	pick := func(op Op, p int, f func(Result, OpResult) (float64, bool)) []point {
		var pts []point
		for _, n := range ns {
			for _, r := range rs {
				// N=1 runs once: it stands for every parallelism.
				if r.N != n || (r.P != p && n != 1) {
					continue
				}
				if v, ok := f(r, r.Op(op)); ok {
					pts = append(pts, point{float64(n), v})
				}
				break
			}
		}
		return pts
	}
	var timeP, ratio, reqs panel
	timeP = panel{title: "Time (wall x speed)", ylabel: "seconds at a real host's pace"}
	ratio = panel{title: "Wall / lower bound", ylabel: "ratio",
		hlines: []hline{{y: waveLimit, label: fmt.Sprintf("target %.2f (N=100, P=10)", waveLimit)}, {y: realPaceLimit,
			label: fmt.Sprintf("target %.2f (N=1, speed 1)", realPaceLimit), below: true}}}
	reqs = panel{title: "API requests per VM", ylabel: "requests per VM"}
	for i, p := range ps {
		dashed := i > 0
		for _, op := range Ops {
			lbl := fmt.Sprintf("%s P=%d", op, p)
			c := opColors[op]
			tp := pick(op, p, func(r Result, o OpResult) (float64, bool) {
				return o.Wall.Seconds() * r.Speed, o.ExitCode >= 0 && o.Wall > 0
			})
			if len(tp) > 0 {
				timeP.series = append(timeP.series, series{label: lbl, col: c, dashed: dashed, pts: tp})
			}
			if op != OpPlan {
				rp := pick(op, p, func(_ Result, o OpResult) (float64, bool) { return o.Ratio(), o.Ratio() > 0 })
				if len(rp) > 0 {
					ratio.series = append(ratio.series, series{label: lbl, col: c, dashed: dashed, pts: rp})
				}
			}
			qp := pick(op, p, func(r Result, o OpResult) (float64, bool) {
				return float64(o.TotalRequests()) / float64(r.N), o.Requests != nil
			})
			if len(qp) > 0 {
				reqs.series = append(reqs.series, series{label: lbl, col: c, dashed: dashed, pts: qp})
			}
		}
		lb := pick(OpCreate, p, func(r Result, o OpResult) (float64, bool) {
			return o.LowerBound.Seconds() * r.Speed, o.LowerBound > 0
		})
		if len(lb) > 0 {
			timeP.series = append(timeP.series, series{label: fmt.Sprintf("create bound P=%d", p), col: boundGray, dashed: dashed, pts: lb})
		}
	}
	return []panel{timeP, ratio, reqs}, ns
}
