// chart-render renders a Helm chart the way `helm template` does, offline and without Helm:
// Go's text/template with sprig and Helm's own functions (include, tpl, required, fail,
// toYaml, fromYaml, toJson, fromJson, lookup, .Files, .Capabilities). It prints every
// rendered document after a "# Source:" line, in Helm's kind order, and exits 1 with the
// template's error (or "YAML parse error on ...") when the chart cannot be rendered.
//
//	chart-render [flags] [RELEASE] CHART_DIR
//	  -n, --namespace NS         .Release.Namespace (default "default")
//	  -f, --values FILE          values file, merged over values.yaml (repeatable)
//	  --set K=V[,K=V]            typed override (repeatable; a.b=1, l[0]=x, l={a,b}, k=null)
//	  --set-string K=V           string override (repeatable)
//	  --kube-version V           .Capabilities.KubeVersion (default 1.29.0)
//	  -a, --api-versions G/V     extra .Capabilities.APIVersions (repeatable)
//	  --is-upgrade               .Release.IsUpgrade
//	  -s, --show-only T          print only template T (e.g. templates/console.yaml)
//	  --notes                    also print templates/NOTES.txt
//
// Not supported (refused with a message): subcharts, values.schema.json, library charts.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	yamlv3 "gopkg.in/yaml.v3"
)

// Document is one rendered Kubernetes object.
type Document struct {
	Source  string // template name, e.g. "jobwheel/templates/scheduler.yaml"
	Kind    string
	Content string
}

// Options are the command-line settings.
type Options struct {
	Release, Namespace, ChartDir, KubeVersion string
	ValueFiles                                []string
	Sets                                      []setArg
	APIVersions                               []string
	IsUpgrade, Notes                          bool
	ShowOnly                                  []string
}

var errHelp = errors.New("help")

type setArg struct {
	arg   string
	typed bool
}

const usage = "usage: chart-render [-n NS] [-f FILE]... [--set K=V]... [--set-string K=V]... [--kube-version V] [-a G/V]... [-s TEMPLATE]... [--notes] [RELEASE] CHART_DIR"

