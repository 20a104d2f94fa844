package tests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
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
		Labels      map[string]string `yaml:"labels"`
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
		// The gateway's objects by kind; the Redis of its state apart.
		if obj.Metadata.Labels["app.kubernetes.io/component"] == "redis" {
			out["redis/"+obj.Kind] = obj
			continue
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
	manifest, err := os.ReadFile("../deploy/kubernetes/cursor2api.yaml")
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
				VolumeMounts []struct {
					Name      string `yaml:"name"`
					MountPath string `yaml:"mountPath"`
				} `yaml:"volumeMounts"`
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
	objs := decodeFile(t, "../deploy/kubernetes/cursor2api.yaml")
	maps.Copy(objs, decodeFile(t, "../deploy/kubernetes/redis.yaml"))
	checkManifest(t, objs)
	require.Contains(t, objs, "redis/Deployment", "redis.yaml runs the shared state's Redis")
	ing := decodeFile(t, "../deploy/kubernetes/ingress.yaml")["Ingress"]
	assert.Equal(t, "off", ing.Metadata.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"])
	assert.Equal(t, "3600", ing.Metadata.Annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"])
	checkIngressKeepsSockets(t, ing.Metadata.Annotations)
}

// checkIngressKeepsSockets: ingress-nginx passes a WebSocket upgrade by
// itself, and closes one silent for proxy-read-timeout or
// proxy-send-timeout (60 s by default); the gateway pings every
// PING_INTERVAL (15 s), so both must be set well above it.
func checkIngressKeepsSockets(t *testing.T, annotations map[string]string) {
	t.Helper()
	for _, k := range []string{"proxy-read-timeout", "proxy-send-timeout"} {
		v, err := strconv.Atoi(annotations["nginx.ingress.kubernetes.io/"+k])
		if assert.NoError(t, err, "the Ingress sets %s", k) {
			assert.GreaterOrEqual(t, v, 4*15, "%s outlasts several of the gateway's pings on a quiet WebSocket", k)
		}
	}
	assert.NotContains(t, annotations, "nginx.ingress.kubernetes.io/connection-proxy-header", "the Connection: upgrade header passes as ingress-nginx sets it")
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
	out, err := exec.Command(helm, "lint", "../deploy/helm/cursor2api").CombinedOutput()
	require.NoError(t, err, "helm lint:\n%s", out)
	out, err = exec.Command(helm, "template", "cursor2api", "../deploy/helm/cursor2api", "--set", "ingress.enabled=true").Output()
	require.NoError(t, err, "helm template")
	objs := decodeObjects(t, "helm template", out)
	checkManifest(t, objs)
	require.Contains(t, objs, "Ingress")
	assert.Equal(t, "off", objs["Ingress"].Metadata.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"])
	checkIngressKeepsSockets(t, objs["Ingress"].Metadata.Annotations)
	require.Contains(t, objs, "redis/Deployment", "the chart runs a Redis by default")

	// The Redis option off: state per pod, and then the affinity.
	for _, tt := range []struct {
		name string
		set  []string
	}{
		{"memory", []string{"--set", "state.url=memory:", "--set", "redis.enabled=false"}},
		{"own redis", []string{"--set", "state.url=rediss://redis.example.com:6380/0", "--set", "redis.enabled=false"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(helm, append([]string{"template", "cursor2api", "../deploy/helm/cursor2api"}, tt.set...)...).Output()
			require.NoError(t, err, "helm template")
			objs := decodeObjects(t, "helm template", out)
			checkManifest(t, objs)
			assert.NotContains(t, objs, "redis/Deployment")
		})
	}
}

// TestImageKeepsStateInAVolume: the image's STATE_DIR is /data, a volume
// the non-root user owns; compose mounts one there and offers a Redis.
func TestImageKeepsStateInAVolume(t *testing.T) {
	for _, path := range []string{"../Dockerfile", "../deploy/docker/Dockerfile.prebuilt"} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		df := string(b)
		assert.Contains(t, df, `VOLUME ["/data"]`, path)
		assert.Regexp(t, `(?m)^ENV .*STATE_DIR=/data\b`, df, path)
		assert.Regexp(t, `(?m)^COPY .*--chown=65532:65532 .*/data`, df, "%s: /data belongs to the image's user", path)
		assert.Less(t, strings.Index(df, "/data"), strings.Index(df, "USER 65532"), path)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Profiles    []string          `yaml:"profiles"`
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	b, err := os.ReadFile("../docker-compose.yml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &compose))
	gw := compose.Services["cursor2api"]
	assert.Contains(t, gw.Volumes, "state:/data")
	assert.Contains(t, compose.Volumes, "state")
	redis, ok := compose.Services["redis"]
	require.True(t, ok, "compose offers a redis service")
	assert.Equal(t, []string{"redis"}, redis.Profiles, "optional: started with --profile redis")
	assert.NotEmpty(t, redis.Image)
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

	// The state: on Redis (the manifests' own, when they run one) no
	// affinity, since every pod reads the same; with memory: the state is
	// per pod, and the Service keeps a client on one.
	stateURL, hasState := env["STATE_URL"]
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	assert.Contains(t, mounts, "/data", "STATE_DIR of the image is writable under a read-only root")
	var svc struct {
		Selector        map[string]string `yaml:"selector"`
		SessionAffinity string            `yaml:"sessionAffinity"`
	}
	require.NoError(t, objs["Service"].Spec.Decode(&svc))
	assert.Equal(t, labels, svc.Selector)
	if hasState && stateURL == "memory:" {
		assert.Equal(t, "ClientIP", svc.SessionAffinity, "with STATE_URL=memory: previous_response_id is per pod")
	} else {
		assert.Empty(t, svc.SessionAffinity, "state is shared (STATE_URL=%q): no affinity", stateURL)
		assert.Regexp(t, `^rediss?://`, stateURL, "replicas share their state through Redis")
	}
	if rs, ok := objs["redis/Service"]; ok {
		assert.Equal(t, "redis://"+rs.Metadata.Name+":6379/0", stateURL, "STATE_URL names the Redis the manifests run")
		var redisSvc struct {
			Selector map[string]string `yaml:"selector"`
		}
		require.NoError(t, rs.Spec.Decode(&redisSvc))
		var redisDep deploymentSpec
		require.Contains(t, objs, "redis/Deployment")
		require.NoError(t, objs["redis/Deployment"].Spec.Decode(&redisDep))
		for k, v := range redisSvc.Selector {
			assert.Equal(t, v, redisDep.Template.Metadata.Labels[k], "the Redis Service selects the Redis pod")
		}
		assert.NotEqual(t, labels["app.kubernetes.io/name"], redisDep.Template.Metadata.Labels["app.kubernetes.io/name"], "the gateway's Service does not select Redis")
	}

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
