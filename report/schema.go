package report

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func typeOf(v any) reflect.Type { return reflect.TypeOf(v) }

// unknownKeys adds to out the paths of v's object keys that t (the Go type
// it was decoded into) has no field for, as docs/*.md spells paths
// (".hosts[].new_key"): what a newer erdmakit added. A type that decodes
// itself, a map and an interface take any key.
func unknownKeys(v any, t reflect.Type, path string, out map[string]bool) {
	walkUnknown(v, t, path, out, map[reflect.Type]map[string]reflect.Type{})
}

// walkUnknown is unknownKeys with the fields of each struct type read
// once (a mesh has 32640 results of one type).
func walkUnknown(v any, t reflect.Type, path string, out map[string]bool, cache map[reflect.Type]map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer {
		if t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) {
			return
		}
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			if t.Kind() == reflect.Map {
				for _, e := range x {
					walkUnknown(e, t.Elem(), path+"{}", out, cache)
				}
			}
			return
		}
		fields, ok := cache[t]
		if !ok {
			fields = jsonFields(t)
			cache[t] = fields
		}
		for k, e := range x {
			ft, ok := fields[k]
			if !ok {
				// encoding/json matches keys case-insensitively.
				for name, f := range fields {
					if strings.EqualFold(name, k) {
						ft, ok = f, true
						break
					}
				}
			}
			if !ok {
				out[path+"."+k] = true
				continue
			}
			walkUnknown(e, ft, path+"."+k, out, cache)
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, e := range x {
				walkUnknown(e, t.Elem(), path+"[]", out, cache)
			}
		}
	}
}

// jsonFields maps the JSON names of struct t's fields (embedded structs'
// fields promoted, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}
