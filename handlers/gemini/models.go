package gemini

import "strings"

// ModelList is the response of GET /v1beta/models.
type ModelList struct {
	Models        []Model `json:"models"`
	NextPageToken string  `json:"nextPageToken"`
}

// Model is one model, the entry of the list and the answer of GET
// /v1beta/models/{model}.
type Model struct {
	Name                       string   `json:"name"`
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	Description                string   `json:"description"`
	InputTokenLimit            int      `json:"inputTokenLimit"`
	OutputTokenLimit           int      `json:"outputTokenLimit"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
	Thinking                   bool     `json:"thinking"`
}

// Token limits the list states. The gateway knows no per-model limit; these
// are the common Gemini values, which clients use to size their history.
const (
	inputTokenLimit  = 1048576
	outputTokenLimit = 65536
)

// ModelOf describes one public model name; thinking says whether it
// reasons (a -thinking name).
func ModelOf(name string, thinking bool) Model {
	return Model{
		Name: "models/" + name, BaseModelID: name, Version: "cursor2api", DisplayName: name,
		Description:     "served by cursor2api",
		InputTokenLimit: inputTokenLimit, OutputTokenLimit: outputTokenLimit,
		SupportedGenerationMethods: []string{"generateContent", "streamGenerateContent", "countTokens"},
		Thinking:                   thinking,
	}
}

// ModelListOf lists the public model names, all in one page.
func ModelListOf(names []string) ModelList {
	list := ModelList{Models: []Model{}}
	for _, name := range names {
		list.Models = append(list.Models, ModelOf(name, strings.HasSuffix(name, "-thinking")))
	}
	return list
}

// ModelName is the model id of a path segment or name: "models/x" or
// "x", without the "models/" prefix.
func ModelName(s string) string { return strings.TrimPrefix(s, "models/") }
