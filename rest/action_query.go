package rest

import (
	"encoding/json"
	"net/url"
	"strconv"
)

// convertQuery turns query parameters into JSON values typed by the
// action's query schema, so "?n=3" validates against {"type":"integer"}.
func (ba *boundAction) convertQuery(q url.Values) (map[string]any, error) {
	out := make(map[string]any, len(q))
	for k, vs := range q {
		if len(vs) == 0 {
			continue
		}
		typ := ba.qtypes[k]
		if len(typ) > 6 && typ[:6] == "array:" {
			arr := make([]any, 0, len(vs))
			for _, v := range vs {
				x, err := convertScalar(k, typ[6:], v)
				if err != nil {
					return nil, err
				}
				arr = append(arr, x)
			}
			out[k] = arr
			continue
		}
		if typ == "array" {
			arr := make([]any, len(vs))
			for i, v := range vs {
				arr[i] = v
			}
			out[k] = arr
			continue
		}
		if len(vs) > 1 {
			// Which one counts would be a guess: ?done=true&done=false.
			return nil, badParam(k, "is given more than once (it takes one value)")
		}
		x, err := convertScalar(k, typ, vs[0])
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	return out, nil
}

func convertScalar(param, typ, v string) (any, error) {
	switch typ {
	case "integer":
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return nil, badParam(param, "must be an integer")
		}
		return json.Number(v), nil
	case "number":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return nil, badParam(param, "must be a number")
		}
		return json.Number(v), nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badParam(param, "must be true or false")
		}
		return b, nil
	}
	return v, nil
}
