package status

import (
	"fmt"
	"html"
	"regexp"
)

// figureRE matches an element that carries a figure, its raw value if it
// has one, and its text. Both html/template's output and Chromium's
// serialized DOM quote attributes with double quotes and keep their order.
var figureRE = regexp.MustCompile(`<[a-z]+[^>]*\bdata-figure="([^"]*)"(?: data-value="([^"]*)")?[^>]*>([^<]*)<`)

// Figures reads the figures of a status page, or of the DOM a browser
// built from one, by name: the data-value of an element that has one (a
// size shown in MiB), otherwise its text. A name shown twice is an error;
// so is an "error" figure, a part of the page that could not be read.
func Figures(page string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range figureRE.FindAllStringSubmatchIndex(page, -1) {
		name, val := html.UnescapeString(page[m[2]:m[3]]), html.UnescapeString(page[m[6]:m[7]])
		if m[4] >= 0 {
			val = html.UnescapeString(page[m[4]:m[5]])
		}
		if name == "error" {
			return out, fmt.Errorf("status: the page shows an error: %s", val)
		}
		if _, dup := out[name]; dup {
			return out, fmt.Errorf("status: figure %q shown twice", name)
		}
		out[name] = val
	}
	return out, nil
}
