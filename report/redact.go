package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/perf"
)

// Keys whose string values name a host, an instance or a region, wherever
// they are in a result.
var (
	hostKeys     = map[string]bool{"host": true, "hostname": true, "hosts": true}
	instanceKeys = map[string]bool{"instance_id": true}
)

// identifying matches what erdma.Redactor replaces inside free text, the
// longest forms first: GIDs, GUIDs, MACs, IPv4 addresses (with a prefix
// length), GPU UUIDs, instance ids.
var identifying = regexp.MustCompile(`(?i)\b(?:` +
	`(?P<gid>[0-9a-f]{4}(?::[0-9a-f]{4}){7})` +
	`|(?P<mac>[0-9a-f]{2}(?::[0-9a-f]{2}){5})` +
	`|(?P<guid>[0-9a-f]{4}(?::[0-9a-f]{4}){3})` +
	`|(?P<uuid>(?:GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})` +
	`|(?P<ip>(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?)` +
	`|(?P<iid>i-[0-9a-z]{8,})` +
	`)\b`)

// redactor replaces identifying values in JSON trees, consistently over
// every input of one page.
type redactor struct {
	r       *erdma.Redactor
	names   map[string]bool // host names, instance ids, regions seen at their keys
	regions map[string]bool
	words   *regexp.Regexp // the names, to replace inside free text
}

// redactInputs returns the inputs with identifying values replaced.
func redactInputs(inputs []Input) ([]Input, error) {
	rd := &redactor{r: erdma.NewRedactor(), names: map[string]bool{}, regions: map[string]bool{}}
	trees := make([]any, len(inputs))
	for i, in := range inputs {
		b := in.raw
		if b == nil {
			var err error
			if b, err = json.Marshal(in.value); err != nil {
				return nil, fmt.Errorf("%s: %w", in.Name, err)
			}
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // a uint64 (memlock unlimited) survives the trip
		if err := dec.Decode(&trees[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
		rd.collect(trees[i], "")
	}
	rd.compile()
	out := make([]Input, len(inputs))
	for i, in := range inputs {
		t := rd.walk(trees[i], "")
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
		v := newValue(in.Kind)
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("%s: redacting: %w", in.Name, err)
		}
		// Latency samples are not in the JSON and identify nothing.
		if old, ok := in.value.(*perf.LatencyReport); ok {
			nv := v.(*perf.LatencyReport)
			for j := range nv.Results {
				if j < len(old.Results) {
					nv.Results[j].Samples = old.Results[j].Samples
				}
			}
		}
		out[i] = Input{Name: rd.text(in.Name), Kind: in.Kind, value: v, unknown: in.unknown}
	}
	return out, nil
}

// collect notes the host names, instance ids and regions under their keys.
func (rd *redactor) collect(v any, key string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) { // in order: the same page numbers the same host alike every time
			rd.collect(x[k], k)
		}
	case []any:
		for _, e := range x {
			rd.collect(e, key)
		}
	case string:
		switch {
		case x == "":
		case hostKeys[key]:
			rd.names[x] = true
			rd.r.Hostname(x)
		case instanceKeys[key]:
			rd.r.InstanceID(x)
		case key == "region":
			rd.regions[x] = true
		}
	}
}

// compile builds the regexp of the names collected, longest first so
// that "gpu1" does not eat into "gpu10".
func (rd *redactor) compile() {
	var ws []string
	for n := range rd.names {
		ws = append(ws, regexp.QuoteMeta(n))
	}
	for n := range rd.regions {
		ws = append(ws, regexp.QuoteMeta(n))
	}
	if len(ws) == 0 {
		return
	}
	sort.Slice(ws, func(i, j int) bool { return len(ws[i]) > len(ws[j]) })
	rd.words = regexp.MustCompile(`(?:^|\b)(?:` + strings.Join(ws, "|") + `)(?:\b|$)`)
}

// walk redacts every string of v; key is the object key v is under.
func (rd *redactor) walk(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			x[k] = rd.walk(x[k], k)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = rd.walk(e, key)
		}
		return x
	case string:
		// A version ("MLNX_OFED_LINUX-5.4-3.6.8.1") is not an address.
		if key == "version" || key == "fw_ver" || strings.HasSuffix(key, "_version") {
			return x
		}
		return rd.text(x)
	}
	return v
}

// text replaces every identifying value in s.
func (rd *redactor) text(s string) string {
	if rd.words != nil {
		s = rd.words.ReplaceAllStringFunc(s, func(w string) string {
			if rd.regions[w] {
				return erdma.RedactedRegion
			}
			return rd.r.Hostname(w)
		})
	}
	names := identifying.SubexpNames()
	return identifying.ReplaceAllStringFunc(s, func(m string) string {
		sub := identifying.FindStringSubmatch(m)
		for i, n := range names {
			if i == 0 || sub[i] == "" {
				continue
			}
			switch n {
			case "gid":
				return rd.r.GID(m)
			case "mac":
				return rd.r.MAC(m)
			case "guid":
				return rd.r.GUID(m)
			case "uuid":
				return rd.r.GPUUUIDs(m)
			case "ip":
				return rd.r.IPv4(m)
			case "iid":
				return rd.r.InstanceID(m)
			}
		}
		return m
	})
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
