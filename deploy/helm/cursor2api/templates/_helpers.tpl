{{- define "cursor2api.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "cursor2api.stateURL" -}}
{{- if .Values.state.url -}}{{ .Values.state.url }}
{{- else if .Values.redis.enabled -}}redis://{{ .Release.Name }}-redis:6379/0
{{- end -}}
{{- end -}}
{{- define "cursor2api.redisLabels" -}}
app.kubernetes.io/name: cursor2api-redis
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end -}}
{{- define "cursor2api.labels" -}}
app.kubernetes.io/name: cursor2api
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
