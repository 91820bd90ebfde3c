// Package shq quotes words for a POSIX shell: every command erdmakit prints
// for a person to run (setup's plan and revert lines), and every value
// written to a file a shell sources (ifcfg), is one word that the shell
// reads back as written: no expansion, no second command.
package shq

import "strings"

// safe are the bytes a word may hold and still be left unquoted.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/=,@+%"

// Quote is s as one shell word: as is when it holds only safe bytes, else
// in single quotes (a single quote inside as '\”).
func Quote(s string) string {
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join is argv as one command line, each word quoted.
func Join(argv ...string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
