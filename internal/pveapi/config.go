package pveapi

import (
	"bytes"
	"encoding/json"
	"errors"
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
		s, ok, err := decodeScalar(v)
		if err != nil {
			return nil, fmt.Errorf("decoding VM config key %q: %w", k, err)
		}
		if ok {
			out[k] = s
		}
	}
	return out, nil
}

// decodeScalar is one config value as a string: a string as is, a boolean "1"/"0", a
// number as written; ok is false for null (treated as absent) and an empty value; an
// object or array is an error.
func decodeScalar(v json.RawMessage) (string, bool, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false, nil
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return "", false, err
		}
		return boolString(b), true, nil
	case 'n':
		return "", false, nil
	case '{', '[':
		return "", false, errors.New("not a scalar")
	default:
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return "", false, err
		}
		return n.String(), true, nil
	}
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
