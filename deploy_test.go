package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The Kubernetes manifest and the rendered Helm chart are checked here for
// what the gateway relies on. No cluster is involved: these are structural
// checks (plus helm lint), not a schema validation by an API server.

// k8sObject is the part of a Kubernetes object the checks read.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec yaml.Node `yaml:"spec"`
}

func decodeFile(t *testing.T, path string) map[string]*k8sObject {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return decodeObjects(t, path, data)
}

func decodeObjects(t *testing.T, path string, data []byte) map[string]*k8sObject {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	out := map[string]*k8sObject{}
	for {
		obj := &k8sObject{}
		err := dec.Decode(obj)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, path)
		if obj.Kind == "" {
			continue // an empty document
		}
		out[obj.Kind] = obj
	}
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type deploymentSpec struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
			SecurityContext               struct {
				RunAsNonRoot bool `yaml:"runAsNonRoot"`
				RunAsUser    int  `yaml:"runAsUser"`
			} `yaml:"securityContext"`
			Containers []struct {
				Ports []struct {
					Name          string `yaml:"name"`
					ContainerPort int    `yaml:"containerPort"`
				} `yaml:"ports"`
				Env []struct {
					Name  string `yaml:"name"`
					Value string `yaml:"value"`
				} `yaml:"env"`
				ReadinessProbe probe `yaml:"readinessProbe"`
				LivenessProbe  probe `yaml:"livenessProbe"`
				Lifecycle      struct {
					PreStop struct {
						Sleep struct {
							Seconds int `yaml:"seconds"`
						} `yaml:"sleep"`
					} `yaml:"preStop"`
				} `yaml:"lifecycle"`
			} `yaml:"containers"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

func TestKubernetesManifest(t *testing.T) {
	checkManifest(t, decodeFile(t, "deploy/kubernetes/cursor2api.yaml"))
	ing := decodeFile(t, "deploy/kubernetes/ingress.yaml")["Ingress"]
	assert.Equal(t, "off", ing.Metadata.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"])
	assert.Equal(t, "3600", ing.Metadata.Annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"])
}

// TestHelmChart renders the chart with helm (HELM names the binary, else
// helm on PATH) and applies the manifest's checks to the result. .ci/run
// builds helm from its Go module when it can.
func TestHelmChart(t *testing.T) {
	helm := os.Getenv("HELM")
	if helm == "" {
		helm = "helm"
	}
	if _, err := exec.LookPath(helm); err != nil {
		t.Skipf("helm is not installed (Debian has no package; .ci/run builds it with go install helm.sh/helm/v3/cmd/helm): the chart is not rendered here")
	}
	out, err := exec.Command(helm, "lint", "deploy/helm/cursor2api").CombinedOutput()
	require.NoError(t, err, "helm lint:\n%s", out)
	out, err = exec.Command(helm, "template", "cursor2api", "deploy/helm/cursor2api", "--set", "ingress.enabled=true").Output()
	require.NoError(t, err, "helm template")
	objs := decodeObjects(t, "helm template", out)
	checkManifest(t, objs)
	require.Contains(t, objs, "Ingress")
	assert.Equal(t, "off", objs["Ingress"].Metadata.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"])
}

func checkManifest(t *testing.T, objs map[string]*k8sObject) {
	for _, kind := range []string{"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"} {
		require.Contains(t, objs, kind)
	}
	var dep deploymentSpec
	require.NoError(t, objs["Deployment"].Spec.Decode(&dep))
	pod := dep.Template.Spec
	labels := dep.Template.Metadata.Labels
	assert.Equal(t, dep.Selector.MatchLabels, labels)
	assert.True(t, pod.SecurityContext.RunAsNonRoot)
	assert.Equal(t, 65532, pod.SecurityContext.RunAsUser, "the image's user")
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "0.0.0.0", env["HOST"])
	assert.Equal(t, strconv.Itoa(c.Ports[0].ContainerPort), env["PORT"])
	assert.Equal(t, "/ready", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/health", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, c.Ports[0].Name, c.ReadinessProbe.HTTPGet.Port)
	shutdown, err := strconv.Atoi(env["SHUTDOWN_TIMEOUT"])
	require.NoError(t, err, "SHUTDOWN_TIMEOUT is set in whole seconds")
	assert.Greater(t, pod.TerminationGracePeriodSeconds, c.Lifecycle.PreStop.Sleep.Seconds+shutdown,
		"the grace period covers the preStop pause and the drain")

	var svc struct {
		Selector        map[string]string `yaml:"selector"`
		SessionAffinity string            `yaml:"sessionAffinity"`
	}
	require.NoError(t, objs["Service"].Spec.Decode(&svc))
	assert.Equal(t, labels, svc.Selector)
	assert.Equal(t, "ClientIP", svc.SessionAffinity, "previous_response_id is per pod")

	var hpa struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		Metrics []struct {
			Resource struct {
				Name string `yaml:"name"`
			} `yaml:"resource"`
		} `yaml:"metrics"`
	}
	require.NoError(t, objs["HorizontalPodAutoscaler"].Spec.Decode(&hpa))
	assert.Equal(t, "Deployment", hpa.ScaleTargetRef.Kind)
	assert.Equal(t, objs["Deployment"].Metadata.Name, hpa.ScaleTargetRef.Name)
	assert.Equal(t, "cpu", hpa.Metrics[0].Resource.Name)

	var pdb struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
	}
	require.NoError(t, objs["PodDisruptionBudget"].Spec.Decode(&pdb))
	assert.Equal(t, labels, pdb.Selector.MatchLabels)
}
