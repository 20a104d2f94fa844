{{- define "cursor2api.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "cursor2api.labels" -}}
app.kubernetes.io/name: cursor2api
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
