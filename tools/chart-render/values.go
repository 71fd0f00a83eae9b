package main

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// parseValues reads a values file the way Helm does (sigs.k8s.io/yaml: YAML through JSON, so
// numbers are float64).
func parseValues(raw []byte) (map[string]interface{}, error) {
	v := map[string]interface{}{}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]interface{}{}
	}
	return v, nil
}

// mergeValues merges src into dst (both may be modified) and returns dst: maps merge key by
// key, anything else in src replaces dst, and a null in src deletes the key (Helm's rule).
func mergeValues(dst, src map[string]interface{}) map[string]interface{} {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			dst[k] = mergeValues(dm, sm)
		} else {
			dst[k] = sv
		}
	}
	return dst
}

// applySet applies one --set (typed=true) or --set-string argument, e.g.
// "a.b=1,c[0].d=x,e={p,q}", to vals. Values are typed like Helm's: true/false, null, integers
// (int64, unless they have a leading zero), else strings. "\," and "\." escape.
func applySet(vals map[string]interface{}, arg string, typed bool) error {
	for _, assign := range splitUnescaped(arg, ',', true) {
		eq := indexUnescaped(assign, '=')
		if eq < 0 {
			return fmt.Errorf("--set %q: key %q has no value (want key=value)", arg, assign)
		}
		key, raw := assign[:eq], assign[eq+1:]
		var val interface{}
		if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
			var list []interface{}
			if inner := raw[1 : len(raw)-1]; inner != "" {
				for _, item := range splitUnescaped(inner, ',', false) {
					list = append(list, typedValue(unescape(item), typed))
				}
			}
			val = list
		} else {
			val = typedValue(unescape(raw), typed)
		}
		if err := setPath(vals, splitUnescaped(key, '.', false), val); err != nil {
			return fmt.Errorf("--set %q: %v", assign, err)
		}
	}
	return nil
}

func typedValue(s string, typed bool) interface{} {
	if !typed {
		return s
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if s == "0" || (s != "" && s[0] != '0' && !strings.HasPrefix(s, "-0") && !strings.HasPrefix(s, "+")) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return s
}

// setPath sets vals[k1][k2]... = val, creating maps (and lists for "name[i]") on the way.
// A null value deletes the key.
func setPath(vals map[string]interface{}, keys []string, val interface{}) error {
	var cur interface{} = vals
	assign := func(v interface{}) {}
	for i, k := range keys {
		k = unescape(k)
		name, idx := k, -1
		if o := strings.IndexByte(k, '['); o >= 0 && strings.HasSuffix(k, "]") {
			n, err := strconv.Atoi(k[o+1 : len(k)-1])
			if err != nil || n < 0 || n > 65536 {
				return fmt.Errorf("bad list index in %q", k)
			}
			name, idx = k[:o], n
		}
		if name == "" {
			return fmt.Errorf("empty key")
		}
		m, ok := cur.(map[string]interface{})
		if !ok {
			m = map[string]interface{}{}
			assign(m)
		}
		last := i == len(keys)-1
		if idx < 0 {
			if last {
				if val == nil {
					delete(m, name)
				} else {
					m[name] = val
				}
				return nil
			}
			mm := m
			cur = m[name]
			assign = func(v interface{}) { mm[name] = v }
			continue
		}
		list, _ := m[name].([]interface{})
		for len(list) <= idx {
			list = append(list, nil)
		}
		m[name] = list
		if last {
			list[idx] = val
			return nil
		}
		cur = list[idx]
		assign = func(v interface{}) { list[idx] = v }
	}
	return nil
}

// splitUnescaped splits s at sep characters not preceded by a backslash (and, with braces,
// not inside {...}). Escapes are kept for unescape.
func splitUnescaped(s string, sep byte, braces bool) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case braces && c == '{':
			depth++
		case braces && c == '}' && depth > 0:
			depth--
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func indexUnescaped(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		} else if s[i] == c {
			return i
		}
	}
	return -1
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
