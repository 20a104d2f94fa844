package console

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Setting is a setting in force, by its environment variable.
type Setting struct {
	Name  string
	Value string
}

// Masked is what the console shows instead of a secret.
const Masked = "•••• (set)"

var secretName = regexp.MustCompile(`(?i)KEY|SECRET|TOKEN|COOKIE|PASSWORD|PASSWD|CREDENTIAL`)

// SettingsOf lists the settings of a configuration struct by their env
// tags (caarlos0/env's), sorted, every secret masked: a name that sounds
// secret shows only whether it is set, and a URL shows no user info.
func SettingsOf(cfg any) []Setting {
	var out []Setting
	collect(reflect.Indirect(reflect.ValueOf(cfg)), &out)
	slices.SortFunc(out, func(a, b Setting) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func collect(v reflect.Value, out *[]Setting) {
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if tag == "" || tag == "-" {
			if f.Type.Kind() == reflect.Struct && f.Tag.Get("env") != "-" {
				collect(v.Field(i), out)
			}
			continue
		}
		*out = append(*out, Setting{Name: tag, Value: maskValue(tag, v.Field(i))})
	}
}

func maskValue(name string, v reflect.Value) string {
	if secretName.MatchString(name) {
		if v.IsZero() {
			return "(not set)"
		}
		return Masked
	}
	switch v.Kind() {
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range v.Len() {
			parts[i] = maskValue(name, v.Index(i))
		}
		return strings.Join(parts, ",")
	case reflect.Map:
		keys := v.MapKeys()
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprint(k.Interface())+"="+maskValue(name, v.MapIndex(k)))
		}
		slices.Sort(parts)
		return strings.Join(parts, ",")
	case reflect.String:
		return maskURL(v.String())
	case reflect.Int64:
		if v.Type().Name() == "Seconds" || v.Type() == reflect.TypeFor[time.Duration]() {
			return time.Duration(v.Int()).String()
		}
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return maskURL(s.String())
	}
	return maskURL(fmt.Sprint(v.Interface()))
}

// maskURL hides the user info of a URL (a proxy's or Redis's credentials)
// and any query value named like a secret.
func maskURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return Scrub(s)
	}
	if u.User != nil {
		u.User = url.User("••••")
	}
	if q := u.Query(); len(q) > 0 {
		for k := range q {
			if secretName.MatchString(k) {
				q.Set(k, "••••")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
