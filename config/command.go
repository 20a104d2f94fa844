package config

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// A Command is the start the subcommands that read the configuration
// share (doctor, xih): their flags and errors on stderr, the
// configuration, and a logger on stderr at LOG_LEVEL.
type Command struct {
	// Name is the subcommand's, as its errors begin: "cursor2api NAME: ".
	Name string
	// Flags are the subcommand's own; Load parses them.
	Flags *flag.FlagSet
	// ErrorsOnly has Logger write errors only: for a command that reports
	// what the log would say itself.
	ErrorsOnly bool
	stderr     io.Writer
}

// NewCommand is the start of the subcommand name, writing to stderr.
func NewCommand(name string, stderr io.Writer) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &Command{Name: name, Flags: fs, stderr: stderr}
}

// Load parses args into the command's flags and loads the configuration
// (Load). When either fails it has said why on stderr and ok is false:
// the command exits 2, as for any usage or configuration error.
func (c *Command) Load(args []string) (cfg *Config, ok bool) {
	if err := c.Flags.Parse(args); err != nil {
		return nil, false // the flag package has said why
	}
	cfg, err := Load()
	if err != nil {
		c.Fail(err)
		return nil, false
	}
	return cfg, true
}

// Logger writes to stderr from cfg's LOG_LEVEL up (from ERROR up with
// ErrorsOnly).
func (c *Command) Logger(cfg *Config) *slog.Logger {
	level, _ := cfg.SlogLevel()
	if c.ErrorsOnly {
		level = max(level, slog.LevelError)
	}
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
}

// Fail says err on stderr after the command's name and returns 2, the
// exit status of a usage or configuration error.
func (c *Command) Fail(err error) int {
	fmt.Fprintf(c.stderr, "cursor2api %s: %v\n", c.Name, err)
	return 2
}
