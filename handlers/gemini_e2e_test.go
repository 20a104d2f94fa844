package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"cursor2api/services/cursortest"
)

// End-to-end tests of the Gemini door: Google's official Go SDK
// (google.golang.org/genai) drives the running gateway, which talks to the
// fake upstream.

// gemini is a Gemini API client of the gateway, without retries.
func (s *stack) gemini(t *testing.T, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: key, Backend: genai.BackendGeminiAPI, HTTPClient: s.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: s.URL + "/"},
	})
	require.NoError(t, err)
	return c
}

// geminiAsk sends the contents streamed or not and returns the answer as
// one response: the parts of every event in order (text of consecutive
// text parts of the same kind joined), the last event's finish reason
// and usage.
func geminiAsk(t *testing.T, c *genai.Client, streaming bool, model string, contents []*genai.Content, cfg *genai.GenerateContentConfig) (*genai.GenerateContentResponse, error) {
	t.Helper()
	if !streaming {
		return c.Models.GenerateContent(context.Background(), model, contents, cfg)
	}
	whole := &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{Content: &genai.Content{Role: "model"}}}}
	events := 0
	for resp, err := range c.Models.GenerateContentStream(context.Background(), model, contents, cfg) {
		if err != nil {
			return nil, err
		}
		events++
		require.Len(t, resp.Candidates, 1)
		cand := resp.Candidates[0]
		require.Empty(t, whole.Candidates[0].FinishReason, "no event follows the one with the finish reason")
		for _, p := range cand.Content.Parts {
			parts := &whole.Candidates[0].Content.Parts
			if n := len(*parts); n > 0 && p.Text != "" && (*parts)[n-1].FunctionCall == nil && (*parts)[n-1].Thought == p.Thought {
				(*parts)[n-1].Text += p.Text
				continue
			}
			if p.Text == "" && p.FunctionCall == nil {
				continue
			}
			*parts = append(*parts, p)
		}
		whole.Candidates[0].FinishReason = cand.FinishReason
		whole.UsageMetadata = resp.UsageMetadata
		whole.ModelVersion = resp.ModelVersion
	}
	require.NotZero(t, events)
	require.NotEmpty(t, whole.Candidates[0].FinishReason, "every stream ends with a finish reason")
	return whole, nil
}

func geminiUser(text string) []*genai.Content {
	return []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}
}

var (
	// geminiWeather declares its parameters in the OpenAPI subset, with
	// upper-case types.
	geminiWeather = &genai.FunctionDeclaration{
		Name: "get_weather", Description: "Current weather of a city",
		Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{
			"city": {Type: genai.TypeString}, "unit": {Type: genai.TypeString, Enum: []string{"c", "f"}},
		}, Required: []string{"city"}},
	}
	// geminiReadFile declares JSON Schema, as Gemini CLI does.
	geminiReadFile = &genai.FunctionDeclaration{
		Name:                 "read_file",
		ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}},
	}
	geminiTools = []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{geminiWeather, geminiReadFile}}}
)

func TestGeminiE2EText(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, []string{"Hello", ", <b>world</b>", " & ünïcode ✓"}))
			resp, err := geminiAsk(t, s.gemini(t, "any"), m.streaming, "gemini-3-flash", geminiUser("Say hello"), &genai.GenerateContentConfig{
				SystemInstruction: genai.NewContentFromText("You greet people.", ""),
				Temperature:       genai.Ptr[float32](0.2), TopP: genai.Ptr[float32](0.9), TopK: genai.Ptr[float32](40),
			})
			require.NoError(t, err)
			assert.Equal(t, "Hello, <b>world</b> & ünïcode ✓", resp.Text())
			assert.Equal(t, genai.FinishReasonStop, resp.Candidates[0].FinishReason)
			assert.Equal(t, "gemini-3-flash", resp.ModelVersion)
			require.NotNil(t, resp.UsageMetadata)
			assert.EqualValues(t, 321, resp.UsageMetadata.PromptTokenCount)
			assert.EqualValues(t, 45, resp.UsageMetadata.CandidatesTokenCount)
			assert.EqualValues(t, 366, resp.UsageMetadata.TotalTokenCount)

			reqs := s.up.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, "google/gemini-3-flash", reqs[0].Model)
			assert.Equal(t, []cursortest.Message{{Role: "system", Text: "You greet people."}, {Role: "user", Text: "Say hello"}}, reqs[0].Messages)
			s.Close()
			assert.Regexp(t, `msg=request .*door=gemini .*path=/v1beta/models/gemini-3-flash:(stream)?[gG]enerateContent .*model=gemini-3-flash status=200`, s.logs.String())
		})
	}
}

