// Package toolproto is the text protocol that gives a text-only model tools.
// Both halves live here so that what the prompt asks for and what the parser
// reads cannot drift apart: the prompt and history as text
// (BuildConversation), and the incremental Parser that reads calls back.
// It does no I/O.
package toolproto
