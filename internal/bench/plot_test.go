package bench

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

func TestNiceScale(t *testing.T) {
	for _, c := range []struct{ max, step, top float64 }{
		{1.3, 0.5, 1.5}, {53, 20, 60}, {1.1, 0.25, 1.25}, {600, 200, 800}, {0, 1, 1}, {3, 1, 4},
	} {
		step, top := niceScale(c.max)
		if step != c.step || top != c.top || top < c.max {
			t.Errorf("niceScale(%g) = %g, %g; want %g, %g", c.max, step, top, c.step, c.top)
		}
	}
	if got := formatTick(0.5, 0.25); got != "0.50" {
		t.Errorf("formatTick(0.5, 0.25) = %q", got)
	}
	if got := formatTick(1.5, 0.5); got != "1.5" {
		t.Errorf("formatTick(1.5, 0.5) = %q", got)
	}
	if got := formatTick(200, 100); got != "200" {
		t.Errorf("formatTick(200, 100) = %q", got)
	}
}

func TestRenderPNG_drawsEveryPanelsLines(t *testing.T) {
	data, err := renderPNG(plotPanels(fakeRun()))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 3*panelW || b.Dy() != panelH {
		t.Fatalf("size %v, want %dx%d", b, 3*panelW, panelH)
	}
	// Each panel's plot area holds the create colour (its line and markers), and the
	// ratio panel the target lines' red.
	for i := range 3 {
		area := image.Rect(i*panelW+marginL, marginT, (i+1)*panelW-marginR, marginT+plotH+1)
		if n := count(img, area, opColors[OpCreate]); n < 20 {
			t.Errorf("panel %d: %d create-coloured pixels in the plot area, want a line", i, n)
		}
	}
	if n := count(img, image.Rect(panelW, marginT, 2*panelW, marginT+plotH), targetRed); n < 100 {
		t.Errorf("ratio panel: %d target-red pixels, want the target lines", n)
	}
	// The titles are drawn.
	if n := count(img, image.Rect(0, 0, 3*panelW, marginT-10), black); n < 300 {
		t.Errorf("%d black pixels in the title band, want three titles", n)
	}
}

func count(img image.Image, r image.Rectangle, c interface{ RGBA() (r, g, b, a uint32) }) int {
	cr, cg, cb, _ := c.RGBA()
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if pr == cr && pg == cg && pb == cb {
				n++
			}
		}
	}
	return n
}