// TestGeminiE2EAliases: Gemini CLI's default names reach a published
// model through MODEL_ALIASES; the answer names the model asked for.
func TestGeminiE2EAliases(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"ok"}))
	for _, name := range []string{"gemini-3.1-pro-preview", "gemini-3.5-flash-lite"} {
		resp, err := geminiAsk(t, s.gemini(t, "any"), true, name, geminiUser("hi"), nil)
		require.NoError(t, err)
		assert.Equal(t, "ok", resp.Text())
		assert.Equal(t, name, resp.ModelVersion)
	}
	for _, req := range s.up.Requests() {
		assert.Equal(t, "anthropic/claude-sonnet-4.6", req.Model, "gemini-* goes to the default model")
	}
}

func TestGeminiE2ETools(t *testing.T) {
	turn := []string{"Let me check.\n", "TRIGGER\n", `<invoke name="get_weather">{"city": "Pa`, `ris", "unit"`, `: "c"}`, "</invoke>\n", `<invoke name="read_file">{"path":"notes.md"}</invoke>`}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn, []string{"It is 21°C in Paris; your notes say: buy bread."}))
			c := s.gemini(t, "any")
			cfg := &genai.GenerateContentConfig{Tools: geminiTools}
			history := geminiUser("Weather in Paris, and my notes?")
			resp, err := geminiAsk(t, c, m.streaming, "gemini-3-flash", history, cfg)
			require.NoError(t, err)
			assert.Equal(t, genai.FinishReasonStop, resp.Candidates[0].FinishReason, "a turn of calls finishes with STOP")
			assert.Equal(t, "Let me check.", strings.TrimSpace(resp.Text()))
			calls := resp.FunctionCalls()
			require.Len(t, calls, 2, "both parallel calls")
			assert.Equal(t, "get_weather", calls[0].Name)
			assert.Equal(t, map[string]any{"city": "Paris", "unit": "c"}, calls[0].Args)
			assert.Equal(t, "read_file", calls[1].Name)
			assert.Equal(t, map[string]any{"path": "notes.md"}, calls[1].Args)
			require.NotEmpty(t, calls[0].ID, "every call has an id")
			require.NotEmpty(t, calls[1].ID)
			assert.NotEqual(t, calls[0].ID, calls[1].ID)

			// Both schema forms reached the model as JSON Schema.
			system := s.up.Requests()[0].Messages[0].Text
			assert.Contains(t, system, "get_weather")
			assert.Contains(t, system, `"type":"object"`)
			assert.NotContains(t, system, "OBJECT")
			assert.Contains(t, system, "read_file")

			// The results: the weather by id with an object, the file by
			// name alone (no id, as the Go SDK sends) in Gemini CLI's
			// {output: ...} form.
			history = append(history, resp.Candidates[0].Content, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: calls[0].ID, Name: "get_weather", Response: map[string]any{"temp_c": 21}}},
				{FunctionResponse: &genai.FunctionResponse{Name: "read_file", Response: map[string]any{"output": "buy bread"}}},
			}})
			second, err := geminiAsk(t, c, m.streaming, "gemini-3-flash", history, cfg)
			require.NoError(t, err)
			assert.Equal(t, "It is 21°C in Paris; your notes say: buy bread.", second.Text())
			assert.Empty(t, second.FunctionCalls())

			replay := s.up.Requests()[1].Messages
			last := replay[len(replay)-1].Text
			assert.Contains(t, last, `<tool_result id="`+calls[0].ID+`" name="get_weather">`)
			assert.Contains(t, last, `{"temp_c":21}`)
			assert.Contains(t, last, `<tool_result id="`+calls[1].ID+`" name="read_file">`, "matched by name")
			assert.Contains(t, last, "buy bread")
			assert.NotContains(t, last, `"output"`, "the output is replayed as its text")
		})
	}
}

