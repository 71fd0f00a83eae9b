package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeChart creates a chart directory from name -> content.
func writeChart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const chartYAML = "apiVersion: v2\nname: demo\nversion: 1.2.3\nappVersion: \"9.9\"\nkubeVersion: \">=1.24.0-0\"\n"

func baseChart() map[string]string {
	return map[string]string{
		"Chart.yaml":  chartYAML,
		"values.yaml": "name: web\nport: 8080\nlabels: {a: b}\nlist: [x]\nsecret: \"\"\n",
		".helmignore": "*.bak\n",
		"templates/_helpers.tpl": `{{- define "demo.fullname" -}}{{ .Release.Name }}-{{ .Values.name }}{{- end -}}
{{- define "demo.labels" -}}
app: {{ include "demo.fullname" . }}
chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}`,
		"templates/svc.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "demo.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "demo.labels" . | nindent 4 }}
spec:
  ports:
    - port: {{ .Values.port }}
---
# only a comment: dropped
`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ tpl "{{ .Release.Name }}-cm" . }}
data:
  {{- range $p, $_ := .Files.Glob "files/*.txt" }}
  {{ base $p }}: {{ $.Files.Get $p | quote }}
  {{- end }}
  extra: {{ .Values.labels | toJson | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  hasPolicy: {{ .Capabilities.APIVersions.Has "policy/v1" | quote }}
  lookup: {{ lookup "v1" "Secret" "ns" "x" | len | quote }}
`,
		"templates/NOTES.txt": "release {{ .Release.Name }}\n",
		"files/a.txt":         "alpha",
		"files/b.bak":         "ignored",
	}
}

func render(t *testing.T, files map[string]string, args ...string) ([]Document, string, error) {
	t.Helper()
	o, err := parseArgs(append(args, "rel", writeChart(t, files)))
	if err != nil {
		t.Fatal(err)
	}
	return Render(o)
}

func TestRendersDocumentsInKindOrder(t *testing.T) {
	docs, notes, err := render(t, baseChart(), "-n", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Kind != "ConfigMap" || docs[1].Kind != "Service" {
		t.Fatalf("want ConfigMap then Service, got %+v", docs)
	}
	for _, want := range []string{"name: rel-web", "namespace: prod", "app: rel-web", "chart: demo-1.2.3", "port: 8080"} {
		if !strings.Contains(docs[1].Content, want) {
			t.Errorf("Service lacks %q:\n%s", want, docs[1].Content)
		}
	}
	for _, want := range []string{"name: rel-cm", `a.txt: "alpha"`, `extra: "{\"a\":\"b\"}"`, `kube: "v1.29.0"`, `hasPolicy: "true"`, `lookup: "0"`} {
		if !strings.Contains(docs[0].Content, want) {
			t.Errorf("ConfigMap lacks %q:\n%s", want, docs[0].Content)
		}
	}
	if strings.Contains(docs[0].Content, "b.bak") {
		t.Errorf(".helmignore'd file reached .Files")
	}
	if notes != "release rel" {
		t.Errorf("notes = %q", notes)
	}
}

func TestSetAndValuesFilesOverride(t *testing.T) {
	files := baseChart()
	files["templates/svc.yaml"] = `kind: Service
metadata:
  name: {{ .Values.name }}
  port: {{ .Values.port }}
  typ: {{ kindOf .Values.port }}
  labels: {{ .Values.labels | toJson }}
  list: {{ .Values.list | toJson }}
  nested: {{ .Values.a.b.c }}
  zip: {{ kindOf .Values.zip }}
`
	extra := filepath.Join(t.TempDir(), "more.yaml")
	os.WriteFile(extra, []byte("name: api\nlabels: {c: d, a: null}\n"), 0o644)
	docs, _, err := render(t, files, "-f", extra, "--set", "port=9090,list={p,q},a.b.c=x\\,y", "--set-string", "zip=0123")
	if err != nil {
		t.Fatal(err)
	}
	c := docs[1].Content
	for _, want := range []string{"name: api", "port: 9090", "typ: int64", `labels: {"c":"d"}`, `list: ["p","q"]`, "nested: x,y", "zip: string"} {
		if !strings.Contains(c, want) {
			t.Errorf("lacks %q:\n%s", want, c)
		}
	}
}

func TestApplySetForms(t *testing.T) {
	v := map[string]interface{}{"keep": "x", "gone": "y"}
	for _, s := range []string{"a[1].b=true", "n=0", "z=007", "gone=null", `dot\.ted=1`} {
		if err := applySet(v, s, true); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]interface{}{
		"keep": "x", "a": []interface{}{nil, map[string]interface{}{"b": true}},
		"n": int64(0), "z": "007", "dot.ted": int64(1),
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %#v\nwant %#v", v, want)
	}
	if err := applySet(v, "novalue", true); err == nil {
		t.Error("a --set without = must fail")
	}
}

func TestRequiredAndFailStopTheRender(t *testing.T) {
	files := baseChart()
	files["templates/req.yaml"] = "kind: Secret\ndata:\n  x: {{ required \"secret is required: set secret\" .Values.secret }}\n"
	_, _, err := render(t, files)
	if err == nil || !strings.Contains(err.Error(), "execution error at (demo/templates/req.yaml:3:8): secret is required: set secret") {
		t.Fatalf("err = %v", err)
	}
	if _, _, err := render(t, files, "--set", "secret=s3"); err != nil {
		t.Fatalf("with the value set: %v", err)
	}
	files["templates/req.yaml"] = `{{ fail "nope" }}`
	if _, _, err := render(t, files); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("fail: err = %v", err)
	}
}

