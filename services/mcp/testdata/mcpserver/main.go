// Command mcpserver is mcptest's MCP server over stdio, for tests.
package main

import (
	"context"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"cursor2api/services/mcp/mcptest"
)

func main() {
	log.SetFlags(0)
	log.Print("mcptest server starting")
	if err := mcptest.NewServer(true).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
