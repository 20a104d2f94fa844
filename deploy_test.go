package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The Kubernetes manifest and the rendered Helm chart are checked here
// twice, with no cluster: strictly against the Kubernetes API's own types
// (k8s.io/api), as an API server validates them, and for what the gateway
// relies on (probes, grace period, labels, affinity).

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
	require.NoError(t, validateK8s(data), "%s against the Kubernetes API types", path)
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

// validateK8s decodes every object in data strictly into the Kubernetes
// API's Go types (Kubernetes 1.33): an unknown kind or apiVersion, an
// unknown or duplicated field, or a value of the wrong type is an error,
// as it is for kubectl apply --validate=strict.
func validateK8s(data []byte) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, corev1.AddToScheme, autoscalingv2.AddToScheme,
		policyv1.AddToScheme, networkingv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	docs := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		var head struct{ Kind string }
		if yaml.Unmarshal(doc, &head) == nil && head.Kind == "" {
			continue // comments only
		}
		if _, _, err := dec.Decode(doc, nil, nil); err != nil {
			return fmt.Errorf("document %d (%s): %w", i, head.Kind, err)
		}
	}
}

// TestValidateK8sCatches shows that the strict check fails on the
// mistakes it is there for.
func TestValidateK8sCatches(t *testing.T) {
	manifest, err := os.ReadFile("deploy/kubernetes/cursor2api.yaml")
	require.NoError(t, err)
	require.NoError(t, validateK8s(manifest))
	for _, tt := range []struct{ name, from, to, want string }{
		{"misspelt field", "readinessProbe:", "readinesProbe:", `unknown field "spec.template.spec.containers[0].readinesProbe"`},
		{"wrong type", "terminationGracePeriodSeconds: ", "terminationGracePeriodSeconds: forty", "terminationGracePeriodSeconds"},
		{"unknown apiVersion", "apiVersion: autoscaling/v2", "apiVersion: autoscaling/v9", "autoscaling/v9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			broken := strings.Replace(string(manifest), tt.from, tt.to, 1)
			require.NotEqual(t, string(manifest), broken, "the manifest has %q", tt.from)
			err := validateK8s([]byte(broken))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
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