func TestGeminiE2EToolChoice(t *testing.T) {
	for _, m := range modes {
		t.Run("ANY retries/"+m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t,
				[]string{"I think it is sunny."},
				[]string{"TRIGGER\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"},
			))
			resp, err := geminiAsk(t, s.gemini(t, "any"), m.streaming, "gemini-3-flash", geminiUser("Read a"), &genai.GenerateContentConfig{
				Tools: geminiTools,
				ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
					Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"read_file"},
				}},
			})
			require.NoError(t, err)
			calls := resp.FunctionCalls()
			require.Len(t, calls, 1)
			assert.Equal(t, "read_file", calls[0].Name)
			assert.Empty(t, resp.Text(), "the call-less first turn never reaches the client")
			require.Len(t, s.up.Requests(), 2, "asked once more")
		})
	}
	t.Run("ANY with two allowed offers only those", func(t *testing.T) {
		other := &genai.FunctionDeclaration{Name: "delete_everything", ParametersJsonSchema: map[string]any{"type": "object"}}
		s := newStack(t, nil, script(t, []string{"TRIGGER\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"}))
		_, err := geminiAsk(t, s.gemini(t, "any"), false, "gemini-3-flash", geminiUser("Read a"), &genai.GenerateContentConfig{
			Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{geminiWeather, geminiReadFile, other}}},
			ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
				Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"read_file", "get_weather"},
			}},
		})
		require.NoError(t, err)
		system := s.up.Requests()[0].Messages[0].Text
		assert.Contains(t, system, "read_file")
		assert.NotContains(t, system, "delete_everything")
	})
	t.Run("NONE", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"No tools today."}))
		resp, err := geminiAsk(t, s.gemini(t, "any"), true, "gemini-3-flash", geminiUser("Read a"), &genai.GenerateContentConfig{
			Tools:      geminiTools,
			ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}},
		})
		require.NoError(t, err)
		assert.Equal(t, "No tools today.", resp.Text())
		assert.Empty(t, sentTrigger(s.up.Requests()[0]), "no tool is offered")
	})
}

func TestGeminiE2EThinking(t *testing.T) {
	turn := []string{"<think", "ing>The user wants 2+2.</thi", "nking>\n\nThe answer is 4."}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn))
			c := s.gemini(t, "any")
			for _, tc := range []*genai.ThinkingConfig{
				{IncludeThoughts: true, ThinkingBudget: genai.Ptr[int32](1024)},
				{IncludeThoughts: true, ThinkingLevel: genai.ThinkingLevelHigh},
			} {
				resp, err := geminiAsk(t, c, m.streaming, "gemini-3-flash", geminiUser("2+2?"), &genai.GenerateContentConfig{ThinkingConfig: tc})
				require.NoError(t, err)
				parts := resp.Candidates[0].Content.Parts
				require.Len(t, parts, 2)
				assert.True(t, parts[0].Thought)
				assert.Equal(t, "The user wants 2+2.", strings.TrimSpace(parts[0].Text))
				assert.False(t, parts[1].Thought)
				assert.Equal(t, "The answer is 4.", strings.TrimSpace(parts[1].Text))
			}
			for _, req := range s.up.Requests() {
				assert.Contains(t, req.Messages[0].Text, "<thinking>", "thinking was asked upstream")
			}

			// Thinking without includeThoughts: the model reasons, the
			// client sees no thought part.
			resp, err := geminiAsk(t, c, m.streaming, "gemini-3-flash", geminiUser("2+2?"), &genai.GenerateContentConfig{
				ThinkingConfig: &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](1024)},
			})
			require.NoError(t, err)
			for _, p := range resp.Candidates[0].Content.Parts {
				assert.False(t, p.Thought)
			}
			assert.Equal(t, "The answer is 4.", strings.TrimSpace(resp.Text()))

			// A -thinking model shows its thoughts unasked.
			resp, err = geminiAsk(t, c, m.streaming, "gemini-3-flash-thinking", geminiUser("2+2?"), nil)
			require.NoError(t, err)
			require.Len(t, resp.Candidates[0].Content.Parts, 2)
			assert.True(t, resp.Candidates[0].Content.Parts[0].Thought)

			// No thinking asked: no thinking prompt.
			n := len(s.up.Requests())
			_, err = geminiAsk(t, c, m.streaming, "gemini-3-flash", geminiUser("2+2?"), &genai.GenerateContentConfig{
				ThinkingConfig: &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](0)},
			})
			require.NoError(t, err)
			assert.NotContains(t, s.up.Requests()[n].Messages[0].Text, "<thinking>")
		})
	}
}

