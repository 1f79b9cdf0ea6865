package pveapi

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// decodeConfig turns the "data" of GET .../config into a map of strings, whatever JSON type
// Proxmox used for each scalar: cores arrives as a number, memory as a string, template as
// 0/1 (fact: config-value-types). Numbers keep their literal text, booleans become "1"/"0", null is
// dropped. A nested object or array is an error: the config is a flat map.
func decodeConfig(data []byte) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decoding VM config: %w", err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		v = bytes.TrimSpace(v)
		if len(v) == 0 {
			continue
		}
		switch v[0] {
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("decoding VM config key %q: %w", k, err)
			}
			out[k] = s
		case 't', 'f':
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return nil, fmt.Errorf("decoding VM config key %q: %w", k, err)
			}
			out[k] = boolString(b)
		case 'n':
			// null: treated as absent
		case '{', '[':
			return nil, fmt.Errorf("decoding VM config key %q: not a scalar", k)
		default:
			var n json.Number
			if err := json.Unmarshal(v, &n); err != nil {
				return nil, fmt.Errorf("decoding VM config key %q: %w", k, err)
			}
			out[k] = n.String()
		}
	}
	return out, nil
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
