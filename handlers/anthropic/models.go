package anthropic

import "time"

// ModelList is the response of GET /v1/models in Anthropic's format.
type ModelList struct {
	Data    []Model `json:"data"`
	HasMore bool    `json:"has_more"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
}

// Model is one entry of the model list.
type Model struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// ModelListOf lists the public model names, all in one page.
func ModelListOf(names []string, created int64) ModelList {
	list := ModelList{Data: []Model{}}
	at := time.Unix(created, 0).UTC().Format(time.RFC3339)
	for _, name := range names {
		list.Data = append(list.Data, Model{Type: "model", ID: name, DisplayName: name, CreatedAt: at})
	}
	if n := len(names); n > 0 {
		first, last := names[0], names[n-1]
		list.FirstID, list.LastID = &first, &last
	}
	return list
}