func TestGeminiE2EJSONMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *genai.GenerateContentConfig
	}{
		{"responseSchema", &genai.GenerateContentConfig{ResponseMIMEType: "application/json", ResponseSchema: &genai.Schema{
			Type: genai.TypeObject, Properties: map[string]*genai.Schema{"answer": {Type: genai.TypeInteger}}, Required: []string{"answer"},
		}}},
		{"responseJsonSchema", &genai.GenerateContentConfig{ResponseMIMEType: "application/json", ResponseJsonSchema: map[string]any{
			"type": "OBJECT", "properties": map[string]any{"answer": map[string]any{"type": "INTEGER"}}, "required": []string{"answer"},
		}}},
	} {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, streaming), func(t *testing.T) {
				s := newStack(t, nil, script(t, []string{`{"answer"`, `: 4}`}))
				resp, err := geminiAsk(t, s.gemini(t, "any"), streaming, "gemini-3-flash", geminiUser("2+2?"), tc.cfg)
				require.NoError(t, err)
				assert.JSONEq(t, `{"answer": 4}`, resp.Text())
				system := s.up.Requests()[0].Messages[0]
				assert.Equal(t, "system", system.Role)
				assert.Contains(t, system.Text, "Answer with one JSON value only")
				assert.Contains(t, system.Text, `"type":"integer"`)
				assert.NotContains(t, system.Text, "INTEGER")
			})
		}
	}
}

func TestGeminiE2EMaxTokens(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, longAnswer))
			resp, err := geminiAsk(t, s.gemini(t, "any"), m.streaming, "gemini-3-flash", geminiUser("Count"), &genai.GenerateContentConfig{MaxOutputTokens: 10})
			require.NoError(t, err)
			assert.Equal(t, strings.Join(longAnswer, "")[:40], resp.Text())
			assert.Equal(t, genai.FinishReasonMaxTokens, resp.Candidates[0].FinishReason)
		})
	}
}

