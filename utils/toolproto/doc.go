// Package toolproto is the text protocol that gives a text-only upstream
// model tools: both halves of it, kept together so that what the prompt
// asks for and what the parser reads can never drift apart.
//
// The writing half makes the per-request trigger (NewTrigger), the system
// prompt that lists the tools and teaches the format, and the replay of a
// conversation's earlier calls and results as text (BuildConversation).
// The reading half is the incremental Parser, which turns the streamed
// reply back into text, thinking and tool calls, with the argument scanner
// and the repair of almost-JSON arguments.
//
// The package is pure: it performs no I/O and imports only the neutral
// types of package models and the helpers of package utils.
package toolproto