func main() {
	opts, err := parseArgs(os.Args[1:])
	if err == errHelp {
		fmt.Println(usage)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chart-render: %v\n", err)
		os.Exit(2)
	}
	if err := run(opts, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func parseArgs(args []string) (*Options, error) {
	o := &Options{Namespace: "default", KubeVersion: "1.29.0"}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := a, "", false
		if strings.HasPrefix(a, "--") {
			if eq := strings.IndexByte(a, '='); eq > 0 {
				name, val, hasVal = a[:eq], a[eq+1:], true
			}
		}
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		var v string
		switch name {
		case "-n", "--namespace":
			v, err = next()
			o.Namespace = v
		case "-f", "--values":
			v, err = next()
			o.ValueFiles = append(o.ValueFiles, v)
		case "--set":
			v, err = next()
			o.Sets = append(o.Sets, setArg{v, true})
		case "--set-string":
			v, err = next()
			o.Sets = append(o.Sets, setArg{v, false})
		case "--kube-version":
			v, err = next()
			o.KubeVersion = strings.TrimPrefix(v, "v")
		case "-a", "--api-versions":
			v, err = next()
			o.APIVersions = append(o.APIVersions, v)
		case "-s", "--show-only":
			v, err = next()
			o.ShowOnly = append(o.ShowOnly, v)
		case "--is-upgrade":
			o.IsUpgrade = true
		case "--notes":
			o.Notes = true
		case "-h", "--help":
			return nil, errHelp
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("unknown flag %s", a)
			}
			pos = append(pos, a)
		}
		if err != nil {
			return nil, err
		}
	}
	switch len(pos) {
	case 1:
		o.Release, o.ChartDir = "release-name", pos[0]
	case 2:
		o.Release, o.ChartDir = pos[0], pos[1]
	default:
		return nil, fmt.Errorf("want [RELEASE] CHART_DIR, got %d arguments\n%s", len(pos), usage)
	}
	if !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`).MatchString(o.Release) || len(o.Release) > 53 {
		return nil, fmt.Errorf("invalid release name %q (lowercase DNS label, at most 53 characters)", o.Release)
	}
	return o, nil
}

// run loads, renders and prints the chart.
func run(o *Options, out io.Writer) error {
	docs, notes, err := Render(o)
	if err != nil {
		return err
	}
	shown := 0
	for _, d := range docs {
		if len(o.ShowOnly) > 0 && !showOnly(o.ShowOnly, d.Source) {
			continue
		}
		fmt.Fprintf(out, "---\n# Source: %s\n%s\n", d.Source, d.Content)
		shown++
	}
	if len(o.ShowOnly) > 0 && shown == 0 {
		return fmt.Errorf("could not find template %s in chart", strings.Join(o.ShowOnly, ", "))
	}
	if o.Notes && notes != "" {
		fmt.Fprintf(out, "\nNOTES:\n%s\n", notes)
	}
	return nil
}

func showOnly(want []string, source string) bool {
	rel := source[strings.IndexByte(source, '/')+1:]
	for _, w := range want {
		if w == rel || w == source {
			return true
		}
	}
	return false
}

// Render returns the chart's documents (Helm's kind order) and its rendered NOTES.txt.
func Render(o *Options) ([]Document, string, error) {
	c, err := LoadChart(o.ChartDir)
	if err != nil {
		return nil, "", err
	}
	if err := c.Metadata.CheckKubeVersion(o.KubeVersion); err != nil {
		return nil, "", err
	}
	vals := c.Values
	for _, f := range o.ValueFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, "", err
		}
		v, err := parseValues(raw)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %v", f, err)
		}
		vals = mergeValues(vals, v)
	}
	for _, s := range o.Sets {
		if err := applySet(vals, s.arg, s.typed); err != nil {
			return nil, "", err
		}
	}
	caps, err := newCapabilities(o.KubeVersion, o.APIVersions)
	if err != nil {
		return nil, "", err
	}
	e, err := newEngine(c)
	if err != nil {
		return nil, "", err
	}
	top := map[string]interface{}{
		"Values":       vals,
		"Release":      releaseInfo(o.Release, o.Namespace, o.IsUpgrade),
		"Chart":        &c.Metadata,
		"Capabilities": caps,
		"Files":        c.Files,
	}
	var docs []Document
	var notes string
	for _, t := range c.Templates {
		text, err := e.render(t.Name, top)
		if err != nil {
			return nil, "", err
		}
		base := path.Base(t.Name)
		switch {
		case strings.HasPrefix(base, "_"):
			// Partials only define templates; their output is dropped.
		case base == "NOTES.txt":
			notes = strings.TrimSpace(text)
		default:
			d, err := splitDocuments(t.Name, text)
			if err != nil {
				return nil, "", err
			}
			docs = append(docs, d...)
		}
	}
	sortByKind(docs)
	return docs, notes, nil
}

// docSep is Helm's manifest separator (releaseutil.SplitManifests).
var docSep = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

// splitDocuments splits a rendered template into documents, dropping empty ones, and checks
// that each is a YAML mapping (duplicate keys are errors, as in yaml.v3).
func splitDocuments(source, text string) ([]Document, error) {
	var docs []Document
	for _, d := range docSep.Split(strings.TrimSpace(text), -1) {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		var obj interface{}
		if err := yamlv3.Unmarshal([]byte(d), &obj); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %v\n%s", source, err, numbered(d))
		}
		if obj == nil {
			continue // only comments
		}
		m, ok := obj.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("YAML parse error on %s: a document is a %T, not an object:\n%s", source, obj, numbered(d))
		}
		kind, _ := m["kind"].(string)
		docs = append(docs, Document{Source: source, Kind: kind, Content: d})
	}
	return docs, nil
}

// numbered prefixes the lines of a failing document with their numbers, for the error text.
func numbered(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = fmt.Sprintf("%4d | %s", i+1, lines[i])
	}
	return strings.Join(lines, "\n")
}