func TestGeminiE2EModelsAndTokens(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	c := s.gemini(t, "any")
	page, err := c.Models.List(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, m := range page.Items {
		names = append(names, m.Name)
		assert.Contains(t, m.SupportedActions, "generateContent")
		assert.Contains(t, m.SupportedActions, "streamGenerateContent")
	}
	assert.Equal(t, []string{"models/claude-sonnet-4.6", "models/claude-sonnet-4.6-thinking", "models/gemini-3-flash", "models/gemini-3-flash-thinking"}, names)

	m, err := c.Models.Get(context.Background(), "gemini-3.1-pro-preview", nil)
	require.NoError(t, err, "an alias is a model")
	assert.Equal(t, "models/gemini-3.1-pro-preview", m.Name)
	m, err = c.Models.Get(context.Background(), "models/gemini-3-flash-thinking", nil)
	require.NoError(t, err)
	assert.True(t, m.Thinking)

	short, err := c.Models.CountTokens(context.Background(), "gemini-3-flash", geminiUser("hello"), nil)
	require.NoError(t, err)
	long, err := c.Models.CountTokens(context.Background(), "gemini-3-flash", geminiUser(strings.Repeat("hello world ", 100)), nil)
	require.NoError(t, err)
	assert.Positive(t, short.TotalTokens)
	assert.Greater(t, long.TotalTokens, short.TotalTokens+150)
	assert.Empty(t, s.up.Requests(), "nothing of this goes upstream")

	// An unknown model is NOT_FOUND, in every call.
	s2 := newStack(t, map[string]string{"MODEL_ALIASES": "claude-*=default"}, script(t, []string{"unused"}))
	c2 := s2.gemini(t, "any")
	_, err = c2.Models.Get(context.Background(), "nope-1", nil)
	assertGeminiError(t, err, http.StatusNotFound, "NOT_FOUND", "nope-1")
	_, err = c2.Models.CountTokens(context.Background(), "nope-1", geminiUser("hi"), nil)
	assertGeminiError(t, err, http.StatusNotFound, "NOT_FOUND", "nope-1")
	for _, streaming := range []bool{false, true} {
		_, err = geminiAsk(t, c2, streaming, "nope-1", geminiUser("hi"), nil)
		assertGeminiError(t, err, http.StatusNotFound, "NOT_FOUND", "nope-1")
	}
}

// assertGeminiError checks that err is the SDK's APIError with the code,
// status and a message containing want.
func assertGeminiError(t *testing.T, err error, code int, status, want string) {
	t.Helper()
	var apiErr genai.APIError
	require.True(t, errors.As(err, &apiErr), "an APIError: %v", err)
	assert.Equal(t, code, apiErr.Code)
	assert.Equal(t, status, apiErr.Status)
	assert.Contains(t, apiErr.Message, want)
}

func TestGeminiE2EKeys(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "secret-1"}, script(t, []string{"ok"}))
	for _, m := range modes {
		resp, err := geminiAsk(t, s.gemini(t, "secret-1"), m.streaming, "gemini-3-flash", geminiUser("hi"), nil)
		require.NoError(t, err, "x-goog-api-key")
		assert.Equal(t, "ok", resp.Text())
		_, err = geminiAsk(t, s.gemini(t, "wrong"), m.streaming, "gemini-3-flash", geminiUser("hi"), nil)
		assertGeminiError(t, err, http.StatusUnauthorized, "UNAUTHENTICATED", "invalid API key")
	}
	_, err := s.gemini(t, "wrong").Models.List(context.Background(), nil)
	assertGeminiError(t, err, http.StatusUnauthorized, "UNAUTHENTICATED", "API_KEY")

	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	r := s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:generateContent?key=secret-1", body)
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "ok", gjson.Get(r.body, "candidates.0.content.parts.0.text").String())
	r = s.do(t, http.MethodGet, "/v1beta/models?key=secret-1", "")
	assert.Equal(t, http.StatusOK, r.status, r.body)
	r = s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:generateContent?key=wrong", body)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, "UNAUTHENTICATED", gjson.Get(r.body, "error.status").String())
	r = s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:generateContent", body)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, int64(401), gjson.Get(r.body, "error.code").Int())
	assert.Contains(t, gjson.Get(r.body, "error.message").String(), "x-goog-api-key")
	s.Close()
	assert.NotContains(t, s.logs.String(), "secret-1", "the key in the URL is never logged")
}

