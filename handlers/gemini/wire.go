// Package gemini is the Gemini API door, which Gemini CLI and the GenAI
// SDKs speak (POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent): its wire types, ToRequest, the answer as bare
// data events (StreamWriter) or whole, the error body and the model list.
//
// Fields the gateway does not use (safetySettings, cachedContent, topK,
// ...) are not declared, so unknown extras never fail a request.
package gemini

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"cursor2api/utils"
	"cursor2api/utils/jsondec"
)

// GenerateContentRequest is the body of :generateContent,
// :streamGenerateContent and (as its contents, or whole under
// generateContentRequest) :countTokens.
type GenerateContentRequest struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
}

// CountTokensRequest is the body of :countTokens: contents alone, or a
// whole generateContentRequest.
type CountTokensRequest struct {
	GenerateContentRequest
	Whole *GenerateContentRequest `json:"generateContentRequest,omitempty"`
}

// Content is one turn: a role (user or model; function, the older name of
// a turn of results, is read as user) and its parts.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// UnmarshalJSON also accepts a bare string, which some clients send as
// systemInstruction.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		s, err := utils.DecodeJSONString(data)
		if err != nil {
			return err
		}
		*c = Content{Parts: []Part{{Text: &s}}}
		return nil
	}
	type plain Content
	return jsondec.Unmarshal(data, (*plain)(c))
}

// Part is one part of a turn. Which field is set says what it is: text
// (with Thought, reasoning), inlineData or fileData (media the upstream
// cannot take), functionCall or functionResponse. thoughtSignature, which
// clients echo on a call, is accepted and ignored.
type Part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *Blob             `json:"fileData,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
	// ExecutableCode and CodeExecutionResult, the code execution tool's
	// parts, are only told apart from an empty part: the gateway has no
	// such tool, and drops them.
	ExecutableCode      json.RawMessage `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage `json:"codeExecutionResult,omitempty"`
	// ThoughtSignature is read only to tell a part of a signature alone
	// (the Go SDK drops a signed part's empty text) from an empty one.
	ThoughtSignature json.RawMessage `json:"thoughtSignature,omitempty"`
}

// empty reports a part with nothing in it, such as {}, which Gemini
// refuses (its data oneof unset). A part of a thought or a signature
// alone is not refused: a client may echo what the API sent it.
func (p *Part) empty() bool {
	return p.Text == nil && p.InlineData == nil && p.FileData == nil && p.FunctionCall == nil && p.FunctionResponse == nil &&
		len(p.ExecutableCode) == 0 && len(p.CodeExecutionResult) == 0 && !p.Thought && len(p.ThoughtSignature) == 0
}

// Blob is inline data (its media type and base64 data) or file data (its
// media type; the file is not fetched).
type Blob struct {
	MIMEType string `json:"mimeType,omitempty"`
	Data     string `json:"data,omitempty"`
}

// FunctionCall is a call the model made.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is the result of a call, sent by the client.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response,omitempty"`
	// Parts are the result's media (inlineData, fileData), as Gemini 3
	// models take them.
	Parts []Part `json:"parts,omitempty"`
}

// Tool is one entry of tools. Only function declarations are served;
// googleSearch, codeExecution and the other built-in tools run on
// Google's side.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations,omitempty"`
	// Other holds the names of built-in tools the entry asks for, sorted
	// (so that the error that names the first is the same every time).
	Other []string `json:"-"`
}

// UnmarshalJSON reads functionDeclarations and notes any other key.
func (t *Tool) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*t = Tool{}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if k == "functionDeclarations" {
			if err := json.Unmarshal(raw[k], &t.FunctionDeclarations); err != nil {
				return err
			}
			continue
		}
		t.Other = append(t.Other, k)
	}
	return nil
}

// FunctionDeclaration declares a function: its parameters as an OpenAPI
// subset (Parameters) or as JSON Schema (ParametersJSONSchema).
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

// ToolConfig is toolConfig.
type ToolConfig struct {
	FunctionCallingConfig *FunctionCallingConfig `json:"functionCallingConfig,omitempty"`
}

// FunctionCallingConfig is the tool choice: mode AUTO, ANY, NONE (or
// VALIDATED, read as AUTO), and for ANY the functions allowed.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode,omitempty"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// GenerationConfig is generationConfig; temperature, topP, topK and the
// rest are accepted and ignored.
type GenerationConfig struct {
	MaxOutputTokens    *int            `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMIMEType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *ThinkingConfig `json:"thinkingConfig,omitempty"`
}

// ThinkingConfig is generationConfig.thinkingConfig.
type ThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// Response is a GenerateContentResponse: the whole answer, or one event
// of a stream.
type Response struct {
	Candidates    []Candidate    `json:"candidates"`
	UsageMetadata *UsageMetadata `json:"usageMetadata,omitempty"`
	ModelVersion  string         `json:"modelVersion,omitempty"`
	ResponseID    string         `json:"responseId,omitempty"`
}

// Candidate is the one candidate of an answer.
type Candidate struct {
	Content      ResponseContent `json:"content"`
	FinishReason string          `json:"finishReason,omitempty"`
	Index        int             `json:"index"`
}

// ResponseContent is the model's turn in an answer.
type ResponseContent struct {
	Parts []ResponsePart `json:"parts"`
	Role  string         `json:"role"`
}

// ResponsePart is a part of an answer: text (a thought when Thought is
// set) or a function call.
type ResponsePart struct {
	Text         *string       `json:"text,omitempty"`
	Thought      bool          `json:"thought,omitempty"`
	FunctionCall *FunctionCall `json:"functionCall,omitempty"`
}

// UsageMetadata is the token accounting of an answer. In Gemini's
// convention candidatesTokenCount leaves the thoughts out, and the total
// adds all three.
type UsageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

// TokenCount is the response of :countTokens.
type TokenCount struct {
	TotalTokens int `json:"totalTokens"`
}

// Finish reasons.
const (
	FinishStop      = "STOP"
	FinishMaxTokens = "MAX_TOKENS"
)
