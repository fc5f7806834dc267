{{/* The image of the controller: repository:tag, tag defaulting to the chart's appVersion. */}}
{{- define "ayatori.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/*
The objects of files/<group>/ (hack/chart-files.py wrote them from config/), one document each,
with the controller's namespace put in place of ayatori-system.
*/}}
{{- define "ayatori.files" -}}
{{- $root := index . 0 -}}
{{- $group := index . 1 -}}
{{- range $path, $_ := $root.Files.Glob (printf "files/%s/*.yaml" $group) }}
---
{{ $root.Files.Get $path | replace "ayatori-system" $root.Values.namespace }}
{{- end }}
{{- end -}}

{{- /*
Whether the cluster serves the finalizer policy's kind, admissionregistration.k8s.io/v1
MutatingAdmissionPolicy: kube-apiserver >= 1.36. "true" or "". The server's version, not
.Capabilities.APIVersions: `helm template` knows only group/versions there, no kinds, and the
version is what `helm template --kube-version` sets (hack/install-manifests.sh --kube-version).
*/ -}}
{{- define "ayatori.finalizerPolicyServed" -}}
{{- if semverCompare ">=1.36.0-0" .Capabilities.KubeVersion.Version -}}
true
{{- end -}}
{{- end }}
