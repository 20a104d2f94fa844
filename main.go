// Command cursor2api is a gateway that serves the OpenAI chat-completions,
// Anthropic Messages, OpenAI Responses and Gemini APIs, with real tool
// calls for coding agents, in front of Cursor's web chat, the Cursor Agent
// CLI or Cursor's native agent API.
//
// Subcommands: healthcheck (the container's HEALTHCHECK), doctor (the web
// chat's handshake step by step), xih (the x-is-human check) and version.
// main only dispatches.
package main

import (
	"fmt"
	"os"

	"cursor2api/handlers/server"
	"cursor2api/services/doctor"
	"cursor2api/services/human/xih"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "--version", "-version", "version":
			fmt.Println("cursor2api", version)
			return
		case "healthcheck":
			// The image's HEALTHCHECK: scratch has no shell or curl.
			if err := server.Healthcheck(os.Getenv("HOST"), os.Getenv("PORT")); err != nil {
				fmt.Fprintln(os.Stderr, "cursor2api healthcheck:", err)
				os.Exit(1)
			}
			return
		case "doctor":
			os.Exit(doctor.Command(os.Args[2:], os.Stdout, os.Stderr))
		case "xih":
			os.Exit(xih.Command(os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	if err := server.Run(version); err != nil {
		fmt.Fprintln(os.Stderr, "cursor2api:", err)
		os.Exit(1)
	}
}
