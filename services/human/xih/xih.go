// Package xih is `cursor2api xih`, the x-is-human self-diagnosis.
package xih

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/human"
)

// Command is `cursor2api xih`: it fetches the x-is-human
// challenge script (or reads -file), runs it once in the gateway's
// environment with the configured profile, and prints the header, the
// time taken and every global or property the script read that the
// environment does not define. It returns the exit status: 1 when the
// run fails, 2 for a usage or configuration error.
func Command(args []string, stdout, stderr io.Writer) int {
	c := config.NewCommand("xih", stderr)
	file := c.Flags.String("file", "", "run this script file instead of fetching SCRIPT_URL")
	scriptURL := c.Flags.String("url", "", "the script URL (default: SCRIPT_URL; \"auto\" reads SCRIPT_PAGE_URL)")
	profile := c.Flags.String("profile", "", "the browser profile (default: BROWSER_PROFILE; one of "+strings.Join(human.ProfileNames(), ", ")+")")
	budget := c.Flags.Duration("budget", 30*time.Second, "the time limit for fetching and running the script")
	cfg, ok := c.Load(args)
	if !ok {
		return 2
	}
	if *scriptURL != "" {
		cfg.ScriptURL = *scriptURL
	}
	if *profile != "" {
		cfg.BrowserProfile = *profile
	}
	// The check belongs to the web chat, whatever BACKEND says.
	web, err := services.NewWebChat(cfg, c.Logger(cfg))
	if err != nil {
		return c.Fail(err)
	}
	script := ""
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return c.Fail(err)
		}
		script = string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *budget)
	defer cancel()
	res, ranAs := web.Human.Check(ctx, script, human.EvalOptions{Diagnose: true})
	source := ranAs
	if *file != "" {
		source = *file + " (as " + ranAs + ")"
	}
	fmt.Fprintf(stdout, "script:  %s\nprofile: %s\ntime:    %s\n", source, cfg.BrowserProfile, res.Duration.Round(time.Millisecond))
	if res.Err != nil {
		fmt.Fprintf(stdout, "error:   %v\n", res.Err)
	} else {
		fmt.Fprintf(stdout, "header:  %s\n", res.Value)
	}
	if len(res.Misses) == 0 {
		fmt.Fprintln(stdout, "missing: none (the script read nothing the environment lacks)")
	} else {
		fmt.Fprintf(stdout, "missing: %d globals/properties the script read are not defined here:\n", len(res.Misses))
		for _, m := range res.Misses {
			fmt.Fprintf(stdout, "  %s\n", m)
		}
	}
	if res.Err != nil {
		return 1
	}
	return 0
}