func TestBadOutputAndTemplatesFail(t *testing.T) {
	for name, tpl := range map[string]string{
		"invalid YAML":   "kind: ConfigMap\nmetadata:\n  name: x\n    bad: indent\n",
		"duplicate key":  "kind: ConfigMap\nkind: Secret\n",
		"not an object":  "just text\n",
		"parse error":    "{{ if }}\n",
		"undefined func": "{{ nosuch 1 }}\n",
		"nil field":      "x: {{ .Values.missing.field }}\n",
		"env is removed": `x: {{ env "HOME" }}` + "\n",
	} {
		files := baseChart()
		files["templates/bad.yaml"] = tpl
		if _, _, err := render(t, files); err == nil {
			t.Errorf("%s: rendered without error", name)
		}
	}
}

func TestChartChecks(t *testing.T) {
	files := baseChart()
	if _, _, err := render(t, files, "--kube-version", "1.23.0"); err == nil || !strings.Contains(err.Error(), "incompatible with Kubernetes 1.23.0") {
		t.Errorf("kubeVersion: err = %v", err)
	}
	files["Chart.yaml"] = "apiVersion: v2\nname: demo\nversion: one\n"
	if _, _, err := render(t, files); err == nil {
		t.Error("a non-SemVer version must fail")
	}
	files = baseChart()
	files["charts/sub/Chart.yaml"] = chartYAML
	if _, _, err := render(t, files); err == nil || !strings.Contains(err.Error(), "subcharts are not supported") {
		t.Errorf("subchart: err = %v", err)
	}
	if _, err := parseArgs([]string{"Bad_Name", "."}); err == nil {
		t.Error("an invalid release name must fail")
	}
}

func TestYamlFunctionsAndTplWithInclude(t *testing.T) {
	files := baseChart()
	files["values.yaml"] += "nested: {b: 2, a: [1, x]}\ntext: '{{ include \"demo.fullname\" . }}-t'\n"
	files["templates/svc.yaml"] = `kind: ConfigMap
data:
  y: {{ .Values.nested | toYaml | quote }}
  back: {{ (.Values.nested | toYaml | fromYaml).a | toJson | quote }}
  bad: {{ hasKey (fromYaml "a: [") "Error" | quote }}
  tpl: {{ tpl .Values.text . }}
  num: {{ kindOf .Values.port }}
`
	docs, _, err := render(t, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`y: "a:\n- 1\n- x\nb: 2"`, `back: "[1,\"x\"]"`, `bad: "true"`, "tpl: rel-web-t", "num: float64"} {
		if !strings.Contains(docs[1].Content, want) {
			t.Errorf("lacks %q:\n%s", want, docs[1].Content)
		}
	}
}
