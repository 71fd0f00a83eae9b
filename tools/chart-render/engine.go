package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// Files is .Files: the chart's files outside templates/, with Helm's accessors.
type Files map[string][]byte

func (f Files) GetBytes(name string) []byte { return f[name] }
func (f Files) Get(name string) string      { return string(f[name]) }

// Glob returns the files whose path matches pattern ("*" does not cross "/").
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

func (f Files) Lines(name string) []string {
	s := strings.TrimSuffix(string(f[name]), "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// AsConfig renders the files as ConfigMap data (base name: content).
func (f Files) AsConfig() string {
	m := map[string]string{}
	for name, data := range f {
		m[path.Base(name)] = string(data)
	}
	return toYAML(m)
}

// AsSecrets renders the files as Secret data (base name: base64 content).
func (f Files) AsSecrets() string {
	m := map[string]string{}
	for name, data := range f {
		m[path.Base(name)] = base64.StdEncoding.EncodeToString(data)
	}
	return toYAML(m)
}

// Capabilities is .Capabilities, for a cluster of the given Kubernetes version.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion map[string]string
}

type KubeVersion struct{ Version, Major, Minor string }

func (k KubeVersion) String() string     { return k.Version }
func (k KubeVersion) GitVersion() string { return k.Version }

// VersionSet lists the API groups/versions (and "group/version/Kind") the cluster serves.
type VersionSet []string

func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

// defaultAPIVersions is what a plain cluster of Kubernetes 1.24+ serves; --api-versions adds more
// (e.g. monitoring.coreos.com/v1 for the Prometheus Operator).
var defaultAPIVersions = []string{
	"v1", "apps/v1", "batch/v1", "policy/v1", "autoscaling/v1", "autoscaling/v2",
	"networking.k8s.io/v1", "rbac.authorization.k8s.io/v1", "storage.k8s.io/v1",
	"apiextensions.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1",
	"admissionregistration.k8s.io/v1", "scheduling.k8s.io/v1", "certificates.k8s.io/v1",
}

func newCapabilities(kube string, extra []string) (*Capabilities, error) {
	v, err := semver.NewVersion(kube)
	if err != nil {
		return nil, fmt.Errorf("invalid Kubernetes version %q: %v", kube, err)
	}
	return &Capabilities{
		KubeVersion: KubeVersion{Version: "v" + v.String(), Major: fmt.Sprint(v.Major()), Minor: fmt.Sprint(v.Minor())},
		APIVersions: append(append(VersionSet{}, defaultAPIVersions...), extra...),
		HelmVersion: map[string]string{"version": "v3.13.0-chart-render"},
	}, nil
}

// Release is .Release (a map in Helm too).
func releaseInfo(name, namespace string, upgrade bool) map[string]interface{} {
	return map[string]interface{}{
		"Name": name, "Namespace": namespace, "IsInstall": !upgrade, "IsUpgrade": upgrade,
		"Revision": 1, "Service": "Helm",
	}
}

// toYAML is Helm's toYaml: sigs.k8s.io/yaml, no trailing newline, "" on error.
func toYAML(v interface{}) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

// funcMap is sprig's text functions plus Helm's own, minus those Helm removes (env,
// expandenv). include and tpl are bound to a template set in newEngine.
func funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["fromYamlArray"] = func(s string) []interface{} {
		a := []interface{}{}
		if err := yaml.Unmarshal([]byte(s), &a); err != nil {
			a = []interface{}{err.Error()}
		}
		return a
	}
	f["toJson"] = func(v interface{}) string {
		out, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(out)
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["fromJsonArray"] = func(s string) []interface{} {
		a := []interface{}{}
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			a = []interface{}{err.Error()}
		}
		return a
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(msg)
		}
		return v, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	// Offline: there is no cluster to look objects up in, as with `helm template`.
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	// Bound per engine (see newEngine); these placeholders let templates parse.
	f["include"] = func(string, interface{}) (string, error) { return "", nil }
	f["tpl"] = func(string, interface{}) (string, error) { return "", nil }
	return f
}

const maxIncludeDepth = 1000

// engine holds every template of a chart in one set, as Helm does, so that any file's
// {{ define }} is visible to include from any other.
type engine struct {
	set   *template.Template
	depth map[string]int
}

func newEngine(c *Chart) (*engine, error) {
	e := &engine{depth: map[string]int{}}
	e.set = template.New("gotpl").Option("missingkey=zero").Funcs(funcMap())
	e.bind(e.set)
	// Every file goes into one set (in name order), so a define is visible everywhere.
	for _, t := range c.Templates {
		if _, err := e.set.New(t.Name).Parse(t.Data); err != nil {
			return nil, cleanError(err)
		}
	}
	return e, nil
}

// bind gives t its own include and tpl, which execute templates of t's set.
func (e *engine) bind(t *template.Template) {
	t.Funcs(template.FuncMap{
		"include": func(name string, data interface{}) (string, error) {
			if e.depth[name] > maxIncludeDepth {
				return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
			}
			e.depth[name]++
			defer func() { e.depth[name]-- }()
			var buf strings.Builder
			err := t.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		},
		"tpl": func(text string, data interface{}) (string, error) {
			clone, err := t.Clone()
			if err != nil {
				return "", err
			}
			e.bind(clone)
			tt, err := clone.New("tpl").Parse(text)
			if err != nil {
				return "", fmt.Errorf("cannot parse template %q: %v", text, err)
			}
			var buf strings.Builder
			if err := tt.Execute(&buf, data); err != nil {
				return "", fmt.Errorf("error during tpl function execution for %q: %v", text, err)
			}
			return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
		},
	})
}

// render executes template name with the top-level data Helm passes (Values, Release, Chart,
// Capabilities, Files, Template).
func (e *engine) render(name string, top map[string]interface{}) (string, error) {
	data := map[string]interface{}{}
	for k, v := range top {
		data[k] = v
	}
	data["Template"] = map[string]interface{}{"Name": name, "BasePath": path.Dir(name)}
	var buf bytes.Buffer
	if err := e.set.ExecuteTemplate(&buf, name, data); err != nil {
		return "", cleanError(err)
	}
	return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
}

var execErrRe = regexp.MustCompile(`^template: (\S+?): executing "[^"]*" at <[^\n]*?>: error calling (?:fail|required): ([\s\S]*)$`)

// cleanError shortens errors of fail and required the way Helm does:
// "execution error at (chart/templates/x.yaml:3:4): message".
func cleanError(err error) error {
	if m := execErrRe.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("execution error at (%s): %s", m[1], m[2])
	}
	return err
}

// installOrder is Helm's kind order for `helm template` output.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService",
}

func kindRank(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}

// sortByKind orders documents like `helm template`: by install order of their kind, then
// (stable) by template and position; unknown kinds last.
func sortByKind(docs []Document) {
	sort.SliceStable(docs, func(i, j int) bool { return kindRank(docs[i].Kind) < kindRank(docs[j].Kind) })
}
