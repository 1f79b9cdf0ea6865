package tfrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// State is the part of `terraform show -json` the suites read.
type State struct {
	Resources []Resource
	// Raw is the JSON terraform printed.
	Raw string
}

// Resource is one resource instance in the state (managed and data, root module and
// child modules alike).
type Resource struct {
	Address string         `json:"address"`
	Mode    string         `json:"mode"`
	Type    string         `json:"type"`
	Name    string         `json:"name"`
	Values  map[string]any `json:"values"`
	// SensitiveValues mirrors Values with true for each sensitive attribute.
	SensitiveValues map[string]any `json:"sensitive_values"`
	Tainted         bool           `json:"tainted"`
	DeposedKey      string         `json:"deposed_key"`
}

// String returns a string attribute ("" when absent or not a string).
func (r Resource) String(attr string) string {
	s, _ := r.Values[attr].(string)
	return s
}

// Int returns a number attribute (0 when absent).
func (r Resource) Int(attr string) int {
	f, _ := r.Values[attr].(float64)
	return int(f)
}

// Sensitive reports whether attr is marked sensitive in the state.
func (r Resource) Sensitive(attr string) bool {
	b, _ := r.SensitiveValues[attr].(bool)
	return b
}

// OfType returns the managed resources of a type.
func (s *State) OfType(typ string) []Resource {
	var out []Resource
	for _, r := range s.Resources {
		if r.Mode == "managed" && r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

type showModule struct {
	Resources    []Resource   `json:"resources"`
	ChildModules []showModule `json:"child_modules"`
}

type showJSON struct {
	Values *struct {
		RootModule showModule `json:"root_module"`
	} `json:"values"`
}

// Show runs `terraform show -json` and decodes the resources. A workspace without state
// gives an empty State.
func (w *Workspace) Show(ctx context.Context) (*State, error) {
	if _, err := os.Stat(w.StateFile()); os.IsNotExist(err) {
		return &State{}, nil
	}
	r := w.Run(ctx, "show", "-json", "-no-color")
	if !r.OK() {
		return nil, fmt.Errorf("tfrun: terraform show failed: %s", r)
	}
	return ParseShow(r.Stdout)
}

// ParseShow decodes the output of `terraform show -json`.
func ParseShow(out string) (*State, error) {
	var sj showJSON
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sj); err != nil {
		return nil, fmt.Errorf("tfrun: decode terraform show -json: %w", err)
	}
	st := &State{Raw: out}
	if sj.Values == nil {
		return st, nil
	}
	var walk func(m showModule)
	walk = func(m showModule) {
		st.Resources = append(st.Resources, m.Resources...)
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(sj.Values.RootModule)
	return st, nil
}
