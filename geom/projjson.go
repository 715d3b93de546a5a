package geom

import (
	"encoding/json"
	"strings"
)

// ProjJSONName names a PROJJSON CRS document: "AUTHORITY:code" from its
// id when it has one, else its name, as written (callers sanitise it for
// where it goes). ok is false when raw is not a JSON object.
func ProjJSONName(raw []byte) (name string, ok bool) {
	var p struct {
		Name string `json:"name"`
		ID   struct {
			Authority string          `json:"authority"`
			Code      json.RawMessage `json:"code"`
		} `json:"id"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
		return "", false
	}
	if code := strings.Trim(string(p.ID.Code), `"`); p.ID.Authority != "" && code != "" {
		return p.ID.Authority + ":" + code, true
	}
	return p.Name, true
}