func TestGeminiE2EErrors(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	c := s.gemini(t, "any")
	for _, tc := range []struct {
		name     string
		contents []*genai.Content
		cfg      *genai.GenerateContentConfig
		want     string
	}{
		{"a result in a model turn", []*genai.Content{
			genai.NewContentFromText("hi", genai.RoleUser), genai.NewContentFromText("hello", genai.RoleModel), genai.NewContentFromText("again", genai.RoleUser),
			{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionResponse("f", map[string]any{})}},
		}, nil, "contents[3].parts[0].functionResponse"},
		{"a nameless function", geminiUser("hi"), &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{geminiReadFile, {Description: "no name"}}}}},
			"tools[0].functionDeclarations[1].name"},
		{"ANY naming an undeclared function", geminiUser("hi"), &genai.GenerateContentConfig{Tools: geminiTools, ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
			Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"nope"}}}}, "toolConfig.functionCallingConfig.allowedFunctionNames[0]"},
		{"a built-in tool", geminiUser("hi"), &genai.GenerateContentConfig{Tools: []*genai.Tool{{GoogleSearch: &genai.GoogleSearch{}}}}, "tools[0].googleSearch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, streaming := range []bool{false, true} {
				_, err := geminiAsk(t, c, streaming, "gemini-3-flash", tc.contents, tc.cfg)
				assertGeminiError(t, err, http.StatusBadRequest, "INVALID_ARGUMENT", tc.want)
			}
		})
	}
	t.Run("a wrong type names its path", func(t *testing.T) {
		r := s.do(t, http.MethodPost, "/v1beta/models/gemini-3-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":7}]}]}`)
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, "INVALID_ARGUMENT", gjson.Get(r.body, "error.status").String())
		assert.Contains(t, gjson.Get(r.body, "error.message").String(), "contents[0].parts[0].text")
	})
	t.Run("upstream failure before the first byte", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Status: http.StatusServiceUnavailable, Body: "busy"}))
		for _, streaming := range []bool{false, true} {
			_, err := geminiAsk(t, s.gemini(t, "any"), streaming, "gemini-3-flash", geminiUser("hi"), nil)
			var apiErr genai.APIError
			require.True(t, errors.As(err, &apiErr), "a real HTTP error: %v", err)
			assert.GreaterOrEqual(t, apiErr.Code, 500)
			assert.Equal(t, "UNAVAILABLE", apiErr.Status)
		}
	})
}
func TestGeminiE2EStopSequences(t *testing.T) {
	turn := []string{"one, two, thr", "ee, fo", "ur, END", "-OF-LIST five, six"}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newStack(t, nil, script(t, turn))
			resp, err := geminiAsk(t, s.gemini(t, "any"), m.streaming, "gemini-3-flash", geminiUser("Count"), &genai.GenerateContentConfig{StopSequences: []string{"END-OF-LIST", "never"}})
			require.NoError(t, err)
			assert.Equal(t, "one, two, three, four, ", resp.Text())
			assert.Equal(t, genai.FinishReasonStop, resp.Candidates[0].FinishReason)
		})
	}
}

// TestGeminiE2ECoreChecks: strict mode and the schema check hold through
// this door: a turn without a call, or with a call against its schema
// (read_file without its required path), is asked once more, and the
// client sees only the good turn.
func TestGeminiE2ECoreChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		first []string
	}{
		{"strict", map[string]string{"KILO_TOOL_STRICT": "true"}, []string{"I would read it, but I won't."}},
		{"schema", nil, []string{"TRIGGER\n<invoke name=\"read_file\">{\"file\":\"a\"}</invoke>"}},
	} {
		for _, m := range modes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				s := newStack(t, tc.env, script(t, tc.first, []string{"TRIGGER\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"}))
				resp, err := geminiAsk(t, s.gemini(t, "any"), m.streaming, "gemini-3-flash", geminiUser("Read a"), &genai.GenerateContentConfig{Tools: geminiTools})
				require.NoError(t, err)
				calls := resp.FunctionCalls()
				require.Len(t, calls, 1)
				assert.Equal(t, map[string]any{"path": "a"}, calls[0].Args)
				assert.Empty(t, resp.Text())
				require.Len(t, s.up.Requests(), 2, "asked once more")
			})
		}
	}
}
