package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// Metadata is Chart.yaml, with Helm's field names (templates read .Chart.Name,
// .Chart.Version, .Chart.AppVersion...).
type Metadata struct {
	APIVersion   string            `json:"apiVersion"`
	Name         string            `json:"name"`
	Version      string            `json:"version"`
	AppVersion   string            `json:"appVersion,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Description  string            `json:"description,omitempty"`
	Type         string            `json:"type,omitempty"`
	Home         string            `json:"home,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Dependencies []interface{}     `json:"dependencies,omitempty"`
}

// Template is one file of templates/: its name as Helm gives it ("<chart>/templates/x.yaml").
type Template struct {
	Name string
	Data string
}

// Chart is a chart directory loaded the way Helm loads it: Chart.yaml, values.yaml,
// templates/ and every other file (minus .helmignore patterns) as .Files.
type Chart struct {
	Metadata  Metadata
	Values    map[string]interface{}
	Templates []Template
	Files     Files
}

// LoadChart reads the chart in dir. Subcharts (charts/, dependencies) are not supported.
func LoadChart(dir string) (*Chart, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	c := &Chart{Files: Files{}}
	if err := yaml.Unmarshal(raw, &c.Metadata); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if err := c.Metadata.validate(); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if len(c.Metadata.Dependencies) > 0 {
		return nil, fmt.Errorf("Chart.yaml: dependencies are not supported by chart-render")
	}
	c.Values = map[string]interface{}{}
	if raw, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		if c.Values, err = parseValues(raw); err != nil {
			return nil, fmt.Errorf("values.yaml: %v", err)
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	ignore, err := readHelmignore(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return nil, err
	}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if ignored(ignore, rel, info.IsDir()) {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if info.IsDir() {
			if rel == "charts" {
				return fmt.Errorf("charts/: subcharts are not supported by chart-render")
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "Chart.lock" || rel == "requirements.yaml":
		case rel == "values.schema.json":
			return fmt.Errorf("values.schema.json: schema validation is not supported by chart-render")
		case strings.HasPrefix(rel, "templates/"):
			c.Templates = append(c.Templates, Template{Name: c.Metadata.Name + "/" + rel, Data: string(data)})
		default:
			c.Files[rel] = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(c.Templates, func(i, j int) bool { return c.Templates[i].Name < c.Templates[j].Name })
	return c, nil
}

func (m *Metadata) validate() error {
	if m.APIVersion != "v1" && m.APIVersion != "v2" {
		return fmt.Errorf("apiVersion must be v1 or v2, got %q", m.APIVersion)
	}
	if m.Name == "" {
		return fmt.Errorf("name is required")
	}
	if _, err := semver.StrictNewVersion(m.Version); err != nil {
		return fmt.Errorf("version %q is not a SemVer 2 version", m.Version)
	}
	if m.Type != "" && m.Type != "application" {
		return fmt.Errorf("type %q cannot be rendered (only application charts)", m.Type)
	}
	return nil
}

// CheckKubeVersion fails like Helm when the chart's kubeVersion constraint excludes kube.
func (m *Metadata) CheckKubeVersion(kube string) error {
	if m.KubeVersion == "" {
		return nil
	}
	cons, err := semver.NewConstraint(m.KubeVersion)
	if err != nil {
		return fmt.Errorf("Chart.yaml: invalid kubeVersion %q: %v", m.KubeVersion, err)
	}
	v, err := semver.NewVersion(kube)
	if err != nil {
		return fmt.Errorf("invalid Kubernetes version %q: %v", kube, err)
	}
	if !cons.Check(v) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", m.KubeVersion, kube)
	}
	return nil
}

// readHelmignore returns the patterns of a .helmignore file (missing file: none).
func readHelmignore(p string) ([]string, error) {
	f, err := os.Open(p)
	if os.IsNotExist(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	var pats []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l != "" && !strings.HasPrefix(l, "#") {
			pats = append(pats, l)
		}
	}
	return pats, s.Err()
}

// ignored matches rel against .helmignore patterns: "dir/" matches directories only, a pattern
// without "/" matches the base name, one with "/" the whole path. (Negations "!" are not
// supported and never match.)
func ignored(pats []string, rel string, isDir bool) bool {
	if rel == ".helmignore" {
		return true
	}
	for _, p := range pats {
		if strings.HasSuffix(p, "/") {
			if !isDir {
				continue
			}
			p = strings.TrimSuffix(p, "/")
		}
		target := rel
		if !strings.Contains(p, "/") {
			target = path.Base(rel)
		}
		if ok, _ := path.Match(strings.TrimPrefix(p, "/"), target); ok {
			return true
		}
	}
	return false
}
